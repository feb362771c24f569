"""The queue manager: which groups have work, what changed since the scheduler last looked, and which
groups need not be looked at again until something changes.

Kueue keeps its pending workloads apart from its cache the same way. The cache reports every change of
one of pumice's pods or PodGroups here (and whether room was freed); the scheduler drains the changes
before a cycle and asks for the groups worth a cycle (:meth:`work`). A cycle's cost is then what
changed, not the backlog. Two kinds of group are left out of cycles, each with what it still weighs on its
queue (:class:`~controllers.state.aside_book.AsideBook`, summed per queue as groups come and go):

- *settled*: the last cycle found it short of room or refused it admission. It stays out until one of its
  pods or its PodGroup changes, or room appears anywhere (a pod finished or a plan was released, a node,
  queue or priority class changed). When room appears, a group its queue's capability is sure to refuse
  (the scheduler says which: :mod:`extender.framework.capped`) stays out all the same, and the cycle votes
  on its admission again from its PodGroup alone (:meth:`PendingSet.revote`);
- *placed*: admitted, every waiting pod planned (kube-scheduler binds them next). It stays out until one of
  its pods or its PodGroup changes, its plans are released, nodes change (plans on a node that went are
  dropped) or queues change: room elsewhere gives it nothing to do. kube-scheduler binding one of its pods
  where it was planned changes only what it weighs (that pod waits no more), and a bound pod that goes on
  holding the same on the same node (it runs) nothing: it stays out.

The status writer is told the same changes (:meth:`drain_status`), so its passes cost what changed too.

Invariants: the backlog holds no left-out group; a settled group has a waiting pod without a plan, a placed
one has none; every per-cycle step costs the groups that changed, or a C-level set operation.

Volcano re-tries every unschedulable job every session (its issue #5551); this is the difference.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, KeysView, Mapping
from dataclasses import dataclass

from controllers.state.aside_book import AsideBook
from extender.core.model import GroupKey, PodUID
from extender.core.snapshot import Aside


@dataclass(frozen=True, slots=True)
class Changes:
    pods: frozenset[PodUID]  # added, updated or removed (pumice's and others')
    nodes: bool  # a node was added, changed or removed


class PendingSet:
    def __init__(
        self, planned: Callable[[PodUID], bool], *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._planned = planned
        self._clock = clock
        self._waiting: dict[GroupKey, set[PodUID]] = {}
        # When a waiting pod last joined each group that has waiting pods (a gang still being created).
        self._joined: dict[GroupKey, float] = {}
        # Pods whose next change leaves a placed group with nothing to decide (see bound_on_plan, same):
        # the requests it stops waiting with (bound where planned), or None (nothing it weighs changes).
        self._quiet: dict[PodUID, tuple[GroupKey, Mapping[str, int] | None]] = {}
        self._group_of: dict[PodUID, GroupKey] = {}  # the waiting index, inverted
        self._backlog: set[GroupKey] = set()
        self._settled = AsideBook()
        self._revote: frozenset[GroupKey] = frozenset()  # see work()
        self._placed = AsideBook()
        self._fresh: set[GroupKey] = set()  # changed since the last drain: not left out by a cycle before it
        self._changed_pods: set[PodUID] = set()
        self._nodes_changed = False
        self._room = False  # something happened that may let any waiting group fit
        # For the status writer: groups whose pods, PodGroup, plans or reason changed since it last looked
        # (or everything, after a re-list or a node change, and before its first look).
        self._status: set[GroupKey] = set()
        self._status_all = True
        # Set on every change; the scheduling loop waits on it (created unbound: no running loop needed).
        self.wakeup = asyncio.Event()

    # --- fed by the cache --------------------------------------------------------------------------
    def pod_changed(self, uid: PodUID, group: GroupKey | None, waiting: bool, freed: bool) -> None:
        """``group``: the pod's group if it is pumice's; ``waiting``: it waits for a node; ``freed``: its
        change released room (it finished, went, or lost a reservation)."""
        self._changed_pods.add(uid)
        quiet = self._quiet.pop(uid, None)
        was = self._group_of.pop(uid, None)
        if was is not None:
            members = self._waiting[was]
            members.discard(uid)
            if not members:
                del self._waiting[was]
                self._joined.pop(was, None)
        if group is not None:
            if waiting:
                self._waiting.setdefault(group, set()).add(uid)
                self._group_of[uid] = group
                if was is None:
                    self._joined[group] = self._clock()
            placed = self._placed.get(group)
            if quiet is not None and quiet[0] == group and placed is not None and not waiting and not freed:
                # The placed group stays out of cycles: bound where it was planned, the pod waits no more
                # and weighs that much less (what the group holds, planned or bound, is the same); else
                # nothing it weighs changed (it runs, a label moved).
                if quiet[1] is not None:
                    self._placed.add(group, _less(placed, quiet[1]))
                self._status.add(group)
            else:
                self._touch(group)
        self._room |= freed
        self.wakeup.set()

    def bound_on_plan(self, uid: PodUID, key: GroupKey, requests: Mapping[str, int]) -> None:
        """The change of ``uid`` about to be told is its bind to the node it was planned on."""
        self._quiet[uid] = (key, requests)

    def same(self, uid: PodUID, key: GroupKey) -> None:
        """The change of ``uid`` about to be told leaves it holding what it held, where it held it."""
        self._quiet[uid] = (key, None)

    def _touch(self, key: GroupKey) -> None:
        self._backlog.add(key)
        self._settled.remove(key)
        self._placed.remove(key)
        self._fresh.add(key)
        self._status.add(key)

    def pods_relisted(self, gone: Iterable[PodUID]) -> None:
        """Before a re-list of pods: the index is rebuilt from it, and pods gone meanwhile count as
        changed (their plans must go)."""
        self._changed_pods.update(gone)
        self._waiting, self._group_of, self._joined = {}, {}, {}
        self._placed.clear()
        self._room = True
        self._status_all = True

    def group_changed(self, key: GroupKey) -> None:
        self._touch(key)
        self.wakeup.set()

    def nodes_changed(self) -> None:
        self._nodes_changed = True
        self._room = True
        self._placed.clear()  # a plan on a node that went is dropped before the next cycle
        self._status_all = True
        self.wakeup.set()

    def room_freed(self) -> None:
        """Queues or priority classes changed, or a reservation was released outside the watch."""
        self._room = True
        self.wakeup.set()

    def queues_changed(self) -> None:
        """A queue was added, changed or removed: placed groups are looked at again (allocate tells an
        admitted group holding nothing yet that its queue went) and room may have appeared."""
        self._placed.clear()
        self.room_freed()

    def reset(self) -> None:
        """Look at every waiting group again (the scheduler conf changed: what was left out may not be)."""
        self._placed.clear()
        self.room_freed()

    # --- read and steered by the scheduler ---------------------------------------------------------
    def drain(self) -> Changes:
        """The pods and nodes changed since the last call (the scheduler forgets what it must about them,
        then asks for :meth:`work`)."""
        out = Changes(frozenset(self._changed_pods), self._nodes_changed)
        self._changed_pods, self._nodes_changed = set(), False
        return out

    def unplanned(self, key: GroupKey) -> bool:
        """The group has a waiting pod without a plan."""
        return any(not self._planned(u) for u in self._waiting.get(key, ()))

    def work(self, keep: Callable[[GroupKey], bool] | None = None) -> set[GroupKey]:
        """The groups a cycle starting now must look at: backlog groups that still hold a pod without a
        plan (the rest leave the backlog); every waiting group not placed if room was freed since the last
        call (settled groups come back), but those settled groups ``keep`` says stay out: the cycle votes
        for them again without their pods (:meth:`revote`; see extender.framework.capped)."""
        self._revote = frozenset()
        if self._room:
            if keep is None:
                self._settled.clear()
            else:
                kept = frozenset(k for k in self._settled if keep(k))
                for k in self._settled.keys() - kept:
                    self._settled.remove(k)
                self._revote = kept
            self._backlog.update(self._waiting.keys() - self._placed.keys() - self._revote)
        self._room, self._fresh = False, set()
        self._backlog = {k for k in self._backlog if self.unplanned(k)}
        return set(self._backlog)

    def revote(self) -> frozenset[GroupKey]:
        """The settled groups the last :meth:`work` kept out though room was freed."""
        return self._revote

    def settled_keys(self) -> KeysView[GroupKey]:
        """The settled groups (a live view, no copy)."""
        return self._settled.keys()

    def settled(self) -> frozenset[GroupKey]:
        return frozenset(self._settled.keys())

    def placed(self) -> frozenset[GroupKey]:
        return frozenset(self._placed.keys())

    def left_out(self) -> frozenset[GroupKey]:
        """Every group a cycle starting now leaves out (settled or placed)."""
        return frozenset(self._settled.keys() | self._placed.keys())

    def settled_entry(self, key: GroupKey) -> Aside | None:
        """What settled group ``key`` weighs, None when it is not settled. A new object every time a cycle
        settles the group, kept until it leaves the settled groups (any change of its pods or PodGroup):
        while a reader finds the same object, nothing of the group changed since it last looked."""
        return self._settled.get(key)

    def settled_asides(self) -> dict[GroupKey, Aside]:
        """What each settled group weighs on its queue (a forecast starts from them)."""
        return {k: a for k in self._settled if (a := self._settled.get(k)) is not None}

    def aside(self) -> list[Aside]:
        """What the groups left out weigh, summed per queue (for the snapshot)."""
        return self._settled.totals() + self._placed.totals()

    def after_cycle(
        self,
        looked_at: Iterable[GroupKey],
        settled: Mapping[GroupKey, Aside],
        placed: Mapping[GroupKey, Aside],
        stale: set[GroupKey],
    ) -> None:
        """A cycle looked at ``looked_at``; ``settled`` are the groups it left waiting for a reason that
        stands until something changes (short of room, refused admission), ``placed`` those whose waiting
        pods all hold plans; both leave the backlog unless they changed meanwhile; ``stale`` had decisions
        dropped (see the scheduler) and go again."""
        for key, aside in settled.items():
            if key not in stale and key not in self._fresh and self.unplanned(key):
                self._settled.add(key, aside)
                self._backlog.discard(key)
        for key, aside in placed.items():
            if key not in stale and key not in self._fresh and not self.unplanned(key):
                self._placed.add(key, aside)
                self._backlog.discard(key)
        self._backlog.update(
            k for k in looked_at if k not in self._settled and k not in self._placed and self.unplanned(k)
        )
        self._backlog.update(stale)

    def again(self, key: GroupKey) -> None:
        """Look at ``key`` next cycle (its plans were released) and let everyone look at the room."""
        self._placed.remove(key)
        self._backlog.add(key)
        self._status.add(key)
        self._room = True
        self.wakeup.set()

    # --- read by the status writer --------------------------------------------------------------------
    def status_changed(self, keys: Iterable[GroupKey]) -> None:
        """A cycle planned, admitted or gave a new reason to these groups."""
        self._status.update(keys)

    def drain_status(self) -> tuple[set[GroupKey], bool]:
        """The groups whose status may have changed since the last call, and whether every group's may."""
        out = (self._status, self._status_all)
        self._status, self._status_all = set(), False
        return out

    def joined_at(self, key: GroupKey) -> float | None:
        """When a waiting pod last joined ``key`` (by the clock given), while the group has waiting pods."""
        return self._joined.get(key)

    def waiting_groups(self) -> int:
        return len(self._waiting)

    def waiting(self) -> dict[GroupKey, frozenset[PodUID]]:
        """pumice's waiting pods by group (a copy)."""
        return {k: frozenset(v) for k, v in self._waiting.items()}


def _less(aside: Aside, requests: Mapping[str, int]) -> Aside:
    """``aside`` of a placed group once a pod requesting ``requests`` is bound: out of ``waiting`` and
    ``planned`` (integers: exactly what summing the pods still waiting gives)."""

    def minus(amounts: Mapping[str, int]) -> dict[str, int]:
        out = dict(amounts)
        for name, v in requests.items():
            left = out.get(name, 0) - v
            if left:
                out[name] = left
            else:
                out.pop(name, None)
        return out

    return Aside(
        queue=aside.queue, waiting=minus(aside.waiting), owed=aside.owed, planned=minus(aside.planned)
    )
