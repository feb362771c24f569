"""The vcjob controller: keeps each Volcano Job's PodGroup, pods, plugin objects and status as its spec says.

It reads Jobs, Commands, pods and PodGroups from the store of watched objects (:mod:`controllers.state.store`:
pods and PodGroups by owning vcjob, Commands by target job) and is told of their changes: every change
marks a job dirty; workers take dirty jobs one at a time per job (never two workers on the same job), run
the pure reconcile (:mod:`extender.jobs.reconcile`) over what the store holds of the job
(:mod:`controllers.reconcilers.job_world`) and perform its plan (:mod:`controllers.reconcilers.job_writes`).

Restart safety: the status write carries the job's resourceVersion, so a reconcile that read a stale job
fails with 409 and runs again on fresh data instead of applying an action twice; the object the API server
returns replaces the stored one at once (unless the job was deleted meanwhile: the watch's DELETE can come
first, and the response must not bring the job back). Pod names are deterministic, so a pod created twice
is refused (409) rather than duplicated.

Containment: a job's pods are deleted only on the job's own deletion (its watch DELETED event, or a GET or a
status write that answers 404) or by a decision of its state machine, never because a LIST did not show
it. A job pumice cannot read, or whose sync fails, is that job's problem: its status and an Event say why,
it is retried with per-job exponential backoff, and every other job carries on.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from controllers.events import EventRecorder, Ref
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient, UnreadableResponse
from controllers.reconcilers.job_ssh import ssh_key
from controllers.reconcilers.job_world import job_world
from controllers.reconcilers.job_writes import JobWrites
from controllers.state.indexes import target_job, vcjob_of
from controllers.state.store import Change, ObjectStore, RawView, Stored, Subscription
from controllers.workqueue import WorkQueue
from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.jobs.model import Job, parse_job, placeholder_job
from extender.jobs.plugins.base import PluginContext
from extender.jobs.reconcile import INVALID_SPEC, Plan, World, reconcile

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# What the Job and Command informers watch (every namespace).
JOBS_PATH: Final = paths.JOBS.collection()
COMMANDS_PATH: Final = paths.COMMANDS.collection()
KINDS: Final = frozenset({"jobs", "commands", "pods", "podgroups"})


class JobController:
    def __init__(
        self,
        client: KubeClient,
        store: ObjectStore,
        *,
        scheduler_names: frozenset[str],
        workers: int = 16,
        clock: Callable[[], float] = time.time,
        group_phase: Callable[[str, str], str | None] = lambda _ns, _name: None,
        validate: Callable[[Mapping[str, Any]], list[str]] = lambda _obj: [],
        events: EventRecorder | None = None,
        max_backoff: float = 300.0,
    ) -> None:
        self.client = client
        self.store = store
        self.scheduler_names = scheduler_names
        self.workers = workers
        self.clock = clock
        # The scheduler's in-memory phase of a PodGroup: pods can be created as soon as it admits the
        # group, without waiting for the status write and its watch event to come round.
        self.group_phase = group_phase
        # Every problem of a job object as admission would word it (pure; see extender.jobs.rules).
        self.validate = validate
        self.events = events
        # Jobs seen deleted in the watch: only these (or a GET answering 404) have their pods cleaned up.
        self.deleted: set[str] = set()
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=max_backoff)
        self.ssh_keys: dict[str, PluginContext] = {}
        self.stats = {
            "reconciles": 0,
            "conflicts": 0,
            "errors": 0,
            "invalid": 0,
            "pods_created": 0,
            "pods_deleted": 0,
        }
        self.writes = JobWrites(client, store, event=self._event, stats=self.stats)
        store.subscribe(
            Subscription(kinds=KINDS, changed=self._changed, listed=self._listed, unreadable=self._unreadable)
        )

    @property
    def jobs(self) -> RawView:
        """The jobs the store holds, by ``namespace/name``."""
        return self.store.raw("jobs")

    @property
    def unreadable(self) -> Mapping[str, Stored]:
        """Jobs that exist but cannot be read (metadata only): left alone, reported."""
        return self.store.unreadable("jobs")

    # --- queue ---------------------------------------------------------------------------------------------
    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def _enqueue_later(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    @property
    def ready(self) -> bool:
        return self.store.listed(*KINDS)

    # --- what the store tells ------------------------------------------------------------------------------
    def _changed(self, change: Change) -> None:
        if change.kind == "jobs":
            if change.new is not None:
                self.deleted.discard(change.key)
            elif not change.listed:  # deleted (a LIST that misses a job proves nothing: sync GETs it)
                self.deleted.add(change.key)
                if change.old is not None:
                    self.writes.applied.pop(change.old.meta.uid, None)
                    self.ssh_keys.pop(change.old.meta.uid, None)
            self.enqueue(change.key)  # a deletion cleans up what the garbage collector would, if one runs
        elif change.kind == "commands":
            job = target_job(change.new) if change.new is not None else None
            if job is not None:  # a Command's removal is its being carried out: nothing to do
                self.enqueue(job)
        else:  # pods and PodGroups: the job they belong to
            for s in (change.old, change.new):
                job = vcjob_of(s) if s is not None else None
                if job is not None:
                    self.enqueue(job)

    def _listed(self, _kind: str) -> None:
        if self.ready:
            for key in self.store.keys("jobs"):
                self.enqueue(key)

    def _unreadable(self, _kind: str, metas: Sequence[Stored]) -> None:
        for m in metas:
            self.stats["invalid"] += 1
            self._event(
                m.obj,
                "Warning",
                "Unreadable",
                "pumice cannot decode this job (nesting too deep?); fix or delete it",
            )
            log.error("unreadable job", extra={"job": m.meta.key})

    def group_admitted(self, key: str) -> None:
        """A PodGroup (``namespace/name``) changed phase in the scheduler: its job may create pods now."""
        pg = self.store.get("podgroups", key)
        job = vcjob_of(pg) if pg is not None else None
        if job is not None:
            self.enqueue(job)

    # --- workers -------------------------------------------------------------------------------------------
    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self._worker(), name=f"job-worker-{i}")

    async def _worker(self) -> None:
        await self.queue.work(self._sync_contained)

    async def _sync_contained(self, key: str) -> None:
        if not self.ready:
            return  # _listed re-queues every job once all kinds are listed
        try:
            await self.sync(key)
            self.queue.forget(key)
        except asyncio.CancelledError:
            raise
        except ApiError as e:
            if e.status == 409:  # a stale read: run again at once on fresh data
                self.stats["conflicts"] += 1
                self._enqueue_later(key, 0.05)
            else:
                self._failed(key, e, str(e))
        except (OSError, TimeoutError) as e:
            self._failed(key, e, repr(e))
        except Exception as e:  # a bug or an object we did not foresee: this job's problem only
            log.exception("job sync raised", extra={"job": key})
            self._failed(key, e, f"internal error: {type(e).__name__}: {e}")

    def _failed(self, key: str, error: BaseException, why: str) -> None:
        """Count, log, tell the job's owner (an Event), and retry with per-job exponential backoff."""
        self.stats["errors"] += 1
        delay = self.queue.backoff(key)
        n = self.queue.failures[key]
        log.warning("job sync failed", extra={"job": key, "error": why, "attempt": n, "retry_s": delay})
        held = self.store.get("jobs", key)
        if held is not None and not isinstance(error, ApiError | OSError | TimeoutError):
            note = f"{why[:400]} (attempt {n}; retrying in {delay:g}s)"
            self._event(held.obj, "Warning", "SyncFailed", note)
        self._enqueue_later(key, delay)

    def _event(self, obj: Mapping[str, Any], type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref.of(obj, api_version=paths.JOBS.api_version, kind=L.JOB_KIND)
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Sync")

    def world(self, key: str, job: Job, problems: Sequence[str] = ()) -> World:
        """What the pure reconcile sees of job ``key`` (see :mod:`controllers.reconcilers.job_world`)."""
        return job_world(
            self.store,
            key,
            job,
            now=self.clock(),
            gang_admission=job.scheduler_name in self.scheduler_names,
            plugin_context=self.ssh_keys.get(job.uid, PluginContext()),
            group_phase=self.group_phase,
            problems=problems,
        )

    async def sync(self, key: str) -> None:
        held = self.store.get("jobs", key)
        if held is None:
            if key in self.unreadable:
                return  # it exists; what we cannot read we do not act on
            if key in self.deleted or await self._confirmed_gone(key):
                await self.writes.cleanup(key)
                self.deleted.discard(key)
            return
        obj = held.obj
        problems = self.validate(obj)
        job: Job | None
        try:
            job = parse_job(obj)
        except InvalidObject as e:
            problems = problems or [str(e)]
            job = placeholder_job(obj)  # identity and status only: enough to say why in its status
        if job is None:
            log.warning("job without a usable name", extra={"job": key})
            return
        if not problems and "ssh" in job.plugins and job.uid not in self.ssh_keys:
            try:
                self.ssh_keys[job.uid] = await ssh_key(self.client, job)
            except InvalidObject as e:
                problems = [str(e)]
        self.stats["reconciles"] += 1
        if problems:
            self.stats["invalid"] += 1
        plan = reconcile(self.world(key, job, problems))
        await self.perform(key, job, obj, plan, warn=bool(problems))

    async def _confirmed_gone(self, key: str) -> bool:
        """Whether the API server says job ``key`` does not exist (404). A job a LIST did not show may
        still exist: the LIST may have been cut short or unreadable."""
        ns, name = key.split("/", 1)
        try:
            obj = await self.client.get(paths.JOBS.item(name, namespace=ns))
        except UnreadableResponse:
            self.store.record_unreadable("jobs", {"metadata": {"namespace": ns, "name": name}})
            return False
        except ApiError as e:
            if e.status == 404:
                return True
            raise
        self.store.fetched("jobs", obj)
        return False

    async def perform(self, key: str, job: Job, obj: Obj, plan: Plan, *, warn: bool = False) -> None:
        for message in plan.events:
            log.log(
                logging.WARNING if warn else logging.INFO, "job event", extra={"job": key, "detail": message}
            )
            # Problems of the spec are Warnings on the job; other plan events (a dropped Command) Normal.
            self._event(obj, "Warning" if warn else "Normal", INVALID_SPEC if warn else "JobEvent", message)
        if plan.status is not None:
            try:
                await self.writes.status(key, job, Stored.of(obj), plan.status)
            except ApiError as e:
                if e.status == 404 and await self._confirmed_gone(key):
                    # Deleted while we looked at it (the watch has not said so yet): clean up as for a
                    # deletion, rather than retry a write to an object that is gone.
                    self.deleted.add(key)
                    self.store.gone("jobs", key)
                    self.enqueue(key)
                    return
                raise
        await self.writes.rest(key, job, plan)
        if plan.requeue_after is not None:
            self._enqueue_later(key, plan.requeue_after + 0.05)
