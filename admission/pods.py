"""Pod admission (core ``v1`` ``pods``, CREATE only) for pods whose ``spec.schedulerName`` is ours.

Pods of any other scheduler are admitted untouched before anything else is read: this webhook sees every
pod creation in the cluster and must stay cheap (and it is registered with ``failurePolicy: Ignore``).

validate mirrors Volcano's current pod webhook: the disruption-budget annotations
``volcano.sh/jdb-min-available`` and ``volcano.sh/jdb-max-unavailable`` are each a positive integer or a
percentage from 1% to 99%, and at most one of them is set. (Older Volcano releases also refused a pod whose
PodGroup was missing or Pending; Volcano dropped that because controllers may create pods before their group.)

mutate: with scheduling gates available (Kubernetes >= 1.27) a pod that names a PodGroup through
``scheduling.k8s.io/group-name`` or ``scheduling.volcano.sh/group-name`` gets the ``pumice.dev/gang`` gate,
so it stays out of kube-scheduler's queue until its whole gang is planned. As Volcano does for its own gate:
never twice, appended (``/-``) when the list exists so other webhooks' gates survive. Bound pods are skipped,
the API server refuses gates on them. Volcano's config-driven "resource group" mutations are not mirrored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from admission.base import FieldError, Obj, PatchOp, annotations_of, mapping, string
from admission.lookup import Lookup
from extender.api import labels as L

JDB_MIN_AVAILABLE: Final = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE: Final = "volcano.sh/jdb-max-unavailable"
_BUDGET_KEYS: Final = (JDB_MIN_AVAILABLE, JDB_MAX_UNAVAILABLE)
_COUNT = re.compile(r"^\d+$")
_PERCENT = re.compile(r"^(\d+)%$")


def is_ours(obj: Obj, lookup: Lookup) -> bool:
    return string(mapping(obj, "spec"), "schedulerName") in lookup.scheduler_names


def group_name(obj: Obj) -> str:
    """The PodGroup a pod names, by either of Volcano's annotations (the Kubernetes one first)."""
    ann = annotations_of(obj)
    for key in (L.GROUP_NAME_ANNOTATION, L.GROUP_NAME_ANNOTATION_VOLCANO):
        v = ann.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def validate(new: Obj | None, old: Obj | None, lookup: Lookup) -> list[FieldError]:
    """Why this pod must not be created; empty when it may."""
    if new is None or not is_ours(new, lookup):
        return []
    ann = annotations_of(new)
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
            field=at, message=f"must be a positive integer or a percentage from 1% to 99%, got {value!r}"
        )
    ]


def mutate(obj: Obj, lookup: Lookup) -> list[PatchOp]:
    """The gang gate for a new pod of ours that belongs to a PodGroup."""
    if not lookup.scheduling_gates or not is_ours(obj, lookup) or not group_name(obj):
        return []
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or spec.get("nodeName"):
        return []
    gate = {"name": L.GANG_SCHEDULING_GATE}
    gates = spec.get("schedulingGates")
    if gates is None:
        return [{"op": "add", "path": "/spec/schedulingGates", "value": [gate]}]
    if not isinstance(gates, list):
        return []
    if any(isinstance(g, Mapping) and g.get("name") == L.GANG_SCHEDULING_GATE for g in gates):
        return []
    return [{"op": "add", "path": "/spec/schedulingGates/-", "value": gate}]
