"""What the scheduling loop reads of the cluster cache before it takes a snapshot: :class:`CacheFigures`.

When room frees, the loop asks which settled groups their queue's capability is sure to refuse
(:mod:`extender.framework.capped`): that reads, per queue, what its PodGroups hold past their minimums
(kept from cycle to cycle by :class:`~controllers.state.elastic_book.ElasticBook`, told by the cache's
writes of every change of a pod, a PodGroup or a plan) and whether a PriorityClass exists. The snapshot
carries the same per-queue figures, so the cycle's enqueue and the loop read one computation.

The same change notices (a pod, a PodGroup, a plan) feed one more reader when it asks for them
(:meth:`CacheFigures.track_changed_groups`): the forecast keeps what it derives per group from one cycle
to the next and works out again only the groups changed (``controllers.simulate.forecast_cluster``).
"""

from __future__ import annotations

from collections.abc import Collection

from controllers.state.cache_copy import CacheCopy
from extender.core.model import GroupKey


class CacheFigures(CacheCopy):
    def _touch(self, keys: Collection[GroupKey | None]) -> None:
        """One of ``keys``' pods, its PodGroup or one of its plans changed."""
        self._elastic.touch_all(keys)
        if self._changed_groups is not None:
            self._changed_groups.update(k for k in keys if k is not None)

    def _take_plans(self) -> None:
        # The ledger keeps one set of groups whose plans changed, for one reader: the cache passes it on.
        self._touch(self._ledger.take_planned_groups())

    def track_changed_groups(self) -> None:
        """From now on, keep the groups changed for :meth:`take_changed_groups` (one reader)."""
        if self._changed_groups is None:
            self._changed_groups = set()

    def take_changed_groups(self) -> set[GroupKey]:
        """The groups one of whose pods, PodGroup or plans changed since the last call (since
        :meth:`track_changed_groups`, at first)."""
        self._take_plans()
        out = self._changed_groups
        if out is None:
            return set()
        self._changed_groups = set()
        return out

    def elastic(self) -> dict[str, dict[str, int]] | None:
        """Per queue, what its PodGroups hold past their minimums, brought up to date (None: the book
        cannot tell, see controllers.state.elastic_book)."""
        ledger, nodes = self._ledger, (self._nodes.keys(), self._nodes_version)
        self._take_plans()
        return self._elastic.refresh(self._members, self._pods, self._podgroups, ledger.planned_node, *nodes)

    def has_priority_class(self, name: str) -> bool:
        return name in self._priority_classes
