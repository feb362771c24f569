"""The scheduler's state, built in one place: the cache, the reservation ledger and the pending set.

The three are wired at construction (the cache tells the other two of every change it stores), so the
composition root, the tests and the benchmarks build the same thing the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from controllers.state.cache import ClusterCache
from controllers.state.ledger import Ledger
from controllers.state.pending import PendingSet
from extender.api import labels as L


@dataclass(frozen=True, slots=True)
class ClusterState:
    cache: ClusterCache
    ledger: Ledger
    pending: PendingSet


def cluster_state(scheduler_names: frozenset[str], default_queue: str = L.DEFAULT_QUEUE) -> ClusterState:
    ledger = Ledger()
    pending = PendingSet(planned=ledger.is_planned)
    cache = ClusterCache(
        scheduler_names=scheduler_names, ledger=ledger, pending=pending, default_queue=default_queue
    )
    return ClusterState(cache, ledger, pending)
