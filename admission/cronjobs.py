"""CronJob admission (``batch.volcano.sh/v1alpha1`` ``cronjobs``), validate only, CREATE and UPDATE.

Volcano's ``admit_cronjob.go`` checks the schedule, the time zone and the job template; so do we: the
schedule parses as cron (croniter; ``TZ=`` prefixes refused, ``timeZone`` says it), ``timeZone`` is a known
IANA zone, the policy and limits have their types (:func:`extender.flows.cron.parse_cronjob`), and
``jobTemplate.spec`` passes the Job rules (:func:`extender.jobs.rules.spec_errors`) for a job named as the
runs will be (``<cronjob>-<minute>``), fields named under ``spec.jobTemplate``.
"""

from __future__ import annotations

from collections.abc import Mapping

from admission.base import field_error
from admission.lookup import Lookup
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.errors import InvalidObject
from extender.core.validation import FieldError, Obj
from extender.flows.cron import parse_cronjob
from extender.jobs.rules import spec_errors

# The length of the minute stamp in a run's name for the next century or so.
_RUN_SUFFIX = "-99999999"


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this CronJob must not be written; empty when it may."""
    try:
        cj = parse_cronjob(new)
    except InvalidObject as e:
        return [field_error(e)]
    spec = cj.template.get("spec")
    meta = new.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    job = {"metadata": {"name": f"{name}{_RUN_SUFFIX}"}, "spec": spec}
    errors: list[FieldError] = []
    for err in spec_errors(job, limits, creating=old is None):
        where = err.field
        if where.startswith("spec"):
            where = "spec.jobTemplate." + where
        errors.append(FieldError(field=where, message=err.message))
    return errors
