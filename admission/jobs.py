"""Volcano Job admission (``batch.volcano.sh/v1alpha1`` ``jobs``, "vcjob"): defaults on CREATE, checks on
CREATE and UPDATE.

mutate: :func:`admission.job_defaults.mutate` (Volcano's ``mutate_job.go``).

validate, CREATE (Volcano's ``validateJobCreate`` plus the rules it moved to its ValidatingAdmissionPolicy):
the job name, every rule of :mod:`admission.job_rules` (tasks, counts, pod templates, policies,
dependsOn, plugins, volumes), and the queue: it exists, is Open, is not ``root`` and is a leaf (jobs run
in leaf queues only). An absent queue means the default queue, as the mutating webhook would have set.

validate, UPDATE (Volcano's ``validateJobUpdate``): the counts again (replicas, minAvailable, partition
policies, network topology), the same number of tasks, and nothing else in ``spec`` changed except
``minAvailable``, ``priorityClassName``, ``tasks[*].replicas`` and ``tasks[*].minAvailable`` (and a
``volumeClaimName`` beside a ``volumeClaim``, which the job controller fills in). As Kubernetes'
semantic equality does, a field that is absent, null or empty reads the same. The queue is not re-checked:
a queue closed after the job was admitted must not block scaling it. DELETE is not registered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from admission import job_rules as R
from admission.base import FieldError, Obj, mapping, name_of
from admission.job_defaults import mutate
from admission.lookup import Lookup
from admission.podgroups import queue_errors
from extender.api import labels as L

__all__ = ["MUTABLE_FIELDS", "mutate", "validate"]

MUTABLE_FIELDS: Final = (
    "spec.minAvailable",
    "spec.priorityClassName",
    "spec.tasks[*].replicas",
    "spec.tasks[*].minAvailable",
)
_MUTABLE_SPEC: Final = frozenset({"minAvailable", "priorityClassName"})
_MUTABLE_TASK: Final = frozenset({"replicas", "minAvailable"})


def validate(new: Obj | None, old: Obj | None, lookup: Lookup) -> list[FieldError]:
    """Why this Job write must be refused; empty when it may proceed."""
    if new is None:
        return []
    raw_spec = new.get("spec")
    if not isinstance(raw_spec, Mapping):
        if raw_spec is None:
            return [FieldError(field="spec.tasks", message="must list at least one task")]
        return [FieldError(field="spec", message="must be an object")]
    if old is None:
        return _validate_create(new, raw_spec, lookup)
    return _validate_update(raw_spec, mapping(old, "spec"))


def _validate_create(job: Obj, spec: Obj, lookup: Lookup) -> list[FieldError]:
    name = name_of(job)
    tasks, errors = R.task_list(spec)
    errors = R.job_name_errors(name) + errors
    errors += _queue_errors(spec, lookup)
    errors += R.scalar_errors(spec, tasks)
    errors += R.task_name_errors(tasks)
    errors += R.pod_name_errors(name, tasks)
    errors += R.count_errors(spec, tasks)
    for i, task in tasks:
        errors += R.template_errors(task, f"spec.tasks[{i}]")
        errors += R.policy_errors(task.get("policies"), f"spec.tasks[{i}].policies")
    errors += R.dependency_errors(tasks)
    errors += R.policy_errors(spec.get("policies"), "spec.policies")
    errors += R.plugin_errors(spec, tasks)
    errors += R.volume_errors(spec.get("volumes"))
    return errors


def _queue_errors(spec: Obj, lookup: Lookup) -> list[FieldError]:
    """The PodGroup rules (exists, Open), and Volcano's for jobs: not root, a leaf."""
    name = spec.get("queue") or lookup.default_queue
    errors = queue_errors(spec, lookup, what="jobs")
    if errors or not isinstance(name, str):
        return errors
    if name == L.ROOT_QUEUE:
        return [FieldError(field="spec.queue", message="the root queue cannot run jobs; choose a leaf queue")]
    children = sorted(q.name for q in lookup.queue_children(name) if q.name != name)
    if children:
        errors.append(
            FieldError(
                field="spec.queue",
                message=f"queue {name!r} is not a leaf queue (it has child queues {', '.join(children)}); "
                "jobs run in leaf queues only, choose one of its children",
            )
        )
    return errors


def _validate_update(new: Obj, old: Obj) -> list[FieldError]:
    tasks, errors = R.task_list(new)
    errors += R.count_errors(new, tasks)
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
        for key in sorted(set(a) | set(b)):
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
