"""A node's victims reused for the next pod that asks the same, while nothing they were worked out from
has changed: the victim search of preempt and reclaim at scale.

:func:`extender.framework.victim_search.cheapest_victims` works out the victims of up to 16 nodes for
every pod it looks for room for. Every pod of a gang, and every gang of the same priority in a queue,
asks the same nodes again (the best-scored ones that can make room), and each pod changes a node or a
few of thousands. What the victims on node ``row`` for a pod are (:func:`victim_search._victims_on`, and
its retry with only the pods that can go without breaking a gang) depends on:

- the mode, the preemptor's queue and ``minRuntime`` (who is a candidate), its request, and its group
  (its own running pods are no candidates on the node);
- the victim hooks' answers: reused only when every plugin of the tiers that decided them sets
  ``static_victims`` (their answers depend on the pods and the preemptor's priority and its PodGroup's,
  which are in the key; :attr:`Votes.changing_victim_answers` tells when some did not);
- the node's free capacity and which of its pods are being evicted: every eviction, placement and undo
  on the node changes its row of ``free``, which the node cache's row clock records;
- for each candidate, whether its gang can spare it and who the rest of its gang are: the members being
  evicted, on whatever node they run; an eviction or undo changes their row of ``free`` too;
- the ``node_fit`` plugins: row-local, judged on the free capacity passed to them (their contract).

So an answer is kept with the row clock it was worked out at and is reused only while none of the rows it
read has changed since: the node's own and every row holding a member of a group with a pod on the node
(worked out once a cycle per node). Never kept: the exact search (trial evictions, every rule judged) and
a pod whose ``pod_fit`` follows evictions (asked afresh at every placement, by its contract).
tests/core/test_victim_memo.py compares the search with and without it over random clusters.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from extender.core.model import GroupKey, Pod, PodGroup
from extender.core.resources import Vector
from extender.core.running import Running
from extender.framework.session import Session

# What the search found on one node for one pod: the victims and how many gangs go whole, or None; and
# the highest priority of those victims' groups (part of the node's cost; 0 without victims).
Answer = tuple[list[Running], int] | None
Found = tuple[Answer, int]


class NodeVictims:
    """The answers kept for one kind of pod (mode, queue, ``minRuntime``, priorities, request), by node
    row and whether the preemptor's group has pods on that node, each with the row clock then and the
    rows it read."""

    def __init__(
        self, ssn: Session, reason: str, queue: str, min_runtime: float, g: PodGroup, pod: Pod, req: Vector
    ) -> None:
        self._ssn = ssn
        self._group = g.key
        # The rows where the preemptor's own group runs pods (usually none: a gang waiting whole).
        self._own_rows = {m.row for m in ssn.running.members.get(g.key, ())}
        snap = ssn.snapshot
        priority = snap.group_priority(g) if g.key in snap.groups else None
        key = ("answers", reason, queue, min_runtime, pod.priority, priority, req.tobytes())
        kept = ssn.victim_rooms.get(key)
        if not isinstance(kept, dict):
            kept = ssn.victim_rooms[key] = {}
        self._kept: dict[tuple[int, GroupKey | None], tuple[Found, int, npt.NDArray[np.intp]]] = kept
        self._changing = ssn.votes.changing_victim_answers

    def _key(self, row: int) -> tuple[int, GroupKey | None]:
        return (row, self._group if row in self._own_rows else None)

    def get(self, row: int) -> Found | None:
        """The answer kept for ``row``, if nothing it read has changed since; else None."""
        kept = self._kept.get(self._key(row))
        if kept is None or self._ssn.nodes.last_change(kept[2]) > kept[1]:
            return None
        return kept[0]

    def start(self) -> None:
        """Called before the answer for a node is worked out (to tell whether it may be kept)."""
        self._changing = self._ssn.votes.changing_victim_answers

    def keep(self, row: int, found: Found) -> None:
        """Keep ``found``, worked out for ``row`` since :meth:`start`, unless a victim hook that may
        change its answers was asked."""
        ssn = self._ssn
        if ssn.votes.changing_victim_answers != self._changing:
            return
        self._kept[self._key(row)] = (found, ssn.nodes.clock, _reads(ssn, row))


def _reads(ssn: Session, row: int) -> npt.NDArray[np.intp]:
    """The rows an answer for node ``row`` reads: its own and those of every member of a group with a pod
    on it (fixed for the cycle)."""
    key = ("reads", row)
    cached = ssn.victim_rooms.get(key)
    if isinstance(cached, np.ndarray):
        return cached
    running = ssn.running
    rows = {row}
    for gk in {r.group for r in running.on_node.get(row, ())}:
        rows.update(m.row for m in running.members.get(gk, ()))
    out = np.fromiter(sorted(rows), dtype=np.intp, count=len(rows))
    ssn.victim_rooms[key] = out
    return out
