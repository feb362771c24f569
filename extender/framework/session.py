"""One scheduling cycle's working state over an immutable snapshot: the :class:`Session`.

The session owns the mutable copies a cycle needs (free capacity per node, per-queue usage and promises,
the plans made so far, the pods being evicted) and is what actions and plugins program against, as
Volcano's Session is. It dispatches to the plugins through a :class:`~extender.framework.hooks.Hooks`
(which plugin answers which hook, built once for the conf's plugins) and keeps its caches in parts of
their own, each in its module with its invariants:

- :class:`~extender.framework.node_cache.NodeCache`: fit masks and node scores per request vector, kept
  exact by a clock on the rows of ``free``;
- :class:`~extender.framework.node_masks.NodeMasks`: node constraints, the queues' node rules and scores,
  per-pod predicates;
- :class:`~extender.framework.order_keys.OrderKeys`: job, task, queue and namespace keys;
- :class:`~extender.framework.votes.Votes`: the vote, victim and domain hooks under their tier rules;
- :class:`~extender.framework.pod_rules.PodRules`: rules that look at other pods (inter-pod affinity,
  topology spread, over counts built only when a rule can concern some pod) and scores that depend on
  who the pod is rather than what it requests, evaluated per pod.

The parts are the session's attributes ``nodes``, ``masks``, ``keys``, ``votes``, ``rules`` (and
``promises``, what admitted groups are owed: :mod:`extender.framework.promises`). The questions every
placement path asks (a pod's nodes and inter-pod rules, a request's fit and scores, the order keys, the
votes) are the session's own methods, which call the parts (or are the part's bound methods, as
``pod_rules`` and ``pod_scores``, which the placement loops call per pod); the parts' machinery (the row
clock, hypothetical rows, the reasons behind a refusal, the pieces of a pod's mask, the inter-pod
counts kept current) is called on the part. Tentative placements are made inside a
:class:`~extender.framework.statement.Statement`, committed together (the gang is ready) or discarded:
Volcano's statement idea, a gang never holds part of the cluster it cannot use.

Invariants: ``free`` is one array for the whole cycle (never rebound; the caches read it); usage arrays
in ``queue_used`` are replaced on every change, never modified in place (the queue key cache tells
whether a key is current by their identity); every change of a row of ``free`` is told to the node
cache (``nodes.touched``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.interpod import PodsOnNodes
from extender.core.model import GroupKey, NetworkTopology, Pod, PodGroup, PodUID, Queue
from extender.core.resources import Vector
from extender.core.running import RunningIndex
from extender.core.snapshot import Snapshot, pod_group_key
from extender.framework.hooks import Hooks
from extender.framework.node_cache import NodeCache
from extender.framework.node_masks import NodeMasks
from extender.framework.order_keys import OrderKeys
from extender.framework.plugin import GangDomains, Rows, Scores
from extender.framework.pod_rules import PodRules
from extender.framework.promises import Promises
from extender.framework.result import CycleResult
from extender.framework.statement import Statement
from extender.framework.votes import Votes

if TYPE_CHECKING:
    from extender.framework.reserve import Reservation


class Session:
    """One cycle's working state and the plugins' single point of contact (Volcano's Session): the
    mutable copies of the snapshot's capacity and usage, the cycle's result, and the hooks' answers."""

    def __init__(
        self,
        snapshot: Snapshot,
        hooks: Hooks,
        *,
        cache_scores: bool = True,
        cache_keys: bool = True,
        batch: bool = True,
        fast_victims: bool = True,
        remember_failures: bool = True,
        fast_rows: bool = True,
        now: float = 0.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``hooks``: the conf's plugins by hook (:func:`~extender.framework.hooks.build_hooks` of its tiers).
        ``cache_scores`` and ``cache_keys`` off make every score and every job and queue key a fresh
        computation, ``batch`` off places every pod by itself, ``remember_failures`` off tries every gang,
        and ``fast_rows`` off brings cached fits and scores up to date through numpy alone, never one row
        in plain floats (:mod:`~extender.framework.row_scores`); the caches, batches and memory are exact:
        the tests compare. ``now``: the cycle's clock (seconds since the epoch), for rules that look at
        time. Every plugin is opened last, with the session complete.
        ``clock``: a monotonic clock to time each plugin's ``open`` with (``open_seconds``, for metrics); no
        rule reads it."""
        self.hooks = hooks
        self.snapshot = snapshot
        self.now = now
        self.tiers = hooks.tiers
        self.plugins = hooks.plugins
        # Whether a run of identical pods may be placed as a batch (see extender.framework.place), and
        # whether allocate fails a gang alike to one that failed since the last commit without an attempt
        # (extender.framework.gang_failures); ``commits``: statements committed so far.
        self.batchable = batch and hooks.batchable
        self.remember_failures = remember_failures
        self.commits = 0
        # Column-major: fit checks and scores read a resource column over many nodes, placements write one
        # short row.
        self.free: npt.NDArray[np.int64] = np.asfortranarray(snapshot.free)
        self.result = CycleResult()
        self.admitted: set[GroupKey] = {k for k, g in snapshot.groups.items() if g.phase != "Pending"}
        self.plans: dict[PodUID, str] = dict(snapshot.plans)
        self._vectors: dict[PodUID, Vector] = {}
        self._negative: set[PodUID] | None = None  # pods with a negative request (found on first use)
        # The parts (see the module docstring); the session's methods of their names call them.
        self.nodes = NodeCache(self, hooks, self.free, cache_scores=cache_scores, fast_rows=fast_rows)
        self.masks = NodeMasks(self, hooks)
        self.keys = OrderKeys(self, hooks, cache_keys=cache_keys)
        self.votes = Votes(self, hooks)
        self.local_queue_order = self.keys.local_queue_order
        # What each namespace took this cycle less what it gave back, kept (by every Statement) only when
        # some plugin orders namespaces (see Plugin.namespace_order).
        self.namespace_ordered = bool(hooks.namespace_order)
        self.namespace_delta: dict[str, Vector] = {}
        self._running: RunningIndex | None = None
        # Pods this cycle evicts (uid -> node row), and per node row the pods placements there wait for:
        # those evicted and those already leaving whose room a placement counted on.
        self.evicting: dict[PodUID, int] = {}
        self.leaving: dict[int, set[PodUID]] = {}
        self.releasing_counted = False  # whether ``free`` counts the room of pods already leaving
        # Whether an eviction also takes the victim out of the inter-pod rules (preempt's
        # enableTopologyAwarePreemption: a victim may be chosen to clear an anti-affinity conflict), and
        # the victims so taken out (by the part's ``lift``).
        self.evictions_lift_rules = False
        self.lifted: set[PodUID] = set()
        # True once the inter-pod state exists (the part builds it): from then on placements update it
        # and a pod's labels matter to the rules of others.
        self.rules_active = False
        self.rules = PodRules(self, hooks)
        self.pod_rules = self.rules.pod_rules
        self.pod_scores = self.rules.pod_scores
        # Preempt's and reclaim's per-cycle index of candidate victims (see extender.framework.evict), and
        # the groups with a waiting pod (extender.framework.gangs.with_waiting).
        self.victim_rooms: dict[tuple[object, ...], object] = {}
        # Off: preempt and reclaim take the plain path (see extender.framework.victim_rooms; exact, the
        # tests compare).
        self.fast_victims = fast_victims
        # Whether the pods being placed are past their gang's minimum: a queue below its deserved share
        # may start a gang that takes it past that share, but adds extra pods only up to it (proportion).
        self.placing_extras = False
        # Groups whose extra pods wait this cycle for jobs submitted with them (allocate's fairWindow):
        # preempt and reclaim must not place them either.
        self.extras_wait: set[GroupKey] = set()
        # The starvation guard's held nodes, when the conf turns it on and a group starves.
        self.reservation: Reservation | None = None
        # The node rows a gang is being tried inside (Plugin.gang_domains), folded into pod_mask; None
        # outside such a try.
        self.domain: fit.Mask | None = None
        self.queue_used = _queue_used(snapshot)
        # What admitted groups not yet running are promised, over the cluster and per queue.
        self.promises = Promises(self)
        self.inqueue = self.promises.inqueue
        self.queue_inqueue = self.promises.queue_inqueue
        self.open_seconds = _open_plugins(self, clock)

    def admit(self, g: PodGroup) -> None:
        """Admit ``g`` this cycle (enqueue): it is promised what it is owed."""
        self.admitted.add(g.key)
        self.result.admitted.add(g.key)
        self.promises.promise((g,))

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

    def pod_queue(self, p: Pod) -> str | None:
        """The queue of ``p``'s group, None when the snapshot has no group for it."""
        g = self.snapshot.groups.get(pod_group_key(p))
        return None if g is None else g.queue

    def rows_mask(self, rows: Rows | int) -> fit.Mask:
        """A node mask allowing just ``rows`` (a HyperNode's nodes, a gang's fence, one node)."""
        mask = np.zeros(len(self.snapshot.nodes), dtype=np.bool_)
        mask[rows] = True
        return mask

    def retry_at(self, when: float) -> None:
        """Ask for a cycle at ``when`` (epoch seconds) though nothing changes: a rule waits for time."""
        if when > self.now:
            self.result.retry_at = when if self.result.retry_at is None else min(self.result.retry_at, when)

    @property
    def running(self) -> RunningIndex:
        """pumice's running pods by node and group (built on first use: only preempt and reclaim, and
        plugins answering them, need it)."""
        if self._running is None:
            self._running = RunningIndex(self.snapshot)
        return self._running

    @property
    def interpod(self) -> PodsOnNodes:
        """The cycle's pods-on-nodes counts (built on first use; see :class:`PodRules`)."""
        return self.rules.interpod

    @property
    def total(self) -> Vector:
        """Every node's allocatable, summed (read-only; the node table's, summed once per node change)."""
        return self.snapshot.alloc_total

    # --- node fit and scores (extender.framework.node_cache) ----------------------------------------
    def fit_mask(self, request: Vector) -> fit.Mask:
        return self.nodes.fit_mask(request)

    def scores(self, request: Vector) -> Scores:
        return self.nodes.scores(request)

    def scores_at(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows) -> Scores:
        return self.nodes.scores_at(request, free, rows)

    def fraction(
        self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None, column: int
    ) -> Scores:
        return self.nodes.fraction(request, free, rows, column)

    # --- node masks and per-pod predicates (extender.framework.node_masks) --------------------------
    def pod_mask(self, p: Pod) -> fit.Mask:
        return self.masks.pod_mask(p)

    def queue_scores(self, qname: str | None) -> Scores | None:
        return self.masks.queue_scores(qname)

    def limit_mask(self, qname: str, request: Vector) -> fit.Mask | None:
        return self.masks.limit_mask(qname, request)

    def pod_fit(self, p: Pod, candidates: fit.Mask) -> fit.Mask | None:
        return self.masks.pod_fit(p, candidates)

    # --- order keys (extender.framework.order_keys) -------------------------------------------------
    def job_key(self, g: PodGroup) -> tuple[Any, ...]:
        return self.keys.job_key(g)

    def task_key(self, p: Pod) -> tuple[Any, ...]:
        return self.keys.task_key(p)

    def queue_key(self, q: Queue) -> tuple[Any, ...]:
        return self.keys.queue_key(q)

    def namespace_key(self, namespace: str) -> tuple[Any, ...]:
        return self.keys.namespace_key(namespace)

    # --- votes (extender.framework.votes) -----------------------------------------------------------
    def enqueue_reject(self, g: PodGroup) -> str | None:
        return self.votes.enqueue_reject(g)

    def allocatable_reject(self, q: Queue, request: Vector) -> str | None:
        return self.votes.allocatable_reject(q, request)

    def victim_reject(self, pod: Pod) -> str | None:
        return self.votes.victim_reject(pod)

    def overused(self, q: Queue) -> str | None:
        return self.votes.overused(q)

    def preemptive_reject(self, q: Queue, request: Vector) -> str | None:
        return self.votes.preemptive_reject(q, request)

    def preemptable(self, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        return self.votes.preemptable(preemptor, candidates)

    def reclaimable(self, reclaimer: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        return self.votes.reclaimable(reclaimer, candidates)

    def gang_domains(self, g: PodGroup) -> GangDomains | None:
        return self.votes.gang_domains(g)

    def gang_fence(self, g: PodGroup) -> fit.Mask | None:
        return self.votes.gang_fence(g)

    def sub_group_domains(
        self, topology: NetworkTopology, pods: Sequence[Pod], members: Sequence[Pod]
    ) -> GangDomains | None:
        return self.votes.sub_group_domains(topology, pods, members)

    # --- tentative placement ------------------------------------------------------------------------
    def statement(self) -> Statement:
        return Statement(self)


def _queue_used(snapshot: Snapshot) -> dict[str, Vector]:
    """What each queue holds as the cycle opens: bound pods plus plans not yet bound (the snapshot's
    totals), a zero vector for a queue holding nothing."""
    r = len(snapshot.index)
    used: dict[str, Vector] = {q: np.zeros(r, dtype=np.int64) for q in snapshot.queues}
    for q, held in snapshot.queue_held.items():
        used[q] = used.get(q, np.zeros(r, dtype=np.int64)) + held
    return used


def _open_plugins(ssn: Session, clock: Callable[[], float] | None) -> list[tuple[str, float]]:
    """Open every plugin of ``ssn`` in tier order; with a ``clock``, how long each took (for metrics)."""
    seconds: list[tuple[str, float]] = []
    for p in ssn.plugins:
        started = clock() if clock is not None else 0.0
        p.open(ssn)
        if clock is not None:
            seconds.append((p.name, clock() - started))
    return seconds
