"""The groups a cache leaves out of scheduling snapshots, with what they weigh, summed per queue as they come
and go.

A snapshot needs only the sums (:class:`~extender.core.snapshot.Aside`: a queue's waiting demand, its
promises, the planned part), so :class:`AsideBook` keeps one :class:`Aside` per group and per-queue totals
updated on every add and remove: handing the totals to a snapshot costs the number of queues, not the
number of groups left out.

Invariant: the totals are the sums of the entries (integers, so adding and removing in any order is
exact), with no zero amount kept (a snapshot's columns never depend on a zero: a node table keeps the
columns it once had).
"""

from __future__ import annotations

from collections.abc import Iterator, KeysView, Mapping

from extender.core.model import GroupKey
from extender.core.snapshot import Aside

_FIELDS = ("waiting", "owed", "planned")


class AsideBook:
    def __init__(self) -> None:
        self._entries: dict[GroupKey, Aside] = {}
        # queue -> (waiting, owed, planned) sums, by resource name.
        self._totals: dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]] = {}

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[GroupKey]:
        return iter(self._entries)

    def keys(self) -> KeysView[GroupKey]:
        """A live view (set operations with it run at C speed)."""
        return self._entries.keys()

    def get(self, key: GroupKey) -> Aside | None:
        return self._entries.get(key)

    def add(self, key: GroupKey, aside: Aside) -> None:
        self.remove(key)
        self._entries[key] = aside
        self._count(aside, 1)

    def remove(self, key: GroupKey) -> Aside | None:
        aside = self._entries.pop(key, None)
        if aside is not None:
            self._count(aside, -1)
        return aside

    def _count(self, aside: Aside, sign: int) -> None:
        sums = self._totals.setdefault(aside.queue, ({}, {}, {}))
        for total, amounts in zip(sums, (aside.waiting, aside.owed, aside.planned), strict=True):
            for name, v in amounts.items():
                left = total.get(name, 0) + sign * v
                if left:
                    total[name] = left
                else:
                    total.pop(name, None)
        if not any(sums):
            del self._totals[aside.queue]

    def clear(self) -> list[GroupKey]:
        """Empty the book; the keys it held."""
        keys = list(self._entries)
        self._entries, self._totals = {}, {}
        return keys

    def totals(self) -> list[Aside]:
        """One Aside per queue: the sums of the entries of that queue."""
        return [_aside(q, *sums) for q, sums in self._totals.items()]


def _aside(
    queue: str, waiting: Mapping[str, int], owed: Mapping[str, int], planned: Mapping[str, int]
) -> Aside:
    return Aside(queue=queue, waiting=dict(waiting), owed=dict(owed), planned=dict(planned))
