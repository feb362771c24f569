"""ClusterCache: the single writer of the process's view of the cluster.

Informers feed raw objects in; they are parsed once, here, into the frozen model. A parse failure is
logged and the object skipped (never a crash). Every stored change of a pod is told to the reservation
ledger (:mod:`controllers.state.ledger`, which derives node and queue usage) and to the pending set
(:mod:`controllers.state.pending`, which tracks what a cycle must look at); the cache itself keeps objects and
the indexes that read them (group members, implicit queues, the node table).

Binding is optimistic: after a successful bind the ledger holds the pod as *assumed* on its node, and the
cache lays that node over the pod until the watch shows the binding, so a late event from before the
bind cannot make it look unplaced again.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controllers.kube.informer import Handler
from controllers.state.ledger import Ledger
from controllers.state.pending import PendingSet
from extender.api import labels as L
from extender.core.budgets import DisruptionBudget
from extender.core.errors import InvalidObject
from extender.core.gpus import GpuHold, pod_hold
from extender.core.hypernodes import HyperNode, HyperNodeSet, parse_hypernode
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
from extender.core.numa import NumaTopology, parse_numatopology
from extender.core.parse import (
    parse_node,
    parse_pod,
    parse_pod_disruption_budget,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    parse_resource_quota,
)
from extender.core.quota import ResourceQuota
from extender.core.snapshot import (
    Aside,
    NodeTable,
    Snapshot,
    build_node_table,
    build_snapshot,
    pod_group_key,
)

log = logging.getLogger(__name__)
Obj = dict[str, Any]

_UNFINISHED = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE, GroupPhase.UNKNOWN})


def _ref(kind: str, obj: object) -> tuple[tuple[str, str], Mapping[str, Any]]:
    """``(kind, namespace/name)`` of a raw object however odd it is, and its metadata (or {})."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    return (kind, f"{meta.get('namespace') or ''}/{meta.get('name')}".lstrip("/")), meta


class ClusterCache:
    """The parsed objects, their indexes, and the reservation ledger's feed.

    State is private; collaborators are passed in: the :class:`Ledger` (every reservation) and the
    :class:`PendingSet` (what changed, what waits) are told of every change as it is stored."""

    def __init__(
        self,
        *,
        scheduler_names: frozenset[str],
        ledger: Ledger,
        pending: PendingSet,
        default_queue: str = L.DEFAULT_QUEUE,
    ) -> None:
        self.scheduler_names = scheduler_names
        self.default_queue = default_queue
        self._ledger = ledger
        self._pending = pending
        self._nodes: dict[str, Node] = {}
        self._pods: dict[PodUID, Pod] = {}
        self._podgroups: dict[GroupKey, PodGroup] = {}
        self._queues: dict[str, Queue] = {}
        self._priority_classes: dict[str, PriorityClass] = {}
        # ResourceQuotas and PodDisruptionBudgets by namespace/name (the resourcequota, drf and pdb plugins).
        self._quotas: dict[str, ResourceQuota] = {}
        self._budgets: dict[str, DisruptionBudget] = {}
        # HyperNodes by name (network-topology-aware), and the immutable set snapshots share until one
        # changes (it memoizes their resolution over the node table).
        self._hypernodes: dict[str, HyperNode] = {}
        self._hypernode_set: HyperNodeSet | None = None
        # Numatopologies by node name (numa-aware): each node's NUMA cells and free cpus.
        self._numatopologies: dict[str, NumaTopology] = {}
        # Pods that ask GPU cards (deviceshare): the snapshot's card holdings come from these alone.
        self._device_pods: dict[PodUID, Pod] = {}
        # Raw objects we write status for (resourceVersion, existing status) keyed like the model.
        self._raw_podgroups: dict[GroupKey, Obj] = {}
        self._raw_queues: dict[str, Obj] = {}
        # Objects that could not be read, (kind, namespace/name) -> why; pods also by UID (filter says why).
        self._unreadable: dict[tuple[str, str], str] = {}
        self._unreadable_pods: dict[PodUID, str] = {}
        self.unreadable_total = 0
        # Members of pumice's groups, and the queue of groups without a PodGroup (plain pods).
        self._members: dict[GroupKey, set[PodUID]] = {}
        self._implicit_queue: dict[GroupKey, str] = {}
        # Bumped on every change of a stored object: "did anything happen since".
        self.version = 0
        self._nodes_version = 0
        self._node_table: tuple[int, NodeTable] | None = None

    # --- change notification -------------------------------------------------------------------------
    def _changed(self, kind: str) -> None:
        self.version += 1
        if kind == "node":
            self._nodes_version += 1
            self._pending.nodes_changed()
        elif kind in (
            "queue",
            "priorityclass",
            "resourcequota",
            "poddisruptionbudget",
            "hypernode",
            "numatopology",
        ):
            if kind == "hypernode":
                self._hypernode_set = None
            # A quota with room or a budget that allows more can admit or unblock what waits.
            self._pending.room_freed()

    # --- pods ------------------------------------------------------------------------------------------
    def _parse(self, fn: Callable[[Obj], Any], obj: Obj, kind: str) -> Any:
        """The model of ``obj``, or None if it cannot be read: that object's problem, remembered (reasons,
        counters, status) and logged, never the process's."""
        ref, meta = _ref(kind, obj)
        try:
            parsed = fn(obj)
        except (InvalidObject, ValueError, TypeError, AttributeError, KeyError, OverflowError) as e:
            problem = str(e) or type(e).__name__
            if self._unreadable.get(ref) != problem:
                self.unreadable_total += 1
                log.warning(
                    "skipping unreadable object", extra={"kind": kind, "object": ref[1], "error": problem}
                )
            self._unreadable[ref] = problem
            if kind == "Pod" and isinstance(meta.get("uid"), str):
                self._unreadable_pods[PodUID(meta["uid"])] = problem
            return None
        self._unreadable.pop(ref, None)
        if kind == "Pod":
            self._unreadable_pods.pop(PodUID(str(meta.get("uid"))), None)
        return parsed

    def _forget_unreadable(self, kind: str) -> None:
        """Before a re-list of ``kind``: what is still unreadable is found again, the deleted is not."""
        self._unreadable = {k: v for k, v in self._unreadable.items() if k[0] != kind}

    def _ours(self, pod: Pod) -> GroupKey | None:
        return pod_group_key(pod) if pod.scheduler_name in self.scheduler_names else None

    def _store(self, uid: PodUID, pod: Pod | None, seen: Pod | None) -> None:
        """Store ``pod`` (None: remove) and tell the ledger what the watch showed (``seen``: the pod as
        the API server has it, before an assumed binding is laid over it)."""
        old = self._pods.pop(uid, None)
        if old is not None:
            key = self._ours(old)
            if key is not None:
                members = self._members[key]
                members.discard(uid)
                if not members:
                    del self._members[key]
                    self._implicit_queue.pop(key, None)
        key = self._ours(pod) if pod is not None else None
        self._device_pods.pop(uid, None)
        if pod is not None:
            self._pods[uid] = pod
            if pod.gpu is not None:
                self._device_pods[uid] = pod
            if key is not None:
                self._members.setdefault(key, set()).add(uid)
                if not pod.group_name:
                    self._implicit_queue[key] = pod.queue_name or self.default_queue
        before = self._ledger.get(uid)
        self._ledger.observe(uid, seen, self._queue_of(key) if key is not None else None, key)
        after = self._ledger.get(uid)
        freed = before is not None and (after is None or after.node != before.node)
        self._pending.pod_changed(uid, key, pod is not None and pod.waiting, freed)

    def _with_assumed(self, seen: Pod) -> Pod:
        """``seen`` with the node of our bind laid over it while the watch does not show it bound yet: an
        event from before the bind must not unplace the pod."""
        assumed = self._ledger.assumed_node(seen.uid)
        if assumed is not None and not seen.node_name and not seen.terminal:
            return dataclasses.replace(seen, node_name=assumed)
        return seen

    def upsert_pod(self, obj: Obj) -> Pod | None:
        seen: Pod | None = self._parse(parse_pod, obj, "Pod")
        if seen is None:
            return None
        pod = self._with_assumed(seen)
        if self._pods.get(pod.uid) == pod:
            return pod
        self._store(pod.uid, pod, seen)
        self._changed("pod")
        return pod

    def remove_pod(self, obj: Obj) -> None:
        uid = PodUID(str((obj.get("metadata") or {}).get("uid") or ""))
        self._unreadable_pods.pop(uid, None)
        self._unreadable.pop(_ref("Pod", obj)[0], None)
        if uid in self._pods or self._ledger.get(uid) is not None:
            self._store(uid, None, None)
            self._changed("pod")

    def replace_pods(self, objs: Sequence[Obj]) -> None:
        # After a re-list every pod is stored anew; those gone while we were not watching are removed
        # (their reservations released, their plans dropped).
        self._unreadable_pods = {}
        self._forget_unreadable("Pod")
        listed: dict[PodUID, Pod] = {}
        for o in objs:
            p = self._parse(parse_pod, o, "Pod")
            if p is not None:
                listed[p.uid] = p
        gone = [u for u in self._pods if u not in listed]
        self._pending.pods_relisted(gone)
        for uid in gone:
            self._store(uid, None, None)
        for p in listed.values():
            self._store(p.uid, self._with_assumed(p), p)
        self._changed("pod")

    def assume_bound(self, uid: PodUID, node: str) -> None:
        """Our bind of ``uid`` succeeded: the ledger holds it on ``node`` until the watch shows it."""
        pod = self._pods.get(uid)
        if pod is None:
            return
        self._ledger.assume(uid, node)
        bound = dataclasses.replace(pod, node_name=node)
        self._pods[uid] = bound
        if uid in self._device_pods:
            self._device_pods[uid] = bound
        self._pending.pod_changed(uid, self._ours(bound), False, False)
        self._changed("pod")

    # --- nodes ---------------------------------------------------------------------------------------
    def upsert_node(self, obj: Obj) -> None:
        n: Node | None = self._parse(parse_node, obj, "Node")
        if n is not None and self._nodes.get(n.name) != n:
            self._nodes[n.name] = n
            self._changed("node")

    def remove_node(self, obj: Obj) -> None:
        self._unreadable.pop(_ref("Node", obj)[0], None)
        if self._nodes.pop(str((obj.get("metadata") or {}).get("name")), None) is not None:
            self._changed("node")

    def replace_nodes(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("Node")
        self._nodes = {}
        for o in objs:
            n = self._parse(parse_node, o, "Node")
            if n is not None:
                self._nodes[n.name] = n
        self._changed("node")

    # --- podgroups -------------------------------------------------------------------------------------
    def _pg(self, obj: Obj) -> PodGroup | None:
        pg: PodGroup | None = self._parse(lambda o: parse_podgroup(o, self.default_queue), obj, "PodGroup")
        return pg

    def _group_stored(self, key: GroupKey, old: PodGroup | None, new: PodGroup | None) -> None:
        if (old.queue if old else None) != (new.queue if new else None):
            self._ledger.requeue(key, self._queue_of(key))
            if old is not None:
                self._pending.room_freed()  # usage left a queue
        self._pending.group_changed(key)

    def upsert_podgroup(self, obj: Obj) -> None:
        pg = self._pg(obj)
        if pg is None:
            return
        self._raw_podgroups[pg.key] = obj
        old = self._podgroups.get(pg.key)
        # An in-memory admission (Inqueue) stands until the API server shows a later phase.
        if (
            old is not None
            and old.uid == pg.uid
            and old.phase != GroupPhase.PENDING
            and pg.phase == GroupPhase.PENDING
        ):
            pg = dataclasses.replace(pg, phase=old.phase)
        if old != pg:
            self._podgroups[pg.key] = pg
            self._group_stored(pg.key, old, pg)
            self._changed("podgroup")

    def remove_podgroup(self, obj: Obj) -> None:
        self._unreadable.pop(_ref("PodGroup", obj)[0], None)
        meta = obj.get("metadata") or {}
        key = group_key(str(meta.get("namespace") or "default"), str(meta.get("name")))
        self._raw_podgroups.pop(key, None)
        old = self._podgroups.pop(key, None)
        self._group_stored(key, old, None)
        if old is not None:
            self._changed("podgroup")

    def replace_podgroups(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("PodGroup")
        old, self._podgroups, self._raw_podgroups = self._podgroups, {}, {}
        for o in objs:
            pg = self._pg(o)
            if pg is not None:
                self._podgroups[pg.key] = pg
                self._raw_podgroups[pg.key] = o
        for key in old.keys() | self._podgroups.keys():  # those deleted while we were not watching too
            self._group_stored(key, old.get(key), self._podgroups.get(key))
        self._changed("podgroup")

    def set_group_phase(self, key: GroupKey, phase: GroupPhase) -> bool:
        """The scheduler admitted a group in memory (before its status write reaches the API); whether the
        phase changed."""
        pg = self._podgroups.get(key)
        if pg is None or pg.phase == phase:
            return False
        self._podgroups[key] = dataclasses.replace(pg, phase=phase)
        self._changed("podgroup")
        return True

    # --- queues and priority classes -------------------------------------------------------------------
    def upsert_queue(self, obj: Obj) -> None:
        q: Queue | None = self._parse(parse_queue, obj, "Queue")
        if q is None:
            return
        self._raw_queues[q.name] = obj
        if self._queues.get(q.name) != q:
            self._queues[q.name] = q
            self._changed("queue")

    def remove_queue(self, obj: Obj) -> None:
        self._unreadable.pop(_ref("Queue", obj)[0], None)
        name = str((obj.get("metadata") or {}).get("name"))
        self._raw_queues.pop(name, None)
        if self._queues.pop(name, None) is not None:
            self._changed("queue")

    def replace_queues(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("Queue")
        self._queues, self._raw_queues = {}, {}
        for o in objs:
            q = self._parse(parse_queue, o, "Queue")
            if q is not None:
                self._queues[q.name] = q
                self._raw_queues[q.name] = o
        self._changed("queue")

    def upsert_priority_class(self, obj: Obj) -> None:
        pc: PriorityClass | None = self._parse(parse_priority_class, obj, "PriorityClass")
        if pc is not None and self._priority_classes.get(pc.name) != pc:
            self._priority_classes[pc.name] = pc
            self._changed("priorityclass")

    def remove_priority_class(self, obj: Obj) -> None:
        self._unreadable.pop(_ref("PriorityClass", obj)[0], None)
        if self._priority_classes.pop(str((obj.get("metadata") or {}).get("name")), None) is not None:
            self._changed("priorityclass")

    def replace_priority_classes(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("PriorityClass")
        self._priority_classes = {}
        for o in objs:
            pc = self._parse(parse_priority_class, o, "PriorityClass")
            if pc is not None:
                self._priority_classes[pc.name] = pc
        self._changed("priorityclass")

    # --- ResourceQuotas and PodDisruptionBudgets ------------------------------------------------------
    def _namespaced(
        self, kind: str, store: dict[str, Any], parse: Callable[[Obj], Any], change: str
    ) -> Handler:
        """The informer handler for a namespaced kind kept as parsed objects by namespace/name: an
        unreadable object is skipped with why (the others stand)."""

        def upsert(obj: Obj) -> None:
            parsed = self._parse(parse, obj, kind)
            if parsed is None:
                return
            key = f"{parsed.namespace}/{parsed.name}".lstrip("/")  # (cluster-scoped: the name)
            if store.get(key) != parsed:
                store[key] = parsed
                self._changed(change)

        def remove(obj: Obj) -> None:
            ref = _ref(kind, obj)[0]
            self._unreadable.pop(ref, None)
            if store.pop(ref[1], None) is not None:
                self._changed(change)

        def replace(objs: Sequence[Obj]) -> None:
            self._forget_unreadable(kind)
            store.clear()
            for o in objs:
                parsed = self._parse(parse, o, kind)
                if parsed is not None:
                    store[f"{parsed.namespace}/{parsed.name}".lstrip("/")] = parsed
            self._changed(change)

        return Handler(replace, upsert, remove, self._unreadable_listed(kind))

    def _unreadable_listed(self, kind: str) -> Callable[[Sequence[Obj]], None]:
        """Objects a LIST showed by name only (they could not be decoded): remembered as unreadable, so a
        filter for such a pod says why instead of waiting for a watch that will never show it."""

        def mark(metas: Sequence[Obj]) -> None:
            for m in metas:
                ref, meta = _ref(kind, m)
                self._unreadable[ref] = "the API server's copy cannot be decoded (nested too deep?)"
                self.unreadable_total += 1
                if kind == "Pod" and isinstance(meta.get("uid"), str):
                    self._unreadable_pods[PodUID(meta["uid"])] = self._unreadable[ref]

        return mark

    def handlers(self) -> dict[str, Handler]:
        return {
            "nodes": Handler(
                self.replace_nodes, self.upsert_node, self.remove_node, self._unreadable_listed("Node")
            ),
            "pods": Handler(
                self.replace_pods, self.upsert_pod, self.remove_pod, self._unreadable_listed("Pod")
            ),
            "podgroups": Handler(
                self.replace_podgroups,
                self.upsert_podgroup,
                self.remove_podgroup,
                self._unreadable_listed("PodGroup"),
            ),
            "queues": Handler(
                self.replace_queues, self.upsert_queue, self.remove_queue, self._unreadable_listed("Queue")
            ),
            "priorityclasses": Handler(
                self.replace_priority_classes, self.upsert_priority_class, self.remove_priority_class
            ),
            "resourcequotas": self._namespaced(
                "ResourceQuota", self._quotas, parse_resource_quota, "resourcequota"
            ),
            "poddisruptionbudgets": self._namespaced(
                "PodDisruptionBudget", self._budgets, parse_pod_disruption_budget, "poddisruptionbudget"
            ),
            "hypernodes": self._namespaced("HyperNode", self._hypernodes, parse_hypernode, "hypernode"),
            "numatopologies": self._namespaced(
                "Numatopology", self._numatopologies, parse_numatopology, "numatopology"
            ),
        }

    # --- reads -----------------------------------------------------------------------------------------
    def _queue_of(self, key: GroupKey) -> str | None:
        pg = self._podgroups.get(key)
        return pg.queue if pg is not None else self._implicit_queue.get(key)

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
        return self._unreadable_pods.get(uid)

    def unreadable(self) -> dict[tuple[str, str], str]:
        return dict(self._unreadable)

    def knows(self, uid: PodUID) -> bool:
        """The watch has shown this pod (readable or not)."""
        return uid in self._pods or uid in self._unreadable_pods

    def plan_is_live(self, uid: PodUID, node: str) -> bool:
        """Worth keeping: the pod still waits and the node still exists."""
        pod = self._pods.get(uid)
        return pod is not None and pod.waiting and node in self._nodes

    def unfinished_groups(self) -> set[GroupKey]:
        """PodGroups not running yet (or broken): their admission and promises matter every cycle."""
        return {k for k, g in self._podgroups.items() if g.phase in _UNFINISHED}

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
            residents=self._pods.values(),
            aside=aside,
            other_groups=self._podgroups,
            quotas=self._quotas.values(),
            budgets=self._budgets.values(),
            hypernodes=self._hypernodes_now(),
            numatopologies=self._numatopologies.values(),
            device_holds=self._device_holds(),
        )

    def _device_holds(self) -> dict[PodUID, tuple[str, GpuHold]]:
        """The GPU cards each pod holds, by where it is: bound (or bound by us) with the cards its
        annotations name, else planned with the cards decided with its plan (written on it or not yet)."""
        out: dict[PodUID, tuple[str, GpuHold]] = {}
        for uid, pod in self._device_pods.items():
            if pod.terminal:
                continue
            decided = pod_hold(self._ledger.decided(uid), pod.gpu)
            if pod.node_name:
                node, hold = pod.node_name, pod.gpu_hold or decided
            else:  # an annotation left from an earlier plan holds nothing: only the live plan's does
                node, hold = self._ledger.planned_node(uid) or "", decided
            if node and hold is not None:
                out[uid] = (node, hold)
        return out

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
        running totals and what the groups left out weigh (``aside``)."""
        return self._build(
            [self._pods[u] for k in work for u in self._members.get(k, ())],
            [self._podgroups[k] for k in work if k in self._podgroups],
            refused,
            aside,
        )

    def status_snapshot(self) -> Snapshot:
        """PodGroups (the objects, not implicit groups) with their pods, over running totals: what
        status writers need, at the cost of the jobs, not of every plain pod."""
        pods = [self._pods[u] for k in self._podgroups for u in self._members.get(k, ())]
        return self._build(pods, list(self._podgroups.values()))

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
