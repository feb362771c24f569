"""The capped groups of a cycle, read from the cluster cache: which settled groups stay out when room
frees, and their PodGroups for enqueue to vote on again (see :mod:`extender.framework.capped`, which says
why their outcome cannot change and what is checked here).

The figures are read once per cycle, on the first question (most cycles free no room and ask none), after
the loop released what it releases before a cycle and before the snapshot: the same ledger totals and
elastic figures the snapshot then carries, and the node table's resource columns (names once added stay,
so the snapshot's are the same or more).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Set

from controllers.state.cache import ClusterCache
from controllers.state.ledger import Ledger
from extender.core.hierarchy import parent_loop
from extender.core.model import GroupKey, GroupPhase, QueueState
from extender.core.snapshot import Snapshot
from extender.framework.capped import surely_over

Figures = tuple[Mapping[str, Mapping[str, int]], Mapping[str, Mapping[str, int]], frozenset[str]]
_NONE: Mapping[str, int] = {}


def capped_keeper(cache: ClusterCache, ledger: Ledger) -> Callable[[GroupKey], bool]:
    """A question for the pending set: does settled group ``key`` stay out (capped) in this cycle."""
    figures: list[Figures] = []

    def keep(key: GroupKey) -> bool:
        if not figures:
            kept = cache.elastic()
            if kept is None:  # the book cannot tell: every group comes back
                figures.append(({}, {}, frozenset()))
            else:
                figures.append((ledger.queue_usage(), kept, frozenset(cache.node_table().index.names)))
        usage, elastic, names = figures[0]
        return bool(names) and _capped(cache, key, usage, elastic, names)

    return keep


def _capped(
    cache: ClusterCache,
    key: GroupKey,
    usage: Mapping[str, Mapping[str, int]],
    elastic: Mapping[str, Mapping[str, int]],
    names: Set[str],
) -> bool:
    g = cache.group(key)
    q = None if g is None else cache.queue(g.queue)
    if g is None or q is None or g.phase != GroupPhase.PENDING or q.state != QueueState.OPEN:
        return False
    if q.parent and parent_loop({x.name: x for x in cache.all_queues()}, q.name) is not None:
        return False
    members = [p for u in cache.members(key) if (p := cache.pod(u)) is not None]
    if any(p.holds_resources for p in members):
        return False  # drf would order it by what it holds
    if not cache.has_priority_class(g.priority_class) and any(p.priority for p in members):
        return False  # priority would read its pods' priorities
    return surely_over(
        q.capability, g.min_resources, usage.get(q.name, _NONE), elastic.get(q.name, _NONE), names
    )


def with_revote(snap: Snapshot, cache: ClusterCache, keys: Set[GroupKey]) -> Snapshot:
    """``snap`` with the PodGroups of ``keys`` for enqueue to vote on again (``Snapshot.revote``)."""
    groups = {k: g for k in keys if (g := cache.group(k)) is not None}
    return dataclasses.replace(snap, revote=groups) if groups else snap
