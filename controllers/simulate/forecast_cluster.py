"""The simulated cluster a forecast runs on: :class:`ForecastCluster`, seeded with parsed objects.

The same :class:`~controllers.simulate.cluster.SimCluster` (the real scheduler's parts on a virtual clock,
kube-scheduler's binds, the status writer's phases), with two differences that make a forecast cheap
enough to run every few seconds beside the scheduler:

- **seeded, not parsed**: the cluster cache is loaded with the live cache's frozen models
  (:class:`~controllers.state.models.ClusterModels`) and raw PodGroups, so there are no raw pods: a
  pod is bound, deleted or evicted by its model (the bind verb lays the binding over it, as it does for
  every bind), and the live scheduler's settled groups and what they weigh on their queues (``aside``)
  are taken over, so the first cycle looks only at what the live one would look at next;
- **groups that cannot start are left out**: before each cycle, an admitted group whose waiting pods
  could not fit even in the whole cluster's free room (fewer copies of its smallest pod fit the free room
  node by node than its gang still needs) is left out of the snapshot as settled, weighing on its queue
  by its totals, as the live loop leaves out groups short of room until room appears. It is a necessary
  condition the real cycle would find failing too, so no placement changes; it is off when the conf
  evicts (``preempt``, ``reclaim``: victims make room) or holds nodes for starving jobs
  (``reserveAfter``), where every group stays in;
- **groups behind alike ones are left out**: of admitted groups the allocate action cannot tell apart
  but by their place in line, at most as many start in a cycle as the free room holds copies of their
  gang, and they are the first in line; and a group starts only if the smaller ones of its family ahead
  of it did and left room for it: the others are left out the same way
  (:mod:`controllers.simulate.forecast_alike`, with the argument and where it applies; on with the
  prefilter);
- **the heads of the lines**: without a window, a cycle looks at the first gangs of each queue's line only
  and checks afterwards that none of the groups it left out behind them could have found room at its
  turn, else runs again with longer heads (:mod:`controllers.simulate.forecast_prefix`, with the argument;
  where the alike cut applies). No placement changes;
- **a window per queue**: of the groups that could fit, a cycle looks at the first ``window`` of each
  queue in line order (``order``); the others wait for the next cycle, which the forecast runs while
  cycles place something. When every group of a window fails though room was left, the groups behind
  it wait for the next step: the one way this differs from a cycle over all of them, traded for a cost
  per cycle that does not grow with the backlog.

Invariant: nothing here decides anything the scheduler's own parts do not; it only plays the API server,
kube-scheduler and the kubelets for objects that exist as models alone.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from controllers.scheduling.scheduler import Scheduler
from controllers.scheduling.shared import LoopSettings, SchedulingState
from controllers.scheduling.verbs import Verbs
from controllers.simulate import forecast_alike, forecast_prefix
from controllers.simulate.cluster import SimCluster, SimExecutor, SimLoop, SimWrites, run_now
from controllers.simulate.forecast_room import Room
from controllers.state.models import ClusterModels
from extender.api import wire
from extender.core.model import GroupKey, GroupPhase, Pod, PodGroup, PodUID
from extender.core.snapshot import Aside, Snapshot, pod_group_key
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult
from extender.plugins.registry import SchedulerConf

Obj = dict[str, Any]
_EVICTING = frozenset({"preempt", "reclaim"})
# Groups' kinds kept from cycle to cycle, worked out again only for the groups the cache says changed (off:
# every cycle works every kind out again; tests/simulate/test_fast_paths.py compares the two).
KEPT_KINDS = True
_WAITING = (GroupPhase.PENDING, GroupPhase.INQUEUE)
# A waiting group's shape: how many pods it needs, its smallest waiting pod, and the two as a mark.
_Shape = tuple[int, npt.NDArray[np.int64], tuple[int, bytes]]


def prefilter_applies(conf: SchedulerConf) -> bool:
    """Whether groups that cannot fit the free room may be left out: no action makes room by evicting,
    and no starvation guard holds nodes for a group that does not fit."""
    if _EVICTING & set(conf.spec.actions):
        return False
    for c in conf.spec.configurations:
        arguments = c.get("arguments")
        if c.get("name") == "allocate" and isinstance(arguments, dict) and arguments.get("reserveAfter"):
            return False
    return True


class ForecastLoop(SimLoop):
    """The simulator's loop, leaving out admitted groups that cannot fit the free room (see the module
    docstring); the rest is the real loop's."""

    def __init__(self, cluster: ForecastCluster, shared: SchedulingState, writes: SimWrites) -> None:
        super().__init__(cluster, shared, writes)
        self.forecast = cluster
        # Groups the last cycle left out only for the window: not settled, they come in the next cycle.
        self.held_back: frozenset[GroupKey] = frozenset()
        # What each group weighed on its queue when a cycle last left it waiting for room (seeded with the
        # live scheduler's settled groups): a group back in the work is prefiltered by it.
        self.asides: dict[GroupKey, Aside] = {}
        # How many gangs of each queue's line a cycle looks at (forecast_prefix), carried from cycle to cycle.
        self.keep: dict[str, int] = {}

    def _keep_capped(self) -> None:
        """Every settled group comes back when room frees, as it did: the prefilter below decides which
        of them a cycle looks at (a capped group it would leave out must not be voted on either)."""

    def _report_unreserved(self) -> None:
        """Nothing to warn of: the pods the forecast is seeded with were bound in the live cluster, never
        through this simulated one's reservations (the live loop warns of a real unreserved bind)."""

    def _left_out(self, looked: set[GroupKey]) -> frozenset[GroupKey]:
        """Of the groups a cycle would look at, those the prefilter leaves out (see the module docstring)."""
        self.held_back = frozenset()
        if not self.forecast.prefilter:
            return frozenset()
        candidates = {k for k in looked if k in self.asides}
        no_room = self.forecast.cannot_fit(candidates)
        self.held_back = self.forecast.beyond_window(candidates - no_room)
        behind = self.forecast.past_their_room(looked - no_room - self.held_back)
        return frozenset(no_room | self.held_back | (behind & candidates))

    def _snapshot(self, work: set[GroupKey], out: frozenset[GroupKey]) -> Snapshot:
        s = self.shared
        aside = s.pending.aside() + [self.asides[k] for k in out]
        return s.cache.snapshot(work - out, dict(s.refused), aside)

    def _prepare(self) -> tuple[Snapshot, frozenset[GroupKey]]:
        s = self.shared
        work = self._work()
        left_out = s.pending.left_out()
        extra = self._left_out(work - left_out)
        snap = self._snapshot(work, extra)
        self._cycled_at = self._versions()
        s.progress.started(s.cache.version)
        return snap, left_out | extra

    def cycle(self) -> None:
        """One cycle over the head of each queue's line, again with longer heads while a group left out
        behind them could have found room (:mod:`controllers.simulate.forecast_prefix`); not with a
        window, which bounds a cycle's groups already and gives its held-back groups cycles of their own."""
        cluster = self.forecast
        if not (forecast_prefix.PREFIX_CUT and cluster.prefilter and cluster.alike and cluster.window <= 0):
            super().cycle()
            return
        t0 = time.perf_counter()
        s = self.shared
        work = self._work()
        left_out = s.pending.left_out()
        self._cycled_at = self._versions()
        s.progress.started(s.cache.version)
        looked = work - left_out
        alike = cluster.kinds(looked)
        lines = forecast_prefix.lines(alike, cluster.queue_of, cluster.order)
        candidates = {k for k in alike if k in self.asides}
        _, free = cluster.free()
        node_pos = s.cache.node_table().node_pos
        while True:
            prefix = forecast_prefix.cut(lines, self.keep, candidates)
            tail = prefix.left_out()
            out = tail | self._left_out(looked - tail)
            snap = self._snapshot(work, out)
            result = run_cycle(snap, s.conf, s.clock(), clock=time.perf_counter)
            placements = list(result.placements.items())
            rooms = forecast_prefix.room_bounds(
                prefix, snap.groups, result.turns, placements, free, cluster.vector, node_pos
            )
            short = forecast_prefix.short(prefix, alike, rooms, cluster.copies)
            if not short:
                break
            for q in short:
                self.keep[q] = 2 * self.keep.get(q, forecast_prefix.FIRST_KEEP)
        self._apply(snap, left_out | out, result, t0)

    def _apply(self, snap: Snapshot, left_out: frozenset[GroupKey], result: CycleResult, t0: float) -> None:
        super()._apply(snap, left_out, result, t0)
        for key in snap.groups:
            if key in result.aside:
                self.asides[key] = result.aside[key]
            else:
                self.asides.pop(key, None)


def _stub(pod: Pod) -> Obj:
    """What the cache needs of a pod to remove it: its metadata."""
    return {"metadata": {"uid": pod.uid, "namespace": pod.namespace, "name": pod.name}}


class ForecastCluster(SimCluster):
    """A :class:`SimCluster` seeded with ``models``, whose pods exist as models only."""

    def __init__(
        self,
        conf: SchedulerConf,
        models: ClusterModels,
        *,
        now: float,
        aside: Mapping[GroupKey, Aside] = {},  # read only
        settled: frozenset[GroupKey] = frozenset(),
        prefilter: bool = True,
        window: int = 0,
    ) -> None:
        super().__init__(
            conf, now=now, scheduler_names=models.scheduler_names, default_queue=models.default_queue
        )
        self.prefilter = prefilter and prefilter_applies(conf)
        # Whether groups behind alike ones may be left out too (see forecast_alike).
        self.alike = self.prefilter and forecast_alike.applies(conf, models.pods)
        self.window = window
        # Each group's place in the cluster's order (the forecast sets it once positions are known).
        self.order: Mapping[GroupKey, int] = {}
        self._shapes: dict[GroupKey, tuple[PodGroup, tuple[str, ...], _Shape]] = {}
        # Each group's kind (forecast_alike) with the PodGroup it was worked out from, kept until one of
        # its pods or plans changes (the cache tells which groups did) or its PodGroup does (another object).
        self._kinds: dict[GroupKey, tuple[PodGroup, forecast_alike.Alike | None]] = {}
        self._interned: dict[forecast_alike.Kind, forecast_alike.Kind] = {}
        self.scheduler = self._scheduler(conf)
        self.cache.track_changed_groups()
        self.cache.load(models)
        self.podgroups = models.raw_podgroups.copy()
        self.queues = dict(models.raw_queues)
        for pod in models.pods:
            if pod.deleting:  # on its way out: its room is free from now on
                self.delete_pod(pod.uid)
        # The live scheduler's settled groups stay settled until room appears, as they would there.
        pending = self.state.pending
        pending.drain()
        pending.work()
        pending.after_cycle((), {k: aside[k] for k in settled if k in aside}, {}, set())
        self.loop.asides = {k: aside[k] for k in pending.settled()}
        self.dirty.clear()

    def _scheduler(self, conf: SchedulerConf) -> Scheduler:
        """The simulator's wiring of the scheduler's parts, with the forecast's loop."""
        shared = SchedulingState(self.state, conf, settings=LoopSettings(), clock=lambda: self.now)
        executor = SimExecutor(self)
        writes = SimWrites(self, shared, executor)
        loop = ForecastLoop(self, shared, writes)
        self.loop = loop
        return Scheduler(shared=shared, writes=writes, loop=loop, verbs=Verbs(shared, loop, executor))

    # --- pods as models ------------------------------------------------------------------------------
    def bind(self, uid: PodUID, node: str) -> None:
        """The bind verb has laid the binding over the model (``assume_bound``): the pod runs."""
        self.bound[uid] = node

    def delete_pod(self, uid: PodUID) -> None:
        pod = self.cache.pod(uid)
        if pod is None:
            return
        self.dirty.add(pod_group_key(pod))
        self.cache.remove_pod(_stub(pod))

    def evict(self, uid: PodUID) -> None:
        pod = self.cache.pod(uid)
        if pod is None:
            return
        self._record_eviction(pod)
        self.delete_pod(uid)

    def _bind_plans(self) -> int:
        n = 0
        for uid, node in sorted(self.ledger.plans().items()):
            pod = self.cache.pod(uid)
            if pod is None or self.ledger.waiting_for(uid):
                continue
            args: wire.ExtenderBindingArgs = {
                "PodName": pod.name,
                "PodNamespace": pod.namespace,
                "PodUID": uid,
                "Node": node,
            }
            if not run_now(self.scheduler.verbs.bind(args)):
                n += 1
        return n

    # --- the forecast's questions ---------------------------------------------------------------------
    def names(self) -> tuple[str, ...]:
        """The node table's resource names (the columns of :meth:`free`), without computing the room."""
        return self.cache.node_table().index.names

    def free(self) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
        """Each node's free room (allocatable less what is held and planned, never below 0), by the node
        table's resource names."""
        table = self.cache.node_table()
        free = table.alloc - self.ledger.held_matrix(table) - self.ledger.planned_matrix(table)
        return table.index.names, np.maximum(free, 0)

    def cannot_fit(self, keys: Iterable[GroupKey], *, admitted: bool = True) -> frozenset[GroupKey]:
        """The groups among ``keys`` (admitted ones only, unless ``admitted`` is False) whose waiting pods
        cannot fit the free room: fewer copies of the smallest of them (resource by resource) fit the
        nodes' free room, node by node, than the gang still needs. Groups of one shape are answered
        together."""
        return frozenset(k for k, fits in self._fits(keys, admitted=admitted) if not fits)

    def may_fit_any(self, keys: Iterable[GroupKey]) -> bool:
        """Whether any of ``keys`` is not among :meth:`cannot_fit` (``admitted`` False): asked as each step's
        ends are taken, it stops at the first that may fit."""
        return any(fits for _, fits in self._fits(keys, admitted=False))

    def queue_of(self, key: GroupKey) -> str:
        g = self.cache.group(key)
        return "" if g is None else g.queue

    def vector(self, uid: PodUID) -> npt.NDArray[np.int64]:
        """What pod ``uid`` requests, by the node table's resource names."""
        pod = self.cache.pod(uid)
        names = self.names()
        return np.array([0 if pod is None else pod.requests.get(n, 0) for n in names], dtype=np.int64)

    def copies(self, room: Room, requests: Mapping[str, int]) -> int:
        """How many pods of ``requests`` the room (by the table's names) holds, node by node."""
        names = self.names()
        if any(v > 0 and r not in names for r, v in requests.items()):
            return 0  # a resource no node has
        return room.copies(np.array([requests.get(n, 0) for n in names], dtype=np.int64))

    def _fits(self, keys: Iterable[GroupKey], *, admitted: bool) -> Iterator[tuple[GroupKey, bool]]:
        """Each of ``keys`` and whether it is not among :meth:`cannot_fit`."""
        names, free = self.free()
        room = Room(free)
        verdicts: dict[tuple[int, bytes], bool] = {}
        for key in keys:
            shape = self._shape(key, names, admitted=admitted)
            if shape is None:
                yield key, True
                continue
            need, smallest, mark = shape
            fits = verdicts.get(mark)
            if fits is None:
                fits = verdicts[mark] = room.copies(smallest) >= need
            yield key, fits

    def past_their_room(self, looked_at: Iterable[GroupKey]) -> frozenset[GroupKey]:
        """Of the groups a cycle looks at, those certain to fail because alike groups ahead of them in line
        take the room first (:mod:`controllers.simulate.forecast_alike`); none when it does not apply."""
        if not self.alike:
            return frozenset()
        alike = self.kinds(looked_at)
        names, free = self.free()
        copies = functools.partial(self.copies, Room(free))
        total = {n: int(v) for n, v in zip(names, free.sum(axis=0).tolist(), strict=True)}
        return frozenset(forecast_alike.past_their_room(alike, copies, total, self.order))

    def kinds(self, keys: Iterable[GroupKey]) -> dict[GroupKey, forecast_alike.Alike]:
        """The kind of each of ``keys`` that has one and a place in ``order`` (forecast_alike.kind_of)."""
        refused = self.scheduler.shared.refused
        alike: dict[GroupKey, forecast_alike.Alike] = {}
        planned = self.ledger.is_planned
        kinds, group, order = self._kinds, self.cache.group, self.order
        for key in self.cache.take_changed_groups() if KEPT_KINDS else list(kinds):
            kinds.pop(key, None)
        for key in keys:
            g = group(key)
            if g is None or key not in order:
                continue
            # Kept while the group, its pods and their plans stay as they are (a cycle looks at most groups
            # again unchanged); always asked afresh when kube-scheduler refused nodes.
            kept = kinds.get(key)
            if kept is not None and kept[0] is g and not refused:
                a = kept[1]
            else:
                pods = [p for u in self.cache.members(key) if (p := self.cache.pod(u)) is not None]
                a = forecast_alike.kind_of(g, pods, planned, refused)
                if a is not None:
                    # One object per kind and family: the cycle's grouping then compares them by identity.
                    a = dataclasses.replace(
                        a,
                        kind=self._interned.setdefault(a.kind, a.kind),
                        family=None if a.family is None else self._interned.setdefault(a.family, a.family),
                    )
                kinds[key] = (g, a)
            if a is not None:
                alike[key] = a
        return alike

    def beyond_window(self, keys: Iterable[GroupKey]) -> frozenset[GroupKey]:
        """Of the groups that could fit, those past the first ``window`` of each queue in line order."""
        if self.window <= 0:
            return frozenset()
        by_queue: dict[str, list[GroupKey]] = {}
        for key in keys:
            g = self.cache.group(key)
            if g is not None:
                by_queue.setdefault(g.queue, []).append(key)
        out: list[GroupKey] = []
        last = len(self.order) + 1
        for line in by_queue.values():
            if len(line) > self.window:
                line.sort(key=lambda k: (self.order.get(k, last), k))
                out.extend(line[self.window :])
        return frozenset(out)

    def _shape(self, key: GroupKey, names: tuple[str, ...], *, admitted: bool) -> _Shape | None:
        """How many pods group ``key`` still needs placed and the smallest of its waiting pods, resource
        by resource (a resource no node has: -1), with the two as one hashable mark; None when it waits for
        nothing, is not waiting, or (``admitted``) is not admitted. Kept while the group and the table's
        names stay as they are."""
        g = self.cache.group(key)
        if g is None or g.phase not in ((GroupPhase.INQUEUE,) if admitted else _WAITING):
            return None
        cached = self._shapes.get(key)
        if cached is not None and cached[0] is g and cached[1] == names:
            return cached[2]
        pods = [p for u in self.cache.members(key) if (p := self.cache.pod(u)) is not None]
        waiting = [p for p in pods if p.waiting and not self.ledger.is_planned(p.uid)]
        if not waiting:
            return None
        have = sum(1 for p in pods if p.holds_resources or self.ledger.is_planned(p.uid))
        col = set(names)
        rows = np.array([[p.requests.get(n, 0) for n in names] for p in waiting], dtype=np.int64)
        smallest = rows.min(axis=0)
        if any(v > 0 and r not in col for p in waiting for r, v in p.requests.items()):
            smallest = np.full(len(names), -1, dtype=np.int64)
        need = max(g.min_member - have, 1)
        shape = (need, smallest, (need, smallest.tobytes()))
        self._shapes[key] = (g, names, shape)
        return shape

    def started(self, key: GroupKey) -> bool:
        """Whether group ``key``'s gang is whole: ``minMember`` pods bound (or done)."""
        g = self.cache.group(key)
        if g is not None and g.phase == GroupPhase.RUNNING:
            return True
        pods = [p for u in self.cache.members(key) if (p := self.cache.pod(u)) is not None]
        have = sum(1 for p in pods if p.node_name and not p.terminal)
        return have >= max(g.min_member if g is not None else 1, 1)
