"""ClusterCache: the single writer of the process's view of the cluster.

Informers feed raw objects in; they are parsed once, here, into the frozen model. A parse failure is
logged and the object skipped (never a crash). ``snapshot()`` is memoised on a version counter, so a
scheduling cycle with no change since the last one costs nothing.

Binding is optimistic: after a successful bind the pod is *assumed* on its node until the watch shows
the binding, so a late event from before the bind cannot make it look unplaced again.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controllers.kube.informer import Handler
from controllers.plans import PlanBook
from controllers.usage import NodeUsage
from extender.api import labels as L
from extender.core.errors import InvalidObject
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
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from extender.core.snapshot import NodeTable, Snapshot, build_node_table, build_snapshot, pod_group_key

log = logging.getLogger(__name__)
Obj = dict[str, Any]

_UNFINISHED = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE, GroupPhase.UNKNOWN})


def _add(acc: dict[str, int], more: Mapping[str, int]) -> None:
    for k, v in more.items():
        acc[k] = acc.get(k, 0) + v


def _ref(kind: str, obj: object) -> tuple[tuple[str, str], Mapping[str, Any]]:
    """``(kind, namespace/name)`` of a raw object however odd it is, and its metadata (or {})."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    return (kind, f"{meta.get('namespace') or ''}/{meta.get('name')}".lstrip("/")), meta


class ClusterCache:
    def __init__(self, *, scheduler_names: frozenset[str], default_queue: str = L.DEFAULT_QUEUE) -> None:
        self.scheduler_names = scheduler_names
        self.default_queue = default_queue
        self.nodes: dict[str, Node] = {}
        self.pods: dict[PodUID, Pod] = {}
        self.podgroups: dict[GroupKey, PodGroup] = {}
        self.queues: dict[str, Queue] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        # Raw objects we write status for (resourceVersion, existing status) keyed like the model.
        self.raw_podgroups: dict[GroupKey, Obj] = {}
        self.raw_queues: dict[str, Obj] = {}
        self.assumed: dict[PodUID, str] = {}
        # Objects that could not be read, (kind, namespace/name) -> why; pods also by UID (filter says why).
        self.unreadable: dict[tuple[str, str], str] = {}
        self.unreadable_pods: dict[PodUID, str] = {}
        self.unreadable_total = 0
        # Incremental indexes over pods (see _index).
        self.node_usage = NodeUsage()
        self.members: dict[GroupKey, set[PodUID]] = {}
        self.waiting: dict[GroupKey, set[PodUID]] = {}
        self.group_usage: dict[GroupKey, dict[str, int]] = {}
        self.implicit_queue: dict[GroupKey, str] = {}
        # Requests of our bound, unfinished pods per queue; rebuilt when a PodGroup's queue changes.
        self.queue_held: dict[str, dict[str, int]] = {}
        self.version = 0
        # What changed since the scheduler last looked (see drain_changes): it re-examines only that.
        self.changed_pods: set[PodUID] = set()
        self.changed_groups: set[GroupKey] = set()
        self.nodes_changed = False
        self.broad_change = False
        self._nodes_version = 0
        self._node_table: tuple[int, NodeTable] | None = None
        self.listeners: list[Callable[[str], None]] = []
        # Told when the scheduler admits a group in memory (before its status write reaches the API).
        self.phase_listeners: list[Callable[[GroupKey, GroupPhase], None]] = []

    # --- change notification -------------------------------------------------------------------------
    def _changed(self, kind: str) -> None:
        self.version += 1
        if kind == "node":
            self._nodes_version += 1
            self.nodes_changed = True
        if kind in ("node", "queue", "priorityclass"):
            self.broad_change = True
        for fn in self.listeners:
            fn(kind)

    # --- pods ------------------------------------------------------------------------------------------
    def _parse(self, fn: Callable[[Obj], Any], obj: Obj, kind: str) -> Any:
        """The model of ``obj``, or None if it cannot be read: that object's problem, remembered (reasons,
        counters, status) and logged, never the process's."""
        ref, meta = _ref(kind, obj)
        try:
            parsed = fn(obj)
        except (InvalidObject, ValueError, TypeError, AttributeError, KeyError, OverflowError) as e:
            problem = str(e) or type(e).__name__
            if self.unreadable.get(ref) != problem:
                self.unreadable_total += 1
                log.warning(
                    "skipping unreadable object", extra={"kind": kind, "object": ref[1], "error": problem}
                )
            self.unreadable[ref] = problem
            if kind == "Pod" and isinstance(meta.get("uid"), str):
                self.unreadable_pods[PodUID(meta["uid"])] = problem
            return None
        self.unreadable.pop(ref, None)
        if kind == "Pod":
            self.unreadable_pods.pop(PodUID(str(meta.get("uid"))), None)
        return parsed

    def _forget_unreadable(self, kind: str) -> None:
        """Before a re-list of ``kind``: what is still unreadable is found again, the deleted is not."""
        self.unreadable = {k: v for k, v in self.unreadable.items() if k[0] != kind}

    def _index(self, pod: Pod, sign: int) -> None:
        """Add (sign=1) or remove (-1) a pod's share of the incremental indexes: node usage, and for our
        pods group membership and the waiting set. They let a cycle look only at groups with work."""
        if pod.holds_resources:
            self.node_usage.add(pod.node_name, pod.requests, sign)
        if pod.scheduler_name not in self.scheduler_names:
            return
        key = pod_group_key(pod)
        if not pod.group_name:
            self.implicit_queue[key] = pod.queue_name or self.default_queue
        if pod.holds_resources:
            gu = self.group_usage.setdefault(key, {})
            for k, v in pod.requests.items():
                gu[k] = gu.get(k, 0) + sign * v
            q = self._queue_of(key)
            if q is not None:
                qu = self.queue_held.setdefault(q, {})
                for k, v in pod.requests.items():
                    qu[k] = qu.get(k, 0) + sign * v
        members = self.members.setdefault(key, set())
        if sign > 0:
            members.add(pod.uid)
            if pod.waiting:
                self.waiting.setdefault(key, set()).add(pod.uid)
            return
        members.discard(pod.uid)
        if not members:
            del self.members[key]
            self.implicit_queue.pop(key, None)
            self.group_usage.pop(key, None)  # all zeros by now: the last holder was just subtracted
        w = self.waiting.get(key)
        if w is not None:
            w.discard(pod.uid)
            if not w:
                del self.waiting[key]

    def _store(self, pod: Pod) -> None:
        self.changed_pods.add(pod.uid)
        old = self.pods.get(pod.uid)
        if old is not None:
            if old.holds_resources and not pod.holds_resources:
                self.broad_change = True  # room freed: any waiting group may fit now
            self._index(old, -1)
        self.pods[pod.uid] = pod
        self._index(pod, 1)

    def upsert_pod(self, obj: Obj) -> Pod | None:
        pod: Pod | None = self._parse(parse_pod, obj, "Pod")
        if pod is None:
            return None
        assumed = self.assumed.get(pod.uid)
        if assumed is not None:
            if pod.node_name or pod.terminal:
                del self.assumed[pod.uid]
            else:
                pod = dataclasses.replace(pod, node_name=assumed)
        if self.pods.get(pod.uid) == pod:
            return pod
        self._store(pod)
        self._changed("pod")
        return pod

    def remove_pod(self, obj: Obj) -> None:
        uid = PodUID(str((obj.get("metadata") or {}).get("uid") or ""))
        self.unreadable_pods.pop(uid, None)
        self.unreadable.pop(_ref("Pod", obj)[0], None)
        self.assumed.pop(uid, None)
        old = self.pods.pop(uid, None)
        if old is not None:
            self.changed_pods.add(uid)
            self.broad_change |= old.holds_resources
            self._index(old, -1)
            self._changed("pod")

    def replace_pods(self, objs: Sequence[Obj]) -> None:
        # After a re-list every pod counts as changed, those gone while we were not watching included
        # (their plans must leave the book), and room may have been freed anywhere.
        self.changed_pods.update(self.pods)
        self.broad_change = True
        self.unreadable_pods = {}
        self._forget_unreadable("Pod")
        self.pods, self.members, self.waiting = {}, {}, {}
        self.node_usage.clear()
        self.group_usage, self.implicit_queue, self.queue_held = {}, {}, {}
        for o in objs:
            p = self._parse(parse_pod, o, "Pod")
            if p is not None:
                self._store(p)
        self._changed("pod")

    def assume_bound(self, uid: PodUID, node: str) -> None:
        pod = self.pods.get(uid)
        if pod is None:
            return
        self.assumed[uid] = node
        self._store(dataclasses.replace(pod, node_name=node))
        self._changed("pod")

    # --- nodes -----------------------------------------------------------------------------------------
    def upsert_node(self, obj: Obj) -> None:
        n: Node | None = self._parse(parse_node, obj, "Node")
        if n is not None and self.nodes.get(n.name) != n:
            self.nodes[n.name] = n
            self._changed("node")

    def remove_node(self, obj: Obj) -> None:
        self.unreadable.pop(_ref("Node", obj)[0], None)
        if self.nodes.pop(str((obj.get("metadata") or {}).get("name")), None) is not None:
            self._changed("node")

    def replace_nodes(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("Node")
        self.nodes = {}
        for o in objs:
            n = self._parse(parse_node, o, "Node")
            if n is not None:
                self.nodes[n.name] = n
        self._changed("node")

    # --- podgroups -------------------------------------------------------------------------------------
    def _pg(self, obj: Obj) -> PodGroup | None:
        pg: PodGroup | None = self._parse(lambda o: parse_podgroup(o, self.default_queue), obj, "PodGroup")
        return pg

    def upsert_podgroup(self, obj: Obj) -> None:
        pg = self._pg(obj)
        if pg is None:
            return
        self.raw_podgroups[pg.key] = obj
        old = self.podgroups.get(pg.key)
        # An in-memory admission (Inqueue) stands until the API server shows a later phase.
        if (
            old is not None
            and old.uid == pg.uid
            and old.phase != GroupPhase.PENDING
            and pg.phase == GroupPhase.PENDING
        ):
            pg = dataclasses.replace(pg, phase=old.phase)
        if old != pg:
            self.changed_groups.add(pg.key)
            self.podgroups[pg.key] = pg
            if old is None or old.queue != pg.queue:
                self._rebuild_queue_held()
            self._changed("podgroup")

    def remove_podgroup(self, obj: Obj) -> None:
        self.unreadable.pop(_ref("PodGroup", obj)[0], None)
        meta = obj.get("metadata") or {}
        key = group_key(str(meta.get("namespace") or "default"), str(meta.get("name")))
        self.raw_podgroups.pop(key, None)
        self.changed_groups.add(key)
        if self.podgroups.pop(key, None) is not None:
            self._rebuild_queue_held()
            self._changed("podgroup")

    def replace_podgroups(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("PodGroup")
        self.changed_groups.update(self.podgroups)  # those deleted while we were not watching too
        self.podgroups, self.raw_podgroups = {}, {}
        for o in objs:
            pg = self._pg(o)
            if pg is not None:
                self.changed_groups.add(pg.key)
                self.podgroups[pg.key] = pg
                self.raw_podgroups[pg.key] = o
        self._rebuild_queue_held()
        self._changed("podgroup")

    def set_group_phase(self, key: GroupKey, phase: GroupPhase) -> None:
        pg = self.podgroups.get(key)
        if pg is not None and pg.phase != phase:
            self.podgroups[key] = dataclasses.replace(pg, phase=phase)
            self._changed("podgroup")
            for fn in self.phase_listeners:
                fn(key, phase)

    # --- queues and priority classes -------------------------------------------------------------------
    def upsert_queue(self, obj: Obj) -> None:
        q: Queue | None = self._parse(parse_queue, obj, "Queue")
        if q is None:
            return
        self.raw_queues[q.name] = obj
        if self.queues.get(q.name) != q:
            self.queues[q.name] = q
            self._changed("queue")

    def remove_queue(self, obj: Obj) -> None:
        self.unreadable.pop(_ref("Queue", obj)[0], None)
        name = str((obj.get("metadata") or {}).get("name"))
        self.raw_queues.pop(name, None)
        if self.queues.pop(name, None) is not None:
            self._changed("queue")

    def replace_queues(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("Queue")
        self.queues, self.raw_queues = {}, {}
        for o in objs:
            q = self._parse(parse_queue, o, "Queue")
            if q is not None:
                self.queues[q.name] = q
                self.raw_queues[q.name] = o
        self._changed("queue")

    def upsert_priority_class(self, obj: Obj) -> None:
        pc: PriorityClass | None = self._parse(parse_priority_class, obj, "PriorityClass")
        if pc is not None and self.priority_classes.get(pc.name) != pc:
            self.priority_classes[pc.name] = pc
            self._changed("priorityclass")

    def remove_priority_class(self, obj: Obj) -> None:
        self.unreadable.pop(_ref("PriorityClass", obj)[0], None)
        if self.priority_classes.pop(str((obj.get("metadata") or {}).get("name")), None) is not None:
            self._changed("priorityclass")

    def replace_priority_classes(self, objs: Sequence[Obj]) -> None:
        self._forget_unreadable("PriorityClass")
        self.priority_classes = {}
        for o in objs:
            pc = self._parse(parse_priority_class, o, "PriorityClass")
            if pc is not None:
                self.priority_classes[pc.name] = pc
        self._changed("priorityclass")

    def _unreadable_listed(self, kind: str) -> Callable[[Sequence[Obj]], None]:
        """Objects a LIST showed by name only (they could not be decoded): remembered as unreadable, so a
        filter for such a pod says why instead of waiting for a watch that will never show it."""

        def mark(metas: Sequence[Obj]) -> None:
            for m in metas:
                ref, meta = _ref(kind, m)
                self.unreadable[ref] = "the API server's copy cannot be decoded (nested too deep?)"
                self.unreadable_total += 1
                if kind == "Pod" and isinstance(meta.get("uid"), str):
                    self.unreadable_pods[PodUID(meta["uid"])] = self.unreadable[ref]

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
        }

    # --- reads -----------------------------------------------------------------------------------------
    def _queue_of(self, key: GroupKey) -> str | None:
        pg = self.podgroups.get(key)
        return pg.queue if pg is not None else self.implicit_queue.get(key)

    def _rebuild_queue_held(self) -> None:
        self.queue_held = {}
        for key, usage in self.group_usage.items():
            q = self._queue_of(key)
            if q is not None:  # pods of a PodGroup that does not exist have no queue to charge
                _add(self.queue_held.setdefault(q, {}), usage)

    def pod_queue(self, pod: Pod) -> str | None:
        return self._queue_of(pod_group_key(pod))

    def plan_is_live(self, uid: PodUID, node: str) -> bool:
        """Worth keeping: the pod still waits and the node still exists."""
        pod = self.pods.get(uid)
        return pod is not None and pod.waiting and node in self.nodes

    def drain_changes(self) -> tuple[set[PodUID], set[GroupKey], bool, bool]:
        """Since the last call: pods changed (added, updated, removed), PodGroups changed, whether nodes
        changed, and whether anything changed that may let any waiting group fit (room freed, nodes,
        queues, priority classes)."""
        out = (self.changed_pods, self.changed_groups, self.nodes_changed, self.broad_change)
        self.changed_pods, self.changed_groups, self.nodes_changed, self.broad_change = (
            set(),
            set(),
            False,
            False,
        )
        return out

    def has_unplanned(self, key: GroupKey, plans: PlanBook) -> bool:
        return any(u not in plans for u in self.waiting.get(key, ()))

    def unfinished_groups(self) -> set[GroupKey]:
        """PodGroups not running yet (or broken): their admission and promises matter every cycle."""
        return {k for k, g in self.podgroups.items() if g.phase in _UNFINISHED}

    def _table(self, wanted: set[str]) -> NodeTable:
        """The node table, rebuilt when nodes change or a pod asks for a resource it has no column for
        (names once added stay, so the table does not flap)."""
        if (
            self._node_table is None
            or self._node_table[0] != self._nodes_version
            or not self._node_table[1].covers(wanted)
        ):
            extra = set(self._node_table[1].index.names) if self._node_table is not None else set()
            self._node_table = (self._nodes_version, build_node_table(self.nodes.values(), extra | wanted))
        return self._node_table[1]

    def _build(
        self,
        pods: list[Pod],
        podgroups: list[PodGroup],
        plans: PlanBook,
        refused: Mapping[PodUID, frozenset[str]] | None = None,
    ) -> Snapshot:
        wanted: set[str] = set()
        for p in pods:
            if p.waiting:
                wanted.update(p.requests)
        for g in podgroups:
            wanted.update(g.min_resources)
        table = self._table(wanted)
        queues = {q: dict(u) for q, u in self.queue_held.items()}
        for q, u in plans.queues.items():
            _add(queues.setdefault(q, {}), u)
        return build_snapshot(
            nodes=table,
            pods=pods,
            podgroups=podgroups,
            queues=self.queues.values(),
            priority_classes=self.priority_classes.values(),
            # A copy: the snapshot is read in the cycle's worker thread while the loop changes the book.
            plans=dict(plans.nodes),
            scheduler_names=self.scheduler_names,
            default_queue=self.default_queue,
            used=self.node_usage.matrix(table),
            reserved=plans.reserved.matrix(table),
            queue_usage=queues,
            refused=refused,
            # Every pod on a node, whatever its scheduler: inter-pod (anti-)affinity and spread count them.
            residents=self.pods.values(),
        )

    def snapshot(
        self, plans: PlanBook, work: set[GroupKey], refused: Mapping[PodUID, frozenset[str]] | None = None
    ) -> Snapshot:
        """What a scheduling cycle needs: the groups in ``work`` with all their pods, over running totals.
        ``plans`` must be live (see :meth:`plan_is_live`)."""
        return self._build(
            [self.pods[u] for k in work for u in self.members.get(k, ())],
            [self.podgroups[k] for k in work if k in self.podgroups],
            plans,
            refused,
        )

    def status_snapshot(self, plans: PlanBook) -> Snapshot:
        """PodGroups (the objects, not implicit groups) with their pods, over running totals: what
        status writers need, at the cost of the jobs, not of every plain pod."""
        pods = [self.pods[u] for k in self.podgroups for u in self.members.get(k, ())]
        return self._build(pods, list(self.podgroups.values()), plans)

    def full_snapshot(self, plans: PlanBook) -> Snapshot:
        """Every object (for status and preemption decisions, which look at running groups too)."""
        return self._build(list(self.pods.values()), list(self.podgroups.values()), plans)

    # The admission webhooks' lookup (admission.lookup.Lookup).
    def queue(self, name: str) -> Queue | None:
        return self.queues.get(name)

    def podgroup(self, namespace: str, name: str) -> PodGroup | None:
        return self.podgroups.get(group_key(namespace, name))

    def queue_has_podgroups(self, name: str) -> bool:
        return any(pg.queue == name for pg in self.podgroups.values())
