"""A job's pods: what the reconciler reads of an existing pod, and how a new one is built from its task.

New pods follow Volcano's job controller, so integrations that read its labels and annotations keep working:
name ``<job>-<task>-<index>``, the job's PodGroup in ``scheduling.k8s.io/group-name``, task, index, queue,
job version and retry count, the job's scheduler and priority class when the template names none, the job's
volumes, and a controller owner reference so the pods go with the job.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from extender.api import labels as L
from extender.core.maker import maker
from extender.core.model import PodPhase, pod_phase
from extender.core.timestamps import epoch
from extender.jobs.model import DEFAULT_TASK_NAME, Job, TaskSpec, pod_name, podgroup_name
from extender.jobs.plugins.base import JobPlugin, owner_reference
from extender.jobs.plugins.registry import apply_pod_plugins

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class PodView:
    """What the job reconciler needs of one existing pod."""

    name: str
    uid: str = ""
    task: str
    index: int = -1
    version: int = 0
    phase: PodPhase = PodPhase.PENDING
    deleting: bool = False
    created: float = 0.0
    exit_code: int | None = None
    evicted: bool = False
    restarts: int = 0
    ready: bool = False
    finished: float = 0.0

    @property
    def alive(self) -> bool:
        """Holds or may hold a node: not finished, not on its way out."""
        return not self.deleting and self.phase in (PodPhase.PENDING, PodPhase.RUNNING, PodPhase.UNKNOWN)


def _int(text: object, default: int) -> int:
    try:
        return int(str(text))
    except ValueError:
        return default


_make_view = maker(PodView)  # (PodView(**fields), sooner: made for every pod the store takes)


def view_pod(obj: Mapping[str, Any]) -> PodView:
    # (read for every pod the store takes, 100 000 at a cold restart: plain loops rather than generators,
    # each in the order the fields were always read, so an odd pod fails with the same error)
    meta = obj.get("metadata") or {}
    ann = meta.get("annotations") or {}
    status = obj.get("status") or {}
    phase = pod_phase(status.get("phase"))
    containers = status.get("containerStatuses") or []
    exit_code, finished = None, 0.0
    # Volcano reads the first container only; the first one that terminated also covers sidecars.
    for c in containers:
        term = (c.get("state") or {}).get("terminated") or (c.get("lastState") or {}).get("terminated")
        if term and term.get("exitCode") is not None:
            exit_code = int(term["exitCode"])
            finished = epoch(str(term.get("finishedAt") or ""))
            break
    evicted = status.get("reason") == "Evicted"
    if not evicted:
        for c in status.get("conditions") or []:
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True":
                evicted = True
                break
    restarts = 0
    for c in [*containers, *(status.get("initContainerStatuses") or [])]:
        restarts += int(c.get("restartCount") or 0)
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    task = sys.intern(
        str(ann.get(L.TASK_SPEC_ANNOTATION) or (meta.get("labels") or {}).get(L.TASK_SPEC_ANNOTATION) or "")
    )
    index, version = _int(ann.get(L.TASK_INDEX_KEY), -1), _int(ann.get(L.JOB_VERSION_KEY), 0)
    deleting = bool(meta.get("deletionTimestamp"))
    created = epoch(str(meta.get("creationTimestamp") or ""))
    ready = bool(containers)
    for c in containers:
        if not c.get("ready"):
            ready = False
            break
    return _make_view(
        {
            "name": name,
            "uid": uid,
            "task": task,
            "index": index,
            "version": version,
            "phase": phase,
            "deleting": deleting,
            "created": created,
            "exit_code": exit_code,
            "evicted": evicted,
            "restarts": restarts,
            "ready": ready,
            "finished": finished,
        }
    )


def _copied(value: Any) -> Any:
    """A deep copy of decoded JSON (dicts, lists, scalars) made by walking it; anything else is handed to
    ``copy.deepcopy``. The same copy for the templates pods are made of, without deepcopy's memo and
    dispatch per node (a pod per replica: the copy cost more than the rest of building the pod)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    if value is None or isinstance(value, str | int | float):  # (immutable: bool is an int)
        return value
    return copy.deepcopy(value)


def build_pod(job: Job, task: TaskSpec, index: int, plugins: Sequence[JobPlugin]) -> Obj:
    """A new pod for replica ``index`` of ``task``, with every plugin's edits applied."""
    template = _copied(dict(task.template))
    tmeta = template.get("metadata") or {}
    spec: Obj = template.get("spec") or {}
    name = pod_name(job.name, task.name, index)
    task_name = task.name or DEFAULT_TASK_NAME
    annotations = dict(tmeta.get("annotations") or {})
    labels = dict(tmeta.get("labels") or {})
    annotations.update(
        {
            L.TASK_INDEX_KEY: str(index),
            L.TASK_SPEC_ANNOTATION: task_name,
            L.GROUP_NAME_ANNOTATION: podgroup_name(job),
            L.JOB_NAME_KEY: job.name,
            L.VOLCANO_QUEUE_LABEL: job.queue,
            L.JOB_VERSION_KEY: str(job.status.version),
            L.JOB_RETRY_COUNT_KEY: str(job.status.retry_count),
            L.POD_TEMPLATE_KEY: f"{job.name}-{task_name}",
        }
    )
    if task.topology_policy:
        annotations["volcano.sh/numa-topology-policy"] = task.topology_policy
    for key in (L.PREEMPTABLE_ANNOTATION, "volcano.sh/cooldown-time", "volcano.sh/revocable-zone"):
        if key in job.annotations:
            annotations[key] = job.annotations[key]
    labels.update(
        {
            L.TASK_INDEX_KEY: str(index),
            L.JOB_NAME_KEY: job.name,
            L.TASK_SPEC_ANNOTATION: task_name,
            L.JOB_NAMESPACE_KEY: job.namespace,
            L.VOLCANO_QUEUE_LABEL: job.queue,
        }
    )
    if L.PREEMPTABLE_ANNOTATION in job.labels:
        labels[L.PREEMPTABLE_ANNOTATION] = job.labels[L.PREEMPTABLE_ANNOTATION]
    if task.partitions is not None:
        # Volcano's partition of replica ``index`` (0 when the size cannot be read).
        size = task.partitions.size
        labels[L.TASK_PARTITION_ID] = str(index // size if size > 0 else 0)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = job.scheduler_name
    if not spec.get("priorityClassName") and job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    _mount_job_volumes(job, spec)
    pod: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(job)],
        },
        "spec": spec,
    }
    apply_pod_plugins(plugins, pod, job, task, index)
    return pod


def _mount_job_volumes(job: Job, spec: Obj) -> None:
    """``spec.volumes`` of the job: each claim mounted into every container at its ``mountPath``. The
    volume name is derived from the claim (Volcano draws a random one; a stable name keeps pods alike)."""
    for i, v in enumerate(job.volumes):
        claim = str(v.get("volumeClaimName") or "")
        mount = str(v.get("mountPath") or "")
        if not claim or not mount:
            continue  # a volumeClaim template needs a PVC created first; not supported yet
        vol_name = f"{job.name}-volume-{i}"
        spec.setdefault("volumes", []).append(
            {"name": vol_name, "persistentVolumeClaim": {"claimName": claim}}
        )
        for c in spec.get("containers") or []:
            c.setdefault("volumeMounts", []).append({"name": vol_name, "mountPath": mount})
