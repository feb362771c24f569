"""The JobFlow controller: creates each flow's vcjobs from its JobTemplates in dependency order, keeps the
flow's status, runs its HTTP/TCP dependency probes, deletes its jobs per ``jobRetainPolicy``.

It reads JobFlows, JobTemplates, vcjobs and pods from the store of watched objects
(:mod:`controllers.state.store`: jobs by controlling JobFlow, pods by their job-name label, flows and
templates by namespace) and is told of their changes. Every change marks a flow dirty: a job change marks
the flow that controls the job, a pod change the flows probing its job, a template change the flows of its
namespace that name it. Workers take dirty flows one at
a time per flow, run the pure reconcile (:mod:`extender.flows.reconcile`) and perform its plan: probes
started (they re-queue the flow when they answer), jobs created (409, already there, counts as done), the
status written with the flow's resourceVersion (409: run again on fresh data; the response is kept only
while the flow is still there, so a flow deleted meanwhile is not brought back), jobs deleted.

Restart safety: job names are ``<flow>-<template>`` and the reconcile reads which exist from the watch of
jobs the flow controls, so a restart (or a stale cache) can only make the API server refuse a second
create. A flow deleted (watch DELETED) has its jobs deleted, as the garbage collector would through their
owner references (clusters without one, such as the e2e control plane, get the same result); a job whose
owner reference was removed (``kubectl delete --cascade=orphan``) is kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, ignore_404
from controllers.reconcilers.probes import ProbeRunner
from controllers.reconcilers.watched import merge_patch, sync_contained
from controllers.state.indexes import JOB_LABEL, JOBFLOW, NAMESPACE, job_label, jobflow_of
from controllers.state.meta import read_meta
from controllers.state.pod_facts import pod_facts
from controllers.state.store import Change, ObjectStore, Stored, Subscription
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.flows.dag import graph_problems
from extender.flows.model import JOBFLOW_KIND, JobFlow, parse_jobflow
from extender.flows.probes import RESULT_TTL, PodEndpoint
from extender.flows.reconcile import FlowPlan, FlowWorld, reconcile

log = logging.getLogger(__name__)
Obj = dict[str, Any]

JOBFLOWS_PATH = paths.JOBFLOWS.collection()
JOBTEMPLATES_PATH = paths.JOBTEMPLATES.collection()
FANOUT = 16


KINDS: Final = frozenset({"jobflows", "jobtemplates", "jobs", "pods"})


def _endpoint(pod: Stored) -> PodEndpoint:
    facts = pod.pod if pod.pod is not None else pod_facts(pod.obj, pod.meta.annotations)
    return PodEndpoint(
        name=pod.meta.name,
        task=facts.task,
        ip=facts.ip,
        phase="Terminating" if pod.meta.deleting else facts.phase,
    )


def _controller_uid(job: Stored) -> str | None:
    ref = job.meta.owner(JOBFLOW_KIND, L.FLOW_GROUP, controller=True)
    return ref.uid if ref is not None else None


class Templates(Mapping[str, Mapping[str, Obj]]):
    """The store's JobTemplates as namespace -> name -> template, read when asked."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def __getitem__(self, namespace: str) -> Mapping[str, Obj]:
        found = {t.meta.name: t.obj for t in self._store.indexed("jobtemplates", NAMESPACE, namespace)}
        if not found:
            raise KeyError(namespace)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._store.index_values("jobtemplates", NAMESPACE))

    def __len__(self) -> int:
        return len(self._store.index_values("jobtemplates", NAMESPACE))


class FlowController:
    def __init__(
        self,
        client: KubeClient,
        store: ObjectStore,
        *,
        workers: int = 4,
        clock: Callable[[], float] = time.time,
        events: EventRecorder | None = None,
        probes: ProbeRunner | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.store = store
        self.workers = workers
        self.clock = clock
        self.events = events
        self.probes = probes or ProbeRunner(clock=clock)
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.deleted: dict[str, str] = {}  # flow key -> UID, for flows seen deleted
        self.waiting: dict[str, set[str]] = {}  # "ns/job" of a probe target -> flows waiting on it
        self.stats = {"reconciles": 0, "conflicts": 0, "errors": 0, "jobs_created": 0, "jobs_deleted": 0}
        store.subscribe(Subscription(kinds=KINDS, changed=self._changed, listed=self._listed))

    @property
    def ready(self) -> bool:
        return self.store.listed(*KINDS)

    @property
    def templates(self) -> Templates:
        """JobTemplates by namespace, then name (admission asks whether a flow's templates exist)."""
        return Templates(self.store)

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    # --- what the store tells ------------------------------------------------------------------------------
    def _changed(self, change: Change) -> None:
        if change.kind == "jobflows":
            if change.new is not None:
                self.enqueue(change.key)
            elif not change.listed and change.old is not None:  # deleted: its jobs go (sync)
                self.deleted[change.key] = change.old.meta.uid
                self.enqueue(change.key)
        elif change.kind == "jobtemplates":
            if change.new is not None:
                self._template_changed(change.new)
        elif change.kind == "jobs":
            for s in (change.old, change.new):
                flow = jobflow_of(s) if s is not None else None
                if flow is not None:
                    self.enqueue(flow)
        else:  # pods: the flows probing their job
            for s in (change.old, change.new):
                job = job_label(s) if s is not None else None
                for flow in self.waiting.get(job or "", ()):
                    self.enqueue(flow)

    def _listed(self, _kind: str) -> None:
        if self.ready:
            for key in self.store.keys("jobflows"):
                self.enqueue(key)

    def _template_changed(self, template: Stored) -> None:
        ns = template.meta.namespace or "default"
        for flow in self.store.indexed("jobflows", NAMESPACE, ns):
            spec = flow.obj.get("spec")
            entries = spec.get("flows") if isinstance(spec, Mapping) else None
            if any(isinstance(e, Mapping) and e.get("name") == template.meta.name for e in (entries or ())):
                self.enqueue(flow.meta.key)

    # --- workers -------------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self.queue.work(self._sync_contained), name=f"flow-worker-{i}")
            for i in range(self.probes.concurrency):
                tg.create_task(self.probes.work(), name=f"flow-probe-{i}")

    async def _sync_contained(self, key: str) -> None:
        if self.ready:
            await sync_contained(self.queue, key, self.sync, self.stats, "JobFlow")

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref.of(obj, api_version=paths.JOBFLOWS.api_version, kind=JOBFLOW_KIND)
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Sync")

    def world(self, flow: JobFlow) -> FlowWorld:
        key = f"{flow.namespace}/{flow.name}"
        mine = {
            j.meta.name: j.obj
            for j in self.store.indexed("jobs", JOBFLOW, key)
            if _controller_uid(j) == flow.uid
        }
        wanted = {flow.job_name(e.name) for e in flow.flows}
        foreign = frozenset(
            n for n in wanted if n not in mine and self.store.get("jobs", f"{flow.namespace}/{n}") is not None
        )
        targets = {flow.job_name(t) for e in flow.flows for t in e.targets if not e.probe.empty}
        pods = {
            n: [_endpoint(p) for p in self.store.indexed("pods", JOB_LABEL, f"{flow.namespace}/{n}")]
            for n in targets
        }
        return FlowWorld(
            flow=flow,
            templates=self.templates.get(flow.namespace, {}),
            jobs=mine,
            foreign=foreign,
            pods=pods,
            results=self.probes.results,
            now=self.clock(),
        )

    async def sync(self, key: str) -> None:
        held = self.store.get("jobflows", key)
        gone = self.deleted.get(key)
        if gone is not None and (held is None or held.meta.uid != gone):
            # The flow was deleted (and maybe made again under the same name): its jobs go first, so the
            # new flow does not find them in the way of its own.
            await self._cleanup(key, gone)
            self.deleted.pop(key, None)
        if held is None:
            return
        obj = held.obj
        try:
            flow = parse_jobflow(obj)
        except InvalidObject as e:
            self._event(obj, "Warning", "InvalidSpec", str(e))
            return
        problems = graph_problems(flow.flows)
        if problems:
            self._event(obj, "Warning", "InvalidSpec", "; ".join(f"{f}: {m}" for f, m in problems)[:1000])
            return
        self.stats["reconciles"] += 1
        plan = reconcile(self.world(flow))
        await self.perform(key, flow, obj, plan)

    async def perform(self, key: str, flow: JobFlow, obj: Obj, plan: FlowPlan) -> None:
        ns = flow.namespace
        for type_, reason, note in plan.events:
            self._event(obj, type_, reason, note)
        if plan.probes:
            self._start_probes(key, flow, plan)
        for job in plan.create_jobs:
            try:
                created = await self.client.post(paths.JOBS.collection(ns), job)
            except ApiError as e:
                if e.status == 409:
                    continue
                if e.status in (400, 403, 422):  # refused as written (admission, quota): tell the user
                    self._event(
                        obj, "Warning", "JobCreateFailed", f"job {job['metadata']['name']}: {e}"[:1000]
                    )
                raise
            self.store.fetched("jobs", created)
            self.stats["jobs_created"] += 1
            log.info("flow job created", extra={"flow": key, "job": job["metadata"]["name"]})
        if plan.status is not None:
            body = {
                "metadata": {"resourceVersion": read_meta(obj).resource_version or None},
                "status": merge_patch(obj.get("status") or {}, plan.status),
            }
            path = paths.JOBFLOWS.status(flow.name, namespace=ns)
            self.store.written("jobflows", await self.client.merge_patch(path, body))
            old = (obj.get("status") or {}).get("state", {}).get("phase")
            new = plan.status.get("state", {}).get("phase")
            if old != new:
                log.info("flow phase", extra={"flow": key, "from": old, "to": new})
        if plan.delete_jobs:
            log.info(
                "deleting flow jobs (jobRetainPolicy delete)",
                extra={"flow": key, "jobs": len(plan.delete_jobs)},
            )
            await bounded([self._delete_job(ns, n) for n in plan.delete_jobs], FANOUT)
        if plan.requeue_after is not None:
            self.queue.add_after(key, plan.requeue_after)

    def _start_probes(self, key: str, flow: JobFlow, plan: FlowPlan) -> None:
        for e in flow.flows:
            for t in e.targets:
                self.waiting.setdefault(f"{flow.namespace}/{flow.job_name(t)}", set()).add(key)
        self.probes.forget_older_than(self.clock() - 10 * RESULT_TTL)
        self.probes.submit(plan.probes, lambda: self.enqueue(key))

    async def _delete_job(self, ns: str, name: str) -> None:
        path = paths.JOBS.item(name, namespace=ns)
        await ignore_404(self.client.request("DELETE", path, body={"propagationPolicy": "Background"}))
        self.stats["jobs_deleted"] += 1

    async def _cleanup(self, key: str, uid: str) -> None:
        """The flow is gone: delete the jobs it still controls (what the garbage collector does)."""
        ns = key.split("/", 1)[0]
        names = [
            j.meta.name
            for j in self.store.indexed("jobs", JOBFLOW, key)
            if _controller_uid(j) == uid and not j.meta.deleting
        ]
        if names:
            log.info("deleting jobs of a deleted flow", extra={"flow": key, "jobs": len(names)})
        await bounded([self._delete_job(ns, n) for n in names], FANOUT)
        for waiting in self.waiting.values():
            waiting.discard(key)
