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

from admission.base import DEFAULT_LIMITS, FieldError, Limits, Obj
from admission.bounds import object_errors
from admission.lookup import Lookup
from extender.core.errors import InvalidObject
from extender.flows.dag import graph_problems
from extender.flows.model import parse_jobflow
from extender.jobs import rules as R


def field_error(e: InvalidObject, prefix: str = "") -> FieldError:
    """An :class:`InvalidObject` (``field: message``) as a field error."""
    text = str(e)
    where, sep, message = text.partition(": ")
    if not sep:
        return FieldError(field=prefix.rstrip(".") or "object", message=text)
    return FieldError(field=prefix + where, message=message)


def validate_jobflow(
    new: Obj | None, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> list[FieldError]:
    if new is None:
        return []
    errors = object_errors(new, limits)
    if errors:
        return errors
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
    new: Obj | None, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> list[FieldError]:
    if new is None:
        return []
    errors = object_errors(new, limits)
    if errors:
        return errors
    if not isinstance(new.get("spec"), Mapping):
        return [FieldError(field="spec", message="required: a vcjob spec (tasks, minAvailable, ...)")]
    return R.spec_errors(new, limits, creating=True)
