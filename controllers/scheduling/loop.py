"""The scheduling loop: debounced cycles, their pure part in a worker thread, their decisions applied back.

The loop runs a cycle (enqueue, allocate, backfill, and preempt/reclaim when the conf has them) against a
cache snapshot whenever the cache changes (debounced, so a gang's pods arrive together) and at least every
``resync`` seconds. A cycle's work is what changed: the pending set's groups with unplanned pods and the
PodGroups not running yet, while settled groups (short of room or refused, with nothing changed since) are
left out and weigh on their queues by their totals only. Its pure part (``run_cycle``) runs in a worker
thread; its decisions are applied on the event loop (:mod:`~controllers.scheduling.apply`).

Invariants:
- the loop alone makes plans (the verbs and the writes only drop them), and alone writes ``reasons`` and
  the cycle progress filters wait on;
- a cycle whose snapshot predates an event is applied minus what the event made stale, and the loop runs
  again at once: what happened meanwhile still gets a cycle of its own;
- the loop beats its heartbeat only after a cycle that completes, so a cycle that always fails turns
  /healthz unhealthy instead of leaving a process that schedules nothing;
- a conf swapped in (:meth:`Loop.use_conf`) takes effect from the next cycle; one running keeps its own;
- every applied cycle is reported once (:class:`CycleReport`, to ``on_cycle``): what the metrics observe.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from controllers.scheduling.apply import Applied, Applier, stale_groups
from controllers.scheduling.revote import CappedKeeper, with_revote
from controllers.scheduling.shared import SchedulingState
from controllers.scheduling.writes import Writes
from extender.core.model import GroupKey
from extender.core.snapshot import Snapshot, pod_group_key
from extender.framework.capped import capped_conf
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult
from extender.plugins.registry import SchedulerConf

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class CycleReport:
    """One applied cycle, for the metrics: its wall time (snapshot, the pure cycle, applying it), the
    snapshot it ran on, its result (with ``timings``) and how many pods it gave a node."""

    seconds: float
    snapshot: Snapshot
    result: CycleResult
    planned: int


def _evicts(conf: SchedulerConf) -> bool:
    return any(a in ("preempt", "reclaim") for a in conf.spec.actions)


class Loop:
    def __init__(
        self,
        shared: SchedulingState,
        writes: Writes,
        *,
        heartbeat: Callable[[], None] = lambda: None,
        admitted: Callable[[GroupKey], None] = lambda _key: None,
        on_cycle: Callable[[CycleReport], None] = lambda _report: None,
    ) -> None:
        self.shared = shared
        self.heartbeat = heartbeat
        # Told each applied cycle (the metrics).
        self._on_cycle = on_cycle
        self._applier = Applier(shared, writes, admitted=admitted, due_at=self._due_at)
        self._writes = writes
        # The cache and plan versions the last cycle's snapshot saw (or that were counted as seen).
        self._cycled_at: tuple[int, int] = (-1, -1)
        # A cycle is due though nothing changed (a rule waits for time to pass; a revisit).
        self._due = False
        self._timer: asyncio.TimerHandle | None = None
        self._evicts = _evicts(shared.conf)
        self._capped = capped_conf(shared.conf)
        self._keeper = CappedKeeper(shared.cache, shared.ledger, shared.pending)
        self._revisited = shared.clock()
        self._unreserved_seen = shared.ledger.unreserved_binds

    def _versions(self) -> tuple[int, int]:
        return (self.shared.cache.version, self.shared.ledger.plan_version)

    # --- one cycle ---------------------------------------------------------------------------------
    def _prepare(self) -> tuple[Snapshot, frozenset[GroupKey]]:
        """On the event loop: drain the changes and take an immutable snapshot of the work. Settled groups
        (nothing changed since a cycle found them short of room or refused them) and placed ones (every
        waiting pod planned) are left out, as the totals they weigh on their queues: a cycle costs what
        changed, not the backlog."""
        s = self.shared
        work = self._work()
        left_out = s.pending.left_out()
        snap = s.cache.snapshot(work - left_out, dict(s.refused), s.pending.aside())
        snap = with_revote(snap, s.cache, s.pending.revote())
        self._cycled_at = self._versions()
        s.progress.started(s.cache.version)
        return snap, left_out

    def cycle(self) -> None:
        """One whole cycle inline (tests, the simulator, and ``ensure_fresh``); the loop runs
        :meth:`cycle_off_loop`."""
        t0 = time.perf_counter()
        snap, left_out = self._prepare()
        result = run_cycle(snap, self.shared.conf, self.shared.clock(), clock=time.perf_counter)
        self._apply(snap, left_out, result, t0)

    async def cycle_off_loop(self) -> None:
        """The cycle's pure part in a worker thread, so filters, webhooks and informers keep running
        meanwhile (numpy releases the GIL for most of it); its decisions are applied back here, minus
        any a newer event made stale (see :func:`~controllers.scheduling.apply.stale_groups`)."""
        t0 = time.perf_counter()
        snap, left_out = self._prepare()
        result = await asyncio.to_thread(
            functools.partial(run_cycle, clock=time.perf_counter), snap, self.shared.conf, self.shared.clock()
        )
        self._apply(snap, left_out, result, t0)

    def _apply(self, snap: Snapshot, left_out: frozenset[GroupKey], result: CycleResult, t0: float) -> None:
        s = self.shared
        # Did anything happen while the pure part ran? Then some decisions may be stale, and what happened
        # still needs a cycle of its own: the versions of the snapshot stay recorded, so the loop runs again.
        external = self._cycled_at != self._versions()
        stale = stale_groups(s, snap, result) if external else set()
        applied = self._applier.apply(snap, left_out, result, stale)
        s.stats.stale_groups += len(stale)
        if external:
            s.pending.wakeup.set()
        else:  # only our own changes since the snapshot: nothing new to look at
            self._cycled_at = self._versions()
        s.stats.cycles += 1
        s.stats.plans += applied.planned
        seconds = time.perf_counter() - t0
        s.stats.cycle_seconds += seconds
        self._on_cycle(CycleReport(seconds=seconds, snapshot=snap, result=result, planned=applied.planned))
        s.decided += 1
        s.progress.finished()
        _log_cycle(result, applied, len(stale), t0)

    def _work(self) -> set[GroupKey]:
        """The groups this cycle must look at: the pending set's (backlog groups with unplanned pods) and
        PodGroups not running yet. Plans on nodes that went are released here (the ledger releases those of
        pods that stopped waiting as the watch shows them); the filter memory of such pods is forgotten."""
        s = self.shared
        changes = s.pending.drain()
        self._report_unreserved()
        if changes.nodes and s.ledger.prune_plans(s.cache.plan_is_live):
            s.pending.room_freed()
        if changes.nodes and s.refused:
            # kube-scheduler's verdict on a node may change with the node (a new node's status arrives
            # after the Node itself: "Too many pods" at first): its refusals are asked again.
            for uid in list(s.refused):
                pod = s.cache.pod(uid)
                if pod is not None:
                    s.pending.again(pod_group_key(pod))
            s.refused.clear()
        for uid in s.ledger.overdue(s.clock() - s.settings.victims_timeout):
            log.warning("victims did not leave in time; planning again", extra={"pod": str(uid)})
            s.release(uid)
        if self._evicts and s.clock() - self._revisited >= s.settings.revisit:
            self._revisited = s.clock()
            s.pending.room_freed()
        ours = s.cache.scheduler_names
        for uid in changes.pods:
            pod = s.cache.pod(uid)
            if pod is None or not pod.holds_resources:
                s.evicted.pop(uid, None)
            if pod is None or not pod.waiting:
                # Bound, finished or deleted: nothing more to remember about its filtering.
                s.refused.pop(uid, None)
                s.rejected.discard(uid)
                s.touched.pop(uid, None)
                s.touch_times.pop(uid, None)
                s.annotations.pop(uid, None)
            elif uid in s.unseen and pod.scheduler_name in ours:
                del s.unseen[uid]
                s.rejected.add(uid)
            elif pod.scheduler_refused and pod.scheduler_name in ours:
                # kube-scheduler failed it without asking us (a predecessor refused it, or was down during
                # a restart): it waits in kube-scheduler's unschedulable queue for up to five minutes
                # unless touched once planned, as pods we refused are.
                s.rejected.add(uid)
        self._retouch()
        return s.pending.work(self._keep_capped()) | s.cache.unfinished_except(s.pending.left_out())

    def _keep_capped(self) -> Callable[[GroupKey], bool] | None:
        """Which settled groups stay out when room frees, voted on again without their pods: the capped
        ones (see controllers.scheduling.revote), when the conf allows it."""
        return self._keeper.question() if self._capped else None

    def _retouch(self) -> None:
        """Touch again the pods touched ``retouch`` seconds ago and still waiting on that plan (see
        LoopSettings.retouch): kube-scheduler otherwise keeps them until its own periodic flush."""
        s = self.shared
        if s.settings.retouch <= 0:
            return
        before = s.clock() - s.settings.retouch
        for uid, node in list(s.touched.items()):
            if s.touch_times.get(uid, 0.0) > before:
                continue
            pod = s.cache.pod(uid)
            if pod is None or not pod.waiting or s.ledger.planned_node(uid) != node:
                continue
            if s.ledger.waiting_for(uid) or uid in s.annotations:
                continue  # held back on purpose: the filter says why
            self._writes.touch(pod, node)

    def _report_unreserved(self) -> None:
        """Pods of ours the watch showed bound without a reservation of this process's, since the last
        cycle: a warning each (kube-scheduler bound on a stale answer, or someone else bound them)."""
        ledger = self.shared.ledger
        new = ledger.unreserved_binds - self._unreserved_seen
        self._unreserved_seen = ledger.unreserved_binds
        for uid, node in list(ledger.unreserved)[-new:] if new > 0 else ():
            pod = self.shared.cache.pod(uid)
            log.warning(
                "pod bound without a reservation",
                extra={"pod": pod.key if pod is not None else str(uid), "node": node},
            )

    # --- when to cycle -----------------------------------------------------------------------------
    def use_conf(self, conf: SchedulerConf) -> None:
        """Swap in a new, already validated scheduler conf (a live reload). A cycle running in its worker
        thread finishes with the conf it was handed; the next one, run at once, uses this one. Groups that
        settled under the old rules are looked at again; plans already made stay (they are reservations)."""
        self.shared.conf = conf
        self._evicts = _evicts(conf)
        self._capped = capped_conf(conf)
        self._due = True
        self.shared.pending.reset()

    def new_term(self) -> None:
        """A leadership term begins (the loop is not running): the next pass cycles whatever changed."""
        self._cycled_at = (-1, -1)
        self._unreserved_seen = self.shared.ledger.unreserved_binds
        self._due = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.shared.pending.wakeup.set()

    def mark_fresh(self) -> None:
        """Count what changed since the last cycle as seen: a caller that knows the changes are the
        cycle's own consequences (the simulator's binds) spares the cycle that would find nothing to do."""
        self._cycled_at = self._versions()

    def ensure_fresh(self) -> None:
        """A cycle inline if anything changed since the last one."""
        if self._cycled_at != self._versions():
            self.cycle()

    async def run(self) -> None:
        """Cycle on every change (debounced) and every ``resync`` seconds. A cycle that raises is logged
        and counted and the loop goes on; it beats only after a cycle that completes."""
        s = self.shared
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that arrives as
            # the wait completes, which left a zombie process serving a healthy /healthz.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(s.settings.resync):
                    await s.pending.wakeup.wait()
            s.pending.wakeup.clear()
            # The short delay batches what arrives together (a gang's pods), also when a waiting filter
            # woke the loop: a cycle per pod would plan gangs before they are whole.
            await asyncio.sleep(s.settings.debounce)
            try:
                if self._cycled_at != self._versions() or self._due:
                    self._due = False
                    await self.cycle_off_loop()
            except Exception:
                s.stats.cycle_errors += 1
                log.exception("scheduling cycle failed")
                s.progress.finished()  # waiting filters answer from what is known
                continue
            self.heartbeat()

    def _due_at(self, when: float) -> None:
        """Run a cycle at ``when`` (epoch seconds) though nothing changes; the earliest such time wins."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a cycle run inline without a loop (tests): nobody to wake
            return
        at = loop.time() + max(0.0, when - self.shared.clock())
        if self._timer is not None and self._timer.when() <= at and not self._timer.cancelled():
            return
        if self._timer is not None:
            self._timer.cancel()

        def fire() -> None:
            # Time passing is the change: groups left out as settled are looked at again too.
            self._timer = None
            self._due = True
            self.shared.pending.room_freed()

        self._timer = loop.call_at(at, fire)


def _log_cycle(result: CycleResult, applied: Applied, stale: int, t0: float) -> None:
    """One INFO line per cycle that decided something (a plan, an admission, an eviction, a group newly
    waiting or waiting for another kind of reason); a cycle that only found the same groups still waiting
    for the same kind of reason (its figures move with every pod) is DEBUG detail."""
    waits = applied.waits
    changed = bool(applied.planned or result.admitted or result.evictions or waits)
    if changed or log.isEnabledFor(logging.DEBUG):
        log.log(
            logging.INFO if changed else logging.DEBUG,
            "cycle",
            extra={
                "planned": applied.planned,
                "admitted": len(result.admitted),
                "unschedulable": len(result.unschedulable),
                "stale": stale,
                # The groups newly waiting, or waiting for another kind of reason (at most 5 named).
                "waiting": ",".join(waits[:5]) + (f",+{len(waits) - 5}" if len(waits) > 5 else ""),
                "ms": round((time.perf_counter() - t0) * 1000, 2),
            },
        )
