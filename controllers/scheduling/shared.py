"""What the scheduling loop, the extender verbs and the writes share: one :class:`SchedulingState`.

The three parts (:mod:`~controllers.scheduling.loop`, :mod:`~controllers.scheduling.verbs`,
:mod:`~controllers.scheduling.writes`) hold no state of one another's: whatever two of them read or write
lives here, built in one constructor and named once. The cache, the reservation ledger and the pending set
belong to the state room (``controllers/state``); this object only holds them beside the scheduling room's
own memory.

Invariants:
- plans are dropped a whole group at a time (:meth:`SchedulingState.release`): a gang is planned again
  whole, never member by member;
- the filter memory (``unseen``, ``rejected``, ``refused``, ``touched``, ``annotations``) is about pods that
  still wait: the loop forgets a pod's entries once the watch shows it bound, finished or deleted;
- ``reasons`` and ``decided`` are written by the loop alone; the verbs, the status writer and
  the metrics only read them;
- :class:`CycleProgress` is advanced by the loop alone; a filter waiting for its pod's plan only waits on it;
- what a leadership term decided in memory ends with it (:meth:`SchedulingState.end_term`): the next term
  starts from the cluster (:meth:`SchedulingState.begin_term`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from controllers.state.cluster import ClusterState
from extender.core.model import GroupKey, PodUID
from extender.core.snapshot import pod_group_key
from extender.framework.result import Eviction, Unschedulable
from extender.plugins.registry import SchedulerConf


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSettings:
    """How the scheduling loop paces itself, and how long a filter waits for it."""

    resync: float = 1.0  # cycle at least this often
    debounce: float = 0.02  # batch what arrives together (a gang's pods) before a cycle
    seen_timeout: float = 1.0  # how long a filter waits for the watch to show its pod
    plan_timeout: float = 1.0  # how long a filter waits for the loop to plan its pod
    inline_groups: int = 64  # at most this many groups waiting, a filter cycles inline
    # A filter for a pod whose gang is still being created (fewer pods than minMember, the last one
    # joined less than ``gang_idle`` seconds ago) waits for the rest, at most ``gang_wait`` seconds:
    # refused, the pod would cost kube-scheduler a failed attempt, a status write and an Event, and a
    # touch to bring it back.
    gang_idle: float = 0.25
    gang_wait: float = 2.0
    victims_timeout: float = 180.0  # a reservation waiting for victims longer than this is given up
    # A pod touched this long ago and still waiting on the same plan is touched again: kube-scheduler's try
    # after the touch failed where the loop cannot see it (a replica that did not know the leader yet, a
    # forward that timed out: the same failure writes no new condition on the pod). 0: never (the
    # simulator's kube-scheduler takes every touch).
    retouch: float = 0.0
    # With preempt or reclaim in the conf: how often groups that wait for room are looked at again though
    # nothing freed room (a new victim may have started, a share may have moved).
    revisit: float = 10.0


@dataclass(slots=True)
class SchedulerStats:
    """Counters for metrics. Nothing reads them to decide anything."""

    cycles: int = 0
    cycle_seconds: float = 0.0
    binds: int = 0
    bind_errors: int = 0
    binds_refused: int = 0
    touches: int = 0
    stale_groups: int = 0
    cycle_errors: int = 0
    evictions: int = 0
    eviction_errors: int = 0
    plans: int = 0  # pods given a node by a cycle
    # Pods of ours seen bound during this process's terms without a plan or bind of its own (should stay 0).
    unreserved_binds: int = 0
    eviction_reasons: dict[str, int] = field(default_factory=dict)  # evictions carried out, by reason


class CycleProgress:
    """Where the loop is: whether a cycle is under way and which cache version its snapshot saw. A filter
    waiting for its pod's plan waits here (:meth:`past`); the loop marks each cycle's start and end."""

    def __init__(self) -> None:
        self.cycling = False
        self.snapshot_version = -1
        # Set (and replaced) after every cycle, applied or failed.
        self._done = asyncio.Event()

    def started(self, version: int) -> None:
        self.snapshot_version = version
        self.cycling = True

    def finished(self) -> None:
        self.cycling = False
        self._done.set()
        self._done = asyncio.Event()

    async def past(self, version: int) -> None:
        """Return once no cycle is under way and the last one's snapshot held cache version ``version``
        (the one under way when called may predate it). Unbounded: the caller bounds the wait."""
        while self.snapshot_version < version or self.cycling:
            await self._done.wait()


class SchedulingState:
    """The state room's parts and the scheduling room's own memory, shared by the loop, verbs and writes."""

    def __init__(
        self,
        cluster: ClusterState,
        conf: SchedulerConf,
        *,
        settings: LoopSettings = LoopSettings(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache = cluster.cache
        self.ledger = cluster.ledger
        self.pending = cluster.pending
        # Replaced by a live reload (Loop.use_conf); a cycle under way keeps the one it was handed.
        self.conf = conf
        self.settings = settings
        # Epoch seconds: the cycle's ``now``, plan times and timers read it (the simulator's is virtual).
        self.clock = clock
        self.stats = SchedulerStats()
        self.progress = CycleProgress()
        # --- the filter memory: pods that wait ------------------------------------------------------
        # Pods refused at filter before the watch showed them (bounded, oldest dropped first).
        self.unseen: dict[PodUID, None] = {}
        # Pods kube-scheduler holds as unschedulable (we refused them, or it failed them without us):
        # touched once planned, so they come back to its active queue.
        self.rejected: set[PodUID] = set()
        # Per waiting pod, nodes kube-scheduler's filters refused after we planned it there.
        self.refused: dict[PodUID, frozenset[str]] = {}
        # Pods touched, with the node they were touched for (a pod keeping its plan is not touched again).
        self.touched: dict[PodUID, str] = {}
        # When each was last touched (the loop's clock), for the retouch of a plan kube-scheduler never took.
        self.touch_times: dict[PodUID, float] = {}
        # Annotations a plugin asks for on a planned pod (see CycleResult), until they are written: the
        # filter holds the pod back meanwhile, so kube-scheduler binds it only once they are on it.
        self.annotations: dict[PodUID, dict[str, str]] = {}
        # Pods this process asked the API to evict (kept until the watch shows them gone).
        self.evicted: dict[PodUID, Eviction] = {}
        # --- what the cycles decided ----------------------------------------------------------------
        self.reasons: dict[GroupKey, Unschedulable] = {}
        # Cycles applied: the status writer waits for the first (phases are not decided before it).
        self.decided = 0
        # The ledger's count of unreserved binds when the current term began (None: no term).
        self._unreserved_at: int | None = None

    def end_term(self) -> None:
        """A leadership term ended (the loop and the writes have stopped): drop what only this process's
        memory held, so a later term, here or on another replica, starts from the cluster alone. Plans
        (waiting for victims or not) go, since no pod was bound to them; assumed and bound reservations
        stay (they are binds that happened). The filter memory, the evictions asked for, the cycles'
        reasons go; a filter waiting for a cycle is let go."""
        for uid in self.ledger.plans():
            self.ledger.release(uid)
        for memory in (self.unseen, self.refused, self.touched, self.annotations, self.evicted):
            memory.clear()
        self.touch_times.clear()
        self.rejected.clear()
        self.reasons, self.decided = {}, 0
        self.progress.finished()
        # Settled and placed groups come back: their plans and reasons went with the term.
        self.pending.reset()
        if self._unreserved_at is not None:
            self.stats.unreserved_binds += self.ledger.unreserved_binds - self._unreserved_at
            self._unreserved_at = None

    def begin_term(self) -> None:
        """A leadership term begins: what kube-scheduler holds as unschedulable is read from the pods
        (PodScheduled False: refused by an earlier leader, or failed while no leader answered), so those
        pods are touched once planned, as the pods this process refused are."""
        for uids in self.pending.waiting().values():
            for uid in uids:
                pod = self.cache.pod(uid)
                if pod is not None and pod.scheduler_refused:
                    self.rejected.add(uid)
        self.pending.room_freed()
        self._unreserved_at = self.ledger.unreserved_binds

    def unreserved_binds(self) -> int:
        """Pods of ours seen bound, during this process's terms, that it held no reservation for."""
        current = self.ledger.unreserved_binds - self._unreserved_at if self._unreserved_at is not None else 0
        return self.stats.unreserved_binds + current

    def release(self, uid: PodUID) -> None:
        """Drop the plans of ``uid``'s whole group so the gang is planned again from scratch."""
        pod = self.cache.pod(uid)
        if pod is None:
            self.ledger.release(uid)
            self.pending.room_freed()
            return
        key = pod_group_key(pod)
        for u in self.cache.members(key) | {uid}:
            self.ledger.release(u)
            self.annotations.pop(u, None)
        self.pending.again(key)
