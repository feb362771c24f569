"""The cluster cache's ingest: raw objects from the informers parsed once, here, into the frozen model.

A parse failure is that object's problem: remembered with why (:mod:`controllers.state.unreadable`), logged,
the object skipped, never a crash. Every stored change of a pod is told to the reservation ledger
(:mod:`controllers.state.ledger`, which derives node and queue usage) and to the pending set
(:mod:`controllers.state.pending`, which tracks what a cycle must look at); this class keeps the objects:
pods with the indexes that read them (:mod:`controllers.state.pod_index`: group members, implicit queues,
GPU pods), PodGroups, and the kinds kept by key alone (:mod:`controllers.state.parsed_kind`: nodes, queues,
quotas, ...). The reads and the snapshots are :class:`~controllers.state.cache.ClusterCache`'s.

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
from controllers.state.compact import ListedGroup, pod_parser, podgroups_listing
from controllers.state.elastic_book import ElasticBook
from controllers.state.ledger import Ledger
from controllers.state.meta import read_meta
from controllers.state.packed import PackedMap, Packer
from controllers.state.parsed_kind import ClusterKinds
from controllers.state.pending import PendingSet
from controllers.state.pod_index import PodIndex
from controllers.state.staged import Staged, replace_with
from controllers.state.unreadable import Failure, Unreadable
from extender.api import labels as L
from extender.core.hypernodes import HyperNodeSet
from extender.core.model import GroupKey, GroupPhase, Pod, PodGroup, PodUID, group_key
from extender.core.node_table import NodeTable
from extender.core.parse import parse_podgroup

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# Changes that can admit or unblock what waits: a queue, a priority, a quota with room, a budget that allows
# more, the topology a gang may be placed in.
_ROOM_KINDS: Final = frozenset(
    {"queue", "priorityclass", "resourcequota", "poddisruptionbudget", "hypernode", "numatopology"}
)


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
        # Packs the raw PodGroups; the store of watched objects holds them too, and borrows it (one bytes).
        self.packer = Packer()
        self.default_queue = default_queue
        self._ledger = ledger
        self._pending = pending
        # Objects that could not be read, and why (a filter for such a pod says why).
        self._unreadable = Unreadable()
        self._index = PodIndex(scheduler_names=scheduler_names, default_queue=default_queue)
        self._parse_pod = pod_parser()  # (controllers.state.compact, as is the PodGroup LIST)
        self._podgroups: dict[GroupKey, PodGroup] = {}
        # Raw PodGroups we write status for (resourceVersion, existing status) keyed like the model, packed.
        self._raw_podgroups: PackedMap[GroupKey] = PackedMap(packer=self.packer)
        # The kinds kept by key alone (controllers.state.parsed_kind), each telling _changed of a change.
        self._kinds = ClusterKinds.build(self._unreadable, self._changed)
        # What the cache's reads use, held under their own names (each one dict for the cache's life).
        self._pods = self._index.pods
        self._members = self._index.members
        self._device_pods = self._index.device_pods
        self._nodes = self._kinds.nodes.objects
        self._queues = self._kinds.queues.objects
        self._raw_queues = self._kinds.queues.raw
        self._priority_classes = self._kinds.priority_classes.objects
        self._quotas = self._kinds.quotas.objects
        self._budgets = self._kinds.budgets.objects
        self._hypernodes = self._kinds.hypernodes.objects
        self._numatopologies = self._kinds.numatopologies.objects
        # The immutable HyperNode set snapshots share until one changes (it memoizes their resolution over
        # the node table).
        self._hypernode_set: HyperNodeSet | None = None
        # Bumped on every change of a stored object: "did anything happen since".
        self.version = 0
        self._nodes_version = 0
        self._node_table: tuple[int, NodeTable] | None = None
        self._elastic = ElasticBook()  # told by the cache's writes: see controllers.state.cache_figures
        # The groups told likewise since the last take_changed_groups (None: nobody reads them).
        self._changed_groups: set[GroupKey] | None = None

    # --- change notification -------------------------------------------------------------------------
    def _changed(self, kind: str) -> None:
        self.version += 1
        if kind == "node":
            self._nodes_version += 1
            self._pending.nodes_changed()
        elif kind in _ROOM_KINDS:
            if kind == "hypernode":
                self._hypernode_set = None
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

    def _store(self, uid: PodUID, pod: Pod | None, seen: Pod | None) -> None:
        """Store ``pod`` (None: remove) and tell the ledger what the watch showed (``seen``: the pod as
        the API server has it, before an assumed binding is laid over it)."""
        key = self._index.put(uid, pod)
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

    def upsert_pod(self, obj: Obj, *, seen: Pod | None = None) -> Pod | None:
        """Store the pod ``obj``; ``seen``: its model when the caller has it (a simulated bind): no parse."""
        seen = self._parse(self._parse_pod, obj, "Pod") if seen is None else seen
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
        replace_with(self.pods_listing(), objs)

    def pods_listing(self) -> Staged[Pod]:
        """A pod LIST parsed page by page, applied at its end (see controllers.state.staged)."""
        return Staged("Pod", self._parse_pod, self._relisted_pods)

    def _relisted_pods(self, parsed: list[Pod], failures: list[Failure]) -> None:
        # After a re-list every pod is stored anew; those gone while we were not watching are removed
        # (their reservations released, their plans dropped).
        self._unreadable.relisting("Pod")
        for f in failures:
            self._unreadable.record(f)
        listed: dict[PodUID, Pod] = {p.uid: p for p in parsed}
        del parsed
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
        bound = self._index.bind(uid, node)
        self._pending.pod_changed(uid, self._index.ours(bound), False, False)
        self._changed("pod")

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
        meta = read_meta(obj)
        self._unreadable.removed("PodGroup", meta)
        key = group_key(meta.namespace or "default", meta.name)
        self._raw_podgroups.pop(key, None)
        old = self._podgroups.pop(key, None)
        self._group_stored(key, old, None)
        if old is not None:
            self._changed("podgroup")

    def replace_podgroups(self, objs: Sequence[Obj]) -> None:
        replace_with(self.podgroups_listing(), objs)

    def podgroups_listing(self) -> Staged[ListedGroup]:
        return podgroups_listing(self.default_queue, self._relisted_podgroups, self.packer)

    def _relisted_podgroups(self, parsed: list[ListedGroup], failures: list[Failure]) -> None:
        self._unreadable.relisting("PodGroup")
        for f in failures:
            self._unreadable.record(f)
        old, self._podgroups, self._raw_podgroups = self._podgroups, {}, PackedMap(packer=self.packer)
        for pg, body in parsed:
            self._podgroups[pg.key] = pg
            self._raw_podgroups.put_packed(pg.key, body)
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

    def forget_admissions(self) -> None:
        """A leadership term ended: phases set in memory (:meth:`set_group_phase`) that the API server does
        not show go back to what it shows, so a later term decides them again."""
        for key, raw in self._raw_podgroups.items():
            pg, old = self._pg(raw), self._podgroups.get(key)
            if pg is not None and old is not None and old != pg:
                self._podgroups[key] = pg
                self._group_stored(key, old, pg)
                self._changed("podgroup")

    # --- the kinds kept by key: what callers (and tests) feed directly -----------------------------------
    def upsert_node(self, obj: Obj) -> None:
        self._kinds.nodes.upsert(obj)

    def replace_nodes(self, objs: Sequence[Obj]) -> None:
        self._kinds.nodes.replace(objs)

    def upsert_queue(self, obj: Obj) -> None:
        self._kinds.queues.upsert(obj)

    def replace_queues(self, objs: Sequence[Obj]) -> None:
        self._kinds.queues.replace(objs)

    def upsert_priority_class(self, obj: Obj) -> None:
        self._kinds.priority_classes.upsert(obj)

    def handlers(self) -> dict[str, Handler]:
        listed = self._unreadable.listed
        pods = Handler(self.replace_pods, self.upsert_pod, self.remove_pod, listed("Pod"), self.pods_listing)
        groups = (self.replace_podgroups, self.upsert_podgroup, self.remove_podgroup, listed("PodGroup"))
        return {**self._kinds.handlers(), "pods": pods, "podgroups": Handler(*groups, self.podgroups_listing)}

    def _queue_of(self, key: GroupKey) -> str | None:
        pg = self._podgroups.get(key)
        return pg.queue if pg is not None else self._index.implicit_queue.get(key)
