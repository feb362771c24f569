"""PodGroup admission (``scheduling.volcano.sh/v1beta1`` ``podgroups``).

Mirrors Volcano's PodGroup webhooks. mutate (CREATE): an empty or absent ``spec.queue`` becomes the default
queue (Volcano's CRD defaults it to ``default``; our default is configurable, hence the lookup). Volcano
also reads a queue from the namespace's ``scheduling.volcano.sh/queue-name`` annotation; we do not (the
lookup has no namespaces).

validate, CREATE and UPDATE (after the dispatch's checks of the object's nesting depth and size,
:mod:`admission.dispatch`): ``spec`` is an object; ``minMember`` and each ``minTaskMember`` value are int32
integers >= 0 and ``minResources`` holds valid quantities within the limits (Volcano leaves these to its
CRD schema; checking here gives the same answer whatever schema the cluster has, and a PodGroup patched to
``minResources: {cpu: 1e400}`` never reaches the scheduler);
``networkTopology`` sets at most one of ``highestTierAllowed`` and ``highestTierName`` (also inside each
``subGroupPolicy``, Volcano's only check there). Each ``subGroupPolicy`` entry must also read as the
scheduler reads it (Volcano leaves these to its CRD schema): ``subGroupSize`` an int32 >= 1,
``minSubGroups`` an int32 >= 0, ``matchLabelKeys`` label keys, ``labelSelector`` a LabelSelector whose
operators are In, NotIn (with values), Exists or DoesNotExist (without), ``networkTopology.mode`` hard or
soft with a whole ``highestTierAllowed``; and a rule with ``minSubGroups`` above 0 names ``matchLabelKeys``:
a pod joins a sub-group by those labels only, so without them the group could never start (Volcano
accepts such a group and leaves it pending for ever).

validate, CREATE only: the queue exists and is Open, as Volcano requires, so a group is never accepted into
a queue that will not schedule it. Not on UPDATE: the job controller must be able to resize the group of a
job whose queue was closed since.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from admission.base import PatchOp
from admission.lookup import QUEUE_OPEN, Lookup
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.quantity_checks import check_resource_list
from extender.core.validation import (
    INT32_MAX,
    FieldError,
    Obj,
    as_int,
    int_field,
    mapping,
    network_topology_errors,
    shown,
    string_errors,
    string_map_errors,
)


def mutate(obj: Obj, lookup: Lookup) -> list[PatchOp]:
    """Default ``spec.queue`` for a new PodGroup."""
    spec = obj.get("spec")
    if spec is None:
        return [{"op": "add", "path": "/spec", "value": {"queue": lookup.default_queue}}]
    if not isinstance(spec, Mapping) or spec.get("queue"):
        return []
    return [{"op": "add", "path": "/spec/queue", "value": lookup.default_queue}]


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this PodGroup write must be refused; empty when it may proceed. DELETE is not registered."""
    raw_spec = new.get("spec")
    if raw_spec is not None and not isinstance(raw_spec, Mapping):
        return [FieldError(field="spec", message="must be an object")]
    spec = mapping(new, "spec")
    errors = _shape_errors(spec, limits)
    errors += _topology_errors(spec)
    if old is None:
        errors += queue_errors(spec, lookup)
    return errors


def _count_error(value: object, at: str) -> list[FieldError]:
    """Counts are int32 in Volcano's PodGroup."""
    n = as_int(value)
    if n is None or n < 0:
        return [FieldError(field=at, message=f"must be an integer >= 0, got {shown(value)}")]
    if n > INT32_MAX:
        return [FieldError(field=at, message=f"must be at most {INT32_MAX}, got {n}")]
    return []


def _shape_errors(spec: Obj, limits: Limits) -> list[FieldError]:
    errors: list[FieldError] = []
    mm = spec.get("minMember")
    if mm is not None:
        errors += _count_error(mm, "spec.minMember")
    mtm = spec.get("minTaskMember")
    if mtm is not None and not isinstance(mtm, Mapping):
        errors.append(FieldError(field="spec.minTaskMember", message="must be a map of task name to count"))
    elif mtm is not None:
        for task, n in sorted(mtm.items(), key=lambda kv: str(kv[0])):
            errors += _count_error(n, f"spec.minTaskMember[{task}]")
    _, e = check_resource_list(spec.get("minResources"), "spec.minResources", limits)
    return errors + e


def queue_errors(spec: Obj, lookup: Lookup, *, what: str = "PodGroups") -> list[FieldError]:
    """``spec.queue`` (or the default queue) exists and is Open: where ``what`` may be submitted."""
    name = spec.get("queue") or lookup.default_queue
    if not isinstance(name, str):
        return [FieldError(field="spec.queue", message="must be a queue name")]
    queue = lookup.queue(name)
    if queue is None:
        return [
            FieldError(
                field="spec.queue",
                message=f"queue {name!r} does not exist; create it or choose another queue",
            )
        ]
    if queue.state != QUEUE_OPEN:
        return [
            FieldError(
                field="spec.queue",
                message=f"queue {name!r} is {queue.state}; {what} can only be submitted to an Open queue",
            )
        ]
    return []


def _topology_errors(spec: Obj) -> list[FieldError]:
    errors = network_topology_errors(spec.get("networkTopology"), "spec.networkTopology")
    policies = spec.get("subGroupPolicy")
    if policies is not None and not isinstance(policies, list):
        return [*errors, FieldError(field="spec.subGroupPolicy", message="must be a list of rules")]
    for i, policy in enumerate(policies or ()):
        at = f"spec.subGroupPolicy[{i}]"
        if not isinstance(policy, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        errors += network_topology_errors(mapping(policy, "networkTopology"), f"{at}.networkTopology")
        errors += _sub_group_errors(policy, at)
    return errors


_OPERATORS: Final = {"In": True, "NotIn": True, "Exists": False, "DoesNotExist": False}  # needs values


def _sub_group_errors(policy: Obj, at: str) -> list[FieldError]:
    """One ``subGroupPolicy`` entry read as the scheduler reads it (see the module docstring)."""
    errors = string_errors(policy, ("name",), at)
    _, e = int_field(policy, "subGroupSize", at, 1)
    minimum, e2 = int_field(policy, "minSubGroups", at, 0)
    errors += e + e2
    keys = policy.get("matchLabelKeys")
    if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) and k for k in keys)):
        errors.append(FieldError(field=f"{at}.matchLabelKeys", message="must be a list of label keys"))
    elif minimum and not keys:
        errors.append(
            FieldError(
                field=f"{at}.matchLabelKeys",
                message=f"required with minSubGroups {minimum}: a pod joins a sub-group by these labels "
                "only, without them the group could never start",
            )
        )
    errors += _selector_errors(policy.get("labelSelector"), f"{at}.labelSelector")
    nt = policy.get("networkTopology")
    if nt is not None and not isinstance(nt, Mapping):
        errors.append(FieldError(field=f"{at}.networkTopology", message="must be an object"))
    elif nt is not None:
        where = f"{at}.networkTopology"
        if nt.get("mode") is not None and nt.get("mode") not in ("hard", "soft"):
            errors.append(
                FieldError(field=f"{where}.mode", message=f"must be hard or soft, got {shown(nt['mode'])}")
            )
        errors += int_field(nt, "highestTierAllowed", where, 0)[1] + string_errors(
            nt, ("highestTierName",), where
        )
    return errors


def _selector_errors(raw: object, at: str) -> list[FieldError]:
    """A metav1.LabelSelector as the API server's validation reads one."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field=at, message="must be a label selector (matchLabels, matchExpressions)")]
    errors = string_map_errors(raw, "matchLabels", at)
    exprs = raw.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        return [*errors, FieldError(field=f"{at}.matchExpressions", message="must be a list")]
    for j, expr in enumerate(exprs or ()):
        where = f"{at}.matchExpressions[{j}]"
        op = expr.get("operator") if isinstance(expr, Mapping) else None
        if not isinstance(expr, Mapping) or not isinstance(expr.get("key"), str) or op not in _OPERATORS:
            errors.append(
                FieldError(
                    field=where,
                    message="must have a key and an operator In, NotIn, Exists or DoesNotExist",
                )
            )
            continue
        values = expr.get("values") or []
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            errors.append(FieldError(field=f"{where}.values", message="must be a list of strings"))
        elif _OPERATORS[op] != bool(values):
            need = "needs at least one value" if _OPERATORS[op] else "takes no values"
            errors.append(FieldError(field=f"{where}.values", message=f"operator {op} {need}"))
    return errors
