"""One queue's line of groups waiting for an allocate turn: job order, or with namespace order (Volcano's
NamespaceOrderFn, see :mod:`extender.framework.plugin`) namespace first.

Entries are ``(key, seq, group)``: ``key`` is ``(gang whole, job key)`` (groups whose gang is not whole go
first whatever the conf), ``seq`` a unique tie-break. Without namespace order the line is one heap. With
it, a heap per namespace, and a turn goes to the namespace whose first group is not whole if any, then the
smallest namespace key (asked afresh: namespace shares change as pods are placed), then the one whose first
group comes first in job order. That is exactly the order of ``(whole, namespace key, job key)`` over all
groups at that moment, at the cost of a namespace key per namespace with work in the queue per turn, not
of re-sorting the groups.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from extender.core.model import PodGroup

if TYPE_CHECKING:
    from extender.framework.session import Session

Entry = tuple[tuple[bool, tuple[Any, ...]], int, PodGroup]


class Line:
    def __init__(self, ssn: Session, entries: list[Entry]) -> None:
        self._ssn = ssn
        self._by_namespace = ssn.namespace_ordered
        self._heaps: dict[str, list[Entry]] = {}
        for e in entries:
            self._heaps.setdefault(self._space(e[2]), []).append(e)
        for heap in self._heaps.values():
            heapq.heapify(heap)

    def _space(self, g: PodGroup) -> str:
        return g.namespace if self._by_namespace else ""

    def __bool__(self) -> bool:
        return bool(self._heaps)

    def push(self, entry: Entry) -> None:
        heapq.heappush(self._heaps.setdefault(self._space(entry[2]), []), entry)

    def pop(self) -> PodGroup:
        if len(self._heaps) == 1:
            space = next(iter(self._heaps))
        else:
            key = self._ssn.namespace_key
            heaps = self._heaps
            space = min(heaps, key=lambda n: (heaps[n][0][0][0], key(n), heaps[n][0][:2]))
        heap = self._heaps[space]
        g = heapq.heappop(heap)[2]
        if not heap:
            del self._heaps[space]
        return g

    def groups(self) -> list[PodGroup]:
        return [g for heap in self._heaps.values() for _, _, g in heap]
