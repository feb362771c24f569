"""The queue manager: which groups have work, what changed since the scheduler last looked, and which
groups need not be looked at again until something changes.

Kueue keeps its pending workloads apart from its cache the same way. The cache reports every change of
one of pumice's pods or PodGroups here (and whether room was freed); the scheduler drains the changes
before a cycle and asks for the groups worth a cycle (:meth:`work`). A cycle's cost is then what
changed, not the backlog: a group the last cycle found short of room (*settled*) stays out until one of
its pods or its PodGroup changes, or room appears anywhere (a pod finished or a plan was released, a
node, queue or priority class changed).

Volcano re-tries every unschedulable job every session (its issue #5551); this is the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from extender.core.model import GroupKey, PodUID


@dataclass(frozen=True, slots=True)
class Changes:
    pods: frozenset[PodUID]  # added, updated or removed (pumice's and others')
    nodes: bool  # a node was added, changed or removed


class PendingSet:
    def __init__(self, planned: Callable[[PodUID], bool]) -> None:
        self._planned = planned
        self._waiting: dict[GroupKey, set[PodUID]] = {}
        self._group_of: dict[PodUID, GroupKey] = {}  # the waiting index, inverted
        self._backlog: set[GroupKey] = set()
        self._settled: set[GroupKey] = set()
        self._fresh: set[GroupKey] = set()  # changed since the last drain: not settled by a cycle before it
        self._changed_pods: set[PodUID] = set()
        self._nodes_changed = False
        self._room = False  # something happened that may let any waiting group fit
        # Set on every change; the scheduling loop waits on it (created unbound: no running loop needed).
        self.wakeup = asyncio.Event()

    # --- fed by the cache --------------------------------------------------------------------------
    def pod_changed(self, uid: PodUID, group: GroupKey | None, waiting: bool, freed: bool) -> None:
        """``group``: the pod's group if it is pumice's; ``waiting``: it waits for a node; ``freed``: its
        change released room (it finished, went, or lost a reservation)."""
        self._changed_pods.add(uid)
        was = self._group_of.pop(uid, None)
        if was is not None:
            members = self._waiting[was]
            members.discard(uid)
            if not members:
                del self._waiting[was]
        if group is not None:
            if waiting:
                self._waiting.setdefault(group, set()).add(uid)
                self._group_of[uid] = group
            self._touch(group)
        self._room |= freed
        self.wakeup.set()

    def _touch(self, key: GroupKey) -> None:
        self._backlog.add(key)
        self._settled.discard(key)
        self._fresh.add(key)

    def pods_relisted(self, gone: Iterable[PodUID]) -> None:
        """Before a re-list of pods: the index is rebuilt from it, and pods gone meanwhile count as
        changed (their plans must go)."""
        self._changed_pods.update(gone)
        self._waiting, self._group_of = {}, {}
        self._room = True

    def group_changed(self, key: GroupKey) -> None:
        self._touch(key)
        self.wakeup.set()

    def nodes_changed(self) -> None:
        self._nodes_changed = True
        self._room = True
        self.wakeup.set()

    def room_freed(self) -> None:
        """Queues or priority classes changed, or a reservation was released outside the watch."""
        self._room = True
        self.wakeup.set()

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

    def work(self) -> set[GroupKey]:
        """The groups a cycle starting now must look at: backlog groups that still hold a pod without a
        plan (the rest leave the backlog); every waiting group if room was freed since the last call."""
        if self._room:
            self._settled.clear()
            self._backlog.update(self._waiting)
        self._room, self._fresh = False, set()
        self._backlog = {k for k in self._backlog if self.unplanned(k)}
        return set(self._backlog)

    def settled(self) -> frozenset[GroupKey]:
        return frozenset(self._settled)

    def after_cycle(
        self, looked_at: Iterable[GroupKey], standing: Iterable[GroupKey], stale: set[GroupKey]
    ) -> None:
        """A cycle looked at ``looked_at``; ``standing`` are the groups left waiting for a reason that
        stands until something changes (short of room, refused admission): they settle unless they changed
        meanwhile; ``stale`` had decisions dropped (see the scheduler) and go again."""
        self._settled = {k for k in standing if k not in stale and k not in self._fresh and self.unplanned(k)}
        self._backlog.update(k for k in looked_at if self.unplanned(k))
        self._backlog.update(stale)

    def again(self, key: GroupKey) -> None:
        """Look at ``key`` next cycle (its plans were released) and let everyone look at the room."""
        self._backlog.add(key)
        self._room = True
        self.wakeup.set()

    def waiting_groups(self) -> int:
        return len(self._waiting)

    def waiting(self) -> dict[GroupKey, frozenset[PodUID]]:
        """pumice's waiting pods by group (a copy)."""
        return {k: frozenset(v) for k, v in self._waiting.items()}
