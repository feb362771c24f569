"""The extension points a plugin may implement, and the tier rules that combine them.

A plugin overrides only the hooks it needs; the base returns "no opinion" for each. Which plugins take
part in which hook is worked out once for a conf's plugins (:mod:`extender.framework.hooks`). Tier rules
(written once, here, and carried out by the session's parts: :mod:`extender.framework.votes` for the vote,
victim and domain hooks, :mod:`extender.framework.order_keys` for the order hooks,
:mod:`extender.framework.node_cache` and :mod:`extender.framework.node_masks` for scores and predicates):

- order hooks (``job_order``, ``queue_order``): keys are concatenated in tier/plugin order and compared
  lexicographically, so the first plugin that tells two jobs apart decides, as in Volcano;
- vote hooks (``enqueue``, ``allocatable``, ``overused``, ``preemptive``, ``victim``): any rejection rejects,
  with that plugin's reason; for ``enqueue``, a plugin's ``enqueue_permit`` admits the group once its tier
  has no rejection, and later tiers are not asked;
- victim hooks (``preemptable``, ``reclaimable``): within a tier, the victims every plugin that answers
  allows (the intersection, in the candidates' order); the first tier where a plugin answers decides, and
  an empty answer is a decision (no victims), not an abstention. Volcano lets a tier whose intersection is
  empty pass the choice to the next tier, which let a lower tier (drf) evict what gang or priority had
  just protected; pumice does not;
  a plugin that sets :attr:`Plugin.static_victims` promises that its ``preemptable`` and ``reclaimable``
  answers depend only on the candidates, the preemptor's priority and its PodGroup's (as
  ``snapshot.group_priority`` gives it) and state fixed for the cycle, never on what the cycle placed or
  evicted; while every plugin of the tiers that decided is such, preempt and reclaim reuse a node's
  victims for the next pod of that priority as long as nothing they looked at changed
  (:mod:`extender.framework.victim_memo`);
- ``node_score``: scores from every plugin are summed (each plugin applies its own weight). A plugin that
  sets :attr:`Plugin.row_local_scores` promises that a node's score depends only on the request, that node's
  row of ``free`` and per-cycle state fixed in ``open``; the session then caches scores per request vector
  and asks it again only for the rows whose free capacity changed since (``rows``), and scores a node as
  it would be with more copies of a pod on it (hypothetical ``free`` rows) to place a gang's identical
  pods as one batch. The score of a row must come out bit-for-bit the same whether computed alone or with
  any other rows (elementwise arithmetic, no BLAS reductions), so neither changes a placement. Plugins
  that do not set it are asked for every node, every time, and their pods are placed one by one;
- ``allocatable``: a plugin that sets :attr:`Plugin.additive_allocatable` promises that its answer
  depends only on the queue's usage plus the request and that a queue that may take a request may take
  any part of it: taking ``a`` then ``b`` passes exactly when ``a + b`` passes at once. The allocate
  action then checks a run of identical pods with one call;
- ``job_order``: a plugin that sets :attr:`Plugin.static_job_order` promises that a group's key depends
  only on that group and state fixed in ``open``; the session then computes each group's key once;
- ``namespace_order`` (Volcano's NamespaceOrderFn): keys concatenated like job keys; within a queue, the
  allocate action serves the namespace with the smallest key first, and of two namespaces with equal keys
  the one whose first group comes first in job order (so without a plugin that answers, the order is job
  order). Keys are asked afresh at every turn, so they may change as pods are placed: the session keeps
  ``namespace_delta`` (what each namespace took this cycle, less what it gave back) current for them;
- ``task_order`` (Volcano's TaskOrderFn): the order a group's waiting pods are placed in. Keys are
  concatenated like job keys and compared after the pods' priority (higher first) and before their age
  and name; they are asked once per pod when a group's pods are lined up, so they must depend only on
  the pod and state fixed in ``open`` (task-topology's buckets);
- ``queue_order``: a plugin that sets :attr:`Plugin.local_queue_order` promises that a queue's key depends
  only on that queue, its entry of ``ssn.queue_used`` and state fixed in ``open``; the session then
  recomputes a queue's key only when that queue's usage changed;
- node predicates (``node_mask``, ``node_fit``, ``node_limit``): a node is feasible for a pod when every
  plugin's answer allows it (the intersection; None is no opinion), on top of the filters pumice always
  applies (:mod:`extender.core.fit`). Each kind has a contract the caches and batches rely on:

  * ``node_mask`` depends only on the pod's queue and state fixed in ``open`` (node labels, queue specs):
    the session asks once per queue a cycle and folds the answer into :meth:`Session.pod_mask`, cached
    per (node constraints, queue). ``node_mask_reason`` says why, for a pod it leaves no node;
  * ``node_fit`` is row-local as ``row_local_scores`` is: a node's answer depends only on the request,
    that node's row of ``free`` and state fixed in ``open`` (allocatable, labels), is asked for ``rows``
    with their (possibly hypothetical) free capacity, and comes out the same alone or with other rows.
    The session folds it into :meth:`Session.fit_mask` (cached per request vector, refreshed for changed
    rows), and the allocate action's batch checks it on the hypothetical rows of a node taking more
    copies; preempt and reclaim check it on a node's room once its victims are gone.
    ``node_fit_reason`` says why a node with room for the request refuses it. Such a predicate need not
    narrow as pods are placed (fewer idle GPUs keep less cpu), so while one is on no refusal stands for
    a cache to leave the group out (:mod:`extender.framework.cycle`): a plugin whose conf leaves the
    predicate off must say so through ``takes_part("node_fit")``;
  * ``node_limit`` may depend on what the queue took in this cycle (Volcano's per-node-group caps): it
    is asked afresh at every placement, never cached; a queue for which any plugin answers a mask has its
    pods placed one by one. Plugins keep such usage current through ``placed``, which the session calls
    for every tentative placement, eviction and undo (Volcano's Allocate/Deallocate events);
- ``pod_fit`` (a node predicate on who the pod is, numa-aware's per-NUMA cpus): which of the pod's
  candidate nodes (those every other filter allows) may take it now. Asked afresh at every placement of
  such a pod, over its candidates, and never cached; the plugin follows placements itself (from
  ``ssn.plans``). Whether it answers None must depend only on the pod, never on the candidates: a pod it
  answers for is placed one by one (never in a batch), and preempt and reclaim look only at the nodes it
  allows — unless every such plugin sets ``fit_follows_evictions`` (its answer counts what the pods in
  ``ssn.evicting`` free, deviceshare's cards): then they look for victims on any node and place the pod
  only if ``pod_fit`` allows the node once the victims are gone. ``pod_fit_reason`` says why, for a pod it
  leaves no node;
- ``queue_node_score``: a score per node for pods of a queue, fixed for the cycle (node labels, queue
  specs: nodegroup's preferences). The session asks once per queue and adds it to the summed
  ``node_score`` of every pod of that queue, in every path alike (one by one, batched, preempt and
  reclaim), so a batch still replays the loop exactly;
- ``gang_domains`` (network-topology-aware; Volcano's HyperNode gradients): where a gang's minimum may be
  placed whole, as candidate sets of node rows in the order to try (lowest tier first, and within a tier
  the fullest first). The allocate action places the gang inside each candidate in turn, in a statement
  it discards on failure, and commits the first that holds it; when none does, the group waits with the
  plugin's ``refusal`` (hard) or is placed over every node (``spread``, soft). The first plugin that
  answers decides; None (the cheap common case: no ``networkTopology``) keeps the usual path, at no cost.
  While a candidate is tried, :meth:`Session.pod_mask` leaves only its rows (``Session.domain``), so
  every batch and cache stays exact: the restriction is one more static mask. For a group whose gang
  minimum is already placed, a single candidate and no ``spread`` fence its extra pods
  (:meth:`Session.gang_fence`): allocate places them inside it, preempt and reclaim leave them be;
- ``sub_group_domains``: the same for one sub-group of a PodGroup's ``subGroupPolicy`` with its own
  ``networkTopology``: candidates for the sub-group's pods, tried in turn inside whatever domain the gang
  itself is being tried in (see :mod:`extender.framework.subgroup_allocate`);
- ``close`` (Volcano's OnSessionClose) is called once after the last action by ``run_cycle``; a plugin
  may add to ``ssn.result`` there (annotations to write on placed pods before they bind, reasons);
- a plugin whose conf entry switches a hook off (``enableJobOrder: false``, see :data:`HOOK_SWITCHES`) takes
  no part in that hook, as in Volcano.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np
import numpy.typing as npt

from extender.core.model import NetworkTopology, Pod, PodGroup, Queue
from extender.core.resources import Vector
from extender.framework.arguments import NO_ARGUMENTS, ArgumentTable

if TYPE_CHECKING:
    from extender.framework.session import Session

Scores = npt.NDArray[np.float64]
# Per node (or per row of ``rows``): whether a node predicate allows it.
Mask = npt.NDArray[np.bool_]
# Node row indices (into the snapshot's node order), as passed to ``Plugin.node_score``.
Rows = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class GangDomains:
    """A ``gang_domains`` answer: ``candidates`` (a name for reasons, the node rows) in the order to try;
    whether the gang may go anywhere when none holds it (``spread``); and, when it may not, why it waits
    (``refusal``, which should say which tier was tried and what was short)."""

    candidates: Sequence[tuple[str, Rows]]
    spread: bool
    refusal: str
    # Every HyperNode the gang may span, room or not (preempt and reclaim make room), in the same order.
    within: Sequence[tuple[str, Rows]] = ()


# The Volcano conf switch that gates each hook (absent means enabled).
HOOK_SWITCHES: Final = {
    "job_order": "enableJobOrder",
    "task_order": "enableTaskOrder",
    "queue_order": "enableQueueOrder",
    "enqueue": "enableJobEnqueued",
    "enqueue_permit": "enableJobEnqueued",
    "allocatable": "enabledAllocatable",
    "node_score": "enableNodeOrder",
    "preemptable": "enablePreemptable",
    "reclaimable": "enableReclaimable",
    "preemptive": "enablePreemptive",
    "overused": "enabledOverused",
    "victim": "enabledVictim",
    "namespace_order": "enableNamespaceOrder",
    "node_mask": "enablePredicate",
    "node_fit": "enablePredicate",
    "node_limit": "enablePredicate",
    "pod_fit": "enablePredicate",
    "queue_node_score": "enableNodeOrder",
}


class Plugin:
    name: ClassVar[str]
    # This plugin's switches from the conf (set by the registry when it builds the tiers).
    switches: Mapping[str, bool] = MappingProxyType({})
    # The arguments this plugin accepts (see extender.framework.arguments), parsed with it in __init__.
    argument_table: ClassVar[ArgumentTable] = NO_ARGUMENTS
    # True when ``node_score`` honours ``rows`` and a row's score depends only on that row (see above).
    row_local_scores: ClassVar[bool] = False
    # True when ``allocatable`` judges the queue's usage plus the request, monotonically (see above).
    additive_allocatable: ClassVar[bool] = False
    # True when ``queue_order`` depends only on the queue and its usage (see above).
    local_queue_order: ClassVar[bool] = False
    # True when ``job_order`` depends only on the group and state fixed in ``open`` (see above).
    static_job_order: ClassVar[bool] = False
    # True when ``pod_fit`` counts what the pods in ``ssn.evicting`` free (see above).
    fit_follows_evictions: ClassVar[bool] = False
    # True when ``preemptable`` and ``reclaimable`` read only the pods and the fixed state (see above).
    static_victims: ClassVar[bool] = False

    def takes_part(self, hook: str) -> bool:
        """Whether the conf leaves ``hook`` (a method name of this class) switched on for this plugin."""
        switch = HOOK_SWITCHES.get(hook)
        return switch is None or self.switches.get(switch, True)

    def open(self, ssn: Session) -> None:
        """Called once per cycle before any action, to precompute per-cycle state."""

    def close(self, ssn: Session) -> None:
        """Called once per cycle after the last action (Volcano's OnSessionClose): e.g. to put what the
        plugin decided for placed pods in ``ssn.result.annotations``."""

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[Any, ...] | None:
        """A sort key; smaller is scheduled first."""
        return None

    def queue_order(self, ssn: Session, queue: Queue) -> tuple[Any, ...] | None:
        return None

    def task_order(self, ssn: Session, pod: Pod) -> tuple[Any, ...] | None:
        """A sort key among the waiting pods of ``pod``'s group; smaller is placed first (see above)."""
        return None

    def namespace_order(self, ssn: Session, namespace: str) -> tuple[Any, ...] | None:
        """A sort key for the jobs of ``namespace`` within a queue; smaller is served first."""
        return None

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        """Why ``group`` may not be admitted now, or None to permit/abstain."""
        return None

    def enqueue_permit(self, ssn: Session, group: PodGroup) -> bool:
        """Whether this plugin admits ``group`` whatever later tiers say (Volcano's Permit vote: a
        rejection in the same tier still wins)."""
        return False

    def allocatable(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        """Why ``queue`` may not take ``request`` more right now, or None."""
        return None

    def node_score(
        self,
        ssn: Session,
        request: Vector,
        free: npt.NDArray[np.int64],
        rows: Rows | None = None,
    ) -> Scores | None:
        """A score per node (any scale; higher is better) for placing ``request``.

        With ``rows`` (only passed to plugins that set :attr:`row_local_scores`), ``free`` holds just those
        nodes' free capacity, row ``i`` for node ``rows[i]``: the scores of those nodes, in that order. A
        node may appear more than once and its capacity may be hypothetical (the node as it would be with
        more pods on it). The same request gives None or an array whatever the rows.
        """
        return None

    def node_mask(self, ssn: Session, queue: Queue) -> Mask | None:
        """The nodes pods of ``queue`` may use, fixed for the cycle (see above), or None (no opinion)."""
        return None

    def node_mask_reason(self, ssn: Session, queue: Queue) -> str | None:
        """Why ``node_mask`` leaves ``queue`` only some nodes, for a pod none of those can take."""
        return None

    def node_fit(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Mask | None:
        """Per node (``rows`` and ``free`` as in :meth:`node_score`), whether it may take ``request``
        given its free capacity; row-local (see above). The same request gives None or a mask whatever
        the rows."""
        return None

    def node_fit_reason(self, ssn: Session, request: Vector, free: Vector, row: int) -> str | None:
        """Why node ``row``, with ``free`` free, refuses ``request`` in :meth:`node_fit`, or None."""
        return None

    def node_limit(self, ssn: Session, queue: Queue, request: Vector) -> Mask | None:
        """The nodes a pod of ``queue`` requesting ``request`` may use given what the queue holds now
        (asked at every placement), or None (no limit for this queue: its pods may be batched)."""
        return None

    def node_limit_reason(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        """Why ``node_limit`` refuses nodes, for a pod it leaves none."""
        return None

    def pod_fit(self, ssn: Session, pod: Pod, candidates: Mask) -> Mask | None:
        """Per node, whether it may take ``pod`` now, for the nodes of ``candidates`` (others: any
        answer), or None (no opinion about this pod, whatever the candidates; see above)."""
        return None

    def pod_fit_reason(self, ssn: Session, pod: Pod, candidates: Mask) -> str | None:
        """Why ``pod_fit`` refuses ``pod`` every node of ``candidates``, or None."""
        return None

    def queue_node_score(self, ssn: Session, queue: Queue) -> Scores | None:
        """A score per node (same scale as ``node_score``) for every pod of ``queue``, fixed for the
        cycle, or None."""
        return None

    def placed(self, ssn: Session, queue: str, request: Vector, row: int, count: int) -> None:
        """``count`` pods of ``queue`` requesting ``request`` were put on (count < 0: taken off) node
        ``row``, tentatively: called for every place, eviction and undo, to plugins that override it."""

    def gang_domains(self, ssn: Session, group: PodGroup) -> GangDomains | None:
        """Where the gang minimum of ``group`` may be placed whole (see above), or None (no opinion)."""
        return None

    def sub_group_domains(
        self, ssn: Session, topology: NetworkTopology, pods: Sequence[Pod], members: Sequence[Pod]
    ) -> GangDomains | None:
        """Where ``pods`` of one sub-group (a PodGroup's ``subGroupPolicy``), whose rule is ``topology``,
        may be placed whole beside ``members`` of it already placed (see above), or None (no opinion)."""
        return None

    def victim(self, ssn: Session, pod: Pod) -> str | None:
        """Why ``pod`` must not be evicted by anyone (kube-scheduler's preemption included), or None."""
        return None

    def preemptable(self, ssn: Session, preemptor: Pod, candidates: Sequence[Pod]) -> Sequence[Pod] | None:
        """Which of ``candidates`` (running pods of other jobs in the preemptor's queue) ``preemptor`` may
        evict, or None to abstain. The framework keeps a running gang whole on its own (see
        :mod:`extender.framework.evict`)."""
        return None

    def reclaimable(self, ssn: Session, reclaimer: Pod, candidates: Sequence[Pod]) -> Sequence[Pod] | None:
        """Which of ``candidates`` (running pods of other, reclaimable queues) ``reclaimer`` may evict to
        take its queue's share back, or None to abstain. Taking them in order: each answer must stand for
        any prefix of it (the framework may evict fewer than offered)."""
        return None

    def overused(self, ssn: Session, queue: Queue) -> str | None:
        """Why ``queue`` may take nothing more in this cycle's allocate (at or over its deserved share), or
        None. A queue that is overused also reclaims nothing."""
        return None

    def preemptive(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        """Why ``queue`` may not reclaim ``request`` more from other queues (it would pass its deserved
        share), or None."""
        return None
