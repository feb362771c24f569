"""The reservation ledger: every pod's claim on a node, through its whole life, in one place.

A pod's reservation moves through these states:

    waiting ──its victims are gone──▶ planned ──bind succeeded──▶ assumed ──watch shows nodeName──▶ bound
    (for victims)                        │                                        ▲           │
                                         └── kube-scheduler bound it elsewhere ──┘    finished/deleted
    waiting or planned ──pod deleted, node gone, gang re-planned, bind failed,                ▼
                         victims did not leave in time──▶ released                        released

A *waiting* reservation (Volcano's Pipelined) is a plan made by preempt or reclaim on a node whose room
its victims still hold: it holds that room (nobody else is planned into it) but the pod is not bound
until the last victim is gone, when it becomes a plain plan.

Every pod that holds resources is here, whoever scheduled it: node totals are derived from the ledger
alone, so "what is reserved on node n" has one answer (:meth:`on_node`). Queue totals count pumice's
pods only (other schedulers' pods belong to no queue) and follow a PodGroup that moves to another queue
(:meth:`requeue`).

Invariant: the running totals always equal the sum over the entries (``tests/controllers/test_ledger.py``
checks it after every step of random lifecycles).
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

import numpy as np
import numpy.typing as npt

from controllers.state.usage import NodeUsage
from extender.core.model import GroupKey, Pod, PodUID
from extender.core.node_table import NodeTable

# One empty mapping for every reservation without decided annotations (nearly all): an empty dict each
# was 64 bytes a pod.
_NOTHING_DECIDED: Final[Mapping[str, str]] = MappingProxyType({})


class State(enum.Enum):
    WAITING = "waiting"  # planned where pods still have to leave (preempt, reclaim)
    PLANNED = "planned"  # pumice chose the node; kube-scheduler has not bound it yet
    ASSUMED = "assumed"  # bound by pumice's /bind; the watch has not shown it yet
    BOUND = "bound"  # the watch shows the pod on the node, alive


@dataclass(frozen=True, slots=True, kw_only=True)
class Reservation:
    node: str
    requests: Mapping[str, int]
    queue: str | None
    group: GroupKey | None
    state: State
    # WAITING: the pods still to leave its node, and when the reservation was made (the loop's clock).
    victims: frozenset[PodUID] = frozenset()
    since: float = 0.0
    # The annotations a plugin decided with the plan (deviceshare's cards): they hold those cards until
    # the watch shows the pod bound with them, written or not.
    decided: Mapping[str, str] = field(default_factory=lambda: _NOTHING_DECIDED)

    @property
    def planned(self) -> bool:
        """Not bound yet, by pumice or anyone: a plan, waiting for victims or not."""
        return self.state is State.PLANNED or self.state is State.WAITING


def _add(acc: dict[str, int], more: Mapping[str, int], sign: int) -> None:
    for k, v in more.items():
        acc[k] = acc.get(k, 0) + sign * v


class Ledger:
    def __init__(self) -> None:
        self._entries: dict[PodUID, Reservation] = {}
        # Running totals, kept with every change of an entry: held (assumed or bound) and planned per node,
        # and every state per queue.
        self._held = NodeUsage()
        self._planned = NodeUsage()
        self._queues: dict[str, dict[str, int]] = {}
        self._groups: dict[GroupKey, dict[PodUID, None]] = {}  # (a dict: a third of a set's size)
        self._plans: dict[PodUID, str] = {}
        # Groups whose plans changed since the last ``take_planned_groups`` (the cache's elastic book).
        self._planned_groups: set[GroupKey] = set()
        # Victim -> the waiting reservations that wait for it to leave; and every waiting reservation (the
        # victim timeout looks at these alone, not at every entry, once per cycle).
        self._awaited: dict[PodUID, set[PodUID]] = {}
        self._waiting: set[PodUID] = set()
        # Bumped on every change of a plan: the scheduler's "did anything happen while I was cycling".
        self.plan_version = 0
        # Pods of pumice's groups the watch showed bound while no plan or bind of ours reserved them (a
        # bind on a stale answer, or someone else's): the scheduling room counts those of its terms.
        self.unreserved_binds = 0
        self.unreserved: deque[tuple[PodUID, str]] = deque(maxlen=64)  # the latest of them, with their node

    # --- the one writer of entries -------------------------------------------------------------------
    def _put(self, uid: PodUID, r: Reservation | None) -> None:
        old = self._entries.pop(uid, None)
        if old is not None:
            self._account(uid, old, -1)
        if r is not None:
            self._entries[uid] = r
            self._account(uid, r, 1)
        elif uid in self._awaited:
            self._left(uid)

    def _left(self, victim: PodUID) -> None:
        """``victim`` no longer holds its node: reservations waiting for nothing else become plans."""
        for w in self._awaited.pop(victim, ()):
            r = self._entries.get(w)
            if r is None or r.state is not State.WAITING:
                continue
            rest = r.victims - {victim}
            self._put(w, replace(r, victims=rest, state=State.WAITING if rest else State.PLANNED))

    def _account(self, uid: PodUID, r: Reservation, sign: int) -> None:
        planned = r.planned
        if r.state is State.WAITING:
            (self._waiting.add if sign > 0 else self._waiting.discard)(uid)
            for v in r.victims:
                if sign > 0:
                    self._awaited.setdefault(v, set()).add(uid)
                elif v in self._awaited:
                    self._awaited[v].discard(uid)
                    if not self._awaited[v]:
                        del self._awaited[v]
        (self._planned if planned else self._held).add(r.node, r.requests, sign)
        if r.queue is not None:
            _add(self._queues.setdefault(r.queue, {}), r.requests, sign)
        if r.group is not None:
            members = self._groups.setdefault(r.group, {})
            if sign > 0:
                members[uid] = None
            else:
                members.pop(uid, None)
                if not members:
                    del self._groups[r.group]
        if planned:
            if sign > 0:
                self._plans[uid] = r.node
            else:
                del self._plans[uid]
            self.plan_version += 1
            if r.group is not None:
                self._planned_groups.add(r.group)

    # --- lifecycle ------------------------------------------------------------------------------------
    def plan(
        self,
        uid: PodUID,
        node: str,
        requests: Mapping[str, int],
        queue: str | None,
        group: GroupKey | None,
        *,
        victims: frozenset[PodUID] = frozenset(),
        now: float = 0.0,
        decided: Mapping[str, str] | None = None,
    ) -> None:
        """Reserve ``node`` for a waiting pod, once ``victims`` (those still holding a reservation) have
        left it. A pod that is assumed or bound keeps that reservation."""
        old = self._entries.get(uid)
        if old is not None and not old.planned:
            return
        still = frozenset(v for v in victims if v in self._entries)
        state = State.WAITING if still else State.PLANNED
        self._put(
            uid,
            Reservation(
                node=node,
                requests=requests,
                queue=queue,
                group=group,
                state=state,
                victims=still,
                since=now,
                decided=decided or _NOTHING_DECIDED,
            ),
        )

    def assume(self, uid: PodUID, node: str) -> None:
        """Our bind of ``uid`` to ``node`` succeeded: held there until the watch says otherwise."""
        old = self._entries.get(uid)
        if old is None or old.state is State.BOUND:
            return
        self._put(
            uid,
            Reservation(
                node=node,
                requests=old.requests,
                queue=old.queue,
                group=old.group,
                state=State.ASSUMED,
                decided=old.decided,
            ),
        )

    def assumed_node(self, uid: PodUID) -> str | None:
        r = self._entries.get(uid)
        return r.node if r is not None and r.state is State.ASSUMED else None

    def observe(self, uid: PodUID, pod: Pod | None, queue: str | None, group: GroupKey | None) -> None:
        """What the watch shows of ``uid`` (None: deleted). Bound and alive: held on its node, whatever a
        plan said (kube-scheduler may have bound it elsewhere). Finished or deleted: released. Still
        waiting: an assumed reservation stands (a watch event older than our bind), a plan stays."""
        old = self._entries.get(uid)
        if pod is None or pod.terminal:
            if old is not None:
                self._put(uid, None)
            return
        if pod.holds_resources:
            r = Reservation(
                node=pod.node_name, requests=pod.requests, queue=queue, group=group, state=State.BOUND
            )
            if group is not None and (old is None or old.state is State.WAITING):
                self.unreserved_binds += 1
                self.unreserved.append((uid, pod.node_name))
            if r != old:
                self._put(uid, r)
            return
        if old is None:
            return
        if old.state is State.BOUND:
            self._put(uid, None)  # the watch no longer shows it bound: it is the truth for bound pods
        elif old.planned and (pod.deleting or old.group != group or old.queue != queue):
            self._put(uid, None)  # going away, or no longer of the gang it was planned with

    def release(self, uid: PodUID) -> None:
        """Drop a plan (gang re-planned, bind failed, node refused). Held reservations leave only by watch."""
        old = self._entries.get(uid)
        if old is not None and old.planned:
            self._put(uid, None)

    def stay(self, victim: PodUID) -> set[PodUID]:
        """``victim`` will not leave (its eviction was refused): the reservations waiting for it."""
        return set(self._awaited.get(victim, ()))

    def overdue(self, before: float) -> list[PodUID]:
        """Reservations still waiting for victims that were made before ``before``."""
        return sorted(uid for uid in self._waiting if self._entries[uid].since < before)

    def prune_plans(self, keep: Callable[[PodUID, str], bool]) -> int:
        """Release the plans ``keep`` rejects; how many went."""
        gone = [uid for uid, node in self._plans.items() if not keep(uid, node)]
        for uid in gone:
            self._put(uid, None)
        return len(gone)

    def requeue(self, group: GroupKey, queue: str | None) -> None:
        """A group's PodGroup now names another queue (or appeared or went): its usage moves with it."""
        for uid in list(self._groups.get(group, ())):
            old = self._entries[uid]
            if old.queue != queue:
                self._put(uid, replace(old, queue=queue, group=group))

    # --- reads ----------------------------------------------------------------------------------------
    def get(self, uid: PodUID) -> Reservation | None:
        return self._entries.get(uid)

    def entries(self) -> dict[PodUID, Reservation]:
        return dict(self._entries)

    def planned_node(self, uid: PodUID) -> str | None:
        """The node of a plan, waiting for victims or not."""
        return self._plans.get(uid)

    def waiting_for(self, uid: PodUID) -> frozenset[PodUID]:
        """The victims a waiting reservation waits for (empty for any other)."""
        r = self._entries.get(uid)
        return r.victims if r is not None and r.state is State.WAITING else frozenset()

    def decided(self, uid: PodUID) -> Mapping[str, str]:
        """The annotations decided with ``uid``'s plan, while it is planned or assumed (else empty)."""
        r = self._entries.get(uid)
        return r.decided if r is not None and r.state is not State.BOUND else {}

    def is_planned(self, uid: PodUID) -> bool:
        return uid in self._plans

    def plans(self) -> dict[PodUID, str]:
        """A copy of every plan (a cycle's worker thread reads it while the loop changes the ledger)."""
        return dict(self._plans)

    def take_planned_groups(self) -> set[GroupKey]:
        """The groups whose plans changed since the last call (one reader: the cache)."""
        out, self._planned_groups = self._planned_groups, set()
        return out

    def plan_count(self) -> int:
        return len(self._plans)

    def on_node(self, node: str) -> dict[str, int]:
        """Everything reserved on ``node``, in any state: the one answer."""
        out = dict(self._held.by_node.get(node, {}))
        _add(out, self._planned.by_node.get(node, {}), 1)
        return out

    def held_matrix(self, table: NodeTable) -> npt.NDArray[np.int64]:
        return self._held.matrix(table)

    def planned_matrix(self, table: NodeTable) -> npt.NDArray[np.int64]:
        return self._planned.matrix(table)

    def queue_usage(self) -> dict[str, dict[str, int]]:
        """Requests of pumice's pods per queue, planned, assumed and bound (a copy)."""
        return {q: dict(u) for q, u in self._queues.items()}
