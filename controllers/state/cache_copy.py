"""The cluster cache's copy of what it holds, and its load from one: :class:`CacheCopy`.

A forecast (:mod:`controllers.forecast`) runs the scheduler forward on a simulated cluster of its own,
seeded with the live cache's parsed objects: :meth:`CacheCopy.models` takes them (the frozen models, only
the containers copied, so it is cheap on the event loop and safe to read in another thread while the live
cache moves on), and :meth:`CacheCopy.load` fills an empty cache with them as a LIST would.

Invariant: the kinds are refilled in place, as the cache's kinds are one dict each for its life
(:mod:`controllers.state.parsed_kind`); pods go through ``_store`` (the ledger, the pending set and every
index the cache keeps), never around it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from controllers.state.cache_ingest import CacheIngest
from controllers.state.models import ClusterModels

K = TypeVar("K")
V = TypeVar("V")


class CacheCopy(CacheIngest):
    def models(self) -> ClusterModels:
        """Every object held, as the frozen models (nothing copied but the containers): cheap enough to take
        on the event loop; safe to read in another thread while this cache moves on."""
        return ClusterModels(
            scheduler_names=self.scheduler_names,
            default_queue=self.default_queue,
            nodes=tuple(self._nodes.values()),
            pods=tuple(self._pods.values()),
            podgroups=tuple(self._podgroups.values()),
            raw_podgroups=self._raw_podgroups.copy(),  # packed still: decoded where read
            queues=tuple(self._queues.values()),
            raw_queues=dict(self._raw_queues),
            priority_classes=tuple(self._priority_classes.values()),
            quotas=dict(self._quotas),
            budgets=dict(self._budgets),
            hypernodes=dict(self._hypernodes),
            numatopologies=dict(self._numatopologies),
        )

    def load(self, m: ClusterModels) -> None:
        """Take every object of ``m`` as if the watch had just listed it (into an empty cache: a forecast's
        simulated cluster). Pods are stored through the ledger and the pending set like any watched pod;
        a pod's assumed binding is taken as its binding."""
        # In place: the cache's kinds are one dict each for its life (controllers.state.parsed_kind).
        _refill(self._nodes, {n.name: n for n in m.nodes})
        _refill(self._queues, {q.name: q for q in m.queues})
        _refill(self._raw_queues, m.raw_queues)
        _refill(self._priority_classes, {pc.name: pc for pc in m.priority_classes})
        _refill(self._quotas, m.quotas)
        _refill(self._budgets, m.budgets)
        _refill(self._hypernodes, m.hypernodes)
        _refill(self._numatopologies, m.numatopologies)
        self._hypernode_set = None
        for pg in m.podgroups:
            self._podgroups[pg.key] = pg
            self._raw_podgroups.take(pg.key, m.raw_podgroups)
            self._pending.group_changed(pg.key)
        for pod in m.pods:
            self._store(pod.uid, pod, pod)
        self._changed("node")
        self._changed("queue")


def _refill(held: dict[K, V], objects: Mapping[K, V]) -> None:
    held.clear()
    held.update(objects)
