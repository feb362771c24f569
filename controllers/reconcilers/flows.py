"""The JobFlow controller: creates each flow's vcjobs from its JobTemplates in dependency order, keeps the
flow's status, runs its HTTP/TCP dependency probes, deletes its jobs per ``jobRetainPolicy``.

It watches JobFlows and JobTemplates itself and shares the process's Job and Pod watches (fed through
:meth:`FlowController.handlers`). Every change marks a flow dirty: a job or pod event marks the flow that
controls the job, a template event the flows of its namespace that name it. Workers take dirty flows one at
a time per flow, run the pure reconcile (:mod:`extender.flows.reconcile`) and perform its plan: probes
started (they re-queue the flow when they answer), jobs created (409, already there, counts as done), the
status written with the flow's resourceVersion (409: run again on fresh data), jobs deleted.

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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, ignore_404, object_key
from controllers.kube.informer import Handler
from controllers.reconcilers.jobs import merge_patch
from controllers.reconcilers.probes import ProbeRunner
from controllers.reconcilers.watched import meta as _meta
from controllers.reconcilers.watched import namespace as _ns
from controllers.reconcilers.watched import newer as _newer
from controllers.reconcilers.watched import sync_contained
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.flows.dag import graph_problems
from extender.flows.model import JOBFLOW_KIND, JobFlow, controller_name, controller_uid, parse_jobflow
from extender.flows.probes import RESULT_TTL, PodEndpoint
from extender.flows.reconcile import FlowPlan, FlowWorld, reconcile

log = logging.getLogger(__name__)
Obj = dict[str, Any]

JOBFLOWS_PATH = paths.JOBFLOWS.collection()
JOBTEMPLATES_PATH = paths.JOBTEMPLATES.collection()
FANOUT = 16


def _flow_of(job: Mapping[str, Any]) -> str | None:
    name = controller_name(job, kind=JOBFLOW_KIND, group=L.FLOW_GROUP)
    return f"{_ns(job)}/{name}" if name else None


def _endpoint(pod: Mapping[str, Any]) -> PodEndpoint:
    meta = _meta(pod)
    ann = meta.get("annotations")
    st = pod.get("status")
    st = st if isinstance(st, Mapping) else {}
    task = ann.get(L.TASK_SPEC_ANNOTATION) if isinstance(ann, Mapping) else None
    return PodEndpoint(
        name=str(meta.get("name")),
        task=task if isinstance(task, str) else "",
        ip=str(st.get("podIP") or ""),
        phase="Terminating" if meta.get("deletionTimestamp") else str(st.get("phase") or "Pending"),
    )


class FlowController:
    def __init__(
        self,
        client: KubeClient,
        *,
        workers: int = 4,
        clock: Callable[[], float] = time.time,
        events: EventRecorder | None = None,
        probes: ProbeRunner | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.workers = workers
        self.clock = clock
        self.events = events
        self.probes = probes or ProbeRunner(clock=clock)
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.flows: dict[str, Obj] = {}
        self.templates: dict[str, dict[str, Obj]] = {}  # namespace -> name -> JobTemplate
        self.jobs: dict[str, dict[str, Obj]] = {}  # flow key -> job name -> job it controls
        self.job_names: set[str] = set()  # every job, "ns/name" (a foreign job of a flow job's name)
        self.pods: dict[str, dict[str, PodEndpoint]] = {}  # "ns/job" -> pod name -> endpoint
        self.deleted: dict[str, str] = {}  # flow key -> UID, for flows seen deleted
        self.waiting: dict[str, set[str]] = {}  # "ns/job" of a probe target -> flows waiting on it
        self.synced = {"jobflows": False, "jobtemplates": False, "jobs": False, "pods": False}
        self.stats = {"reconciles": 0, "conflicts": 0, "errors": 0, "jobs_created": 0, "jobs_deleted": 0}

    @property
    def ready(self) -> bool:
        return all(self.synced.values())

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    # --- informer handlers ------------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {
            "jobflows": Handler(self._replace_flows, self._upsert_flow, self._remove_flow),
            "jobtemplates": Handler(self._replace_templates, self._upsert_template, self._remove_template),
            "jobs": Handler(self._replace_jobs, self._upsert_job, self._remove_job),
            "pods": Handler(self._replace_pods, self._upsert_pod, self._remove_pod),
        }

    def _mark(self, name: str) -> None:
        self.synced[name] = True
        if self.ready:
            for key in self.flows:
                self.enqueue(key)

    def _upsert_flow(self, obj: Obj) -> None:
        key = object_key(obj)
        if _newer(obj, self.flows.get(key)):
            self.flows[key] = obj
            self.enqueue(key)

    def _remove_flow(self, obj: Obj) -> None:
        key = object_key(obj)
        self.flows.pop(key, None)
        self.deleted[key] = str(_meta(obj).get("uid") or "")
        self.enqueue(key)

    def _replace_flows(self, objs: Sequence[Obj]) -> None:
        self.flows = {}
        for o in objs:
            self._upsert_flow(o)
        self._mark("jobflows")

    def _template_changed(self, obj: Obj) -> None:
        ns, name = _ns(obj), str(_meta(obj).get("name"))
        for key, flow in self.flows.items():
            spec = flow.get("spec")
            entries = spec.get("flows") if isinstance(spec, Mapping) else None
            if key.startswith(f"{ns}/") and any(
                isinstance(e, Mapping) and e.get("name") == name for e in (entries or ())
            ):
                self.enqueue(key)

    def _upsert_template(self, obj: Obj) -> None:
        self.templates.setdefault(_ns(obj), {})[str(_meta(obj).get("name"))] = obj
        self._template_changed(obj)

    def _remove_template(self, obj: Obj) -> None:
        self.templates.get(_ns(obj), {}).pop(str(_meta(obj).get("name")), None)

    def _replace_templates(self, objs: Sequence[Obj]) -> None:
        self.templates = {}
        for o in objs:
            self._upsert_template(o)
        self._mark("jobtemplates")

    def _upsert_job(self, obj: Obj) -> None:
        self.job_names.add(object_key(obj))
        flow = _flow_of(obj)
        if flow is None:
            return
        jobs = self.jobs.setdefault(flow, {})
        name = str(_meta(obj).get("name"))
        if _newer(obj, jobs.get(name)):
            jobs[name] = obj
            self.enqueue(flow)

    def _remove_job(self, obj: Obj) -> None:
        self.job_names.discard(object_key(obj))
        flow = _flow_of(obj)
        if flow is None:
            return
        jobs = self.jobs.get(flow, {})
        name = str(_meta(obj).get("name"))
        if name in jobs and _meta(jobs[name]).get("uid") == _meta(obj).get("uid"):
            del jobs[name]
        self.enqueue(flow)

    def _replace_jobs(self, objs: Sequence[Obj]) -> None:
        self.jobs, self.job_names = {}, set()
        for o in objs:
            self._upsert_job(o)
        self._mark("jobs")

    def _upsert_pod(self, obj: Obj) -> None:
        labels = _meta(obj).get("labels")
        job = labels.get(L.JOB_NAME_KEY) if isinstance(labels, Mapping) else None
        if not isinstance(job, str):
            return
        key = f"{_ns(obj)}/{job}"
        self.pods.setdefault(key, {})[str(_meta(obj).get("name"))] = _endpoint(obj)
        for flow in self.waiting.get(key, ()):
            self.enqueue(flow)

    def _remove_pod(self, obj: Obj) -> None:
        labels = _meta(obj).get("labels")
        job = labels.get(L.JOB_NAME_KEY) if isinstance(labels, Mapping) else None
        if isinstance(job, str):
            pods = self.pods.get(f"{_ns(obj)}/{job}", {})
            pods.pop(str(_meta(obj).get("name")), None)
            if not pods:
                self.pods.pop(f"{_ns(obj)}/{job}", None)

    def _replace_pods(self, objs: Sequence[Obj]) -> None:
        self.pods = {}
        for o in objs:
            self._upsert_pod(o)
        self._mark("pods")

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
        mine: dict[str, Obj] = {}
        for name, job in self.jobs.get(key, {}).items():
            if controller_uid(job, kind=JOBFLOW_KIND, group=L.FLOW_GROUP) == flow.uid:
                mine[name] = job
        wanted = {flow.job_name(e.name) for e in flow.flows}
        foreign = frozenset(n for n in wanted if n not in mine and f"{flow.namespace}/{n}" in self.job_names)
        targets = {flow.job_name(t) for e in flow.flows for t in e.targets if not e.probe.empty}
        pods = {n: list(self.pods.get(f"{flow.namespace}/{n}", {}).values()) for n in targets}
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
        obj = self.flows.get(key)
        gone = self.deleted.get(key)
        if gone is not None and (obj is None or _meta(obj).get("uid") != gone):
            # The flow was deleted (and maybe made again under the same name): its jobs go first, so the
            # new flow does not find them in the way of its own.
            await self._cleanup(key, gone)
            self.deleted.pop(key, None)
        if obj is None:
            return
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
            self._upsert_job(created)
            self.stats["jobs_created"] += 1
            log.info("flow job created", extra={"flow": key, "job": job["metadata"]["name"]})
        if plan.status is not None:
            body = {
                "metadata": {"resourceVersion": _meta(obj).get("resourceVersion")},
                "status": merge_patch(obj.get("status") or {}, plan.status),
            }
            self._upsert_flow(
                await self.client.merge_patch(paths.JOBFLOWS.status(flow.name, namespace=ns), body)
            )
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
            n
            for n, j in self.jobs.get(key, {}).items()
            if controller_uid(j, kind=JOBFLOW_KIND, group=L.FLOW_GROUP) == uid
            and not _meta(j).get("deletionTimestamp")
        ]
        if names:
            log.info("deleting jobs of a deleted flow", extra={"flow": key, "jobs": len(names)})
        await bounded([self._delete_job(ns, n) for n in names], FANOUT)
        for waiting in self.waiting.values():
            waiting.discard(key)
