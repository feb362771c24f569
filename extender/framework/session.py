"""One scheduling cycle's working state over an immutable snapshot.

The session owns the mutable copies a cycle needs (free capacity per node, per-queue usage, the plans
made so far) and applies the tier rules of :mod:`extender.framework.plugin`. Tentative placements are
made inside a :class:`Statement` and either committed together (the gang is ready) or discarded, which is
Volcano's statement idea: a gang never holds part of the cluster it cannot use.

Fit masks and node scores are cached per request vector and brought up to date by re-checking only the
node rows whose free capacity changed since (a clock stamped on each changed row); a cached value is
always equal to a fresh computation, so caching changes no placement. Queue order keys are cached the same
way, per queue, while that queue's usage is unchanged (when every plugin's key is local to its queue).

Plugin node predicates join the same caches (see :mod:`extender.framework.plugin`): a per-queue mask
(``node_mask``) is folded into the static mask, cached per (constraints, queue); a row-local predicate on
free capacity (``node_fit``) into the fit mask, refreshed per changed row like resource fit itself.

Rules that look at other pods (inter-pod affinity, topology spread) and scores that depend on who the
pod is rather than what it requests (:class:`PodScorer`) are evaluated per pod, over the counts in
:class:`~extender.core.interpod.PodsOnNodes`, which every place and discard keeps current. That object
is built the first time a pod with such rules is placed, or a pod on a node has terms that could concern
any pod: until then a cycle pays nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.interpod import PodsOnNodes
from extender.core.model import GroupKey, NodeConstraints, Pod, PodGroup, PodUID, Queue
from extender.core.resources import Vector
from extender.core.running import RunningIndex
from extender.core.snapshot import Aside, Snapshot, pod_group_key
from extender.framework.plugin import GangDomains, Plugin, Rows, Scores

if TYPE_CHECKING:
    from extender.framework.reserve import Reservation


@runtime_checkable
class PodScorer(Protocol):
    """A ``node_score`` plugin that also scores by who the pod is (its preferences, its labels against
    other pods), not only by its request. Such scores are computed afresh for each placement over its
    candidate nodes (kube-scheduler normalises over the nodes that passed its filters) and never cached.
    Return None when the pod gives the plugin nothing to prefer, which must be the cheap common case.

    Whether it returns None must depend only on the pod's ``affinity``, ``constraints``, ``scoring`` and
    group and on whether inter-pod rules concern it (``ssn.pod_rules(pod)``), never on the candidates: the
    allocate action asks once for a run of a gang's pods alike in these and, on None, places the whole
    run as a batch."""

    def pod_score(self, ssn: Session, pod: Pod, candidates: fit.Mask) -> Scores | None: ...


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why a group is not (fully) placed: a CamelCase condition ``reason`` and a ``message`` for humans."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """A decision to evict a running pod: ``Preempted`` (by a higher-priority job of its queue) or
    ``Reclaimed`` (by a queue below its deserved share), ``by`` the group that takes its place."""

    reason: str
    message: str
    by: GroupKey


@dataclass(slots=True)
class CycleTimings:
    """How long the parts of one cycle took, in seconds, when the cycle was given a clock (Volcano's
    open-session, per-action and per-plugin latencies). Measured, never read by a rule."""

    open_session: float = 0.0
    actions: list[tuple[str, float]] = field(default_factory=list)
    # (plugin, "OnSessionOpen" | "OnSessionClose", seconds), as Volcano labels its plugin latency.
    plugins: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass(slots=True)
class CycleResult:
    placements: dict[PodUID, str] = field(default_factory=dict)
    admitted: set[GroupKey] = field(default_factory=set)
    unschedulable: dict[GroupKey, Unschedulable] = field(default_factory=dict)
    # Groups that got their whole gang planned in this cycle.
    ready: set[GroupKey] = field(default_factory=set)
    # Groups left waiting for a reason that stands, with what they weigh while a cache leaves them out.
    aside: dict[GroupKey, Aside] = field(default_factory=dict)
    # Running pods to evict, and the placements that must wait for pods to leave their node first
    # (Volcano's Pipelined): placement uid -> the pods it waits for.
    evictions: dict[PodUID, Eviction] = field(default_factory=dict)
    pipelined: dict[PodUID, frozenset[PodUID]] = field(default_factory=dict)
    # When a cycle should run again though nothing changes (a rule waits for time to pass), or None.
    retry_at: float | None = None
    # Annotations to write on placed pods before they bind (numa-aware's topology decision), by uid.
    annotations: dict[PodUID, dict[str, str]] = field(default_factory=dict)
    # How long the cycle's parts took, when run_cycle was given a clock (metrics only).
    timings: CycleTimings | None = None


def _overrides(plugin: Plugin, hook: str) -> bool:
    """Whether ``plugin`` implements ``hook`` (the base's has no opinion)."""
    return getattr(type(plugin), hook) is not getattr(Plugin, hook)


class Session:
    def __init__(
        self,
        snapshot: Snapshot,
        tiers: Sequence[Sequence[Plugin]],
        *,
        cache_scores: bool = True,
        cache_keys: bool = True,
        batch: bool = True,
        now: float = 0.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``cache_scores`` and ``cache_keys`` off make every score and every job and queue key a fresh
        computation, and ``batch`` off places every pod by itself (the caches and batches are exact: the
        tests compare). ``now``: the cycle's clock (seconds since the epoch), for rules that look at
        time. ``clock``: a monotonic clock to time each plugin's ``open`` with (``open_seconds``, for
        metrics); no rule reads it."""
        self.snapshot = snapshot
        self.now = now
        self.tiers = tiers
        self.plugins = [p for tier in tiers for p in tier]
        # Per hook, the plugins the conf leaves it switched on for, in tier order.
        self._hooked = {
            hook: [p for p in self.plugins if p.takes_part(hook)]
            for hook in (
                "job_order",
                "task_order",
                "queue_order",
                "enqueue",
                "enqueue_permit",
                "allocatable",
                "node_score",
                "victim",
                "preemptable",
                "reclaimable",
                "overused",
                "preemptive",
                "namespace_order",
                "node_mask",
                "node_fit",
                "node_limit",
                "pod_fit",
                "placed",
                "queue_node_score",
            )
        }
        # Plugins with node predicates, and those that follow placements (see Plugin.placed).
        self._maskers = [p for p in self._hooked["node_mask"] if _overrides(p, "node_mask")]
        self._fitters = [p for p in self._hooked["node_fit"] if _overrides(p, "node_fit")]
        self._limiters = [p for p in self._hooked["node_limit"] if _overrides(p, "node_limit")]
        self._pod_fitters = [p for p in self._hooked["pod_fit"] if _overrides(p, "pod_fit")]
        # Whether every pod_fit plugin counts what evicted pods free (preempt then looks for victims on
        # nodes it refuses as they are, and checks it again once they are gone).
        self.pod_fit_follows_evictions = all(p.fit_follows_evictions for p in self._pod_fitters)
        self.listeners = [p for p in self._hooked["placed"] if _overrides(p, "placed")]
        self.fit_predicates = bool(self._fitters)  # whether fit_mask is more than resources
        self._queue_masks: dict[str, fit.Mask | None] = {}
        self._queue_scorers = [
            p for p in self._hooked["queue_node_score"] if _overrides(p, "queue_node_score")
        ]
        self._queue_scores: dict[str, Scores | None] = {}
        self._queue_static: dict[tuple[NodeConstraints, str], fit.Mask] = {}
        # Column-major: fit checks and scores read a resource column over many nodes, placements write one
        # short row.
        self.free: npt.NDArray[np.int64] = np.asfortranarray(snapshot.free)
        self.result = CycleResult()
        self.admitted: set[GroupKey] = {k for k, g in snapshot.groups.items() if g.phase != "Pending"}
        self.plans: dict[PodUID, str] = dict(snapshot.plans)
        self._masks: dict[NodeConstraints, fit.Mask] = {}
        self._vectors: dict[PodUID, Vector] = {}
        self._negative: set[PodUID] | None = None  # pods with a negative request (found on first use)
        # A clock counting changes to rows of ``free``, the clock at each row's last change, and per request
        # vector the fit mask as of some clock: a mask is brought up to date by re-checking only the rows
        # changed since.
        self._clock = 0
        self._row_clock = np.zeros(len(snapshot.nodes), dtype=np.int64)
        # (since, clock, rows, their free capacity): the last answer of _touched_since.
        self._rows_since: tuple[int, int, Rows, npt.NDArray[np.int64]] | None = None
        self._fit_masks: dict[bytes, tuple[fit.Mask, int]] = {}
        # The same for summed node scores, when every plugin that scores at all (one that does not override
        # ``node_score`` has no opinion) can rescore single rows.
        self._scorers = [p for p in self._hooked["node_score"] if _overrides(p, "node_score")]
        self._row_local = all(p.row_local_scores for p in self._scorers)
        self._cache_scores = cache_scores and self._row_local
        self._scores: dict[bytes, tuple[Scores, int]] = {}
        # Allocatable per resource column as floats and a divisor safe from zero (see ``fraction``), and
        # the fractions of the scoring pass under way: (free, rows, request, column -> fractions).
        self._alloc_columns: dict[int, tuple[Scores, Scores]] = {}
        self._fractions: tuple[npt.NDArray[np.int64], Rows | None, Vector, dict[int, Scores]] | None = None
        self._pod_scorers = [p for p in self._scorers if isinstance(p, PodScorer)]
        # Whether a run of identical pods may be placed as a batch (see extender.framework.actions): scores
        # of hypothetical rows, and one capacity check for the whole run.
        self.batchable = (
            batch
            and self._row_local
            and all(
                p.additive_allocatable for p in self._hooked["allocatable"] if _overrides(p, "allocatable")
            )
        )
        # Whether queue keys read nothing but their own queue's usage (see Plugin.local_queue_order); then,
        # per queue, its key and the usage array it was computed from (usage arrays are replaced on every
        # change, never modified in place, so identity tells whether the key is current).
        self.local_queue_order = cache_keys and all(
            p.local_queue_order for p in self._hooked["queue_order"] if _overrides(p, "queue_order")
        )
        self._queue_keys: dict[str, tuple[Vector | None, tuple[Any, ...]]] = {}
        # Job keys, once per group, when every plugin's key is fixed for the cycle.
        self._static_job_order = cache_keys and all(
            p.static_job_order for p in self._hooked["job_order"] if _overrides(p, "job_order")
        )
        self._job_keys: dict[GroupKey, tuple[Any, ...]] = {}
        # Plugins that order a group's pods (Plugin.task_order); none: pods go by priority and age.
        self._task_orderers = [p for p in self._hooked["task_order"] if _overrides(p, "task_order")]
        self.task_ordered = bool(self._task_orderers)
        # Namespace order (see Plugin.namespace_order), and what each namespace took this cycle less what it
        # gave back, kept (by every Statement) only when some plugin orders namespaces.
        self._namespacers = [p for p in self._hooked["namespace_order"] if _overrides(p, "namespace_order")]
        self.namespace_ordered = bool(self._namespacers)
        self.namespace_delta: dict[str, Vector] = {}
        self._interpod: PodsOnNodes | None = None
        self._running: RunningIndex | None = None
        # Pods this cycle evicts (uid -> node row), and per node row the pods placements there wait for:
        # those evicted and those already leaving whose room a placement counted on.
        self.evicting: dict[PodUID, int] = {}
        self.leaving: dict[int, set[PodUID]] = {}
        self.releasing_counted = False  # whether ``free`` counts the room of pods already leaving
        # Preempt's and reclaim's per-cycle index of candidate victims (see extender.framework.evict).
        self.victim_rooms: dict[tuple[object, ...], object] = {}
        self._vetoes: dict[PodUID, str | None] = {}
        # Whether the pods being placed are past their gang's minimum: a queue below its deserved share
        # may start a gang that takes it past that share, but adds extra pods only up to it (proportion).
        self.placing_extras = False
        # Groups whose extra pods wait this cycle for jobs submitted with them (allocate's fairWindow):
        # preempt and reclaim must not place them either.
        self.extras_wait: set[GroupKey] = set()
        # The starvation guard's held nodes, when the conf turns it on and a group starves.
        self.reservation: Reservation | None = None
        # The node rows a gang is being tried inside (Plugin.gang_domains), folded into pod_mask; None
        # outside such a try. The plugins that answer gang_domains.
        self.domain: fit.Mask | None = None
        self._domain_planners = [p for p in self.plugins if _overrides(p, "gang_domains")]
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
        self._promise([snapshot.groups[k] for k in self.admitted if snapshot.groups[k].phase == "Inqueue"])
        # Groups the snapshot leaves out are still owed their promises.
        for q, v in snapshot.aside_owed.items():
            self.inqueue += v
            self.queue_inqueue[q] = v.copy() if q not in self.queue_inqueue else self.queue_inqueue[q] + v
        self.open_seconds: list[tuple[str, float]] = []
        for p in self.plugins:
            started = clock() if clock is not None else 0.0
            p.open(self)
            if clock is not None:
                self.open_seconds.append((p.name, clock() - started))

    def _promise(self, groups: Sequence[PodGroup]) -> None:
        """Add what ``groups`` are owed to ``inqueue`` and their queues' entries: Volcano reserves
        minResources less what a group already holds. All at once (integer sums: the order of the
        additions does not matter), as the session opens with every Inqueue group."""
        if not groups:
            return
        snap = self.snapshot
        if len(groups) == 1:  # a group admitted by this cycle's enqueue: one vector is cheaper
            g = groups[0]
            v = self.owed(g)
            self.inqueue += v
            held = self.queue_inqueue.get(g.queue)
            self.queue_inqueue[g.queue] = v if held is None else held + v
            return
        owed = snap.index.matrix([g.min_resources for g in groups])
        for i, g in enumerate(groups):
            for uid in snap.members.get(g.key, ()):
                if snap.pods[uid].holds_resources or uid in self.plans:
                    owed[i] -= self.vector(uid)
        np.maximum(owed, 0, out=owed)
        self.inqueue += owed.sum(axis=0)
        by_queue: dict[str, list[int]] = {}
        for i, g in enumerate(groups):
            by_queue.setdefault(g.queue, []).append(i)
        for q, rows in by_queue.items():
            add = owed[rows].sum(axis=0)
            self.queue_inqueue[q] = add if q not in self.queue_inqueue else self.queue_inqueue[q] + add

    def owed(self, g: PodGroup) -> Vector:
        """What an admitted group is promised: its minResources less what its pods hold or are planned."""
        snap = self.snapshot
        v = snap.index.vector(g.min_resources)
        for uid in snap.members.get(g.key, ()):
            if snap.pods[uid].holds_resources or uid in self.plans:
                v -= self.vector(uid)
        np.maximum(v, 0, out=v)
        return v

    def aside(self, key: GroupKey) -> Aside:
        """What group ``key`` weighs on its queue as the cycle ends, for a cache that leaves it out of later
        snapshots while nothing about it changes (see :class:`extender.core.snapshot.Aside`)."""
        snap = self.snapshot
        g = snap.groups[key]
        names = snap.index.names
        waiting = snap.request_sum([u for u in snap.members.get(key, ()) if snap.pods[u].waiting])
        promised = key in self.result.admitted or (key in self.admitted and g.phase == "Inqueue")
        owed = self.owed(g) if promised else None
        return Aside(
            queue=g.queue,
            waiting={n: int(waiting[i]) for i, n in enumerate(names) if waiting[i]},
            owed={} if owed is None else {n: int(owed[i]) for i, n in enumerate(names) if owed[i]},
        )

    def admit(self, g: PodGroup) -> None:
        self.admitted.add(g.key)
        self.result.admitted.add(g.key)
        self._promise((g,))

    # --- per-pod helpers --------------------------------------------------------------------------
    def vector(self, uid: PodUID) -> Vector:
        """The request vector of pod ``uid`` (read-only)."""
        v = self._vectors.get(uid)
        if v is None:
            v = self._vectors[uid] = self.snapshot.request(uid)
        return v

    def negative_request(self, uid: PodUID) -> bool:
        """Whether pod ``uid`` requests a negative amount of something (no valid pod does)."""
        if self._negative is None:
            rows = set(np.flatnonzero((self.snapshot.requests < 0).any(axis=1)).tolist())
            self._negative = {u for u, r in self.snapshot.request_row.items() if r in rows}
        if uid in self.snapshot.request_row:
            return uid in self._negative
        return bool((self.vector(uid) < 0).any())

    def pod_mask(self, p: Pod) -> fit.Mask:
        """Nodes ``p`` may use apart from resources and other pods: its constraints, less the nodes
        kube-scheduler's own filters refused for it (ports, volumes, and what the core cannot decide, such
        as a namespaceSelector over namespace labels it was not given)."""
        m = self.static_mask(p.constraints)
        if self._maskers:
            q = self.pod_queue(p)
            if q is not None:
                key = (p.constraints, q)
                both = self._queue_static.get(key)
                if both is None:
                    qm = self.queue_mask(q)
                    both = self._queue_static[key] = m if qm is None else m & qm
                m = both
        shared = True  # m is a cached mask: copy before writing to it
        held = self.reservation
        if held is not None and not held.admits(self, p):
            m = m & ~held.rows
            shared = False
        if self.domain is not None:  # a gang tried inside one HyperNode (see Plugin.gang_domains)
            m = m & self.domain
            shared = False
        refused = self.snapshot.refused.get(p.uid)
        if refused:
            m = m.copy() if shared else m
            for name in refused:
                row = self.snapshot.node_pos.get(name)
                if row is not None:
                    m[row] = False
        return m

    def static_mask(self, c: NodeConstraints) -> fit.Mask:
        m = self._masks.get(c)
        if m is None:
            m = self._masks[c] = fit.static_mask(c, self.snapshot.nodes, self.snapshot.topology)
        return m

    def pod_queue(self, p: Pod) -> str | None:
        """The queue of ``p``'s group, None when the snapshot has no group for it."""
        g = self.snapshot.groups.get(pod_group_key(p))
        return None if g is None else g.queue

    def queue_mask(self, qname: str) -> fit.Mask | None:
        """The nodes the ``node_mask`` plugins leave pods of queue ``qname``, or None (no opinion); once a
        cycle per queue (read-only)."""
        if qname in self._queue_masks:
            return self._queue_masks[qname]
        out: fit.Mask | None = None
        q = self.snapshot.queues.get(qname)
        if q is not None:
            for p in self._maskers:
                m = p.node_mask(self, q)
                if m is not None:
                    out = m.copy() if out is None else out & m
        self._queue_masks[qname] = out
        return out

    def queue_scores(self, qname: str | None) -> Scores | None:
        """The summed ``queue_node_score`` of queue ``qname`` per node, or None; once a cycle per queue
        (read-only). Added to :meth:`scores` by every path that picks a node."""
        if qname is None or not self._queue_scorers:
            return None
        if qname in self._queue_scores:
            return self._queue_scores[qname]
        out: Scores | None = None
        q = self.snapshot.queues.get(qname)
        if q is not None:
            for p in self._queue_scorers:
                s = p.queue_node_score(self, q)
                if s is not None:
                    out = s + 0.0 if out is None else out + s
        self._queue_scores[qname] = out
        return out

    def queue_mask_reason(self, qname: str) -> str:
        """Why the ``node_mask`` plugins leave queue ``qname`` no node a pod could use."""
        q = self.snapshot.queues.get(qname)
        reasons = [r for p in self._maskers if q is not None and (r := p.node_mask_reason(self, q))]
        return "; ".join(reasons) or f"queue {qname} may use none of these nodes"

    def limit_mask(self, qname: str, request: Vector) -> fit.Mask | None:
        """The nodes the ``node_limit`` plugins let a pod of ``qname`` requesting ``request`` use now, or
        None: no limit applies to the queue (its pods may then be batched). Never cached."""
        if not self._limiters:
            return None
        q = self.snapshot.queues.get(qname)
        if q is None:
            return None
        out: fit.Mask | None = None
        for p in self._limiters:
            m = p.node_limit(self, q, request)
            if m is not None:
                out = m if out is None else out & m
        return out

    def limit_reason(self, qname: str, request: Vector) -> str:
        q = self.snapshot.queues.get(qname)
        if q is None:
            return f"queue {qname} does not exist"
        reasons = [r for p in self._limiters if (r := p.node_limit_reason(self, q, request))]
        return "; ".join(reasons) or f"queue {qname} is at its limit on every node with room"

    def pod_fit(self, p: Pod, candidates: fit.Mask) -> fit.Mask | None:
        """The nodes the ``pod_fit`` plugins let ``p`` use now among ``candidates``, or None (no plugin
        judges this pod: it may be batched). Never cached."""
        out: fit.Mask | None = None
        for plugin in self._pod_fitters:
            m = plugin.pod_fit(self, p, candidates)
            if m is not None:
                out = m if out is None else out & m
        return out

    def pod_fit_reason(self, p: Pod, candidates: fit.Mask) -> str:
        """Why the ``pod_fit`` plugins leave ``p`` none of ``candidates``."""
        reasons = [r for plugin in self._pod_fitters if (r := plugin.pod_fit_reason(self, p, candidates))]
        return "; ".join(reasons) or "no node with room passes its per-pod predicates"

    def fit_mask(self, request: Vector) -> fit.Mask:
        """Nodes whose free capacity now covers ``request``, and that the ``node_fit`` plugins let take it
        (read-only: callers must not modify it)."""
        key = request.tobytes()
        cached = self._fit_masks.get(key)
        end = self._clock
        if cached is None or self._stale(cached[1]):
            mask = self.fits_at(request, self.free, None)
        else:
            mask, start = cached
            if start < end:
                rows, free = self._touched_since(start)
                mask[rows] = self.fits_at(request, free, rows)
        self._fit_masks[key] = (mask, end)
        return mask

    def fits_at(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None) -> fit.Mask:
        """Whether nodes ``rows`` (or every node), with ``free`` free (possibly hypothetical, row ``i``
        for node ``rows[i]``), may take ``request``: resources cover it and every ``node_fit`` allows it.
        Bit-for-bit what :meth:`fit_mask` gives those nodes once their free capacity is that."""
        mask = fit.fits(free, request)
        for p in self._fitters:
            m = p.node_fit(self, request, free) if rows is None else p.node_fit(self, request, free, rows)
            if m is not None:
                mask &= m
        return mask

    def fit_refusal(self, request: Vector, candidates: fit.Mask) -> str | None:
        """Why the ``node_fit`` plugins refuse ``request`` on ``candidates`` although they have room for
        it, told for the best-scored of them; None when some node with room takes it (or none has room)."""
        if not self._fitters:
            return None
        roomy = candidates & fit.fits(self.free, request)
        if not roomy.any() or (roomy & self.fit_mask(request)).any():
            return None
        row = int(np.argmax(np.where(roomy, self.scores(request), -np.inf)))
        free = self.free[row].copy()
        for p in self._fitters:
            reason = p.node_fit_reason(self, request, free, row)
            if reason is not None:
                n = int(roomy.sum())
                return reason if n == 1 else f"{reason} (and so for all {n} nodes with room)"
        return None

    def moved(self, queue: str, request: Vector, row: int, count: int) -> None:
        """Tell the ``placed`` listeners (Statement does, for every place, eviction and undo)."""
        for p in self.listeners:
            p.placed(self, queue, request, row, count)

    def _touched_since(self, start: int) -> tuple[Rows, npt.NDArray[np.int64]]:
        """Rows changed after clock ``start``, and their free capacity now (the fit mask and the scores of
        a request usually ask in turn for the same ``start``: the last answer is kept)."""
        last = self._rows_since
        if last is not None and last[0] == start and last[1] == self._clock:
            return last[2], last[3]
        rows = np.flatnonzero(self._row_clock > start)
        free = self.free[rows]
        self._rows_since = (start, self._clock, rows, free)
        return rows, free

    def _stale(self, since: int) -> bool:
        # Past this many changed rows a full recompute is cheaper than indexing them (a changed row costs
        # a few times what a row of a full pass does; a call costs tens of rows).
        if (self._clock - since) * 4 <= len(self.snapshot.nodes):
            return False  # fewer changes than that, let alone changed rows
        return len(self._touched_since(since)[0]) * 4 > len(self.snapshot.nodes)

    def touched(self, node: int) -> None:
        """Record that ``free[node]`` changed (Statement does, for every place and undo)."""
        self._clock += 1
        self._row_clock[node] = self._clock

    def touched_rows(self, nodes: Sequence[int]) -> None:
        """Record that these rows of ``free`` changed (one change each)."""
        self._clock += len(nodes)
        self._row_clock[nodes] = self._clock

    @property
    def running(self) -> RunningIndex:
        """pumice's running pods by node and group (built on first use: only preempt and reclaim, and
        plugins answering them, need it)."""
        if self._running is None:
            self._running = RunningIndex(self.snapshot)
        return self._running

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
        if self._static_job_order:
            cached = self._job_keys.get(g.key)
            if cached is not None:
                return cached
        key: list[Any] = []
        for p in self._hooked["job_order"]:
            k = p.job_order(self, g)
            if k is not None:
                key.extend(k)
        # Deterministic tie-break: creation time, then namespace/name (Volcano: creation, then UID).
        out = (*key, g.created, g.namespace, g.name)
        if self._static_job_order:
            self._job_keys[g.key] = out
        return out

    def task_key(self, p: Pod) -> tuple[Any, ...]:
        """The ``task_order`` plugins' keys for ``p``, concatenated (empty when none orders pods)."""
        key: list[Any] = []
        for plugin in self._task_orderers:
            k = plugin.task_order(self, p)
            if k is not None:
                key.extend(k)
        return tuple(key)

    def queue_key(self, q: Queue) -> tuple[Any, ...]:
        used = self.queue_used.get(q.name)
        if self.local_queue_order:
            cached = self._queue_keys.get(q.name)
            if cached is not None and cached[0] is used:
                return cached[1]
        key: list[Any] = []
        for p in self._hooked["queue_order"]:
            k = p.queue_order(self, q)
            if k is not None:
                key.extend(k)
        out = (*key, q.name)
        if self.local_queue_order:
            self._queue_keys[q.name] = (used, out)
        return out

    def namespace_key(self, namespace: str) -> tuple[Any, ...]:
        """The plugins' keys for ``namespace``, concatenated (empty when no plugin orders namespaces)."""
        key: list[Any] = []
        for p in self._namespacers:
            k = p.namespace_order(self, namespace)
            if k is not None:
                key.extend(k)
        return tuple(key)

    def namespace_moved(self, namespace: str, v: Vector) -> None:
        """``v`` more (or, negative, less) is held by ``namespace`` (Statement calls it, when
        :attr:`namespace_ordered`)."""
        d = self.namespace_delta.get(namespace)
        self.namespace_delta[namespace] = v.copy() if d is None else d + v

    def enqueue_reject(self, g: PodGroup) -> str | None:
        """Why ``g`` may not be admitted now, or None: tier by tier, any rejection rejects; a permit (and
        no rejection) in a tier admits without asking later tiers."""
        voters = set(self._hooked["enqueue"])
        permitters = set(self._hooked["enqueue_permit"])
        for tier in self.tiers:
            permitted = False
            for p in tier:
                if p in voters:
                    reason = p.enqueue(self, g)
                    if reason is not None:
                        return reason
                if p in permitters and p.enqueue_permit(self, g):
                    permitted = True
            if permitted:
                return None
        return None

    def gang_domains(self, g: PodGroup) -> GangDomains | None:
        """Where the gang minimum of ``g`` may be placed whole: the first plugin's answer, or None."""
        for p in self._domain_planners:
            out = p.gang_domains(self, g)
            if out is not None:
                return out
        return None

    def gang_fence(self, g: PodGroup) -> fit.Mask | None:
        """For ``g`` whose gang minimum is placed: the node rows its extra pods must stay inside (the one
        candidate ``gang_domains`` names when the gang may not spread), or None (anywhere)."""
        if not self._domain_planners:
            return None
        domains = self.gang_domains(g)
        if domains is None or domains.spread or not domains.candidates:
            return None
        return self.rows_mask(domains.candidates[0][1])

    def rows_mask(self, rows: Rows | int) -> fit.Mask:
        """A node mask allowing just ``rows`` (a HyperNode's nodes, a gang's fence, one node)."""
        mask = np.zeros(len(self.snapshot.nodes), dtype=np.bool_)
        mask[rows] = True
        return mask

    def retry_at(self, when: float) -> None:
        """Ask for a cycle at ``when`` (epoch seconds) though nothing changes: a rule waits for time."""
        if when > self.now:
            self.result.retry_at = when if self.result.retry_at is None else min(self.result.retry_at, when)

    def allocatable_reject(self, q: Queue, request: Vector) -> str | None:
        for p in self._hooked["allocatable"]:
            reason = p.allocatable(self, q, request)
            if reason is not None:
                return reason
        return None

    def victim_reject(self, pod: Pod) -> str | None:
        """Why ``pod`` must not be evicted (any plugin's veto), or None; asked once per pod a cycle."""
        if pod.uid in self._vetoes:
            return self._vetoes[pod.uid]
        out = None
        for p in self._hooked["victim"]:
            out = p.victim(self, pod)
            if out is not None:
                break
        self._vetoes[pod.uid] = out
        return out

    def overused(self, q: Queue) -> str | None:
        """Why ``q`` may take nothing more this cycle (any plugin's answer), or None."""
        for p in self._hooked["overused"]:
            reason = p.overused(self, q)
            if reason is not None:
                return reason
        return None

    def preemptive_reject(self, q: Queue, request: Vector) -> str | None:
        """Why ``q`` may not reclaim ``request`` from other queues (any plugin's veto), or None."""
        for p in self._hooked["preemptive"]:
            reason = p.preemptive(self, q, request)
            if reason is not None:
                return reason
        return None

    def preemptable(self, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        """The candidates ``preemptor`` may evict within its queue, by the tier rule of victim hooks."""
        return self._victims("preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        """The candidates ``reclaimer`` may evict from other queues, by the tier rule of victim hooks."""
        return self._victims("reclaimable", reclaimer, candidates)

    def _victims(self, hook: str, pod: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        # Every victim also passes the ``victim`` vetoes (conformance: system pods), whatever the tiers say.
        allowed = [c for c in candidates if self.victim_reject(c) is None]
        hooked = set(self._hooked[hook])
        for tier in self.tiers:
            chosen: set[PodUID] | None = None
            for p in tier:
                if p not in hooked:
                    continue
                answer = getattr(p, hook)(self, pod, allowed)
                if answer is None:
                    continue
                uids = {c.uid for c in answer}
                chosen = uids if chosen is None else chosen & uids
            if chosen is not None:
                return [c for c in allowed if c.uid in chosen]
        return []

    def scores(self, request: Vector) -> Scores:
        """Summed plugin scores per node for ``request`` (read-only: callers must not modify it)."""
        if not self._cache_scores:
            return self._sum_scores(request, self.free, None)
        key = request.tobytes()
        cached = self._scores.get(key)
        end = self._clock
        if cached is None or self._stale(cached[1]):
            total = self._sum_scores(request, self.free, None)
        else:
            total, start = cached
            if start < end:
                rows, free = self._touched_since(start)
                total[rows] = self._sum_scores(request, free, rows)
        self._scores[key] = (total, end)
        return total

    def fraction(
        self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None, column: int
    ) -> Scores:
        """Per node (``rows``, or every node, with ``free`` as in :meth:`Plugin.node_score`), the share of
        its allocatable ``column`` in use once the pod is on it: ``(allocatable - free + request) /
        allocatable`` clipped to [0, 1], an allocatable of 0 dividing by 1. What nodeorder's and binpack's
        scores are made of; within one scoring pass it is computed once for all of them (read-only)."""
        memo = self._fractions
        if memo is not None and memo[0] is free and memo[1] is rows and memo[2] is request:
            hit = memo[3].get(column)
            if hit is not None:
                return hit
        columns = self._alloc_columns.get(column)
        if columns is None:
            alloc = self.snapshot.alloc[:, column].astype(np.float64)
            columns = self._alloc_columns[column] = (alloc, np.where(alloc > 0, alloc, 1.0))
        alloc, safe = columns
        if rows is not None:
            alloc, safe = alloc[rows], safe[rows]
        # In-place ufuncs rather than clip(): the same floats, fewer calls (this runs for every placement).
        f = alloc - free[:, column]
        f += request[column]
        f /= safe
        np.maximum(f, 0.0, out=f)
        np.minimum(f, 1.0, out=f)
        if memo is not None and memo[0] is free and memo[1] is rows and memo[2] is request:
            memo[3][column] = f
        return f

    def scores_at(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows) -> Scores:
        """Summed scores nodes ``rows`` would get for ``request`` with ``free`` free (row ``i`` for node
        ``rows[i]``; only when every scorer is row-local, see :attr:`batchable`): bit-for-bit what
        :meth:`scores` gives those nodes once their free capacity is that."""
        return self._sum_scores(request, free, rows)

    def _sum_scores(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None) -> Scores:
        # Summed in plugin order from zero, for all rows or a subset alike: the same floats either way
        # (the first term plus 0.0 is zero plus it, in one call).
        total: Scores | None = None
        self._fractions = (free, rows, request, {})
        try:
            for p in self._scorers:
                s = (
                    p.node_score(self, request, free)
                    if rows is None
                    else p.node_score(self, request, free, rows)
                )
                if s is None:
                    continue
                if total is None:
                    total = s + 0.0
                else:
                    total += s
        finally:
            self._fractions = None
        if total is None:
            total = np.zeros(len(free), dtype=np.float64)
        return total

    # --- tentative placement ------------------------------------------------------------------------
    def statement(self) -> Statement:
        return Statement(self)


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
        ssn.touched(node)
        used = ssn.queue_used.get(queue)
        if used is not None:
            ssn.queue_used[queue] = used - v
        ssn.evicting[pod.uid] = node
        ssn.leaving.setdefault(node, set()).add(pod.uid)
        if ssn.namespace_ordered:
            ssn.namespace_moved(pod.namespace, -v)
        if ssn.listeners:
            ssn.moved(queue, v, node, -1)
        self.evicted.append((pod, node, queue, why))

    def place(self, uid: PodUID, node: int, queue: str) -> None:
        v = self.ssn.vector(uid)
        self.ssn.free[node] -= v
        self.ssn.touched(node)
        used = self.ssn.queue_used.get(queue)
        self.ssn.queue_used[queue] = v.copy() if used is None else used + v
        self.ssn.plans[uid] = self.ssn.snapshot.nodes[node].name
        if self.ssn.rules_active:
            self.ssn._placed(uid, node, 1)
        if self.ssn.namespace_ordered:
            self.ssn.namespace_moved(self.ssn.snapshot.pods[uid].namespace, v)
        if self.ssn.listeners:
            self.ssn.moved(queue, v, node, 1)
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
        for node, count in copies.items():
            ssn.free[node] -= v if count == 1 else count * v
            if ssn.listeners:
                ssn.moved(queue, v, node, count)
        ssn.touched_rows(nodes)
        used = ssn.queue_used.get(queue)
        ssn.queue_used[queue] = len(uids) * v if used is None else used + len(uids) * v
        if ssn.namespace_ordered:
            ssn.namespace_moved(ssn.snapshot.pods[uids[0]].namespace, len(uids) * v)
        table = ssn.snapshot.nodes
        for uid, node in zip(uids, nodes, strict=True):
            ssn.plans[uid] = table[node].name
            if ssn.rules_active:
                ssn._placed(uid, node, 1)
            self.ops.append((uid, node, queue))

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
            v = ssn.running.vector(pod)
            ssn.free[node] -= v
            ssn.touched(node)
            if queue in ssn.queue_used:
                ssn.queue_used[queue] = ssn.queue_used[queue] + v
            del ssn.evicting[pod.uid]
            ssn.leaving[node].discard(pod.uid)
            if ssn.namespace_ordered:
                ssn.namespace_moved(pod.namespace, v)
            if ssn.listeners:
                ssn.moved(queue, v, node, 1)
        self.evicted.clear()
        for uid, node, queue in reversed(self.ops):
            v = self.ssn.vector(uid)
            self.ssn.free[node] += v
            self.ssn.touched(node)
            self.ssn.queue_used[queue] = self.ssn.queue_used[queue] - v
            del self.ssn.plans[uid]
            if self.ssn.rules_active:
                self.ssn._placed(uid, node, -1)
            if self.ssn.namespace_ordered:
                self.ssn.namespace_moved(self.ssn.snapshot.pods[uid].namespace, -v)
            if self.ssn.listeners:
                self.ssn.moved(queue, v, node, -1)
        self.ops.clear()

    def commit(self) -> None:
        result = self.ssn.result
        for pod, _, _, why in self.evicted:
            result.evictions[pod.uid] = why
        self.evicted.clear()
        for uid, node, _ in self.ops:
            result.placements[uid] = self.ssn.snapshot.nodes[node].name
            leaving = self.ssn.leaving.get(node)
            if leaving:
                # Room there comes from pods still on it: the plan waits for them (and holds the room).
                result.pipelined[uid] = frozenset(leaving)
        self.ops.clear()
