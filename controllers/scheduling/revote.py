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
from dataclasses import dataclass

from controllers.state.cache import ClusterCache
from controllers.state.ledger import Ledger
from controllers.state.pending import PendingSet
from extender.core.hierarchy import parent_loop
from extender.core.model import GroupKey, GroupPhase, QueueState
from extender.core.snapshot import Aside, Snapshot
from extender.framework.capped import surely_over

Figures = tuple[Mapping[str, Mapping[str, int]], Mapping[str, Mapping[str, int]], frozenset[str]]
_NONE: Mapping[str, int] = {}


class CappedKeeper:
    """The loop's questions, cycle after cycle, with what they read of a settled group's pods carried from
    one to the next: whether one holds a node, whether one has a priority. The pods of a settled group do
    not change while it stays settled (any change of them takes it out: the pending set's
    ``settled_entry`` is then another object or none), so those facts are read once per settling, not at
    every freed room (a queue at its capability keeps a backlog settled through thousands of them). The
    rest (the group, its queue, the priority classes, the figures) is read afresh at each question.

    Invariant: every answer equals :func:`capped_keeper`'s, worked out afresh
    (``tests/simulate/test_step_carry.py`` compares them at every question of a run and after any
    change of a settled group's pods)."""

    def __init__(self, cache: ClusterCache, ledger: Ledger, pending: PendingSet) -> None:
        self.cache, self.ledger, self.pending = cache, ledger, pending
        # Per settled group: its settled entry when the facts were read, and the facts.
        self._facts: dict[GroupKey, tuple[Aside, _Facts]] = {}

    def question(self) -> Callable[[GroupKey], bool]:
        """A question for the pending set: does settled group ``key`` stay out (capped) in this cycle."""
        cache, pending, facts = self.cache, self.pending, self._facts
        if len(facts) > 2 * len(pending.settled_keys()) + 64:  # (groups settled no more, now and then)
            for key in [k for k, (entry, _) in facts.items() if pending.settled_entry(k) is not entry]:
                del facts[key]
        figures: list[Figures] = []
        loops: dict[str, bool] = {}

        def keep(key: GroupKey) -> bool:
            if not figures:
                figures.append(_figures(cache, self.ledger))
            usage, elastic, names = figures[0]
            if not names:
                return False
            entry = pending.settled_entry(key)
            if entry is None:
                return _capped(cache, key, usage, elastic, names, loops)
            known = facts.get(key)
            if known is None or known[0] is not entry:
                known = facts[key] = (entry, _pod_facts(cache, key))
            return _capped(cache, key, usage, elastic, names, loops, known[1])

        return keep


def capped_keeper(cache: ClusterCache, ledger: Ledger) -> Callable[[GroupKey], bool]:
    """A question for the pending set, everything read afresh: does settled group ``key`` stay out
    (capped) in this cycle (what :class:`CappedKeeper`'s answers are held to)."""
    figures: list[Figures] = []

    def keep(key: GroupKey) -> bool:
        if not figures:
            figures.append(_figures(cache, ledger))
        usage, elastic, names = figures[0]
        return bool(names) and _capped(cache, key, usage, elastic, names)

    return keep


def _figures(cache: ClusterCache, ledger: Ledger) -> Figures:
    kept = cache.elastic()
    if kept is None:  # the book cannot tell: every group comes back
        return ({}, {}, frozenset())
    return (ledger.queue_usage(), kept, frozenset(cache.node_table().index.names))


@dataclass(frozen=True, slots=True)
class _Facts:
    """What the question reads of a group's pods: whether one holds a node, whether one has a priority."""

    holds: bool
    prioritized: bool


def _pod_facts(cache: ClusterCache, key: GroupKey) -> _Facts:
    members = [p for u in cache.members(key) if (p := cache.pod(u)) is not None]
    return _Facts(holds=any(p.holds_resources for p in members), prioritized=any(p.priority for p in members))


def _capped(
    cache: ClusterCache,
    key: GroupKey,
    usage: Mapping[str, Mapping[str, int]],
    elastic: Mapping[str, Mapping[str, int]],
    names: Set[str],
    loops: dict[str, bool] | None = None,
    facts: _Facts | None = None,
) -> bool:
    """``loops``: whether each queue asked about is in a parent loop (kept for one question's answers);
    ``facts``: the group's pods' facts when known."""
    g = cache.group(key)
    q = None if g is None else cache.queue(g.queue)
    if g is None or q is None or g.phase != GroupPhase.PENDING or q.state != QueueState.OPEN:
        return False
    if q.parent:
        looped = None if loops is None else loops.get(q.name)
        if looped is None:
            looped = parent_loop({x.name: x for x in cache.all_queues()}, q.name) is not None
            if loops is not None:
                loops[q.name] = looped
        if looped:
            return False
    if facts is None:
        facts = _pod_facts(cache, key)
    if facts.holds:
        return False  # drf would order it by what it holds
    if not cache.has_priority_class(g.priority_class) and facts.prioritized:
        return False  # priority would read its pods' priorities
    return surely_over(
        q.capability, g.min_resources, usage.get(q.name, _NONE), elastic.get(q.name, _NONE), names
    )


def with_revote(snap: Snapshot, cache: ClusterCache, keys: Set[GroupKey]) -> Snapshot:
    """``snap`` with the PodGroups of ``keys`` for enqueue to vote on again (``Snapshot.revote``)."""
    groups = {k: g for k in keys if (g := cache.group(k)) is not None}
    return dataclasses.replace(snap, revote=groups) if groups else snap
