"""ClusterCache: the single writer of the process's view of the cluster, and what reads it.

The informers feed raw objects in through :class:`~controllers.state.cache_ingest.CacheIngest` (parsed
once into the frozen model; see there for what an unreadable object does and how an assumed binding is
laid over a pod). This module adds the reads: objects by name or UID, the unreadable book, the node table
(rebuilt when nodes change, columns once added kept so it does not flap), and the snapshots a scheduling
cycle, the status writer and preemption take, each over the reservation ledger's running totals; and the
copy of every parsed object a forecast starts from (:meth:`ClusterCache.models`, :meth:`ClusterCache.load`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Final

from controllers.state.cache_figures import CacheFigures
from controllers.state.cache_ingest import Obj
from controllers.state.gpu_holds import GpuHolds
from controllers.state.ledger import Ledger
from controllers.state.pending import PendingSet
from extender.api import labels as L
from extender.core.hypernodes import HyperNodeSet
from extender.core.model import GroupKey, GroupPhase, Node, Pod, PodGroup, PodUID, Queue, group_key
from extender.core.node_table import NodeTable, build_node_table
from extender.core.snapshot import Aside, Snapshot, build_snapshot, pod_group_key

_UNFINISHED: Final = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE, GroupPhase.UNKNOWN})


class ClusterCache(CacheFigures):
    """The parsed objects (see :class:`CacheIngest`) and what the scheduler, the status writer, metrics and
    admission read of them."""

    def __init__(
        self,
        *,
        scheduler_names: frozenset[str],
        ledger: Ledger,
        pending: PendingSet,
        default_queue: str = L.DEFAULT_QUEUE,
    ) -> None:
        super().__init__(
            scheduler_names=scheduler_names, ledger=ledger, pending=pending, default_queue=default_queue
        )
        # PodGroups not running yet (or broken), kept as they are stored: a cycle reads them without a loop
        # over every PodGroup.
        self._unfinished: set[GroupKey] = set()
        # Pods with inter-pod terms, in the order of the pod store (a pod stored anew moves to its end):
        # a cycle finds them without a walk over every pod.
        self._termed: dict[PodUID, None] = {}
        # GPU pods' holds as they are stored, and deviceshare's memo across cycles.
        self._gpu = GpuHolds()

    def _quiet(self, uid: PodUID, old: Pod | None, new: Pod) -> None:
        """Tell the pending set of a change of a pod that gives its group nothing new to decide: bound
        where it was planned, or holding the same on the same node as before."""
        if old is None or new.requests != old.requests or not new.holds_resources:
            return
        key = self._index.ours(new)
        if key is None or key != self._index.ours(old):
            return
        if old.waiting and self._ledger.planned_node(uid) == new.node_name:
            self._pending.bound_on_plan(uid, key, new.requests)
        elif old.holds_resources and old.node_name == new.node_name:
            self._pending.same(uid, key)

    def assume_bound(self, uid: PodUID, node: str) -> None:
        pod = self._pods.get(uid)
        if pod is not None:
            self._quiet(uid, pod, pod if pod.node_name == node else dataclasses.replace(pod, node_name=node))
        super().assume_bound(uid, node)
        if pod is not None:
            self._touch((self._index.ours(pod),))
        self._gpu.note(uid, self._device_pods.get(uid), self._ledger)

    def _store(self, uid: PodUID, pod: Pod | None, seen: Pod | None) -> None:
        old = self._pods.get(uid)
        if pod is not None:
            self._quiet(uid, old, pod)
        super()._store(uid, pod, seen)
        self._gpu.note(uid, self._device_pods.get(uid), self._ledger)
        self._termed.pop(uid, None)
        if pod is not None and pod.affinity is not None and pod.affinity.has_pod_terms:
            self._termed[uid] = None
        # A pod that left its group (deleted) changed that group too: what a group left out of cycles
        # weighs (what its pods hold) and its status depend on it.
        was = self._index.ours(old) if old is not None else None
        self._touch((was, None if pod is None else self._index.ours(pod)))
        if was is not None and (pod is None or self._index.ours(pod) != was):
            self._pending.group_changed(was)

    def _changed(self, kind: str) -> None:
        super()._changed(kind)
        if kind == "queue":
            # Allocate speaks for an admitted group whose queue went (the pending set's placed groups).
            self._pending.queues_changed()

    def _group_stored(self, key: GroupKey, old: PodGroup | None, new: PodGroup | None) -> None:
        self._note_phase(key, new)
        self._touch((key,))
        super()._group_stored(key, old, new)

    def set_group_phase(self, key: GroupKey, phase: GroupPhase) -> bool:
        changed = super().set_group_phase(key, phase)
        if changed:
            self._note_phase(key, self._podgroups.get(key))
        return changed

    def _note_phase(self, key: GroupKey, group: PodGroup | None) -> None:
        if group is not None and group.phase in _UNFINISHED:
            self._unfinished.add(key)
        else:
            self._unfinished.discard(key)

    def pod_queue(self, pod: Pod) -> str | None:
        return self._queue_of(pod_group_key(pod))

    def pod(self, uid: PodUID) -> Pod | None:
        return self._pods.get(uid)

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def members(self, key: GroupKey) -> frozenset[PodUID]:
        return frozenset(self._members.get(key, ()))

    def unreadable_pod(self, uid: PodUID) -> str | None:
        """Why the pod with this UID cannot be read, if it cannot."""
        return self._unreadable.pod(uid)

    def unreadable(self) -> dict[tuple[str, str], str]:
        return dict(self._unreadable.all())

    def knows(self, uid: PodUID) -> bool:
        """The watch has shown this pod (readable or not)."""
        return uid in self._pods or self._unreadable.knows_pod(uid)

    def plan_is_live(self, uid: PodUID, node: str) -> bool:
        """Worth keeping: the pod still waits and the node still exists."""
        pod = self._pods.get(uid)
        return pod is not None and pod.waiting and node in self._nodes

    def unfinished_groups(self) -> set[GroupKey]:
        """PodGroups not running yet (or broken): their admission and promises matter every cycle."""
        return set(self._unfinished)

    def unfinished_except(self, left_out: AbstractSet[GroupKey]) -> set[GroupKey]:
        """:meth:`unfinished_groups` less ``left_out``, without copying the index first."""
        return self._unfinished - left_out

    def raw_podgroups(self) -> list[tuple[GroupKey, Obj]]:
        return list(self._raw_podgroups.items())

    def raw_queues(self) -> list[tuple[str, Obj]]:
        return list(self._raw_queues.items())

    def _table(self, wanted: set[str]) -> NodeTable:
        """The node table, rebuilt when nodes change or a pod asks for a resource it has no column for
        (names once added stay, so the table does not flap)."""
        if (
            self._node_table is None
            or self._node_table[0] != self._nodes_version
            or not self._node_table[1].covers(wanted)
        ):
            extra = set(self._node_table[1].index.names) if self._node_table is not None else set()
            self._node_table = (self._nodes_version, build_node_table(self._nodes.values(), extra | wanted))
        return self._node_table[1]

    def node_table(self) -> NodeTable:
        """The current node table (the matrices the ledger mirrors are over it)."""
        return self._table(set())

    def _build(
        self,
        pods: list[Pod],
        podgroups: list[PodGroup],
        refused: Mapping[PodUID, frozenset[str]] | None = None,
        aside: Sequence[Aside] = (),
        elastic: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Snapshot:
        wanted: set[str] = set()
        for a in aside:
            wanted.update(a.waiting, a.owed)
        for p in pods:
            if p.waiting:
                wanted.update(p.requests)
        for g in podgroups:
            wanted.update(g.min_resources)
        table = self._table(wanted)
        holds, holds_at = self._gpu.snapshot(self._device_pods, self._ledger)
        return build_snapshot(
            nodes=table,
            pods=pods,
            podgroups=podgroups,
            queues=self._queues.values(),
            priority_classes=self._priority_classes.values(),
            plans=self._ledger.plans(),
            scheduler_names=self.scheduler_names,
            default_queue=self.default_queue,
            used=self._ledger.held_matrix(table),
            reserved=self._ledger.planned_matrix(table),
            queue_usage=self._ledger.queue_usage(),
            refused=refused,
            # Every pod on a node, whatever its scheduler: inter-pod (anti-)affinity and spread count them.
            residents=self._index.chunks(),
            termed_residents=[self._pods[u] for u in self._termed],
            aside=aside,
            other_groups=self._podgroups,
            quotas=self._quotas.values(),
            budgets=self._budgets.values(),
            hypernodes=self._hypernodes_now(),
            numatopologies=self._numatopologies.values(),
            device_holds=holds,
            card_memo=self._gpu.memo,
            holds_at=holds_at,
            elastic=elastic,
        )

    def _hypernodes_now(self) -> HyperNodeSet:
        if self._hypernode_set is None:
            self._hypernode_set = HyperNodeSet(self._hypernodes.values())
        return self._hypernode_set

    def snapshot(
        self,
        work: set[GroupKey] | frozenset[GroupKey],
        refused: Mapping[PodUID, frozenset[str]] | None = None,
        aside: Sequence[Aside] = (),
    ) -> Snapshot:
        """What a scheduling cycle needs: the groups in ``work`` with all their pods, over the ledger's
        running totals and what the groups left out weigh (``aside``), with the queues' elastic sums."""
        return self._build(
            [self._pods[u] for k in work for u in self._members.get(k, ())],
            [self._podgroups[k] for k in work if k in self._podgroups],
            refused,
            aside,
            self.elastic(),
        )

    def status_snapshot(self, keys: Iterable[GroupKey] | None = None) -> Snapshot:
        """PodGroups (the objects, not implicit groups) with their pods, over running totals: what
        status writers need, at the cost of the jobs, not of every plain pod. ``keys``: only those
        PodGroups (a pass over what changed)."""
        groups = self._podgroups if keys is None else [k for k in keys if k in self._podgroups]
        pods = [self._pods[u] for k in groups for u in self._members.get(k, ())]
        return self._build(pods, [self._podgroups[k] for k in groups])

    def raw_podgroup(self, key: GroupKey) -> Obj | None:
        return self._raw_podgroups.get(key)

    def podgroup_keys(self) -> list[GroupKey]:
        return list(self._podgroups)

    def podgroups(self) -> Iterable[PodGroup]:
        """Every PodGroup (a live view: read it on the event loop)."""
        return self._podgroups.values()

    def full_snapshot(self) -> Snapshot:
        """Every object (for status and preemption decisions, which look at running groups too)."""
        return self._build(list(self._pods.values()), list(self._podgroups.values()))

    # The admission webhooks' lookup (admission.lookup.Lookup).
    def queue(self, name: str) -> Queue | None:
        return self._queues.get(name)

    def all_queues(self) -> list[Queue]:
        return list(self._queues.values())

    def podgroup(self, namespace: str, name: str) -> PodGroup | None:
        return self._podgroups.get(group_key(namespace, name))

    def group(self, key: GroupKey) -> PodGroup | None:
        return self._podgroups.get(key)

    def queue_has_podgroups(self, name: str) -> bool:
        return any(pg.queue == name for pg in self._podgroups.values())
