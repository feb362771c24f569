"""An immutable, self-consistent view of the cluster for one scheduling cycle.

Built by the cache from its current objects and the plan book; every decision of a cycle is taken
against one snapshot. Matrices are ``nodes x resources`` int64 (see :class:`ResourceIndex`):

- ``alloc``: node allocatable;
- ``used``: requests of pods bound to the node and not finished (any scheduler's);
- ``reserved``: requests of our waiting pods already planned onto the node (a plan is a reservation that
  every later decision respects).

Pods on nodes (:class:`~extender.core.residents.Residents`) are what inter-pod affinity and topology
spread count: bound, unfinished pods of any scheduler and planned pods of ours, with their labels and
inter-pod terms.

Every pod's request vector is a row of one read-only matrix (``requests``), filled a resource column at a
time when the snapshot is built: the totals above and the cycle's sums are sums of its rows, not of
vectors made pod by pod.

Group membership follows Volcano: the ``scheduling.k8s.io/group-name`` annotation (or
``scheduling.volcano.sh/group-name``); a pod of ours without one gets an implicit one-member group named
``podgroup-<uid>``, as Volcano's PodGroup controller would create.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, KeysView, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from extender.core.budgets import DisruptionBudget
from extender.core.gpu_memo import CardMemo, HoldsAt
from extender.core.gpus import GpuHold
from extender.core.hypernodes import HyperNodeSet
from extender.core.model import (
    GroupKey,
    GroupPhase,
    Node,
    Pod,
    PodGroup,
    PodUID,
    PriorityClass,
    Queue,
    group_key,
)
from extender.core.node_table import NodeTable, build_node_table
from extender.core.numa import NumaTopology
from extender.core.quota import ResourceQuota
from extender.core.residents import Residents
from extender.core.resources import ResourceIndex, Resources, Vector
from extender.core.topology import TopologyIndex


def pod_group_key(pod: Pod) -> GroupKey:
    """The group a pod of ours belongs to: its annotation's PodGroup, else its implicit group."""
    return group_key(pod.namespace, pod.group_name or f"podgroup-{pod.uid}")


def implicit_group(pod: Pod, default_queue: str) -> PodGroup:
    return PodGroup(
        namespace=pod.namespace,
        name=f"podgroup-{pod.uid}",
        min_member=1,
        queue=pod.queue_name or default_queue,
        min_resources=pod.requests,
        phase=GroupPhase.PENDING,
        created=pod.created,
        implicit=True,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    nodes: tuple[Node, ...]
    index: ResourceIndex
    alloc: npt.NDArray[np.int64]
    # The node table's: ``alloc`` summed (read-only), and whether any node has a PreferNoSchedule taint.
    alloc_total: Vector
    prefer_taints: bool
    used: npt.NDArray[np.int64]
    reserved: npt.NDArray[np.int64]
    pods: Mapping[PodUID, Pod]
    groups: Mapping[GroupKey, PodGroup]
    members: Mapping[GroupKey, tuple[PodUID, ...]]
    # Pods of ours naming a PodGroup that does not exist (yet).
    orphans: Mapping[GroupKey, tuple[PodUID, ...]]
    queues: Mapping[str, Queue]
    priority_classes: Mapping[str, PriorityClass]
    plans: Mapping[PodUID, str]
    default_queue: str
    node_pos: Mapping[str, int] = field(default_factory=dict)
    node_names: tuple[str, ...] = ()
    # Nodes kube-scheduler's own filters refused for a pod (its plan there was rejected): never re-plan there.
    refused: Mapping[PodUID, frozenset[str]] = field(default_factory=dict)
    # Requests of bound, unfinished or planned pods of ours, per queue (capability and fair share).
    queue_held: Mapping[str, Vector] = field(default_factory=dict)
    # Node -> domain per topology key (shared by snapshots over the same node table).
    topology: TopologyIndex
    residents: Residents
    # Namespace labels for namespaceSelector in pod affinity terms; None when not known (see
    # extender.core.selector for what is decided without them).
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None
    # What groups left out of this snapshot still weigh on their queues, summed per queue (see Aside).
    aside_waiting: Mapping[str, Vector] = field(default_factory=dict)
    aside_owed: Mapping[str, Vector] = field(default_factory=dict)
    aside_planned: Mapping[str, Vector] = field(default_factory=dict)
    # The request vector of each pod of ``pods``: row ``request_row[uid]`` of ``requests`` (read-only).
    requests: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    request_row: Mapping[PodUID, int] = field(default_factory=dict)
    # The scheduler names that make a pod pumice's, and the PodGroups ``groups`` leaves out (running ones,
    # settled ones): who preempt and reclaim may choose victims from (see extender.core.running).
    scheduler_names: frozenset[str] = frozenset({"volcano"})
    other_groups: Mapping[GroupKey, PodGroup] = field(default_factory=dict)
    # ResourceQuotas and PodDisruptionBudgets by namespace (the resourcequota, drf and pdb plugins).
    quotas: Mapping[str, tuple[ResourceQuota, ...]] = field(default_factory=dict)
    budgets: Mapping[str, tuple[DisruptionBudget, ...]] = field(default_factory=dict)
    # HyperNode objects (the network-topology-aware plugin resolves them over ``nodes``, memoized).
    hypernodes: HyperNodeSet = field(default_factory=HyperNodeSet)
    # Numatopology objects by node name (the numa-aware plugin).
    numatopologies: Mapping[str, NumaTopology] = field(default_factory=dict)
    # The GPU cards pods hold (deviceshare), with the node they hold them on: bound pods by their
    # annotations, planned ones by their plan's decision (see controllers.state.cache).
    device_holds: Mapping[PodUID, tuple[str, GpuHold]] = field(default_factory=dict)
    # What deviceshare keeps across the cycles over one cache's snapshots, and where these holds stand
    # in that cache's hold log (see extender.core.gpu_memo); None: a cycle starts from the holds alone.
    card_memo: CardMemo | None = None
    holds_at: HoldsAt | None = None
    # Per queue, what its PodGroups hold past their minResources (Volcano's elastic resources), as
    # ``Promises.elastic`` works it out from the residents, kept by a cache from cycle to cycle; None: the
    # cycle works it out.
    elastic: Mapping[str, Mapping[str, int]] | None = None
    # PodGroups left out (with their pods) that enqueue votes for again (see extender.framework.capped).
    revote: Mapping[GroupKey, PodGroup] = field(default_factory=dict)

    def request(self, uid: PodUID) -> Vector:
        """The request vector of pod ``uid`` (read-only: a row of ``requests``)."""
        row = self.request_row.get(uid)
        if row is None:
            return self.index.vector(self.pods[uid].requests)
        out: Vector = self.requests[row]
        return out

    def request_sum(self, uids: Sequence[PodUID]) -> Vector:
        """The summed request vectors of pods ``uids`` (integers: exact in any order)."""
        out: Vector = np.zeros(len(self.index), dtype=np.int64)
        rows: list[int] = []
        for u in uids:
            row = self.request_row.get(u)
            if row is None:
                out += self.request(u)
            else:
                rows.append(row)
        if rows:
            out += self.requests[rows].sum(axis=0)
        return out

    @property
    def free(self) -> npt.NDArray[np.int64]:
        """What is left on each node after bound pods and plans (a fresh array each call)."""
        out: npt.NDArray[np.int64] = self.alloc - self.used - self.reserved
        return out

    def group_priority(self, g: PodGroup) -> int:
        pc = self.priority_classes.get(g.priority_class)
        if pc is not None:
            return pc.value
        # Volcano falls back to the highest priority among the group's pods.
        return max((self.pods[u].priority for u in self.members.get(g.key, ())), default=0)

    def group_of(self, uid: PodUID) -> GroupKey | None:
        pod = self.pods.get(uid)
        return None if pod is None else pod_group_key(pod)


@dataclass(frozen=True, slots=True, kw_only=True)
class Aside:
    """What a group left out of a snapshot still weighs on its queue.

    A cache leaves out groups an earlier cycle found short of room or refused admission, with nothing
    changed since that could alter that (their settled state is the caller's to track): the cycle's cost
    is then the work that changed, not the backlog (Volcano retries every job each session, its #5551).
    Their queue's demand and the capacity promised to them still count, as these totals.

    A cache also leaves out an admitted group whose every waiting pod holds a plan (nothing to place until
    it changes; see :func:`extender.framework.cycle.run_cycle`): its planned pods are part of ``waiting``,
    as a plugin that counts every waiting pod sees them, and of ``planned`` too, for one that counts only
    the pods still to be placed (drf's queue tree)."""

    queue: str
    waiting: Mapping[str, int]  # requests of its waiting pods: part of its queue's demand (proportion)
    owed: Mapping[str, int]  # admitted, not running: minResources less what it holds (enqueue's promise)
    planned: Mapping[str, int] = field(default_factory=dict)  # the part of ``waiting`` that holds plans


def _add_rows(
    into: npt.NDArray[np.int64], rows: list[int], requests: npt.NDArray[np.int64], pods: list[int]
) -> None:
    """``into[rows[i]] += requests[pods[i]]`` for every i (rows may repeat; integer sums, so the order
    of the additions does not matter)."""
    if rows:
        np.add.at(into, np.asarray(rows, dtype=np.intp), requests[np.asarray(pods, dtype=np.intp)])


def build_snapshot(
    *,
    nodes: Iterable[Node] | NodeTable,
    pods: Iterable[Pod],
    podgroups: Iterable[PodGroup],
    queues: Iterable[Queue],
    priority_classes: Iterable[PriorityClass] = (),
    plans: Mapping[PodUID, str] | None = None,
    scheduler_names: frozenset[str] = frozenset({"volcano"}),
    default_queue: str = "default",
    used: npt.NDArray[np.int64] | None = None,
    reserved: npt.NDArray[np.int64] | None = None,
    queue_usage: Mapping[str, Mapping[str, int]] | None = None,
    refused: Mapping[PodUID, frozenset[str]] | None = None,
    residents: Iterable[Pod] | None = None,
    termed_residents: Iterable[Pod] | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    aside: Iterable[Aside] = (),
    other_groups: Mapping[GroupKey, PodGroup] | None = None,
    quotas: Iterable[ResourceQuota] = (),
    budgets: Iterable[DisruptionBudget] = (),
    hypernodes: HyperNodeSet | None = None,
    numatopologies: Iterable[NumaTopology] = (),
    device_holds: Mapping[PodUID, tuple[str, GpuHold]] | None = None,
    card_memo: CardMemo | None = None,
    holds_at: HoldsAt | None = None,
    elastic: Mapping[str, Mapping[str, int]] | None = None,
) -> Snapshot:
    """A snapshot of everything given.

    A cache that keeps running totals passes only the pods and groups that have work (pods waiting
    without a plan, groups not yet running), a prebuilt :class:`NodeTable` covering every resource they
    ask for, and the totals for everything else as matrices over that table: ``used`` (requests of bound,
    unfinished pods per node), ``reserved`` (requests of planned pods per node), and ``queue_usage``
    (bound plus planned requests of our groups per queue).
    The cycle then costs what the pending work costs, not what the whole cluster holds. The snapshot's
    ``plans`` are the live plans (waiting pods, existing nodes) of the pods it holds.

    Such a cache passes ``residents`` too: every pod it holds (at least every bound or planned one, and
    every one in ``pods``), whose node (``nodeName``, else its plan in ``plans``) places it for inter-pod
    affinity and topology spread. Without it those rules see the bound and planned pods among ``pods``.
    ``termed_residents``: those of ``residents`` with inter-pod terms, in their order, if the cache keeps
    them apart (a cycle then never walks every pod to find them).
    ``namespace_labels`` (namespace name -> labels) lets a pod affinity ``namespaceSelector`` be evaluated.
    ``aside`` is what the groups such a cache leaves out still weigh (see :class:`Aside`), and
    ``other_groups`` the PodGroup objects it leaves out (those of running pods matter to preemption).
    ``quotas`` and ``budgets`` are every ResourceQuota and PodDisruptionBudget (kept by namespace).
    """
    pod_map = {p.uid: p for p in pods}
    groups: dict[GroupKey, PodGroup] = {g.key: g for g in podgroups}
    members: dict[GroupKey, list[PodUID]] = {k: [] for k in groups}
    orphans: dict[GroupKey, list[PodUID]] = {}
    # Resource names pods and groups ask for must have columns, even when no node offers them (GPUs):
    # enqueue and fit must see the demand to refuse it.
    wanted: set[str] = set()
    for g in groups.values():
        wanted.update(g.min_resources)
    for p in pod_map.values():
        if p.waiting and p.scheduler_name in scheduler_names:
            wanted.update(p.requests)
    if isinstance(nodes, NodeTable) and nodes.covers(wanted):
        table = nodes
    else:
        table = build_node_table(nodes.nodes if isinstance(nodes, NodeTable) else nodes, wanted)
    node_pos = table.node_pos
    index = table.index
    # Every pod's request vector, once: the cycle's sums and placements read rows of it.
    pod_list = list(pod_map.values())
    requests = index.matrix([p.requests for p in pod_list])
    requests.setflags(write=False)
    request_row = {p.uid: i for i, p in enumerate(pod_list)}
    # Live plans of the pods in this snapshot (a cache passes totals for the others' reservations).
    all_plans = plans or {}
    live_plans: dict[PodUID, str] = {}
    for uid, p in pod_map.items():
        node = all_plans.get(uid)
        if node is not None and node in node_pos and p.waiting:
            live_plans[uid] = node
    planned_uids = live_plans.keys()
    for p in sorted(pod_map.values(), key=lambda p: (p.created, p.namespace, p.name)):
        if p.scheduler_name not in scheduler_names:
            continue
        if p.group_name:
            key = group_key(p.namespace, p.group_name)
            if key in members:
                members[key].append(p.uid)
            else:
                orphans.setdefault(key, []).append(p.uid)
        elif not p.terminal or p.node_name:
            g = implicit_group(p, default_queue)
            # No PodGroup object holds its phase: a placed pod's group is past admission, or enqueue would
            # count the pod twice (as used and as minResources) and could refuse a running pod.
            if p.node_name:
                g = replace(g, phase=GroupPhase.COMPLETED if p.terminal else GroupPhase.RUNNING)
            elif p.uid in planned_uids and p.waiting:
                g = replace(g, phase=GroupPhase.INQUEUE)
            groups[g.key] = g
            members[g.key] = [p.uid]
    shape = table.alloc.shape
    given = used is not None and reserved is not None
    if used is None:
        used = np.zeros(shape, dtype=np.int64)
        bound = [i for i, p in enumerate(pod_list) if p.holds_resources and p.node_name in node_pos]
        _add_rows(used, [node_pos[pod_list[i].node_name] for i in bound], requests, bound)
    if reserved is None:
        reserved = np.zeros(shape, dtype=np.int64)
    if not given:
        _add_rows(
            reserved,
            [node_pos[node] for node in live_plans.values()],
            requests,
            [request_row[uid] for uid in live_plans],
        )
    queue_held: dict[str, Vector] = {}
    if queue_usage is None:
        for key, uids in members.items():
            q = groups[key].queue
            held = [request_row[u] for u in uids if pod_map[u].holds_resources or u in live_plans]
            if held:
                queue_held[q] = queue_held.get(q, np.zeros(len(index), dtype=np.int64)) + requests[held].sum(
                    axis=0
                )
    else:
        queue_held = {q: index.vector(u) for q, u in queue_usage.items()}
    # Summed per queue as one matrix each (a forecast leaves hundreds of groups out every cycle: a vector
    # per group cost more than the rest of the snapshot); integer sums, so the order does not matter.
    books: tuple[dict[str, list[Resources]], ...] = ({}, {}, {})
    for a in aside:
        for book, amounts in zip(books, (a.waiting, a.owed, a.planned), strict=True):
            if amounts:
                book.setdefault(a.queue, []).append(amounts)
    aside_waiting, aside_owed, aside_planned = (
        {q: index.matrix(rows).sum(axis=0) for q, rows in book.items()} for book in books
    )
    return Snapshot(
        nodes=table.nodes,
        index=index,
        alloc=table.alloc,
        alloc_total=table.total,
        prefer_taints=table.prefer_taints,
        used=used,
        reserved=reserved,
        pods=pod_map,
        groups=groups,
        members={k: tuple(v) for k, v in members.items()},
        orphans={k: tuple(v) for k, v in orphans.items()},
        queues={q.name: q for q in queues},
        priority_classes={pc.name: pc for pc in priority_classes},
        plans=live_plans,
        default_queue=default_queue,
        node_pos=node_pos,
        node_names=table.node_names,
        queue_held=queue_held,
        refused={u: n for u, n in (refused or {}).items() if u in pod_map},
        topology=table.topology,
        residents=(
            Residents(pod_map.values(), live_plans, node_pos)
            if residents is None
            else Residents(residents, all_plans, node_pos, termed_residents)
        ),
        namespace_labels=namespace_labels,
        requests=requests,
        request_row=request_row,
        aside_waiting=aside_waiting,
        aside_owed=aside_owed,
        aside_planned=aside_planned,
        scheduler_names=scheduler_names,
        other_groups=_Without(dict(other_groups or {}), groups.keys()),
        quotas=_by_namespace(quotas),
        budgets=_by_namespace(budgets),
        hypernodes=HyperNodeSet() if hypernodes is None else hypernodes,
        numatopologies={t.name: t for t in numatopologies},
        device_holds=(
            {
                p.uid: (p.node_name, p.gpu_hold)
                for p in (pod_map.values() if residents is None else residents)
                if p.gpu_hold is not None and p.holds_resources
            }
            if device_holds is None
            else device_holds
        ),
        card_memo=card_memo,
        holds_at=holds_at,
        elastic=elastic,
    )


class _Without(Mapping[GroupKey, PodGroup]):
    """``every`` less the keys in ``hidden``, filtered as it is read: a copy of every PodGroup costs a
    snapshot a C-level copy, not a loop over groups the cycle never looks at."""

    __slots__ = ("_every", "_hidden")

    def __init__(self, every: dict[GroupKey, PodGroup], hidden: KeysView[GroupKey]) -> None:
        self._every = every
        self._hidden = hidden

    def __getitem__(self, key: GroupKey) -> PodGroup:
        if key in self._hidden:
            raise KeyError(key)
        return self._every[key]

    def __iter__(self) -> Iterator[GroupKey]:
        return (k for k in self._every if k not in self._hidden)

    def __len__(self) -> int:
        return sum(1 for _ in self)


_Namespaced = TypeVar("_Namespaced", ResourceQuota, DisruptionBudget)


def _by_namespace(objs: Iterable[_Namespaced]) -> dict[str, tuple[_Namespaced, ...]]:
    out: dict[str, list[_Namespaced]] = {}
    for o in sorted(objs, key=lambda o: (o.namespace, o.name)):
        out.setdefault(o.namespace, []).append(o)
    return {ns: tuple(v) for ns, v in out.items()}
