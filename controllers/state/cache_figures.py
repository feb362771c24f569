"""What the scheduling loop reads of the cluster cache before it takes a snapshot: :class:`CacheFigures`.

When room frees, the loop asks which settled groups their queue's capability is sure to refuse
(:mod:`extender.framework.capped`): that reads, per queue, what its PodGroups hold past their minimums
(kept from cycle to cycle by :class:`~controllers.state.elastic_book.ElasticBook`, told by the cache's
writes of every change of a pod, a PodGroup or a plan) and whether a PriorityClass exists. The snapshot
carries the same per-queue figures, so the cycle's enqueue and the loop read one computation.
"""

from __future__ import annotations

from controllers.state.cache_copy import CacheCopy


class CacheFigures(CacheCopy):
    def elastic(self) -> dict[str, dict[str, int]] | None:
        """Per queue, what its PodGroups hold past their minimums, brought up to date (None: the book
        cannot tell, see controllers.state.elastic_book)."""
        ledger, nodes = self._ledger, (self._nodes.keys(), self._nodes_version)
        self._elastic.touch_all(ledger.take_planned_groups())
        return self._elastic.refresh(self._members, self._pods, self._podgroups, ledger.planned_node, *nodes)

    def has_priority_class(self, name: str) -> bool:
        return name in self._priority_classes
