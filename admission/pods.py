"""Pod admission (core ``v1`` ``pods``) for pods whose ``spec.schedulerName`` is ours.

Pods of any other scheduler are admitted untouched before anything else is read (:func:`is_ours`, the
validating row's scope and the first test of :func:`mutate`): this webhook sees every pod creation in the
cluster and must stay cheap (and it is registered with ``failurePolicy: Ignore``).

validate (CREATE and UPDATE) mirrors Volcano's current pod webhook: the disruption-budget annotations
``volcano.sh/jdb-min-available`` and ``volcano.sh/jdb-max-unavailable`` are each a positive integer or a
percentage from 1% to 99%, and at most one of them is set. (Older Volcano releases also refused a pod whose
PodGroup was missing or Pending; Volcano dropped that because controllers may create pods before their group.)
Ours: the resource quantities the scheduler reads (containers', init containers' and overhead) are valid
and within the limits (the object's nesting depth and size are the dispatch's, :mod:`admission.dispatch`).
On UPDATE a problem the stored pod already had is not held against the update (the row's
``forgive_stored``, applied by the dispatch): the scheduler's own writes (removing the gang gate, its
annotations) must never be blocked by a pod created while this webhook was unreachable (pod webhooks
``Ignore`` failures), and the pod is no worse for them.

mutate: with scheduling gates available (Kubernetes >= 1.27) a pod that names a PodGroup through
``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name`` gets the ``pumice.dev/gang`` gate,
so it stays out of kube-scheduler's queue until its whole gang is planned. As Volcano does for its own gate:
never twice, appended (``/-``) when the list exists so other webhooks' gates survive. Bound pods are skipped,
the API server refuses gates on them. Volcano's config-driven "resource group" mutations are not mirrored.
A pod of a ReplicaSet, StatefulSet or batch Job that names no group gets its workload's group name
(``podgroup-<owner uid>``) as well, the annotation Volcano's PodGroup controller patches in after creation;
pumice's workload controller (:mod:`controllers.reconcilers.workload_groups`) does that patch where this
webhook is
not registered (before 1.28), and the scheduler keys the pod by that group either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from admission.base import PatchOp, annotations_of
from admission.lookup import Lookup
from extender.api import labels as L
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.quantity_checks import check_resource_list
from extender.core.validation import FieldError, Obj, mapping, shown, string
from extender.core.workloads import pod_group_name

JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
_BUDGET_KEYS: Final = (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)
_COUNT = re.compile(r"^\d+$")
_PERCENT = re.compile(r"^(\d+)%$")


def is_ours(obj: Obj, lookup: Lookup) -> bool:
    """The pod names one of our schedulers: the only pods these webhooks look at."""
    return string(mapping(obj, "spec"), "schedulerName") in lookup.scheduler_names


def group_name(obj: Obj) -> str:
    """The PodGroup a pod names, by either of Volcano's annotations (the Kubernetes one first)."""
    ann = annotations_of(obj)
    for key in (L.GROUP_NAME_ANNOTATION, L.GROUP_NAME_ANNOTATION_VOLCANO):
        v = ann.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this pod of ours must be refused; empty when it may proceed. The pod alone decides: the
    dispatch judges the stored pod of an UPDATE with this same function and forgives its problems."""
    return _budget_annotation_errors(new) + _resource_errors(mapping(new, "spec"), limits)


def _resource_errors(spec: Obj, limits: Limits) -> list[FieldError]:
    errors: list[FieldError] = []
    for kind in ("containers", "initContainers"):
        items = spec.get(kind)
        if not isinstance(items, list):
            continue
        for j, c in enumerate(items):
            resources = mapping(c, "resources")
            for part in ("requests", "limits"):
                at = f"spec.{kind}[{j}].resources.{part}"
                errors += check_resource_list(resources.get(part), at, limits)[1]
    return errors + check_resource_list(spec.get("overhead"), "spec.overhead", limits)[1]


def _budget_annotation_errors(pod: Obj) -> list[FieldError]:
    ann = annotations_of(pod)
    errors = [e for key in _BUDGET_KEYS if key in ann for e in _budget_errors(key, ann[key])]
    if not errors and all(key in ann for key in _BUDGET_KEYS):
        errors.append(
            FieldError(
                field=f"metadata.annotations[{JDB_MAX_UNAVAILABLE}]",
                message=f"set only one of {JDB_MIN_AVAILABLE} and {JDB_MAX_UNAVAILABLE}",
            )
        )
    return errors


def _budget_errors(key: str, value: object) -> list[FieldError]:
    at = f"metadata.annotations[{key}]"
    text = value if isinstance(value, str) else ""
    if _COUNT.match(text):
        if int(text) > 0:
            return []
        return [FieldError(field=at, message=f"must be a positive integer, got {text!r}")]
    m = _PERCENT.match(text)
    if m and 1 <= int(m.group(1)) <= 99:
        return []
    return [
        FieldError(
            field=at, message=f"must be a positive integer or a percentage from 1% to 99%, got {shown(value)}"
        )
    ]


def mutate(obj: Obj, lookup: Lookup) -> list[PatchOp]:
    """The gang gate for a new pod of ours that belongs to a PodGroup; a workload's pod that names none
    is also given its workload's group name (see :mod:`extender.core.workloads`)."""
    if not lookup.scheduling_gates or not is_ours(obj, lookup):
        return []
    meta = mapping(obj, "metadata")
    workload_group = pod_group_name(meta) if not group_name(obj) else None
    if not group_name(obj) and not workload_group:
        return []
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or spec.get("nodeName"):
        return []
    ops: list[PatchOp] = []
    if workload_group:
        # The annotation Volcano's PodGroup controller would patch in later, here at creation (JSON
        # Pointer escapes the key's "/" as "~1").
        if not isinstance(meta.get("annotations"), Mapping):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        key = L.GROUP_NAME_ANNOTATION.replace("~", "~0").replace("/", "~1")
        ops.append({"op": "add", "path": f"/metadata/annotations/{key}", "value": workload_group})
    gate = {"name": L.GANG_SCHEDULING_GATE}
    gates = spec.get("schedulingGates")
    if gates is None:
        return [*ops, {"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
    if not isinstance(gates, list):
        return ops
    if any(isinstance(g, Mapping) and g.get("name") == L.GANG_SCHEDULING_GATE for g in gates):
        return ops
    return [*ops, {"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]
