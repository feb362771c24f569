"""Defaults for a new Volcano Job (``/jobs/mutate``, CREATE), as Volcano's ``mutate_job.go`` sets them.

In Volcano's order: ``spec.queue`` (the default queue), ``spec.schedulerName`` (ours), ``spec.maxRetry`` 3
when absent or 0; per task: ``name`` ``default<index>`` when empty, ``template.spec.dnsPolicy``
``ClusterFirstWithHostNet`` with ``hostNetwork`` and no DNS policy, ``minAvailable`` (``minPartitions *
partitionSize`` with a partition policy that sets ``minPartitions``, else ``replicas``) when absent,
``maxRetry`` 3 when absent or 0; then ``spec.minAvailable``, when absent or 0, the sum of the tasks'
(defaulted) ``minAvailable``; then the ``svc`` plugin for tensorflow, pytorch, mpi and ray jobs and the
``ssh`` plugin for mpi jobs.

Volcano replaces ``/spec/tasks`` and ``/spec/plugins`` wholesale; we add single fields, so what we did not
default stays byte for byte as the user wrote it. A default that would not fit Volcano's int32 counts is
not set (validation refuses the numbers it would come from). Volcano's webhook does not set the pod
templates' ``schedulerName`` (the job controller copies the job's onto every pod) and no longer adds mpi's
``dependsOn`` (commented out upstream until dependsOn works with gangs); neither do we. A value of the wrong
type is left alone for validation to report.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from admission.base import PatchOp, pointer
from admission.lookup import Lookup
from extender.api import labels as L
from extender.core.validation import INT32_MAX, Obj, as_int, is_int, mapping
from extender.jobs.model import DEFAULT_MAX_RETRY, DEFAULT_TASK_NAME

HOST_NETWORK_DNS_POLICY: Final = "ClusterFirstWithHostNet"
# Job plugins that need the svc plugin's headless Service and hosts files (Volcano's list).
NEEDS_SVC: Final = ("tensorflow", "pytorch", "mpi", "ray")
NEEDS_SSH: Final = ("mpi",)


def default_scheduler(lookup: Lookup) -> str:
    """``volcano`` when it is one of our names, else the first of them (Volcano takes its first name)."""
    names = lookup.scheduler_names
    if not names or L.DEFAULT_SCHEDULER_NAME in names:
        return L.DEFAULT_SCHEDULER_NAME
    return sorted(names)[0]


def _zero_or_absent(obj: Obj, key: str) -> bool:
    v = obj.get(key)
    return v is None or (is_int(v) and v == 0)


def mutate(obj: Obj, lookup: Lookup) -> list[PatchOp]:
    """The defaults a new Job lacks, as JSONPatch ``add`` operations."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return []  # validation reports the missing tasks
    ops: list[PatchOp] = []
    if not spec.get("queue"):
        ops.append({"op": "add", "path": "/spec/queue", "value": lookup.default_queue})
    if not spec.get("schedulerName"):
        ops.append({"op": "add", "path": "/spec/schedulerName", "value": default_scheduler(lookup)})
    if _zero_or_absent(spec, "maxRetry"):
        ops.append({"op": "add", "path": "/spec/maxRetry", "value": DEFAULT_MAX_RETRY})
    task_ops, task_min = _task_defaults(spec.get("tasks"))
    ops += task_ops
    if (
        _zero_or_absent(spec, "minAvailable")
        and task_min is not None
        and task_min != spec.get("minAvailable")
    ):
        ops.append({"op": "add", "path": "/spec/minAvailable", "value": task_min})
    ops += _plugin_defaults(spec.get("plugins"))
    return ops


def _task_defaults(tasks: object) -> tuple[list[PatchOp], int | None]:
    """Per-task defaults, and the sum of the tasks' minAvailable after them (None if it cannot be known)."""
    if not isinstance(tasks, list):
        return [], None
    ops: list[PatchOp] = []
    total: int | None = 0
    for i, task in enumerate(tasks):
        if not isinstance(task, Mapping):
            total = None
            continue
        at = pointer("spec", "tasks", str(i))
        if not task.get("name"):
            ops.append({"op": "add", "path": f"{at}/name", "value": f"{DEFAULT_TASK_NAME}{i}"})
        pod_spec = mapping(mapping(task, "template"), "spec")
        if pod_spec.get("hostNetwork") is True and not pod_spec.get("dnsPolicy"):
            ops.append(
                {"op": "add", "path": f"{at}/template/spec/dnsPolicy", "value": HOST_NETWORK_DNS_POLICY}
            )
        min_available = as_int(task.get("minAvailable"))
        if task.get("minAvailable") is None:
            min_available = _default_min_available(task)
            if min_available is not None:
                ops.append({"op": "add", "path": f"{at}/minAvailable", "value": min_available})
        if _zero_or_absent(task, "maxRetry"):
            ops.append({"op": "add", "path": f"{at}/maxRetry", "value": DEFAULT_MAX_RETRY})
        if total is not None and min_available is not None:
            total += min_available
        else:
            total = None
    return ops, _count(total)


def _default_min_available(task: Obj) -> int | None:
    partition = mapping(task, "partitionPolicy")
    min_parts, size = as_int(partition.get("minPartitions")), as_int(partition.get("partitionSize"))
    if min_parts is not None and min_parts > 0 and size is not None:
        return _count(min_parts * size)
    return _count(as_int(task.get("replicas", 0)))


def _count(n: int | None) -> int | None:
    """``n`` when it is a count Volcano's int32 fields can hold; None (no default: validation reports the
    numbers it came from) otherwise, so a patch never carries a number no JSON decoder reads back."""
    return n if n is not None and 0 <= n <= INT32_MAX else None


def _plugin_defaults(plugins: object) -> list[PatchOp]:
    if not isinstance(plugins, Mapping):
        return []
    ops: list[PatchOp] = []
    if any(p in plugins for p in NEEDS_SVC) and "svc" not in plugins:
        ops.append({"op": "add", "path": pointer("spec", "plugins", "svc"), "value": []})
    if any(p in plugins for p in NEEDS_SSH) and "ssh" not in plugins:
        ops.append({"op": "add", "path": pointer("spec", "plugins", "ssh"), "value": []})
    return ops
