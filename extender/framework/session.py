"""One scheduling cycle's working state over an immutable snapshot.

The session owns the mutable copies a cycle needs (free capacity per node, per-queue usage, the plans
made so far) and applies the tier rules of :mod:`extender.framework.plugin`. Tentative placements are
made inside a :class:`Statement` and either committed together (the gang is ready) or discarded, which is
Volcano's statement idea: a gang never holds part of the cluster it cannot use.

Fit masks and node scores are cached per request vector and brought up to date by re-checking only the
node rows whose free capacity changed since (the ``touched`` log); a cached value is always equal to a
fresh computation, so caching changes no placement.

Rules that look at other pods (inter-pod affinity, topology spread) and scores that depend on who the
pod is rather than what it requests (:class:`PodScorer`) are evaluated per pod, over the counts in
:class:`~extender.core.interpod.PodsOnNodes`, which every place and discard keeps current. That object
is built the first time a pod with such rules is placed, or a pod on a node has terms that could concern
any pod: until then a cycle pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.interpod import PodsOnNodes
from extender.core.model import GroupKey, NodeConstraints, Pod, PodGroup, PodUID, Queue
from extender.core.resources import Vector
from extender.core.snapshot import Snapshot
from extender.framework.plugin import Plugin, Rows, Scores


@runtime_checkable
class PodScorer(Protocol):
    """A ``node_score`` plugin that also scores by who the pod is (its preferences, its labels against
    other pods), not only by its request. Such scores are computed afresh for each placement over its
    candidate nodes (kube-scheduler normalises over the nodes that passed its filters) and never cached.
    Return None when the pod gives the plugin nothing to prefer, which must be the cheap common case."""

    def pod_score(self, ssn: Session, pod: Pod, candidates: fit.Mask) -> Scores | None: ...


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why a group is not (fully) placed: a CamelCase condition ``reason`` and a ``message`` for humans."""

    reason: str
    message: str


@dataclass(slots=True)
class CycleResult:
    placements: dict[PodUID, str] = field(default_factory=dict)
    admitted: set[GroupKey] = field(default_factory=set)
    unschedulable: dict[GroupKey, Unschedulable] = field(default_factory=dict)
    # Groups that got their whole gang planned in this cycle.
    ready: set[GroupKey] = field(default_factory=set)


class Session:
    def __init__(
        self, snapshot: Snapshot, tiers: Sequence[Sequence[Plugin]], *, cache_scores: bool = True
    ) -> None:
        self.snapshot = snapshot
        self.tiers = tiers
        self.plugins = [p for tier in tiers for p in tier]
        # Per hook, the plugins the conf leaves it switched on for, in tier order.
        self._hooked = {
            hook: [p for p in self.plugins if p.takes_part(hook)]
            for hook in ("job_order", "queue_order", "enqueue", "allocatable", "node_score", "victim")
        }
        self.free: npt.NDArray[np.int64] = snapshot.free
        self.result = CycleResult()
        self.admitted: set[GroupKey] = {k for k, g in snapshot.groups.items() if g.phase != "Pending"}
        self.plans: dict[PodUID, str] = dict(snapshot.plans)
        self._masks: dict[NodeConstraints, fit.Mask] = {}
        self._vectors: dict[PodUID, Vector] = {}
        # Rows of ``free`` changed so far, in order, and per request vector the fit mask computed at some
        # position of that log: a mask is brought up to date by re-checking only the rows changed since.
        self._touched: list[int] = []
        self._fit_masks: dict[bytes, tuple[fit.Mask, int]] = {}
        # The same for summed node scores, when every plugin that scores at all (one that does not override
        # ``node_score`` has no opinion) can rescore single rows.
        self._scorers = [p for p in self._hooked["node_score"] if type(p).node_score is not Plugin.node_score]
        self._cache_scores = cache_scores and all(p.row_local_scores for p in self._scorers)
        self._scores: dict[bytes, tuple[Scores, int]] = {}
        self._pod_scorers = [p for p in self._scorers if isinstance(p, PodScorer)]
        self._interpod: PodsOnNodes | None = None
        # True once the inter-pod state exists: from then on placements update it and a pod's labels
        # matter to the rules of others.
        self.rules_active = False
        self._terms_on_nodes: bool | None = None  # whether a resident has inter-pod terms (found once)
        r = len(snapshot.index)
        # What each queue holds: bound pods plus plans not yet bound (the snapshot's totals).
        self.queue_used: dict[str, Vector] = {q: np.zeros(r, dtype=np.int64) for q in snapshot.queues}
        for q, held in snapshot.queue_held.items():
            self.queue_used[q] = self.queue_used.get(q, np.zeros(r, dtype=np.int64)) + held
        # minResources of admitted groups not yet running: promised capacity enqueue must respect.
        self.inqueue = np.zeros(r, dtype=np.int64)
        self.queue_inqueue: dict[str, Vector] = {}
        for key in self.admitted:
            g = snapshot.groups[key]
            if g.phase == "Inqueue":
                self._promise(g)
        for p in self.plugins:
            p.open(self)

    def _promise(self, g: PodGroup) -> None:
        # Volcano reserves minResources less what the group already holds.
        v = self.snapshot.index.vector(g.min_resources)
        for uid in self.snapshot.members.get(g.key, ()):
            if self.snapshot.pods[uid].holds_resources or uid in self.plans:
                v -= self.vector(uid)
        v = np.maximum(v, 0)
        self.inqueue += v
        self.queue_inqueue[g.queue] = self.queue_inqueue.get(g.queue, np.zeros_like(v)) + v

    def admit(self, g: PodGroup) -> None:
        self.admitted.add(g.key)
        self.result.admitted.add(g.key)
        self._promise(g)

    # --- per-pod helpers --------------------------------------------------------------------------
    def vector(self, uid: PodUID) -> Vector:
        v = self._vectors.get(uid)
        if v is None:
            v = self._vectors[uid] = self.snapshot.index.vector(self.snapshot.pods[uid].requests)
        return v

    def pod_mask(self, p: Pod) -> fit.Mask:
        """Nodes ``p`` may use apart from resources and other pods: its constraints, less the nodes
        kube-scheduler's own filters refused for it (ports, volumes, and what the core cannot decide, such
        as a namespaceSelector over namespace labels it was not given)."""
        m = self.static_mask(p.constraints)
        refused = self.snapshot.refused.get(p.uid)
        if refused:
            m = m.copy()
            for name in refused:
                row = self.snapshot.node_pos.get(name)
                if row is not None:
                    m[row] = False
        return m

    def static_mask(self, c: NodeConstraints) -> fit.Mask:
        m = self._masks.get(c)
        if m is None:
            m = self._masks[c] = fit.static_mask(c, self.snapshot.nodes)
        return m

    def fit_mask(self, request: Vector) -> fit.Mask:
        """Nodes whose free capacity now covers ``request`` (read-only: callers must not modify it)."""
        key = request.tobytes()
        cached = self._fit_masks.get(key)
        end = len(self._touched)
        if cached is None or self._stale(cached[1]):
            mask = fit.fits(self.free, request)
        else:
            mask, start = cached
            if start < end:
                rows = self._touched_since(start)
                mask[rows] = (self.free[rows] >= request).all(axis=1)
        self._fit_masks[key] = (mask, end)
        return mask

    def _touched_since(self, start: int) -> Rows:
        return np.unique(np.asarray(self._touched[start:], dtype=np.intp))

    def _stale(self, since: int) -> bool:
        # Past this many changed rows a full recompute is cheaper than indexing them.
        return (len(self._touched) - since) * 8 > len(self.snapshot.nodes)

    def touched(self, node: int) -> None:
        """Record that ``free[node]`` changed (Statement does, for every place and undo)."""
        self._touched.append(node)

    # --- rules that look at other pods ----------------------------------------------------------------
    @property
    def interpod(self) -> PodsOnNodes:
        """The cycle's pods-on-nodes counts (built on first use, with the placements made so far)."""
        if self._interpod is None:
            snap = self.snapshot
            placed = [
                (snap.pods[uid], snap.node_pos[node])
                for uid, node in self.plans.items()
                if uid not in snap.plans
            ]
            self._interpod = PodsOnNodes(snap, placed)
            self.rules_active = True
        return self._interpod

    def pod_rules(self, p: Pod) -> PodsOnNodes | None:
        """The inter-pod state when any rule can concern ``p``: its own rules, or terms of pods on nodes.
        None is the fast path: no such rule exists in this cycle."""
        if p.affinity is None or not p.affinity.looks_at_pods:
            if self._interpod is None:
                if self._terms_on_nodes is None:
                    self._terms_on_nodes = bool(self.snapshot.residents.with_terms())
                if not self._terms_on_nodes:
                    return None
            elif not self._interpod.holds_terms:
                return None
        return self.interpod

    def _placed(self, uid: PodUID, node: int, delta: int) -> None:
        """Keep the inter-pod counts current (Statement does, for every place and undo)."""
        if self._interpod is not None:
            pod = self.snapshot.pods[uid]
            if delta > 0:
                self._interpod.add(pod, node)
            else:
                self._interpod.remove(pod, node)

    def pod_scores(self, p: Pod, candidates: fit.Mask) -> Scores | None:
        """Summed :class:`PodScorer` scores for placing ``p`` among ``candidates``, or None."""
        if not self._pod_scorers:
            return None
        total: Scores | None = None
        for scorer in self._pod_scorers:
            s = scorer.pod_score(self, p, candidates)
            if s is not None:
                total = s if total is None else total + s
        return total

    @property
    def total(self) -> Vector:
        out: Vector = self.snapshot.alloc.sum(axis=0)
        return out

    # --- tier rules -------------------------------------------------------------------------------
    def job_key(self, g: PodGroup) -> tuple[Any, ...]:
        key: list[Any] = []
        for p in self._hooked["job_order"]:
            k = p.job_order(self, g)
            if k is not None:
                key.extend(k)
        # Deterministic tie-break: creation time, then namespace/name (Volcano: creation, then UID).
        return (*key, g.created, g.namespace, g.name)

    def queue_key(self, q: Queue) -> tuple[Any, ...]:
        key: list[Any] = []
        for p in self._hooked["queue_order"]:
            k = p.queue_order(self, q)
            if k is not None:
                key.extend(k)
        return (*key, q.name)

    def enqueue_reject(self, g: PodGroup) -> str | None:
        for p in self._hooked["enqueue"]:
            reason = p.enqueue(self, g)
            if reason is not None:
                return reason
        return None

    def allocatable_reject(self, q: Queue, request: Vector) -> str | None:
        for p in self._hooked["allocatable"]:
            reason = p.allocatable(self, q, request)
            if reason is not None:
                return reason
        return None

    def victim_reject(self, pod: Pod) -> str | None:
        """Why ``pod`` must not be evicted (any plugin's veto), or None."""
        for p in self._hooked["victim"]:
            reason = p.victim(self, pod)
            if reason is not None:
                return reason
        return None

    def scores(self, request: Vector) -> Scores:
        """Summed plugin scores per node for ``request`` (read-only: callers must not modify it)."""
        if not self._cache_scores:
            return self._sum_scores(request, None)
        key = request.tobytes()
        cached = self._scores.get(key)
        end = len(self._touched)
        if cached is None or self._stale(cached[1]):
            total = self._sum_scores(request, None)
        else:
            total, start = cached
            if start < end:
                rows = self._touched_since(start)
                total[rows] = self._sum_scores(request, rows)
        self._scores[key] = (total, end)
        return total

    def _sum_scores(self, request: Vector, rows: Rows | None) -> Scores:
        # Summed in plugin order from zero, for all rows or a subset alike: the same floats either way.
        total = np.zeros(len(self.snapshot.nodes) if rows is None else len(rows), dtype=np.float64)
        for p in self._scorers:
            s = (
                p.node_score(self, request, self.free)
                if rows is None
                else p.node_score(self, request, self.free, rows)
            )
            if s is not None:
                total += s
        return total

    # --- tentative placement ------------------------------------------------------------------------
    def statement(self) -> Statement:
        return Statement(self)


class Statement:
    """Tentative placements: applied to the session's working state at once, undone by ``discard``."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[tuple[PodUID, int, str]] = []

    def place(self, uid: PodUID, node: int, queue: str) -> None:
        v = self.ssn.vector(uid)
        self.ssn.free[node] -= v
        self.ssn.touched(node)
        self.ssn.queue_used[queue] = self.ssn.queue_used.get(queue, np.zeros_like(v)) + v
        self.ssn.plans[uid] = self.ssn.snapshot.nodes[node].name
        if self.ssn.rules_active:
            self.ssn._placed(uid, node, 1)
        self.ops.append((uid, node, queue))

    def discard(self) -> None:
        for uid, node, queue in reversed(self.ops):
            v = self.ssn.vector(uid)
            self.ssn.free[node] += v
            self.ssn.touched(node)
            self.ssn.queue_used[queue] = self.ssn.queue_used[queue] - v
            del self.ssn.plans[uid]
            if self.ssn.rules_active:
                self.ssn._placed(uid, node, -1)
        self.ops.clear()

    def commit(self) -> None:
        for uid, node, _ in self.ops:
            self.ssn.result.placements[uid] = self.ssn.snapshot.nodes[node].name
        self.ops.clear()
