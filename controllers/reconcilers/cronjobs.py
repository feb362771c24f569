"""The CronJob controller (``batch.volcano.sh/v1alpha1`` ``cronjobs``): starts a vcjob per schedule time,
keeps ``status.active``/``lastScheduleTime``/``lastSuccessfulTime``, enforces the concurrency policy and the
history limits. The decisions are :func:`extender.flows.cron.reconcile`'s (Kubernetes' CronJob semantics).

It watches CronJobs and shares the process's Job watch. A CronJob is looked at when it or one of its jobs
changes, and again just after its next schedule time (the plan's ``requeue_after``). The job of a run has a
name fixed by its schedule time, so a restart between the create and the status write is refused (409) by
the API server rather than run twice; the status write carries the CronJob's resourceVersion.

The clock is injectable (``clock``): tests drive it; production uses the wall clock.
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
from controllers.reconcilers.watched import meta as _meta
from controllers.reconcilers.watched import namespace as _ns
from controllers.reconcilers.watched import newer as _newer
from controllers.reconcilers.watched import sync_contained
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.flows.cron import CRONJOB_KIND, CronPlan, CronWorld, parse_cronjob, reconcile
from extender.flows.model import controller_name, controller_uid

log = logging.getLogger(__name__)
Obj = dict[str, Any]

CRONJOBS_PATH = paths.CRONJOBS.collection()
FANOUT = 16


def _cron_of(job: Mapping[str, Any]) -> str | None:
    name = controller_name(job, kind=CRONJOB_KIND, group=L.BATCH_GROUP)
    return f"{_ns(job)}/{name}" if name else None


class CronJobController:
    def __init__(
        self,
        client: KubeClient,
        *,
        workers: int = 2,
        clock: Callable[[], float] = time.time,
        events: EventRecorder | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.workers = workers
        self.clock = clock
        self.events = events
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.cronjobs: dict[str, Obj] = {}
        self.jobs: dict[str, dict[str, Obj]] = {}  # cronjob key -> job name -> job
        self.synced = {"cronjobs": False, "jobs": False}
        self.stats = {"reconciles": 0, "conflicts": 0, "errors": 0, "jobs_created": 0, "jobs_deleted": 0}

    @property
    def ready(self) -> bool:
        return all(self.synced.values())

    def handlers(self) -> dict[str, Handler]:
        return {
            "cronjobs": Handler(self._replace_cronjobs, self._upsert_cronjob, self._remove_cronjob),
            "jobs": Handler(self._replace_jobs, self._upsert_job, self._remove_job),
        }

    def _mark(self, name: str) -> None:
        self.synced[name] = True
        if self.ready:
            for key in self.cronjobs:
                self.queue.add(key)

    def _upsert_cronjob(self, obj: Obj) -> None:
        key = object_key(obj)
        if _newer(obj, self.cronjobs.get(key)):
            self.cronjobs[key] = obj
            self.queue.add(key)

    def _remove_cronjob(self, obj: Obj) -> None:
        self.cronjobs.pop(object_key(obj), None)

    def _replace_cronjobs(self, objs: Sequence[Obj]) -> None:
        self.cronjobs = {}
        for o in objs:
            self._upsert_cronjob(o)
        self._mark("cronjobs")

    def _upsert_job(self, obj: Obj) -> None:
        key = _cron_of(obj)
        if key is None:
            return
        jobs = self.jobs.setdefault(key, {})
        name = str(_meta(obj).get("name"))
        if _newer(obj, jobs.get(name)):
            jobs[name] = obj
            self.queue.add(key)

    def _remove_job(self, obj: Obj) -> None:
        key = _cron_of(obj)
        if key is None:
            return
        jobs = self.jobs.get(key, {})
        name = str(_meta(obj).get("name"))
        if name in jobs and _meta(jobs[name]).get("uid") == _meta(obj).get("uid"):
            del jobs[name]
        if not jobs:
            self.jobs.pop(key, None)
        self.queue.add(key)

    def _replace_jobs(self, objs: Sequence[Obj]) -> None:
        self.jobs = {}
        for o in objs:
            self._upsert_job(o)
        self._mark("jobs")

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self.queue.work(self._sync_contained), name=f"cronjob-worker-{i}")

    async def _sync_contained(self, key: str) -> None:
        if self.ready:
            await sync_contained(self.queue, key, self.sync, self.stats, "CronJob")

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref.of(obj, api_version=paths.CRONJOBS.api_version, kind=CRONJOB_KIND)
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Sync")

    async def sync(self, key: str) -> None:
        obj = self.cronjobs.get(key)
        if obj is None:
            return  # its jobs go with it through their owner references
        try:
            cj = parse_cronjob(obj)
        except InvalidObject as e:
            self._event(obj, "Warning", "InvalidSpec", str(e))
            return
        jobs = [
            j
            for j in self.jobs.get(key, {}).values()
            if controller_uid(j, kind=CRONJOB_KIND, group=L.BATCH_GROUP) == cj.uid
        ]
        self.stats["reconciles"] += 1
        plan = reconcile(CronWorld(cronjob=cj, jobs=jobs, now=self.clock()))
        await self.perform(key, obj, cj.namespace, cj.name, plan)

    async def perform(self, key: str, obj: Obj, ns: str, name: str, plan: CronPlan) -> None:
        for type_, reason, note in plan.events:
            self._event(obj, type_, reason, note)
        if plan.delete_jobs:
            await bounded([self._delete_job(ns, n) for n in plan.delete_jobs], FANOUT)
        if plan.create_job is not None:
            try:
                created = await self.client.post(paths.JOBS.collection(ns), plan.create_job)
                self._upsert_job(created)
                self.stats["jobs_created"] += 1
                log.info(
                    "cronjob run started", extra={"cronjob": key, "job": plan.create_job["metadata"]["name"]}
                )
            except ApiError as e:
                if e.status != 409:
                    raise
        if plan.status is not None:
            body = {
                "metadata": {"resourceVersion": _meta(obj).get("resourceVersion")},
                "status": merge_patch(obj.get("status") or {}, plan.status),
            }
            self._upsert_cronjob(
                await self.client.merge_patch(paths.CRONJOBS.status(name, namespace=ns), body)
            )
        if plan.requeue_after is not None:
            self.queue.add_after(key, plan.requeue_after)

    async def _delete_job(self, ns: str, name: str) -> None:
        path = paths.JOBS.item(name, namespace=ns)
        await ignore_404(self.client.request("DELETE", path, body={"propagationPolicy": "Background"}))
        self.stats["jobs_deleted"] += 1
