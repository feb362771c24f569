"""A copy of everything the cluster cache holds, as parsed models: :class:`ClusterModels`.

Taken on the event loop by :meth:`~controllers.state.cache.ClusterCache.models` (lists of the cache's
frozen objects: no object is copied, nothing is parsed), read in a worker thread while the cache moves
on, and loaded into an empty cache by :meth:`~controllers.state.cache.ClusterCache.load`: what the
forecast seeds its simulated cluster with, without the cost of parsing the cluster again. The raw
PodGroups and Queues come along (the status a simulated status writer updates); raw pods and nodes are
not kept by the cache and are not needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controllers.state.packed import PackedMap
from extender.core.budgets import DisruptionBudget
from extender.core.hypernodes import HyperNode
from extender.core.model import GroupKey, Node, Pod, PodGroup, PriorityClass, Queue
from extender.core.numa import NumaTopology
from extender.core.quota import ResourceQuota

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterModels:
    scheduler_names: frozenset[str]
    default_queue: str
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    podgroups: tuple[PodGroup, ...]
    raw_podgroups: PackedMap[GroupKey]  # as the cache holds them: decoded where read
    queues: tuple[Queue, ...]
    raw_queues: Mapping[str, Obj]
    priority_classes: tuple[PriorityClass, ...]
    # By namespace/name (by name for cluster-scoped kinds), as the cache keys them.
    quotas: Mapping[str, ResourceQuota]
    budgets: Mapping[str, DisruptionBudget]
    hypernodes: Mapping[str, HyperNode]
    numatopologies: Mapping[str, NumaTopology]
