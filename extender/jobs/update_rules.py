"""What an UPDATE of a vcjob may change, as Volcano's ``admit_job.go`` validateJobUpdate allows: the same
number of tasks, and in ``spec`` nothing but :data:`MUTABLE_FIELDS` (and a ``volumeClaimName`` beside a
``volumeClaim``, which the job controller fills in).

Comparison follows Kubernetes' semantic equality of typed fields: a field that is absent, null, ``""``,
``[]`` or ``{}`` reads as unset, except inside Go maps (labels, plugins, resource lists), where an entry
with an empty value is still an entry. The comparison walks both specs recursively, so both must be within
the nesting limit (:func:`extender.core.validation.depth_errors`); the caller checks that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from extender.core.validation import FieldError, Obj

# What an update may change (Volcano's validateJobUpdate).
MUTABLE_FIELDS: Final = (
    "spec.minAvailable",
    "spec.priorityClassName",
    "spec.tasks[*].replicas",
    "spec.tasks[*].minAvailable",
)
_MUTABLE_SPEC: Final = frozenset({"minAvailable", "priorityClassName"})
_MUTABLE_TASK: Final = frozenset({"replicas", "minAvailable"})


def update_errors(new: Obj, old: Obj) -> list[FieldError]:
    """Volcano's validateJobUpdate on two specs: the same number of tasks, and nothing changed except
    :data:`MUTABLE_FIELDS` (and a ``volumeClaimName`` beside a ``volumeClaim``, which the job controller
    fills in). As Kubernetes' semantic equality does, a field that is absent, null or empty reads the same.
    Both specs must be within the nesting limit (the comparison walks them)."""
    errors: list[FieldError] = []
    new_tasks, old_tasks = new.get("tasks"), old.get("tasks")
    n_new = len(new_tasks) if isinstance(new_tasks, list) else 0
    n_old = len(old_tasks) if isinstance(old_tasks, list) else 0
    if n_new != n_old:
        errors.append(
            FieldError(
                field="spec.tasks",
                message=f"tasks cannot be added to or removed from a job (it had {n_old}, now {n_new})",
            )
        )
    changed = _changed_fields(new, old, compare_tasks=n_new == n_old)
    if changed:
        errors.append(
            FieldError(
                field="spec",
                message=f"{', '.join(changed)} cannot change after the job is created; "
                f"only {', '.join(MUTABLE_FIELDS)} can",
            )
        )
    return errors


def _changed_fields(new: Obj, old: Obj, *, compare_tasks: bool) -> list[str]:
    """Paths of the immutable spec fields that differ: top-level keys, and per task its keys."""
    new_n, old_n = _comparable(new), _comparable(old)
    changed: list[str] = []
    for key in sorted(set(new_n) | set(old_n)):
        if key in _MUTABLE_SPEC or new_n.get(key) == old_n.get(key):
            continue
        if key == "tasks" and compare_tasks:
            changed += _changed_task_fields(new_n["tasks"], old_n["tasks"])
        elif key != "tasks":
            changed.append(f"spec.{key}")
    return changed


def _changed_task_fields(new: object, old: object) -> list[str]:
    if not isinstance(new, list) or not isinstance(old, list):
        return ["spec.tasks"]
    changed: list[str] = []
    for i, (a, b) in enumerate(zip(new, old, strict=True)):
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            if a != b:
                changed.append(f"spec.tasks[{i}]")
            continue
        for key in sorted(set(a) | set(b), key=str):
            if key not in _MUTABLE_TASK and a.get(key) != b.get(key):
                changed.append(f"spec.tasks[{i}].{key}")
    return changed


def _comparable(spec: Obj) -> dict[str, object]:
    """``spec`` with empty values dropped and the controller-filled ``volumeClaimName`` masked."""
    out = _pruned_map(spec)
    volumes = out.get("volumes")
    if isinstance(volumes, list):
        out["volumes"] = [
            {k: x for k, x in v.items() if k != "volumeClaimName"}
            if isinstance(v, dict) and "volumeClaim" in v
            else v
            for v in volumes
        ]
    return out


# Fields that are Go maps, not structs: an entry with an empty value is still an entry.
_MAP_FIELDS: Final = frozenset(
    {"plugins", "labels", "annotations", "nodeSelector", "matchLabels", "requests", "limits", "data"}
)
_EMPTY: Final[tuple[object, ...]] = (None, "", [], {})


def _pruned_map(value: Mapping[str, object], *, keep_empty: bool = False) -> dict[str, object]:
    """Kubernetes' semantic equality of typed fields: an absent, null, "", [] or {} struct field is unset."""
    out = {str(k): _pruned(v, map_field=str(k) in _MAP_FIELDS) for k, v in value.items()}
    return {k: v for k, v in out.items() if v is not None and (keep_empty or v not in _EMPTY)}


def _pruned(value: object, *, map_field: bool = False) -> object:
    if isinstance(value, Mapping):
        return _pruned_map(value, keep_empty=map_field)
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value
