"""The tasks of a vcjob spec and their numbers: the task list's shape, names (job, task and the pod names
they make), replicas and minAvailable (of each task and of the job) within pumice's replica limit,
partition policies, minSuccess, maxRetry and ttlSecondsAfterFinished.

Volcano sources matched: ``admit_job.go`` (task counts and names, pod name length, partition policy,
network topology) and the checks of its ValidatingAdmissionPolicy (replicas, minAvailable, maxRetry,
ttlSecondsAfterFinished, unique DNS-1123 task names). Counts are int32 as in Volcano's types. Each rule
reads raw JSON, never raises and reports every problem of its part (see :mod:`extender.jobs.rules`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from extender.api.limits import Limits
from extender.core.names import LABEL_RULE, MAX_NAME, is_label, is_qualified_name
from extender.core.validation import (
    INT32_MAX,
    FieldError,
    Obj,
    as_int,
    int_field,
    is_int,
    network_topology_errors,
    shown,
)
from extender.jobs.model import pod_name

RAISE_REPLICAS: Final = "or raise the limit with pumice serve --max-job-replicas N"
# A message lists at most this many task names: it is a line.
_LISTED_NAMES: Final = 10

# (index in spec.tasks, the task object) for every entry that is an object.
Tasks = list[tuple[int, Obj]]


# --- names --------------------------------------------------------------------------------------------------
def job_name_errors(name: str) -> list[FieldError]:
    """Volcano's validateJobName (IsQualifiedName). An empty name (``generateName``) is left to the server."""
    if not name:
        return []
    if len(name) > MAX_NAME:
        return [
            FieldError(
                field="metadata.name",
                message=f"must be at most {MAX_NAME} characters, got {len(name)}; "
                "pods are named <job>-<task>-<index>",
            )
        ]
    if not is_qualified_name(name):
        return [
            FieldError(
                field="metadata.name",
                message=f"must consist of letters, digits, '-', '_' or '.', starting and ending with a "
                f"letter or digit, got {shown(name)}",
            )
        ]
    return []


def task_list(spec: Obj) -> tuple[Tasks, list[FieldError]]:
    """The task objects of ``spec.tasks`` with the errors of its shape (at least one task, each an object)."""
    raw = spec.get("tasks")
    if raw is None or raw == []:
        return [], [FieldError(field="spec.tasks", message="must list at least one task")]
    if not isinstance(raw, list):
        return [], [FieldError(field="spec.tasks", message="must be a list of tasks")]
    tasks: Tasks = []
    errors: list[FieldError] = []
    for i, t in enumerate(raw):
        if isinstance(t, Mapping):
            tasks.append((i, t))
        else:
            errors.append(FieldError(field=f"spec.tasks[{i}]", message="must be an object"))
    return tasks, errors


def task_name_errors(tasks: Tasks) -> list[FieldError]:
    """Every task has a DNS-1123 label for a name (its pods' hostnames start with it), unique in the job."""
    errors: list[FieldError] = []
    first: dict[str, int] = {}
    for i, t in tasks:
        name = t.get("name")
        at = f"spec.tasks[{i}].name"
        if not is_label(name):
            errors.append(FieldError(field=at, message=f"{LABEL_RULE}, got {shown(name)}"))
        elif name in first:
            errors.append(
                FieldError(
                    field=at,
                    message=f"duplicate task name {name!r} (also spec.tasks[{first[name]}].name); "
                    "task names must be unique in a job",
                )
            )
        else:
            first[str(name)] = i
    return errors


def task_names(tasks: Tasks) -> dict[str, int]:
    """Valid task names and the index of their first task."""
    out: dict[str, int] = {}
    for i, t in tasks:
        name = t.get("name")
        if is_label(name):
            out.setdefault(str(name), i)
    return out


def pod_name_errors(job: str, tasks: Tasks) -> list[FieldError]:
    """The longest pod name of each task fits in 63 characters (Volcano checks each pod name the same way;
    it tries index = the task's position, we try the highest replica index, the name actually created)."""
    if not job or job_name_errors(job):
        return []
    errors: list[FieldError] = []
    for i, t in tasks:
        name, replicas = t.get("name"), as_int(t.get("replicas"))
        if not is_label(name):
            continue
        last = max(replicas - 1, 0) if replicas is not None and replicas <= INT32_MAX else 0
        pod = pod_name(job, str(name), last)
        if len(pod) > MAX_NAME:
            errors.append(
                FieldError(
                    field=f"spec.tasks[{i}].name",
                    message=f"pod name {pod!r} would be {len(pod)} characters, over the limit of {MAX_NAME} "
                    "for <job>-<task>-<index>; shorten the job or task name",
                )
            )
    return errors


# --- counts -------------------------------------------------------------------------------------------------
def count_errors(spec: Obj, tasks: Tasks, limits: Limits) -> list[FieldError]:
    """Replicas and minAvailable of tasks and job, partition policies, network topology: the numbers an
    update may change, within Volcano's rules and pumice's replica limit."""
    errors: list[FieldError] = []
    total: int | None = 0
    over = False  # a task alone is over the limit: the sum being over too says nothing new
    for i, t in tasks:
        at = f"spec.tasks[{i}]"
        replicas, bad_replicas = int_field(t, "replicas", at, 0)
        min_available, bad_min = int_field(t, "minAvailable", at, 0)
        errors += bad_replicas + bad_min
        if bad_replicas:
            total = None
        else:
            replicas = replicas or 0
            if total is not None:
                total += replicas
            if replicas > limits.max_replicas:
                over = True
                errors.append(
                    FieldError(
                        field=f"{at}.replicas",
                        message=f"{replicas} is more than the {limits.max_replicas} replicas pumice accepts "
                        f"per task; lower it, {RAISE_REPLICAS}",
                    )
                )
            if min_available is not None and min_available > replicas:
                errors.append(
                    FieldError(
                        field=f"{at}.minAvailable",
                        message=f"{min_available} is greater than replicas {replicas}; "
                        "lower minAvailable or raise replicas",
                    )
                )
        errors += _partition_errors(t, at, replicas, min_available)
    if total is not None and not over and total > limits.max_replicas:
        errors.append(
            FieldError(
                field="spec.tasks",
                message=f"the replicas of all tasks sum to {total}, more than the {limits.max_replicas} "
                f"pumice accepts per job; lower them, {RAISE_REPLICAS}",
            )
        )
    job_min, bad = int_field(spec, "minAvailable", "spec", 0)
    errors += bad
    if job_min is not None and total is not None and job_min > total:
        errors.append(
            FieldError(
                field="spec.minAvailable",
                message=f"{job_min} is greater than the {total} replicas of all tasks; "
                "lower minAvailable or add replicas",
            )
        )
    errors += network_topology_errors(spec.get("networkTopology"), "spec.networkTopology")
    return errors


def _partition_errors(
    task: Obj, task_at: str, replicas: int | None, min_available: int | None
) -> list[FieldError]:
    """Volcano's validatePartitionPolicy: replicas = totalPartitions * partitionSize and, when minPartitions
    is set, minAvailable = minPartitions * partitionSize."""
    raw = task.get("partitionPolicy")
    if raw is None:
        return []
    at = f"{task_at}.partitionPolicy"
    if not isinstance(raw, Mapping):
        return [FieldError(field=at, message="must be an object")]
    errors: list[FieldError] = []
    for key in ("totalPartitions", "partitionSize"):
        if raw.get(key) is None:
            errors.append(FieldError(field=f"{at}.{key}", message="required; an integer >= 1"))
    total, e1 = int_field(raw, "totalPartitions", at, 1)
    size, e2 = int_field(raw, "partitionSize", at, 1)
    min_parts, e3 = int_field(raw, "minPartitions", at, 0)
    errors += e1 + e2 + e3
    if total is not None and size is not None:
        if replicas is not None and replicas != total * size:
            errors.append(
                FieldError(
                    field=f"{task_at}.replicas",
                    message=f"must equal partitionPolicy.totalPartitions * partitionSize "
                    f"({total} * {size} = {total * size}), got {replicas}",
                )
            )
        if min_parts and min_available is not None and min_available != min_parts * size:
            errors.append(
                FieldError(
                    field=f"{task_at}.minAvailable",
                    message=f"must equal partitionPolicy.minPartitions * partitionSize "
                    f"({min_parts} * {size} = {min_parts * size}), got {min_available}",
                )
            )
    return errors + network_topology_errors(raw.get("networkTopology"), f"{at}.networkTopology")


def scalar_errors(spec: Obj, tasks: Tasks) -> list[FieldError]:
    """minSuccess, maxRetry (job and tasks) and ttlSecondsAfterFinished."""
    errors: list[FieldError] = []
    min_success, e = int_field(spec, "minSuccess", "spec", 1)
    errors += e
    replicas = [t.get("replicas", 0) for _, t in tasks]
    if min_success is not None and all(is_int(r) and r >= 0 for r in replicas):
        total = sum(replicas)
        if min_success > total:
            errors.append(
                FieldError(
                    field="spec.minSuccess",
                    message=f"{min_success} is greater than the {total} replicas of all tasks; "
                    "lower minSuccess or add replicas",
                )
            )
    errors += int_field(spec, "maxRetry", "spec", 0)[1]
    errors += int_field(spec, "ttlSecondsAfterFinished", "spec", 0)[1]
    for i, t in tasks:
        errors += int_field(t, "maxRetry", f"spec.tasks[{i}]", 0)[1]
    return errors


def other_names(names: Mapping[str, int], own: object) -> str:
    """The task names a dependency or a plugin may name, at most :data:`_LISTED_NAMES` of them (a message
    is a line; and it is built once per unknown name, so it must not cost a pass over thousands of tasks)."""
    total = len(names) - (1 if isinstance(own, str) and own in names else 0)
    if total <= 0:
        return "none"
    listed: list[str] = []
    for n in names:
        if n != own:
            listed.append(n)
            if len(listed) == _LISTED_NAMES:
                break
    text = ", ".join(listed)
    return text if total <= _LISTED_NAMES else f"{text}, ... {total} in all"
