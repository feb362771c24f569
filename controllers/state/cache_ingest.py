"""The cluster cache's ingest: raw objects from the informers parsed once, here, into the frozen model.

A parse failure is that object's problem: remembered with why (:mod:`controllers.state.unreadable`), logged,
the object skipped, never a crash. Every stored change of a pod is told to the reservation ledger
(:mod:`controllers.state.ledger`, which derives node and queue usage) and to the pending set
(:mod:`controllers.state.pending`, which tracks what a cycle must look at); this class keeps the objects and
the indexes that read them (group members, implicit queues, GPU pods). The reads and the snapshots are
:class:`~controllers.state.cache.ClusterCache`'s.

Binding is optimistic: after a successful bind the ledger holds the pod as *assumed* on its node, and the
cache lays that node over the pod until the watch shows the binding, so a late event from before the
bind cannot make it look unplaced again. An in-memory admission of a PodGroup (Inqueue) likewise stands
until the API server shows a later phase.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

from controllers.kube.informer import Handler
from controllers.state.ledger import Ledger
from controllers.state.meta import read_meta
from controllers.state.pending import PendingSet
from controllers.state.unreadable import Unreadable, ref
from extender.api import labels as L
from extender.core.budgets import DisruptionBudget
from extender.core.gpu_memo import CardMemo, HoldLog
from extender.core.gpus import pod_hold
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
from extender.core.snapshot import NodeTable, pod_group_key

UNFINISHED: Final = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE, GroupPhase.UNKNOWN})

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class CacheIngest:
    """The parsed objects and their indexes, written by the informers' handlers; the reservation ledger's
    feed.

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
        # PodGroups not running yet (or broken), kept as they change: every cycle asks for them.
        self._unfinished: set[GroupKey] = set()
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
        # Pods that ask GPU cards (deviceshare): the snapshot's card holdings come from these alone. The
        # holds of those bound are kept in a log as they change (deviceshare follows the changes from one
        # cycle to the next in its memo, which lives here too: see extender.core.gpu_memo).
        self._device_pods: dict[PodUID, Pod] = {}
        self._hold_log = HoldLog()
        self._card_memo = CardMemo()
        # Raw objects we write status for (resourceVersion, existing status) keyed like the model.
        self._raw_podgroups: dict[GroupKey, Obj] = {}
        self._raw_queues: dict[str, Obj] = {}
        # Objects that could not be read, and why (a filter for such a pod says why).
        self._unreadable = Unreadable()
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
        """The model of ``obj``, or None if it cannot be read (remembered with why: that object's problem,
        never the process's)."""
        return self._unreadable.parse(fn, obj, kind)

    @property
    def unreadable_total(self) -> int:
        """How many times an object was found unreadable (for a new reason)."""
        return self._unreadable.total

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
        self._log_hold(uid)

    def _log_hold(self, uid: PodUID) -> None:
        """The cards a bound pod holds (its annotations', else those decided with its plan), into the log."""
        pod = self._device_pods.get(uid)
        if pod is None or not pod.node_name or pod.terminal:
            self._hold_log.set(uid, None)
            return
        hold = pod.gpu_hold or pod_hold(self._ledger.decided(uid), pod.gpu)
        self._hold_log.set(uid, None if hold is None else (pod.node_name, hold))

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
        meta = read_meta(obj)
        uid = PodUID(meta.uid)
        self._unreadable.removed("Pod", meta)
        if uid in self._pods or self._ledger.get(uid) is not None:
            self._store(uid, None, None)
            self._changed("pod")

    def replace_pods(self, objs: Sequence[Obj]) -> None:
        # After a re-list every pod is stored anew; those gone while we were not watching are removed
        # (their reservations released, their plans dropped).
        self._unreadable.relisting("Pod")
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
        self._log_hold(uid)
        self._changed("pod")

    # --- nodes ---------------------------------------------------------------------------------------
    def upsert_node(self, obj: Obj) -> None:
        n: Node | None = self._parse(parse_node, obj, "Node")
        if n is not None and self._nodes.get(n.name) != n:
            self._nodes[n.name] = n
            self._changed("node")

    def remove_node(self, obj: Obj) -> None:
        meta = read_meta(obj)
        self._unreadable.removed("Node", meta)
        if self._nodes.pop(meta.name, None) is not None:
            self._changed("node")

    def replace_nodes(self, objs: Sequence[Obj]) -> None:
        self._unreadable.relisting("Node")
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
            self._track(pg.key)
            self._group_stored(pg.key, old, pg)
            self._changed("podgroup")

    def _track(self, key: GroupKey) -> None:
        pg = self._podgroups.get(key)
        if pg is not None and pg.phase in UNFINISHED:
            self._unfinished.add(key)
        else:
            self._unfinished.discard(key)

    def remove_podgroup(self, obj: Obj) -> None:
        meta = read_meta(obj)
        self._unreadable.removed("PodGroup", meta)
        key = group_key(meta.namespace or "default", meta.name)
        self._raw_podgroups.pop(key, None)
        old = self._podgroups.pop(key, None)
        self._track(key)
        self._group_stored(key, old, None)
        if old is not None:
            self._changed("podgroup")

    def replace_podgroups(self, objs: Sequence[Obj]) -> None:
        self._unreadable.relisting("PodGroup")
        old, self._podgroups, self._raw_podgroups = self._podgroups, {}, {}
        for o in objs:
            pg = self._pg(o)
            if pg is not None:
                self._podgroups[pg.key] = pg
                self._raw_podgroups[pg.key] = o
        self._unfinished = {k for k, g in self._podgroups.items() if g.phase in UNFINISHED}
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
        self._track(key)
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
        meta = read_meta(obj)
        self._unreadable.removed("Queue", meta)
        name = meta.name
        self._raw_queues.pop(name, None)
        if self._queues.pop(name, None) is not None:
            self._changed("queue")

    def replace_queues(self, objs: Sequence[Obj]) -> None:
        self._unreadable.relisting("Queue")
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
        meta = read_meta(obj)
        self._unreadable.removed("PriorityClass", meta)
        if self._priority_classes.pop(meta.name, None) is not None:
            self._changed("priorityclass")

    def replace_priority_classes(self, objs: Sequence[Obj]) -> None:
        self._unreadable.relisting("PriorityClass")
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
            meta = read_meta(obj)
            self._unreadable.removed(kind, meta)
            if store.pop(ref(kind, meta)[1], None) is not None:
                self._changed(change)

        def replace(objs: Sequence[Obj]) -> None:
            self._unreadable.relisting(kind)
            store.clear()
            for o in objs:
                parsed = self._parse(parse, o, kind)
                if parsed is not None:
                    store[f"{parsed.namespace}/{parsed.name}".lstrip("/")] = parsed
            self._changed(change)

        return Handler(replace, upsert, remove, self._unreadable.listed(kind))

    def handlers(self) -> dict[str, Handler]:
        return {
            "nodes": Handler(
                self.replace_nodes, self.upsert_node, self.remove_node, self._unreadable.listed("Node")
            ),
            "pods": Handler(
                self.replace_pods, self.upsert_pod, self.remove_pod, self._unreadable.listed("Pod")
            ),
            "podgroups": Handler(
                self.replace_podgroups,
                self.upsert_podgroup,
                self.remove_podgroup,
                self._unreadable.listed("PodGroup"),
            ),
            "queues": Handler(
                self.replace_queues, self.upsert_queue, self.remove_queue, self._unreadable.listed("Queue")
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

    def _queue_of(self, key: GroupKey) -> str | None:
        pg = self._podgroups.get(key)
        return pg.queue if pg is not None else self._implicit_queue.get(key)
