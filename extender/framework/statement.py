"""Tentative placements and evictions, committed together or undone: Volcano's statement.

A :class:`Statement` applies each placement and eviction to the session's working state at once (free
capacity, queue usage, plans, the inter-pod counts, the namespaces' deltas, the ``placed`` listeners), so
the next decision of the same gang sees it; ``discard`` undoes them in reverse order, leaving that state
exactly as it was, and ``commit`` writes them to the cycle's result. ``unevict`` undoes one eviction
alone (evictions commute, so the order they are undone in does not matter). Every change of a row of
``free`` is told to the node cache (``ssn.nodes.touched`` or ``touched_rows``), which keeps the fit and
score caches exact. While ``ssn.evictions_lift_rules`` is set, an eviction also takes the victim out of
the inter-pod rules (and an undo puts it back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from extender.core.model import Pod, PodUID
from extender.core.resources import Vector
from extender.framework.result import Eviction

if TYPE_CHECKING:
    from extender.framework.session import Session


class Statement:
    """Tentative placements and evictions: applied to the session's working state at once, undone by
    ``discard``."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[tuple[PodUID, int, str]] = []
        self.evicted: list[tuple[Pod, int, str, Eviction]] = []

    def evict(self, pod: Pod, node: int, queue: str, why: Eviction) -> None:
        """Take ``pod`` (running on row ``node``, of ``queue``) off its node: its room and its queue's
        share come back to the session; placements on that node then wait for it to leave."""
        ssn = self.ssn
        v = ssn.running.vector(pod)
        ssn.free[node] += v
        ssn.nodes.touched(node)
        used = ssn.queue_used.get(queue)
        if used is not None:
            ssn.queue_used[queue] = used - v
        ssn.evicting[pod.uid] = node
        ssn.leaving.setdefault(node, set()).add(pod.uid)
        if ssn.namespace_ordered:
            _namespace_moved(ssn, pod.namespace, -v)
        if ssn.hooks.placed:
            _moved(ssn, queue, v, node, -1)
        if ssn.evictions_lift_rules:
            ssn.rules.lift(pod, node, True)
        self.evicted.append((pod, node, queue, why))

    def unevict(self, pod: Pod) -> None:
        """Undo this statement's eviction of ``pod`` alone (preempt's reprieve gives back a victim the
        preemptor turns out not to need); the other evictions and placements stay."""
        i = next(i for i, e in enumerate(self.evicted) if e[0].uid == pod.uid)
        _restore(self.ssn, *self.evicted.pop(i)[:3])

    def place(self, uid: PodUID, node: int, queue: str) -> None:
        v = self.ssn.vector(uid)
        self.ssn.free[node] -= v
        self.ssn.nodes.touched(node)
        used = self.ssn.queue_used.get(queue)
        self.ssn.queue_used[queue] = v.copy() if used is None else used + v
        self.ssn.plans[uid] = self.ssn.snapshot.nodes[node].name
        if self.ssn.rules_active:
            self.ssn.rules.placed(uid, node, 1)
        if self.ssn.namespace_ordered:
            _namespace_moved(self.ssn, self.ssn.snapshot.pods[uid].namespace, v)
        if self.ssn.hooks.placed:
            _moved(self.ssn, queue, v, node, 1)
        self.ops.append((uid, node, queue))

    def place_run(self, uids: Sequence[PodUID], nodes: Sequence[int], queue: str) -> None:
        """``place`` for each (uid, node) pair, for pods of one request vector (a run of a gang's
        identical pods): the same state, with one update of the queue's usage."""
        ssn = self.ssn
        v = ssn.vector(uids[0])
        # A gang's copies often share a node: one update per distinct node.
        copies: dict[int, int] = {}
        for node in nodes:
            copies[node] = copies.get(node, 0) + 1
        free, moved = ssn.free, ssn.hooks.placed
        for node, count in copies.items():
            free[node] -= v if count == 1 else count * v
            if moved:
                _moved(ssn, queue, v, node, count)
        ssn.nodes.touched_rows(nodes)
        total = len(uids) * v
        used = ssn.queue_used.get(queue)
        ssn.queue_used[queue] = total if used is None else used + total
        if ssn.namespace_ordered:
            _namespace_moved(ssn, ssn.snapshot.pods[uids[0]].namespace, total)
        table, plans = ssn.snapshot.nodes, ssn.plans
        for uid, node in zip(uids, nodes, strict=True):
            plans[uid] = table[node].name
        if ssn.rules_active:
            for uid, node in zip(uids, nodes, strict=True):
                ssn.rules.placed(uid, node, 1)
        self.ops.extend([(uid, node, queue) for uid, node in zip(uids, nodes, strict=True)])

    def absorb(self, other: Statement) -> None:
        """Make ``other``'s evictions and placements part of this statement (committed or discarded with
        it); ``other`` is left empty."""
        self.evicted.extend(other.evicted)
        self.ops.extend(other.ops)
        other.evicted.clear()
        other.ops.clear()

    def discard(self) -> None:
        ssn = self.ssn
        for pod, node, queue, _ in reversed(self.evicted):
            _restore(ssn, pod, node, queue)
        self.evicted.clear()
        for uid, node, queue in reversed(self.ops):
            v = self.ssn.vector(uid)
            self.ssn.free[node] += v
            self.ssn.nodes.touched(node)
            self.ssn.queue_used[queue] = self.ssn.queue_used[queue] - v
            del self.ssn.plans[uid]
            if self.ssn.rules_active:
                self.ssn.rules.placed(uid, node, -1)
            if self.ssn.namespace_ordered:
                _namespace_moved(self.ssn, self.ssn.snapshot.pods[uid].namespace, -v)
            if self.ssn.hooks.placed:
                _moved(self.ssn, queue, v, node, -1)
        self.ops.clear()

    def commit(self) -> None:
        result = self.ssn.result
        if self.ops or self.evicted:
            self.ssn.commits += 1  # the working state moved for good (see extender.framework.gang_failures)
        for pod, _, _, why in self.evicted:
            result.evictions[pod.uid] = why
        self.evicted.clear()
        placements, table, leaving_on = result.placements, self.ssn.snapshot.nodes, self.ssn.leaving
        for uid, node, _ in self.ops:
            placements[uid] = table[node].name
            leaving = leaving_on.get(node) if leaving_on else None
            if leaving:
                # Room there comes from pods still on it: the plan waits for them (and holds the room).
                result.pipelined[uid] = frozenset(leaving)
        self.ops.clear()


def _restore(ssn: Session, pod: Pod, node: int, queue: str) -> None:
    """Put evicted ``pod`` back on its node: the exact reverse of :meth:`Statement.evict`."""
    v = ssn.running.vector(pod)
    ssn.free[node] -= v
    ssn.nodes.touched(node)
    if queue in ssn.queue_used:
        ssn.queue_used[queue] = ssn.queue_used[queue] + v
    del ssn.evicting[pod.uid]
    ssn.leaving[node].discard(pod.uid)
    if ssn.namespace_ordered:
        _namespace_moved(ssn, pod.namespace, v)
    if ssn.hooks.placed:
        _moved(ssn, queue, v, node, 1)
    if pod.uid in ssn.lifted:
        ssn.rules.lift(pod, node, False)


def _moved(ssn: Session, queue: str, request: Vector, row: int, count: int) -> None:
    """Tell the ``placed`` listeners (for every place, eviction and undo; Volcano's Allocate and
    Deallocate events)."""
    for p in ssn.hooks.placed:
        p.placed(ssn, queue, request, row, count)


def _namespace_moved(ssn: Session, namespace: str, v: Vector) -> None:
    """``v`` more (or, negative, less) is held by ``namespace`` (kept when ``ssn.namespace_ordered``)."""
    d = ssn.namespace_delta.get(namespace)
    ssn.namespace_delta[namespace] = v.copy() if d is None else d + v
