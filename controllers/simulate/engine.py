"""Trace mode: a discrete-event simulation of a trace under one scheduler conf.

Virtual time moves from event to event: a job's submission, its end, an injected failure, and the due
times the scheduler asks for (a fair window closing, an SLA deadline). At each the simulated cluster
(:mod:`controllers.simulate.cluster`) cycles until nothing changes. The simulation plays the job
controller:

- at submission, a trace job becomes a Volcano Job, and its PodGroup and pods are created as the job
  controller creates them (:mod:`controllers.simulate.jobs`);
- a job *starts* when its PodGroup turns ``Running`` (its gang is whole) and ends ``duration`` later:
  its pods and PodGroup are then deleted (finished jobs keep no cache entries); a job without a
  duration never ends. Where each pod went (node and GPU cards) is recorded when the job starts;
- with ``Trace.drop_unplaced`` (the openb replay's rule: a pod that fits nowhere is dropped), a job that
  has not started once the cycles of its submission are done is dropped: deleted, and counted so;
- an evicted pod (preempt, reclaim) is re-created at once if its job still has ``minAvailable`` pods
  bound; else the job restarts: every pod is deleted and created anew and the progress is lost, or kept
  with ``resume`` (the remaining duration then shrinks by what ran);
- a failure (``failures``) restarts the job the same way, progress lost.

Metrics are integrated over virtual time between events (see :mod:`controllers.simulate.metrics`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.simulate.cluster import EPOCH, SimCluster
from controllers.simulate.jobs import job_pod, job_podgroup
from controllers.simulate.metrics import Recorder, TraceResult
from controllers.simulate.trace import Trace, TraceJob
from extender.api import labels as L
from extender.core.gpus import (
    GPU_INDEX,
    GPU_MEMORY,
    GPU_NUMBER,
    VGPU_CORES,
    VGPU_IDS,
    VGPU_MEMORY,
    VGPU_NUMBER,
)
from extender.core.model import GroupKey, GroupPhase, PodUID, group_key
from extender.core.timestamps import rfc3339
from extender.jobs.model import Job, parse_job, podgroup_name
from extender.plugins.registry import SchedulerConf

Obj = dict[str, Any]

_SUBMIT, _FINISH, _FAIL = 0, 1, 2
GPU_ASKS = frozenset({GPU_MEMORY, GPU_NUMBER, VGPU_NUMBER, VGPU_MEMORY, VGPU_CORES})


@dataclass(slots=True)
class JobState:
    spec: TraceJob
    job: Job  # the vcjob the trace's job stands for
    key: GroupKey  # its PodGroup
    attempt: int = 0
    remaining: float | None = 0.0  # None: it never ends
    started: float | None = None  # this attempt's start (virtual seconds)
    first_start: float | None = None
    end: float | None = None
    restarts: int = 0
    evicted: int = 0
    queued_since: float = 0.0  # when this attempt began to wait
    waited: float = 0.0  # time spent waiting, over every attempt
    pods: dict[str, PodUID] = field(default_factory=dict)  # pod name -> uid of its current incarnation
    dropped: bool = False  # it could not start when it arrived (Trace.drop_unplaced)
    placements: list[Placement] = field(default_factory=list)  # every start's pods: where they went


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a pod of a job went when the job started: its node and the GPU cards it was given (the
    ``volcano.sh/gpu-index`` the scheduler wrote on it, or the vGPU ids; empty without cards)."""

    at: float
    pod: str
    node: str
    cards: str


def _resources(requests: Mapping[str, str]) -> Obj:
    """A container's resources: the requests, and GPU asks as limits too (Kubernetes requires limits of
    extended resources, and the deviceshare plugin reads a pod's GPU ask from its limits)."""
    limits = {k: v for k, v in requests.items() if k in GPU_ASKS}
    return {"requests": dict(requests), **({"limits": limits} if limits else {})}


def vcjob(job: TraceJob) -> Obj:
    """The Volcano Job a trace job stands for (one container per pod, asking for the task's requests;
    where its pods may go in the task template, as a user writes it)."""
    # What users declare goes on the pods as on a cluster, where the starvation guard (``reserveAfter``)
    # reads when their nodes free up and the forecast how long they run.
    runtime_note: Obj = (
        {}
        if job.expected_runtime is None
        else {"metadata": {"annotations": {L.EXPECTED_RUNTIME_ANNOTATION: f"{job.expected_runtime:.3f}s"}}}
    )
    spec: Obj = {
        "minAvailable": job.min_available,
        "queue": job.queue,
        "schedulerName": "volcano",
        "tasks": [
            {
                "name": t.name,
                "replicas": t.replicas,
                **({} if t.min_available is None else {"minAvailable": t.min_available}),
                "template": {
                    **runtime_note,
                    "spec": {
                        "containers": [{"name": "main", "image": "sim", "resources": _resources(t.requests)}],
                        **t.placement,
                    },
                },
            }
            for t in job.tasks
        ],
    }
    if job.priority_class:
        spec["priorityClassName"] = job.priority_class
    if job.network_topology is not None:
        spec["networkTopology"] = dict(job.network_topology)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job.name, "namespace": job.namespace, "uid": f"{job.namespace}.{job.name}"},
        "spec": spec,
    }


class TraceRun:
    def __init__(
        self,
        trace: Trace,
        conf: SchedulerConf,
        *,
        resume: bool = False,
        until: float | None = None,
        progress: Callable[[float], None] = lambda _t: None,
    ) -> None:
        self.trace = trace
        self.resume = resume
        self.until = until
        self.progress = progress
        self.cluster = SimCluster(conf, now=EPOCH, on_evicted=self._evicted)
        self.jobs: dict[GroupKey, JobState] = {}
        self._events: list[
            tuple[float, int, int, GroupKey, int]
        ] = []  # (time, order, kind, job key, attempt)
        self._order = 0
        self._t = 0.0
        self._stamped: tuple[float, str] = (float("nan"), "")  # (virtual time, its timestamp)
        for pool in trace.pools:
            for i in range(pool.count):
                labels = pool.node_labels(i)
                self.cluster.add(_node(pool.node_name(i), pool.allocatable, labels, pool.taints))
        for obj in (*trace.queues, *trace.priority_classes):
            self.cluster.add(obj)
        self.priorities = {pc["metadata"]["name"]: int(pc["value"]) for pc in trace.priority_classes}
        for tj in trace.jobs:
            job = parse_job(vcjob(tj))
            key = group_key(job.namespace, podgroup_name(job))
            self.jobs[key] = JobState(
                spec=tj, job=job, key=key, remaining=tj.duration, queued_since=tj.submit
            )
            self._push(tj.submit, _SUBMIT, key, 0)
        self.recorder = Recorder(self.cluster, trace)

    @property
    def t(self) -> float:
        """Virtual seconds since the trace began (kept apart from the epoch clock: no rounding)."""
        return self._t

    def _push(self, at: float, kind: int, key: GroupKey, attempt: int) -> None:
        self._order += 1
        heapq.heappush(self._events, (at, self._order, kind, key, attempt))

    def _stamp(self) -> str:
        """The current virtual time as an RFC 3339 timestamp (what creationTimestamp holds), made once
        per time (an event creates a PodGroup and every replica's pod at the same time)."""
        now = self.cluster.now
        if self._stamped[0] != now:
            self._stamped = (now, rfc3339(now))
        return self._stamped[1]

    # --- the job controller ----------------------------------------------------------------------------
    def _create_pod(self, js: JobState, task: str, index: int) -> None:
        uid = f"{js.job.uid}-{task}-{index}.{js.attempt}"
        pod = job_pod(js.job, task, index, uid=uid, created=self._stamp(), priorities=self.priorities)
        js.pods[pod["metadata"]["name"]] = PodUID(uid)
        self.cluster.add(pod)

    def _create_pods(self, js: JobState) -> None:
        for task in js.job.tasks:
            for i in range(task.replicas):
                self._create_pod(js, task.name, i)

    def _delete_pods(self, js: JobState) -> None:
        for uid in js.pods.values():
            self.cluster.delete_pod(uid)
        js.pods = {}

    def _submit(self, js: JobState) -> None:
        self.cluster.add(job_podgroup(js.job, self._stamp()))
        self._create_pods(js)
        self.recorder.submitted(js)

    def _restart(self, js: JobState, *, keep_progress: bool) -> None:
        if js.started is not None and js.remaining is not None:
            ran = self.t - js.started
            js.remaining = max(js.remaining - ran, 0.0) if keep_progress else js.spec.duration
        js.started = None
        js.queued_since = self.t
        js.attempt += 1
        js.restarts += 1
        self._delete_pods(js)
        self._create_pods(js)
        self.recorder.waiting.add(js.key)

    def _evicted(self, uid: PodUID, raw: Obj) -> None:
        meta = raw["metadata"]
        ann = meta["annotations"]
        js = self.jobs.get(group_key(meta["namespace"], ann[L.GROUP_NAME_ANNOTATION]))
        if js is None or js.pods.get(meta["name"]) != uid:
            return
        js.evicted += 1
        del js.pods[meta["name"]]
        bound = sum(
            1 for u in js.pods.values() if (p := self.cluster.cache.pod(u)) is not None and p.node_name
        )
        if js.started is not None and bound < js.spec.min_available:
            self._restart(js, keep_progress=self.resume)
            return
        self._create_pod(js, ann[L.TASK_SPEC_ANNOTATION], int(ann[L.TASK_INDEX_KEY]))

    def _started(self) -> None:
        """Jobs whose gang turned whole since the last look."""
        for key in sorted(self.recorder.waiting):  # a set: sorted, so same-time finishes queue in one order
            js = self.jobs[key]
            if js.started is None and self.cluster.phase(key) == GroupPhase.RUNNING:
                js.started = self.t
                js.waited += self.t - js.queued_since
                if js.first_start is None:
                    js.first_start = self.t
                js.placements.extend(self._where(js))
                if js.remaining is not None:
                    self._push(self.t + js.remaining, _FINISH, key, js.attempt)
                if js.attempt < len(js.spec.failures):
                    self._push(self.t + js.spec.failures[js.attempt], _FAIL, key, js.attempt)
                self.recorder.started(js)

    def _where(self, js: JobState) -> list[Placement]:
        out = []
        for name, uid in sorted(js.pods.items()):
            pod, raw = self.cluster.cache.pod(uid), self.cluster.pods.get(uid)
            if pod is not None and raw is not None and pod.node_name:
                ann = raw["metadata"].get("annotations") or {}
                cards = ann.get(GPU_INDEX) or ann.get(VGPU_IDS) or ""
                out.append(Placement(at=self.t, pod=name, node=pod.node_name, cards=str(cards)))
        return out

    def _drop(self, arrived: list[JobState]) -> None:
        """The jobs that arrived in this step and could not start: gone, as the openb replay drops them."""
        for js in arrived:
            if js.started is None and js.end is None and not js.dropped:
                js.dropped = True
                self._delete_pods(js)
                self.cluster.delete_podgroup(js.key)
                self.recorder.dropped(js)

    def _handle(self, kind: int, js: JobState, attempt: int) -> None:
        if kind == _SUBMIT:
            self._submit(js)
        elif attempt != js.attempt or js.started is None:
            return  # an event of an attempt that was restarted since
        elif kind == _FINISH:
            js.end = self.t
            self._delete_pods(js)
            self.cluster.delete_podgroup(js.key)
            self.recorder.finished(js)
        elif kind == _FAIL:
            self._restart(js, keep_progress=False)

    # --- the loop --------------------------------------------------------------------------------------
    def run(self) -> TraceResult:
        while True:
            next_event = self._events[0][0] if self._events else None
            due = None if self.cluster.due is None else round(self.cluster.due - EPOCH, 6)
            candidates = [x for x in (next_event, due) if x is not None]
            if not candidates:
                break
            t = max(min(candidates), self.t)
            if self.until is not None and t > self.until:
                break
            self.recorder.advance(t)
            self._t = t
            self.cluster.now = EPOCH + t
            arrived: list[JobState] = []
            while self._events and self._events[0][0] <= t:
                _, _, kind, key, attempt = heapq.heappop(self._events)
                self._handle(kind, self.jobs[key], attempt)
                if kind == _SUBMIT:
                    arrived.append(self.jobs[key])
            self.cluster.settle()
            self._started()
            if self.trace.drop_unplaced:
                self._drop(arrived)
            self.recorder.sample(t)
            self.progress(t)
        return self.recorder.result(self.jobs.values())


def _node(name: str, allocatable: Any, labels: Any, taints: Any) -> Obj:
    alloc = {"pods": "110", **allocatable}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {"taints": [dict(t) for t in taints]} if taints else {},
        "status": {"allocatable": alloc, "capacity": alloc},
    }
