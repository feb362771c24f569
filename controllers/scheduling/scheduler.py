"""The scheduling loop and the state the extender verbs read.

The loop runs a cycle (enqueue, allocate, backfill) against a cache snapshot whenever the cache changes
(debounced) and at least every ``resync`` seconds, its pure part in a worker thread. Its output is a plan
book (pod → node): kube-scheduler's filter calls are answered from it in O(1). A filter for a pod with no
plan cycles inline when few groups wait, else waits (bounded) for the loop's next cycle, so a pod that can
be placed is placed on its first attempt and no filter carries a large backlog's cycle.

After a cycle: admitted groups turn Inqueue in the cache (the status writer persists it); pods that
kube-scheduler already found unschedulable and now have a plan are touched (annotated with the planned
node), which moves them back to kube-scheduler's active queue at once; gated pods (k8s >= 1.27) of a
whole planned gang get their gate lifted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from controllers.events import EventRecorder, Ref
from controllers.kube import paths
from controllers.scheduling.executor import BindError, Executor
from controllers.state.cluster import ClusterState
from extender.api import wire
from extender.core.model import GroupKey, GroupPhase, Pod, PodUID
from extender.core.snapshot import Aside, Snapshot, pod_group_key
from extender.core.timestamps import rfc3339
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult, Eviction, Unschedulable
from extender.framework.session import Session
from extender.framework.victims import refuse_victims
from extender.plugins.registry import SchedulerConf

log = logging.getLogger(__name__)


def _now_text() -> str:
    return rfc3339(time.time())


_PENDING_REASON = "waiting for the gang to be planned"


_UNSEEN_REASON = "pumice's watch has not shown this pod yet; it reserves nothing until it does"
_MAX_UNSEEN = 4096


def _pinned(node: str) -> wire.ExtenderFilterResult:
    return {"NodeNames": [node], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}


def _refused(node_names: list[str], reason: str) -> wire.ExtenderFilterResult:
    """No node, with the reason on each. Unresolvable: kube-scheduler's own preemption cannot help a pod
    that waits for pumice (its gang, its queue, its turn), and trying it costs a dry run per node."""
    return {
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": dict.fromkeys(node_names, reason),
        "Error": "",
    }


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
    eviction_reasons: dict[str, int] = field(default_factory=dict)  # evictions carried out, by reason


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopSettings:
    """How the scheduling loop paces itself."""

    resync: float = 1.0  # cycle at least this often
    debounce: float = 0.02  # batch what arrives together (a gang's pods) before a cycle
    seen_timeout: float = 1.0  # how long a filter waits for the watch to show its pod
    plan_timeout: float = 1.0  # how long a filter waits for the loop to plan its pod
    inline_groups: int = 64  # at most this many groups waiting, a filter cycles inline
    victims_timeout: float = 180.0  # a reservation waiting for victims longer than this is given up
    # With preempt or reclaim in the conf: how often groups that wait for room are looked at again though
    # nothing freed room (a new victim may have started, a share may have moved).
    revisit: float = 10.0


class Scheduler:
    def __init__(
        self,
        state: ClusterState,
        conf: SchedulerConf,
        executor: Executor,
        *,
        settings: LoopSettings = LoopSettings(),
        gates: bool = False,
        ready: Callable[[], bool] = lambda: True,
        heartbeat: Callable[[], None] = lambda: None,
        admitted: Callable[[GroupKey], None] = lambda _key: None,
        events: EventRecorder | None = None,
        clock: Callable[[], float] = time.time,
        on_cycle: Callable[[float], None] = lambda _seconds: None,
    ) -> None:
        # Told each applied cycle's duration in seconds (the metrics' histogram).
        self._on_cycle = on_cycle
        # Epoch seconds: the cycle's ``now``, plan times and timers read it (the simulator's is virtual).
        self._clock = clock
        self.cache = state.cache
        self.ledger = state.ledger
        self.pending = state.pending
        self.conf = conf
        self.executor = executor
        self.settings = settings
        self.gates = gates
        # Readiness comes from the informers; verbs wait for it.
        self._ready = ready
        self.heartbeat = heartbeat
        # Told when a cycle admits a group in memory (before its status write reaches the API).
        self._admitted = admitted
        # Pods refused at filter before the watch showed them (bounded, oldest dropped first).
        self.unseen: dict[PodUID, None] = {}
        self.reasons: dict[GroupKey, Unschedulable] = {}
        self.rejected: set[PodUID] = set()
        self.touched: dict[PodUID, str] = {}
        # Annotations a plugin asks for on a planned pod (see CycleResult), until they are written: the
        # filter holds the pod back meanwhile, so kube-scheduler binds it only once they are on it.
        self.annotations: dict[PodUID, dict[str, str]] = {}
        # Per waiting pod, nodes kube-scheduler's filters refused after we planned it there.
        self.refused: dict[PodUID, frozenset[str]] = {}
        # What each settled group weighs on its queue while it is left out of snapshots (see _prepare).
        self.aside: dict[GroupKey, Aside] = {}
        self._cycled_at: tuple[int, int] = (-1, -1)
        # Set (and replaced) after every cycle: a filter waiting for its pod's plan awaits it.
        self._cycle_done = asyncio.Event()
        self._snapshot_version = -1
        self._cycling = False
        # Cycles applied: the status writer waits for the first (phases are not decided before it).
        self.decided = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = SchedulerStats()
        self.events = events
        # Pods this process asked the API to evict (kept until the watch shows them gone).
        self.evicted: dict[PodUID, Eviction] = {}
        # A cycle is due though nothing changed (a rule waits for time to pass; a revisit).
        self._due = False
        self._timer: asyncio.TimerHandle | None = None
        self._evicts = any(a in ("preempt", "reclaim") for a in conf.spec.actions)
        self._revisited = clock()

    @property
    def ready(self) -> bool:
        return self._ready()

    @property
    def scheduler_names(self) -> frozenset[str]:
        return self.cache.scheduler_names

    def _versions(self) -> tuple[int, int]:
        return (self.cache.version, self.ledger.plan_version)

    # --- cycle -------------------------------------------------------------------------------------
    def _prepare(self) -> tuple[Snapshot, frozenset[GroupKey]]:
        """On the event loop: drain the changes and take an immutable snapshot of the work. Settled groups
        (nothing changed since a cycle found them short of room or refused them) are left out, as the
        totals they weigh on their queues: a cycle costs what changed, not the backlog."""
        work = self._work()
        left_out = frozenset(k for k in self.pending.settled() if k in self.aside)
        snap = self.cache.snapshot(work - left_out, dict(self.refused), [self.aside[k] for k in left_out])
        self._cycled_at = self._versions()
        self._snapshot_version = self.cache.version
        self._cycling = True
        return snap, left_out

    def cycle(self) -> None:
        """One whole cycle inline (tests, and ``ensure_fresh``); the loop runs :meth:`cycle_off_loop`."""
        t0 = time.perf_counter()
        snap, left_out = self._prepare()
        self._apply(snap, left_out, run_cycle(snap, self.conf, self._clock()), t0)

    async def cycle_off_loop(self) -> None:
        """The cycle's pure part in a worker thread, so filters, webhooks and informers keep running
        meanwhile (numpy releases the GIL for most of it); its decisions are applied back here, minus
        any a newer event made stale (see :meth:`_apply`)."""
        t0 = time.perf_counter()
        snap, left_out = self._prepare()
        result = await asyncio.to_thread(run_cycle, snap, self.conf, self._clock())
        self._apply(snap, left_out, result, t0)

    def _stale_groups(self, snap: Snapshot, result: CycleResult) -> set[GroupKey]:
        """Groups whose placements must not be applied: one of their pods changed or went since the
        snapshot, a node they use changed or went, or a node would be over capacity with what happened
        meanwhile (pods bound by others, other reservations; the victims they wait for count as gone).
        Dropped whole, so a gang stays whole; the next cycle plans them again."""
        stale: set[GroupKey] = set()
        by_node: dict[str, list[PodUID]] = {}
        leaving: dict[str, dict[str, int]] = {}
        for victim in set().union(*result.pipelined.values()) if result.pipelined else ():
            pod = self.cache.pod(victim)
            if pod is not None and pod.holds_resources:
                acc = leaving.setdefault(pod.node_name, {})
                for k, v in pod.requests.items():
                    acc[k] = acc.get(k, 0) + v
        for uid, node in result.placements.items():
            key = pod_group_key(snap.pods[uid])
            if self.cache.pod(uid) is not snap.pods[uid] or self.ledger.get(uid) is not None:
                stale.add(key)
            by_node.setdefault(node, []).append(uid)
        for node, uids in by_node.items():
            current = self.cache.node(node)
            if current is None or current is not snap.nodes[snap.node_pos[node]]:
                stale.update(pod_group_key(snap.pods[u]) for u in uids)
                continue
            need: dict[str, int] = {}
            for u in uids:
                for k, v in snap.pods[u].requests.items():
                    need[k] = need.get(k, 0) + v
            held = self.ledger.on_node(node)
            gone = leaving.get(node, {})
            if any(
                held.get(k, 0) - gone.get(k, 0) + v > current.allocatable.get(k, 0) for k, v in need.items()
            ):
                stale.update(pod_group_key(snap.pods[u]) for u in uids)
        return stale

    def _apply(self, snap: Snapshot, left_out: frozenset[GroupKey], result: CycleResult, t0: float) -> None:
        # Did anything happen while the pure part ran? Then some decisions may be stale, and what happened
        # still needs a cycle of its own: the versions of the snapshot stay recorded, so the loop runs again.
        external = self._cycled_at != self._versions()
        stale = self._stale_groups(snap, result) if external else set()
        planned = 0
        nodes: dict[GroupKey, list[str]] = {}
        now = self._clock()
        for uid, node in result.placements.items():
            pod = snap.pods[uid]
            key = pod_group_key(pod)
            if key in stale:
                continue
            planned += 1
            victims = result.pipelined.get(uid, frozenset())
            nodes.setdefault(key, []).append(f"{node}+" if victims else node)
            self.ledger.plan(
                uid,
                node,
                pod.requests,
                self.cache.pod_queue(pod),
                key,
                victims=victims,
                now=now,
                decided=result.annotations.get(uid),
            )
            if uid in result.annotations:
                self.annotations[uid] = result.annotations[uid]
                self._spawn(self._annotate(pod, result.annotations[uid]))
            else:
                self.annotations.pop(uid, None)
            if (uid in self.rejected or pod.gated) and self.touched.get(uid) != node:
                self.touched[uid] = node
                self._spawn(self._touch(pod, node))
        for key in sorted(result.ready & nodes.keys()):
            self._gang_planned(key, nodes[key])
        for key in result.admitted:
            if self.cache.set_group_phase(key, GroupPhase.INQUEUE):
                self._admitted(key)
        for uid, why in result.evictions.items():
            victim = self.cache.pod(uid)
            if why.by in stale or victim is None or uid in self.evicted:
                continue
            self.evicted[uid] = why
            self._spawn(self._evict(victim, why))
        if result.retry_at is not None:
            self._due_at(result.retry_at)
        previous = self.reasons
        # Groups left out were not looked at: their reasons stand as the earlier cycle gave them.
        reasons = {k: self.reasons[k] for k in left_out if k in self.reasons}
        reasons.update(result.unschedulable)
        self.reasons = reasons
        for key in snap.groups:
            if key in result.aside:
                self.aside[key] = result.aside[key]
            else:
                self.aside.pop(key, None)
        self.pending.after_cycle(snap.groups, (k for k in left_out | result.aside.keys()), stale)
        settled = self.pending.settled()
        self.aside = {k: a for k, a in self.aside.items() if k in settled}
        self.stats.stale_groups += len(stale)
        if external:
            self.pending.wakeup.set()
        else:  # only our own changes since the snapshot: nothing new to look at
            self._cycled_at = self._versions()
        self.stats.cycles += 1
        self.stats.plans += planned
        seconds = time.perf_counter() - t0
        self.stats.cycle_seconds += seconds
        self._on_cycle(seconds)
        self.decided += 1
        self._cycling = False
        self._cycle_done.set()
        self._cycle_done = asyncio.Event()
        # One INFO line per cycle that decided something (a plan, an admission, an eviction, a group newly
        # waiting or waiting for another kind of reason); a cycle that only found the same groups still
        # waiting for the same kind of reason (its figures move with every pod) is DEBUG detail.
        waits = sorted(
            f"{k}:{u.reason}"
            for k, u in result.unschedulable.items()
            if k not in previous or previous[k].reason != u.reason
        )
        changed = bool(planned or result.admitted or result.evictions or waits)
        if changed or log.isEnabledFor(logging.DEBUG):
            log.log(
                logging.INFO if changed else logging.DEBUG,
                "cycle",
                extra={
                    "planned": planned,
                    "admitted": len(result.admitted),
                    "unschedulable": len(result.unschedulable),
                    "stale": len(stale),
                    # The groups newly waiting, or waiting for another kind of reason (at most 5 named).
                    "waiting": ",".join(waits[:5]) + (f",+{len(waits) - 5}" if len(waits) > 5 else ""),
                    "ms": round((time.perf_counter() - t0) * 1000, 2),
                },
            )

    def _work(self) -> set[GroupKey]:
        """The groups this cycle must look at: the pending set's (backlog groups with unplanned pods) and
        PodGroups not running yet. Plans on nodes that went are released here (the ledger releases those of
        pods that stopped waiting as the watch shows them); the filter memory of such pods is forgotten."""
        changes = self.pending.drain()
        if changes.nodes and self.ledger.prune_plans(self.cache.plan_is_live):
            self.pending.room_freed()
        if changes.nodes and self.refused:
            # kube-scheduler's verdict on a node may change with the node (a new node's status arrives
            # after the Node itself: "Too many pods" at first): its refusals are asked again.
            for uid in list(self.refused):
                pod = self.cache.pod(uid)
                if pod is not None:
                    self.pending.again(pod_group_key(pod))
            self.refused.clear()
        for uid in self.ledger.overdue(self._clock() - self.settings.victims_timeout):
            log.warning("victims did not leave in time; planning again", extra={"pod": str(uid)})
            self._release(uid)
        if self._evicts and self._clock() - self._revisited >= self.settings.revisit:
            self._revisited = self._clock()
            self.pending.room_freed()
        for uid in changes.pods:
            pod = self.cache.pod(uid)
            if pod is None or not pod.holds_resources:
                self.evicted.pop(uid, None)
            if pod is None or not pod.waiting:
                # Bound, finished or deleted: nothing more to remember about its filtering.
                self.refused.pop(uid, None)
                self.rejected.discard(uid)
                self.touched.pop(uid, None)
                self.annotations.pop(uid, None)
            elif uid in self.unseen and pod.scheduler_name in self.scheduler_names:
                del self.unseen[uid]
                self.rejected.add(uid)
            elif pod.scheduler_refused and pod.scheduler_name in self.scheduler_names:
                # kube-scheduler failed it without asking us (a predecessor refused it, or was down during
                # a restart): it waits in kube-scheduler's unschedulable queue for up to five minutes
                # unless touched once planned, as pods we refused are.
                self.rejected.add(uid)
        return self.pending.work() | self.cache.unfinished_groups()

    def use_conf(self, conf: SchedulerConf) -> None:
        """Swap in a new, already validated scheduler conf (a live reload). A cycle running in its worker
        thread finishes with the conf it was handed; the next one, run at once, uses this one. Groups that
        settled under the old rules are looked at again; plans already made stay (they are reservations)."""
        self.conf = conf
        self._evicts = any(a in ("preempt", "reclaim") for a in conf.spec.actions)
        self._due = True
        self.pending.room_freed()

    def mark_fresh(self) -> None:
        """Count what changed since the last cycle as seen: a caller that knows the changes are the
        cycle's own consequences (the simulator's binds) spares the cycle that would find nothing to do."""
        self._cycled_at = self._versions()

    def ensure_fresh(self) -> None:
        if self._cycled_at != self._versions():
            self.cycle()

    async def run(self) -> None:
        """Cycle on every change (debounced) and every ``resync`` seconds. A cycle that raises is logged
        and counted and the loop goes on; it beats only after a cycle that completes, so a cycle that
        always fails turns /healthz unhealthy instead of leaving a process that schedules nothing."""
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that arrives as
            # the wait completes, which left a zombie process serving a healthy /healthz.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.resync):
                    await self.pending.wakeup.wait()
            self.pending.wakeup.clear()
            # The short delay batches what arrives together (a gang's pods), also when a waiting filter
            # woke the loop: a cycle per pod would plan gangs before they are whole.
            await asyncio.sleep(self.settings.debounce)
            try:
                if self._cycled_at != self._versions() or self._due:
                    self._due = False
                    await self.cycle_off_loop()
            except Exception:
                self.stats.cycle_errors += 1
                log.exception("scheduling cycle failed")
                self._cycling = False
                self._cycle_done.set()  # waiting filters answer from what is known
                self._cycle_done = asyncio.Event()
                continue
            self.heartbeat()

    def _due_at(self, when: float) -> None:
        """Run a cycle at ``when`` (epoch seconds) though nothing changes; the earliest such time wins."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a cycle run inline without a loop (tests): nobody to wake
            return
        at = loop.time() + max(0.0, when - self._clock())
        if self._timer is not None and self._timer.when() <= at and not self._timer.cancelled():
            return
        if self._timer is not None:
            self._timer.cancel()

        def fire() -> None:
            # Time passing is the change: groups left out as settled are looked at again too.
            self._timer = None
            self._due = True
            self.pending.room_freed()

        self._timer = loop.call_at(at, fire)

    async def _evict(self, pod: Pod, why: Eviction) -> None:
        """Mark the victim and evict it; if the API refuses (a PodDisruptionBudget), the reservations
        waiting for it are given up and planned again."""
        note = f"{why.reason}: {why.message}"
        try:
            await self.executor.mark_disrupted(pod.namespace, pod.name, why.reason, why.message, _now_text())
            refused = await self.executor.evict(pod.namespace, pod.name, str(pod.uid))
        except Exception as e:  # a network error: the next cycle decides again
            refused = repr(e)
        if refused is None:
            self.stats.evictions += 1
            self.stats.eviction_reasons[why.reason] = self.stats.eviction_reasons.get(why.reason, 0) + 1
            log.info("evicted", extra={"pod": pod.key, "reason": why.reason, "by": why.by})
            self._record(pod, "Normal", why.reason, note)
            return
        self.stats.eviction_errors += 1
        self.evicted.pop(pod.uid, None)
        log.warning("eviction refused", extra={"pod": pod.key, "by": why.by, "error": refused})
        self._record(pod, "Warning", "EvictionRefused", f"not evicted for {why.by}: {refused}")
        for waiter in self.ledger.stay(pod.uid):
            self._release(waiter)

    def _gang_planned(self, key: GroupKey, placed: list[str]) -> None:
        """An Event on a PodGroup whose whole gang got nodes in this cycle (kube-scheduler binds next)."""
        group = self.cache.group(key)
        if self.events is None or group is None or group.implicit:
            return
        ref = Ref(
            api_version=paths.PODGROUPS.api_version,
            kind="PodGroup",
            name=group.name,
            namespace=group.namespace,
            uid=group.uid,
        )
        # A "+" marks a placement that waits for evicted pods to leave its node (pipelined).
        waiting = sum(p.endswith("+") for p in placed)
        nodes = sorted({p.rstrip("+") for p in placed})
        where = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
        note = f"{len(placed)} pods planned (minMember {group.min_member}) on {where}"
        if waiting:
            note += f"; {waiting} of them once evicted pods have left"
        self.events.record(ref, type_="Normal", reason="GangPlanned", note=note, action="Schedule")

    def _record(self, pod: Pod, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref(api_version="v1", kind="Pod", name=pod.name, namespace=pod.namespace, uid=str(pod.uid))
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Preempt")

    # --- background writes -----------------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _touch(self, pod: Pod, node: str) -> None:
        try:
            if pod.gated and self.gates:
                await self.executor.lift_gate(pod.namespace, pod.name)
            await self.executor.touch_planned(pod.namespace, pod.name, node)
            self.stats.touches += 1
        except Exception as e:
            self.touched.pop(pod.uid, None)
            log.warning("touch failed", extra={"pod": pod.key, "error": str(e)})
            if pod.gated and self.gates:
                # No later cycle touches a pod that keeps its plan, and a gated pod never reaches
                # kube-scheduler: drop the gang's plans, so the next cycle plans and lifts again.
                self._release(pod.uid)
            # (an ungated pod: kube-scheduler's own retry finds the plan)

    async def _annotate(self, pod: Pod, annotations: dict[str, str]) -> None:
        """Write a plugin's decision on a planned pod; the update also moves it out of kube-scheduler's
        unschedulable queue, where the filter's "not yet" put it. A failure drops the gang's plans: the
        next cycle plans (and writes) again."""
        try:
            await self.executor.annotate(pod.namespace, pod.name, annotations)
        except Exception as e:
            log.warning("writing the pod's decision failed", extra={"pod": pod.key, "error": str(e)})
            if self.annotations.get(pod.uid) is annotations:
                self._release(pod.uid)
            return
        if self.annotations.get(pod.uid) is annotations:
            del self.annotations[pod.uid]

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- extender verbs (no I/O but bind) --------------------------------------------------------------
    async def prepare(self, uid: PodUID) -> None:
        """Before a filter answer: wait, briefly, for the watch to show a pod kube-scheduler already has
        (its copy can be a few milliseconds ahead of ours), then, if the pod has no plan yet, plan it: inline
        when few groups wait (bounded work), else by waiting for the scheduling loop's next cycle, so a
        filter never carries a large backlog's cycle.
        Polled rather than signalled for the watch, so a made-up UID costs one short bounded wait and
        leaves nothing behind."""
        if not uid or self.ledger.planned_node(uid) is not None:
            return
        loop = asyncio.get_running_loop()
        if not self.cache.knows(uid):
            deadline = loop.time() + self.settings.seen_timeout
            while not self.cache.knows(uid):
                if loop.time() >= deadline:
                    return
                await asyncio.sleep(0.005)
        pod = self.cache.pod(uid)
        if pod is None or not pod.waiting or self.ledger.planned_node(uid) is not None:
            return
        if not self._cycling and self.pending.waiting_groups() <= self.settings.inline_groups:
            # Little is waiting: a cycle costs about what a hand-off to the worker thread does, and
            # kube-scheduler, which calls filter one pod at a time, gets its answer at once.
            self.ensure_fresh()
            return
        # Wait for a cycle whose snapshot already held the pod (the one under way may predate it).
        target = self.cache.version
        self.pending.wakeup.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.plan_timeout):
                while self._snapshot_version < target or self._cycling:
                    await self._cycle_done.wait()

    def filter(self, raw_pod: Mapping[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        uid = PodUID(str((raw_pod.get("metadata") or {}).get("uid") or ""))
        node = self.ledger.planned_node(uid)
        waiting = self.ledger.waiting_for(uid)
        if node is not None and not waiting and node in node_names and uid not in self.annotations:
            return _pinned(node)  # the hot path: an O(1) answer
        if node is not None and uid in self.annotations:
            # Not before the plugin's decision is on the pod; writing it moves the pod back in line.
            return _refused(node_names, f"planned on node {node}: writing the placement decision on the pod")
        if waiting:
            # The room is held; kube-scheduler retries once the victims' deletion shows.
            return _refused(node_names, f"waiting for {len(waiting)} pods to leave node {node}")
        # Everything below reads the pod as pumice's watch shows it, never the request body: a body is
        # not cluster state, and a pod only posted to /filter must not reserve anything.
        pod = self.cache.pod(uid)
        if pod is None:
            problem = self.cache.unreadable_pod(uid)
            if problem is not None:
                return _refused(node_names, f"pumice cannot read this pod: {problem}")
            self._remember_unseen(uid)
            return _refused(node_names, _UNSEEN_REASON)
        self.rejected.add(pod.uid)
        if node is not None:
            # kube-scheduler's own filters refused the planned node (inter-pod affinity, ports, volumes:
            # what we do not model). Remember it for this pod and plan the gang again elsewhere.
            self.refused[pod.uid] = self.refused.get(pod.uid, frozenset()) | {node}
            self._release(pod.uid)
            reason = f"planned node {node} was rejected by kube-scheduler's filters; re-planning"
        else:
            reason = self.reason_for(pod)
        return _refused(node_names, reason)

    def _remember_unseen(self, uid: PodUID) -> None:
        """A pod refused before the watch showed it is touched once it is planned (see _work), like any
        rejected pod. Bounded: made-up UIDs must not grow memory."""
        if uid:
            self.unseen.pop(uid, None)
            self.unseen[uid] = None
            while len(self.unseen) > _MAX_UNSEEN:
                del self.unseen[next(iter(self.unseen))]

    def reason_for(self, pod: Pod) -> str:
        key = pod_group_key(pod)
        if pod.group_name and self.cache.group(key) is None:
            return f"podgroup {key} does not exist"
        u = self.reasons.get(key)
        return u.message if u is not None else _PENDING_REASON

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]:
        node = self.ledger.planned_node(pod.uid)
        return [{"Host": n, "Score": wire.MAX_EXTENDER_PRIORITY if n == node else 0} for n in node_names]

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]:
        """Keep only the nodes whose victims pumice accepts (:func:`refuse_victims`: gangs stay at
        ``minMember``, no plugin vetoes a victim).

        Our own pods never preempt through kube-scheduler: a gang pod without a plan is waiting for its
        whole gang, and evicting for one member would not place the gang."""
        if ours:
            return {}
        # The cycle's clock too: a victim veto may depend on time (cdp's cooldown).
        ssn = Session(self.cache.full_snapshot(), self.conf.tiers(), now=self._clock())
        proposed = {
            n: [PodUID(str(v.get("UID", ""))) for v in mv.get("Pods") or []] for n, mv in victims.items()
        }
        refused = refuse_victims(ssn, proposed)
        for node, why in refused.items():
            log.debug("victims refused", extra={"pod": pod.key, "node": node, "reason": why})
        return {n: mv for n, mv in victims.items() if n not in refused}

    def bind_refusal(self, args: wire.ExtenderBindingArgs) -> str | None:
        """Why pumice will not bind this pod to this node, or None. A bind is carried out only for a pod
        pumice watches, of one of its scheduler names, to the node it holds a reservation on: whoever can
        reach the extender port must not be able to place arbitrary pods."""
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"pod {args['PodNamespace']}/{args['PodName']}"
        pod = self.cache.pod(uid)
        if pod is None or (pod.namespace, pod.name) != (args["PodNamespace"], args["PodName"]):
            return f"{who}: no such pod in pumice's view of the cluster"
        if pod.scheduler_name not in self.cache.scheduler_names:
            return f"{who}: not scheduled by pumice (schedulerName {pod.scheduler_name!r})"
        planned = self.ledger.planned_node(uid)
        if self.ledger.waiting_for(uid):
            return f"{who}: its node {planned} still holds the pods it waits for"
        if planned != node:
            return f"{who}: pumice holds no reservation for it on node {node}" + (
                f" (it is planned on {planned})" if planned else ""
            )
        return None

    async def bind(self, args: wire.ExtenderBindingArgs) -> str:
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"{args['PodNamespace']}/{args['PodName']}"
        pod = self.cache.pod(uid)
        if (
            pod is not None
            and pod.node_name == node
            and (pod.namespace, pod.name)
            == (
                args["PodNamespace"],
                args["PodName"],
            )
        ):
            return ""  # already bound there (by us, or seen in the watch): a retried bind
        refusal = self.bind_refusal(args)
        if refusal is not None:
            self.stats.binds_refused += 1
            log.warning("bind refused", extra={"pod": who, "node": node, "reason": refusal})
            return refusal
        try:
            if uid in self.annotations:
                await self.executor.annotate(args["PodNamespace"], args["PodName"], self.annotations[uid])
            await self.executor.bind(args["PodNamespace"], args["PodName"], uid, node)
        except BindError as e:
            self.stats.bind_errors += 1
            self._release(uid)
            log.warning("bind failed", extra={"pod": who, "error": str(e)})
            return str(e)
        self.stats.binds += 1
        self.rejected.discard(uid)
        self.touched.pop(uid, None)
        self.annotations.pop(uid, None)
        self.cache.assume_bound(uid, node)
        # The decision was logged at INFO by the cycle that planned it; the bind itself is detail.
        log.debug("bound", extra={"pod": who, "node": node})
        return ""

    def _release(self, uid: PodUID) -> None:
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
