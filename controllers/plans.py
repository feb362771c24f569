"""The plan book: which node each waiting pod of ours is planned on, with running totals.

A plan is a reservation every later decision respects; the book keeps what the reservations add up to
per node (a matrix for the snapshot) and per queue, so a cycle never re-adds hundreds of plans waiting
for kube-scheduler to bind them. Reads look like a dict (``get``, ``in``, ``len``, iteration).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from controllers.usage import NodeUsage
from extender.core.model import PodUID


class PlanBook:
    def __init__(self) -> None:
        self.nodes: dict[PodUID, str] = {}
        self._entries: dict[PodUID, tuple[str, Mapping[str, int], str | None]] = {}
        self.reserved = NodeUsage()
        self.queues: dict[str, dict[str, int]] = {}
        self.version = 0

    def add(self, uid: PodUID, node: str, requests: Mapping[str, int], queue: str | None) -> None:
        self.discard(uid)
        self.nodes[uid] = node
        self._entries[uid] = (node, requests, queue)
        self.reserved.add(node, requests)
        if queue is not None:
            _add(self.queues.setdefault(queue, {}), requests, 1)
        self.version += 1

    def discard(self, uid: PodUID) -> None:
        entry = self._entries.pop(uid, None)
        if entry is None:
            return
        node, requests, queue = entry
        del self.nodes[uid]
        self.reserved.add(node, requests, -1)
        if queue is not None:
            _add(self.queues[queue], requests, -1)
        self.version += 1

    def prune(self, keep: Callable[[PodUID, str], bool]) -> None:
        for uid, node in list(self.nodes.items()):
            if not keep(uid, node):
                self.discard(uid)

    def get(self, uid: PodUID) -> str | None:
        return self.nodes.get(uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self.nodes

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[PodUID]:
        return iter(self.nodes)


def _add(acc: dict[str, int], more: Mapping[str, int], sign: int) -> None:
    for k, v in more.items():
        acc[k] = acc.get(k, 0) + sign * v
