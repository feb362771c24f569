"""The CronJob controller (``batch.volcano.sh/v1alpha1`` ``cronjobs``): starts a vcjob per schedule time,
keeps ``status.active``/``lastScheduleTime``/``lastSuccessfulTime``, enforces the concurrency policy and the
history limits. The decisions are :func:`extender.flows.cron.reconcile`'s (Kubernetes' CronJob semantics).

It reads CronJobs and their vcjobs (by controlling CronJob) from the store of watched objects
(:mod:`controllers.state.store`). A CronJob is looked at when it or one of its jobs changes, and again just
after its next schedule time (the plan's ``requeue_after``). The job of a run has a name fixed by its
schedule time, so a restart between the create and the status write is refused (409) by the API server
rather than run twice; the status write carries the CronJob's resourceVersion, and its
response is kept only while the CronJob is still there.

The clock is injectable (``clock``): tests drive it; production uses the wall clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, ignore_404
from controllers.reconcilers.watched import merge_patch, sync_contained
from controllers.state.indexes import CRONJOB, cronjob_of
from controllers.state.meta import read_meta
from controllers.state.store import Change, ObjectStore, Subscription
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.flows.cron import CRONJOB_KIND, CronPlan, CronWorld, parse_cronjob, reconcile

log = logging.getLogger(__name__)
Obj = dict[str, Any]

CRONJOBS_PATH = paths.CRONJOBS.collection()
FANOUT = 16


KINDS: Final = frozenset({"cronjobs", "jobs"})


class CronJobController:
    def __init__(
        self,
        client: KubeClient,
        store: ObjectStore,
        *,
        workers: int = 2,
        clock: Callable[[], float] = time.time,
        events: EventRecorder | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.store = store
        self.workers = workers
        self.clock = clock
        self.events = events
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.stats = {"reconciles": 0, "conflicts": 0, "errors": 0, "jobs_created": 0, "jobs_deleted": 0}
        store.subscribe(Subscription(kinds=KINDS, changed=self._changed, listed=self._listed))

    @property
    def ready(self) -> bool:
        return self.store.listed(*KINDS)

    def _changed(self, change: Change) -> None:
        if change.kind == "cronjobs":
            if change.new is not None:  # a deleted CronJob's jobs go with it through their owner references
                self.queue.add(change.key)
            return
        for s in (change.old, change.new):
            key = cronjob_of(s) if s is not None else None
            if key is not None:
                self.queue.add(key)

    def _listed(self, _kind: str) -> None:
        if self.ready:
            for key in self.store.keys("cronjobs"):
                self.queue.add(key)

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
        held = self.store.get("cronjobs", key)
        if held is None:
            return  # its jobs go with it through their owner references
        obj = held.obj
        try:
            cj = parse_cronjob(obj)
        except InvalidObject as e:
            self._event(obj, "Warning", "InvalidSpec", str(e))
            return
        jobs = [
            j.obj
            for j in self.store.indexed("jobs", CRONJOB, key)
            if (ref := j.meta.owner(CRONJOB_KIND, L.BATCH_GROUP, controller=True)) is not None
            and ref.uid == cj.uid
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
                self.store.fetched("jobs", created)
                self.stats["jobs_created"] += 1
                log.info(
                    "cronjob run started", extra={"cronjob": key, "job": plan.create_job["metadata"]["name"]}
                )
            except ApiError as e:
                if e.status != 409:
                    raise
        if plan.status is not None:
            body = {
                "metadata": {"resourceVersion": read_meta(obj).resource_version or None},
                "status": merge_patch(obj.get("status") or {}, plan.status),
            }
            path = paths.CRONJOBS.status(name, namespace=ns)
            self.store.written("cronjobs", await self.client.merge_patch(path, body))
        if plan.requeue_after is not None:
            self.queue.add_after(key, plan.requeue_after)

    async def _delete_job(self, ns: str, name: str) -> None:
        path = paths.JOBS.item(name, namespace=ns)
        await ignore_404(self.client.request("DELETE", path, body={"propagationPolicy": "Background"}))
        self.stats["jobs_deleted"] += 1
