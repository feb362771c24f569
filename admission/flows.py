"""JobFlow and JobTemplate admission (``flow.volcano.sh/v1alpha1``), validate only, CREATE and UPDATE.

JobFlow (Volcano's ``validate_jobflow.go`` refuses a graph that is not a DAG; we name the field and say
why, :mod:`extender.flows.dag`): every field pumice reads has its type
(:func:`extender.flows.model.parse_jobflow`),
entries are unique, every ``dependsOn.targets`` item is another entry of the same flow, there is no cycle
(the message shows its path, ``a -> b -> a``), and every entry names a JobTemplate that exists in the flow's
namespace (read through the :class:`Lookup` port; on UPDATE only for entries the update adds, so deleting a
template never makes a running flow impossible to edit).

JobTemplate: its spec is a vcjob spec, checked by the same rules as a Job
(:func:`extender.jobs.rules.spec_errors`), so a template admits exactly the specs a Job would; the queue is
checked when the flow's job is created, not here (a template may be written before its queue).
"""

from __future__ import annotations

from collections.abc import Mapping

from admission.base import field_error
from admission.lookup import Lookup
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.errors import InvalidObject
from extender.core.validation import FieldError, Obj
from extender.flows.dag import graph_problems
from extender.flows.model import parse_jobflow
from extender.jobs.rules import spec_errors


def validate_jobflow(
    new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> list[FieldError]:
    """Why this JobFlow must not be written; empty when it may."""
    try:
        flow = parse_jobflow(new)
    except InvalidObject as e:
        return [field_error(e)]
    errors = [FieldError(field=f, message=m) for f, m in graph_problems(flow.flows)]
    before: set[str] = set()
    if old is not None:
        try:
            before = {e.name for e in parse_jobflow(old).flows}
        except InvalidObject:
            before = set()
    for i, entry in enumerate(flow.flows):
        if entry.name in before:
            continue
        if not lookup.job_template_exists(flow.namespace, entry.name):
            errors.append(
                FieldError(
                    field=f"spec.flows[{i}].name",
                    message=f"JobTemplate {flow.namespace}/{entry.name} not found; create it first",
                )
            )
    return errors


def validate_jobtemplate(
    new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> list[FieldError]:
    """Why this JobTemplate must not be written; empty when it may."""
    if not isinstance(new.get("spec"), Mapping):
        return [FieldError(field="spec", message="required: a vcjob spec (tasks, minAvailable, ...)")]
    return spec_errors(new, limits, creating=True)
