"""Status writers for PodGroups and Queues: level-triggered, patch only on difference; PodGroup Events.

Each pass recomputes the desired status of every PodGroup that changed since the last pass (its pods, the
object, its plans or its reason: the pending set tells; every PodGroup on the first pass and after a
re-list) and of every Queue, from a snapshot of those groups (pure, in :mod:`extender.core.status`),
compares it with what the API server last showed us, and merge-patches the status subresource where they
differ: a pass costs what changed. What we last wrote is remembered until the watch echoes it, so a
slow echo does not cause a second identical write; a failed write is retried on the next pass.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from controllers.events import EventRecorder, Ref
from controllers.fanout import bounded
from controllers.kube import paths
from controllers.kube.client import ApiError
from controllers.scheduling.executor import Executor
from controllers.scheduling.shared import SchedulingState
from controllers.state.cache import ClusterCache
from controllers.state.meta import read_meta
from extender.core.model import GroupKey
from extender.core.status import differs, phase_counts, podgroup_status, queue_status
from extender.core.timestamps import rfc3339
from extender.jobs.notices import same_reason

log = logging.getLogger(__name__)


def _unschedulable(status: dict[str, Any]) -> tuple[str, str] | None:
    """The standing Unschedulable condition as (reason, message), or None."""
    for c in status.get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Unschedulable" and c.get("status") == "True":
            return str(c.get("reason") or "Unschedulable"), str(c.get("message") or "")
    return None


def _owner_job(raw: dict[str, Any]) -> Ref | None:
    """The vcjob a PodGroup belongs to (its controller reference), so its Events reach the job too."""
    meta = read_meta(raw)
    for r in meta.owner_references:
        if r.kind == "Job" and r.api_version == paths.JOBS.api_version:
            return Ref(
                api_version=paths.JOBS.api_version,
                kind="Job",
                name=r.name,
                namespace=meta.namespace,
                uid=r.uid,
            )
    return None


def _rv(raw: dict[str, Any]) -> str:
    return read_meta(raw).resource_version


class StatusWriter:
    def __init__(
        self,
        cache: ClusterCache,
        scheduler: SchedulingState,
        executor: Executor,
        *,
        period: float = 0.5,
        heartbeat: Callable[[], None] = lambda: None,
        events: EventRecorder | None = None,
    ):
        self.cache = cache
        self.scheduler = scheduler
        self.executor = executor
        self.period = period
        self.heartbeat = heartbeat
        self.events = events
        self._written: dict[str, dict[str, Any]] = {}
        self._seen: tuple[int, int, float] | None = None
        # PodGroups whose write failed: looked at again on the next pass.
        self._retry: set[GroupKey] = set()
        self.writes = 0
        self.errors = 0

    def reset(self) -> None:
        """A leadership term begins: what this writer remembers writing may have been overwritten by
        another leader since; every status is compared with the cluster afresh."""
        self._written.clear()
        self._seen = None
        self.scheduler.pending.status_changed(self.cache.podgroup_keys())

    def _pending_writes(self) -> list[tuple[str, dict[str, Any], bool, str, GroupKey | None]]:
        if not self.scheduler.decided:
            return []  # no cycle yet: phases are not decided
        seen = (self.cache.version, self.scheduler.ledger.plan_version, self.scheduler.decided)
        if self._seen == seen:
            return []  # nothing a status depends on changed since the last pass
        self._seen = seen
        # Only the PodGroups whose pods, object, plans or reason changed since the last pass (every one
        # on the first pass and after a re-list): a pass costs what changed. Queues are few: all of them.
        changed, everything = self.scheduler.pending.drain_status()
        keys = None if everything else changed | self._retry
        self._retry = set()
        snap = self.cache.status_snapshot(keys)
        now = rfc3339(time.time())
        out: list[tuple[str, dict[str, Any], bool, str, GroupKey | None]] = []
        for key, g in snap.groups.items():
            raw = self.cache.raw_podgroup(key)
            if raw is None or g.implicit:
                continue
            u = self.scheduler.reasons.get(key)
            current = raw.get("status") or {}
            desired = podgroup_status(snap, g, current, (u.reason, u.message) if u else None, now)
            path = paths.PODGROUPS.item(g.name, namespace=g.namespace)
            if differs(desired, current) and self._written.get(path) != desired:
                out.append((path, desired, False, _rv(raw), key))
                self._tell(raw, current, desired)
        counts = phase_counts(self.cache.podgroups())
        for name, raw in self.cache.raw_queues():
            current = raw.get("status") or {}
            desired = queue_status(snap, name, current, counts)
            path = paths.QUEUES.item(name)
            if differs(desired, current) and self._written.get(path) != desired:
                out.append((path, desired, True, _rv(raw), None))
        return out

    def _tell(self, raw: dict[str, Any], current: dict[str, Any], desired: dict[str, Any]) -> None:
        """Events on the PodGroup when what a user waits on changes: a new reason it cannot be scheduled
        (once per change of the rule or resource that blocks it, not per pass and not when only its
        figures move: see :func:`extender.jobs.notices.same_reason`), admission to its queue
        (``Enqueued``) and the gang running (``Scheduled``). The last two are told on its vcjob as
        well; the job controller tells the job why it waits (``PodGroupPending``) with its own status."""
        if self.events is None:
            return
        ref = Ref.of(raw, api_version=paths.PODGROUPS.api_version, kind="PodGroup")
        was, now = _unschedulable(current), _unschedulable(desired)
        if now is not None and not (was is not None and was[0] == now[0] and same_reason(was[1], now[1])):
            note = f"{now[0]}: {now[1]}" if now[1] else now[0]
            self.events.record(ref, type_="Warning", reason="Unschedulable", note=note, action="Schedule")
        before, after = current.get("phase"), desired.get("phase")
        if after == before or after not in ("Inqueue", "Running"):
            return
        spec = raw.get("spec") or {}
        if after == "Inqueue":
            reason, note = "Enqueued", f"admitted to queue {spec.get('queue') or 'default'}"
        else:
            reason = "Scheduled"
            running, min_member = desired.get("running", 0), spec.get("minMember", 1)
            note = f"gang scheduled: {running} pods running (minMember {min_member})"
        for target in (ref, _owner_job(raw)):
            if target is not None:
                self.events.record(target, type_="Normal", reason=reason, note=note, action="Schedule")

    async def sync_once(self) -> None:
        async def write(
            path: str, desired: dict[str, Any], subresource: bool, rv: str, key: GroupKey | None
        ) -> None:
            try:
                await self.executor.patch_status(path, desired, subresource=subresource, resource_version=rv)
                self._written[path] = desired
                self.writes += 1
            except ApiError as e:
                self._seen = None  # retry on the next pass, from the newer object
                if key is not None:
                    self._retry.add(key)
                if e.status != 409:
                    log.warning("status write failed", extra={"path": path, "error": str(e)})

        # Several writes in flight: one at a time, a burst of new PodGroups took seconds to show.
        await bounded((write(*w) for w in self._pending_writes()), 16)

    async def run(self) -> None:
        failures = 0
        while True:
            self.heartbeat()
            await asyncio.sleep(self.period * 2 ** min(failures, 6))
            try:
                await self.sync_once()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception:  # one pass's problem (a network error, an odd object): retry, slower
                failures += 1
                self.errors += 1
                self._seen = None
                self.scheduler.pending.status_changed(self.cache.podgroup_keys())
                log.exception("status pass failed", extra={"attempt": failures})
