"""Where preempt and reclaim could find victims for a queue's pods: the candidates per node, once a cycle.

For one mode (preempt or reclaim), one preemptor queue and one ``minRuntime``, :func:`rooms` gives the
node rows holding candidate victims (running pods of the queues the mode takes from, old enough, not
``volcano.sh/preemptable: "false"``), ascending, what evicting all of them would free per row (an upper
bound: the preemptor's own group and pods evicted since are filtered out when a node is looked at), and
each row's candidates in victim order: lowest job priority first, then lowest pod priority, then the
youngest (least work lost), then by name, then as the running index holds them.

Two ways to the same answer, kept in ``Session.victim_rooms`` for the cycle:

- the plain one (:func:`plain_rooms`, the session's ``fast_victims`` off) walks every running pod for
  every (mode, queue) and sorts every candidate;
- the fast one adds up the candidates' requests per node with numpy over the running index's arrays
  (once a cycle, what each queue's pods free per node; then per mode and queue the sum over the queues
  it takes from, or the total less the few it does not; with a ``minRuntime``, a segmented sum over the
  pods old enough), and sorts a node's candidates only when the search looks at that node (a few dozen
  nodes per pod, not the cluster).

They agree exactly (tests/core/test_victim_rooms.py compares the rooms, tests/core/test_victim_paths.py
the decisions, over random clusters): the sums are of integers (any order gives the same), the candidate
test is the same per pod, and a row's victim order is the global one restricted to that row (three
stable sorts, last key first, applied to the row's pods in index order give the order the same sorts
give them among all pods).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from extender.core.model import PodUID
from extender.core.running import Running, RunningIndex
from extender.core.timestamps import epoch
from extender.framework.session import Session

# Whether running pods of queue ``theirs`` may be candidates for a pod of queue ``mine``.
CandidateQueue = Callable[[Session, str, str], bool]


class Rooms(Protocol):
    """The candidates for one mode and preemptor queue: ``rows`` (ascending) holding any, ``room`` what
    all of a row's candidates free (row ``i`` for node ``rows[i]``), and a row's candidates in victim
    order (``cands``, for a row of ``rows``)."""

    @property
    def rows(self) -> npt.NDArray[np.intp]: ...

    @property
    def room(self) -> npt.NDArray[np.int64]: ...

    def cands(self, row: int) -> list[Running]: ...

    @property
    def live(self) -> LiveCandidates:
        """Each row's candidates not being evicted, as last worked out (kept by :class:`LiveCandidates`)."""
        ...

    @property
    def fits(self) -> dict[bytes, tuple[npt.NDArray[np.bool_], int]]:
        """Per request (its bytes): whether each of ``rows`` would take it with all its candidates gone,
        as of a row clock (kept by :func:`extender.framework.victim_search.room_fits`)."""
        ...


class LiveCandidates:
    """Per row of a :class:`Rooms`: its candidates not being evicted, in victim order, kept with the row
    clock they were worked out at. Which pods of a node are being evicted changes only with an eviction
    or undo there, and each changes the node's row of ``free`` (the node cache's row clock): a list kept
    for a row is right while the row has not changed since. The search then passes over the rows left
    with no candidate (their pods all leaving, the room taken again) without a Python step each."""

    def __init__(self, n: int) -> None:
        self._at = np.full(n, -1, dtype=np.int64)  # per row of rooms: the clock its list was made at
        self._empty = np.zeros(n, dtype=np.bool_)  # and whether that list is empty
        self._lists: dict[int, list[Running]] = {}

    def window(
        self, ssn: Session, rooms: Rooms, rows: npt.NDArray[np.intp]
    ) -> Iterator[tuple[int, int, list[Running]]]:
        """For ``rows`` (rows of ``rooms``, in the order the search looks at them): each one's place in
        that order, the row, and its candidates not being evicted; rows known to have none left out."""
        pos = np.searchsorted(rooms.rows, rows)
        fresh = self._at[pos] >= ssn.nodes.row_clocks(rows)
        listed = rows.tolist()
        for k in np.flatnonzero(~(fresh & self._empty[pos])).tolist():
            row = listed[k]
            out = self._lists[row] if fresh[k] else None
            if out is None:
                evicting = ssn.evicting
                out = self._lists[row] = [r for r in rooms.cands(row) if r.pod.uid not in evicting]
                i = int(pos[k])
                self._at[i] = ssn.nodes.clock
                self._empty[i] = not out
            yield k, row, out


def rooms(
    ssn: Session, reason: str, candidate_queue: CandidateQueue, min_runtime: float, queue: str
) -> Rooms:
    """The candidates of mode ``reason`` for a pod of ``queue`` (worked out once a cycle)."""
    key = ("rooms", reason, queue, min_runtime)
    cached = ssn.victim_rooms.get(key)
    if isinstance(cached, _Listed | _Summed):
        return cached
    out = (_fast if ssn.fast_victims else plain_rooms)(ssn, candidate_queue, min_runtime, queue)
    ssn.victim_rooms[key] = out
    return out


class _Listed:
    """Candidates listed per row (the plain way)."""

    def __init__(
        self, rows: npt.NDArray[np.intp], room: npt.NDArray[np.int64], cands: dict[int, list[Running]]
    ) -> None:
        self.rows = rows
        self.room = room
        self._cands = cands
        self.fits: dict[bytes, tuple[npt.NDArray[np.bool_], int]] = {}
        self.live = LiveCandidates(len(rows))

    def cands(self, row: int) -> list[Running]:
        return self._cands[row]


def plain_rooms(ssn: Session, candidate_queue: CandidateQueue, min_runtime: float, queue: str) -> _Listed:
    """Every running pod looked at, every row's candidates sorted in victim order."""
    running = ssn.running
    now = ssn.now
    allowed_queue: dict[str, bool] = {}
    cands: dict[int, list[Running]] = {}
    for row, on in running.on_node.items():
        for r in on:
            ok = allowed_queue.get(r.queue)
            if ok is None:
                ok = allowed_queue[r.queue] = candidate_queue(ssn, r.queue, queue)
            if ok and (min_runtime <= 0 or now - epoch(r.pod.created) >= min_runtime):
                cands.setdefault(row, []).append(r)
    protected = running.protected
    if protected:
        for row in list(cands):
            cands[row] = [r for r in cands[row] if r.pod.uid not in protected]
            if not cands[row]:
                del cands[row]
    rank = _ranks(ssn)
    for row_cands in cands.values():
        row_cands.sort(key=lambda r: rank[r.pod.uid])
    rows = np.fromiter(sorted(cands), dtype=np.intp, count=len(cands))
    room = np.zeros((len(rows), len(ssn.snapshot.index)), dtype=np.int64)
    for i, row in enumerate(rows.tolist()):
        for r in cands[row]:
            room[i] += running.vector(r.pod)
    return _Listed(rows, room, cands)


def _ranks(ssn: Session) -> dict[PodUID, int]:
    """Every running pod's place in victim order (the plain way: all of them sorted, once a cycle)."""
    cached = ssn.victim_rooms.get(("ranks",))
    if isinstance(cached, dict):
        return cached
    everyone = list(ssn.running.by_uid.values())
    victim_order(ssn.running, everyone)
    out = {r.pod.uid: i for i, r in enumerate(everyone)}
    ssn.victim_rooms[("ranks",)] = out
    return out


def victim_order(running: RunningIndex, pods: list[Running]) -> None:
    """Sort ``pods`` in victim order, in place: stable sorts, last key first (names, then newest first,
    then the priorities), so that ties keep the order given."""
    pods.sort(key=lambda r: r.pod.key)
    pods.sort(key=lambda r: r.pod.created, reverse=True)
    pods.sort(key=lambda r: (running.group_priority(r.group), r.pod.priority))


class _Summed:
    """Candidates summed per row with numpy, listed per row when asked (the fast way)."""

    def __init__(
        self,
        ssn: Session,
        rows: npt.NDArray[np.intp],
        room: npt.NDArray[np.int64],
        chosen: npt.NDArray[np.bool_],
    ) -> None:
        self.rows = rows
        self.room = room
        self._ssn = ssn
        self._chosen = chosen  # per running pod (index order): a candidate
        self._cands: dict[int, list[Running]] = {}
        self.fits: dict[bytes, tuple[npt.NDArray[np.bool_], int]] = {}
        self.live = LiveCandidates(len(rows))

    def cands(self, row: int) -> list[Running]:
        out = self._cands.get(row)
        if out is None:
            chosen = self._chosen
            out = self._cands[row] = [r for r in _row_in_order(self._ssn, row) if chosen[r.pos]]
        return out


def _row_in_order(ssn: Session, row: int) -> Sequence[Running]:
    """The running pods on ``row`` in victim order (sorted once a cycle, shared by every mode and queue)."""
    key = ("row order", row)
    cached = ssn.victim_rooms.get(key)
    if isinstance(cached, list):
        return cached
    on = list(ssn.running.on_node.get(row, ()))
    victim_order(ssn.running, on)
    ssn.victim_rooms[key] = on
    return on


class _BySegments:
    """The running pods sorted by node row (stable: index order within a row), and where each row's
    pods start: what a per-row sum over any subset of pods is a segmented sum of (once a cycle)."""

    def __init__(self, running: RunningIndex) -> None:
        self.order = np.argsort(running.rows, kind="stable")
        sorted_rows = running.rows[self.order]
        first = np.ones(len(sorted_rows), dtype=np.bool_)
        first[1:] = sorted_rows[1:] != sorted_rows[:-1]
        self.starts = np.flatnonzero(first)
        self.rows = sorted_rows[self.starts]
        self.requests = running.requests[self.order]
        # Per pod (index order): whether it may never be a victim.
        self.protected_at = np.zeros(len(sorted_rows), dtype=np.bool_)
        self.protected_at[[running.by_uid[u].pos for u in running.protected]] = True
        self.protected = self.protected_at[self.order]
        self._young: dict[float, npt.NDArray[np.bool_]] = {}
        self._by_queue: _ByQueue | None = None

    def young(self, ssn: Session, min_runtime: float) -> npt.NDArray[np.bool_]:
        """Per pod (row order), whether it has existed for less than ``min_runtime`` seconds."""
        out = self._young.get(min_runtime)
        if out is None:
            pods = ssn.running.pod_at
            now = ssn.now
            out = self._young[min_runtime] = np.fromiter(
                (now - epoch(pods[i].created) < min_runtime for i in self.order.tolist()),
                dtype=np.bool_,
                count=len(self.order),
            )
        return out

    def by_queue(self, running: RunningIndex) -> _ByQueue:
        if self._by_queue is None:
            self._by_queue = _ByQueue(running, self)
        return self._by_queue


class _ByQueue:
    """What the pods that may be victims (not protected) free per node row, one queue at a time, and in
    all: a mode's room for a preemptor queue is then the sum over the few queues it takes from, or the
    total less the few it does not (reclaim takes from every queue but one), instead of a pass over every
    running pod per (mode, queue). Sums of integers, per row: the same in any order (int64 wraps, and
    the true totals fit, so the total less a part is the rest exactly)."""

    def __init__(self, running: RunningIndex, seg: _BySegments) -> None:
        n_queues = len(running.queue_names)
        free = np.flatnonzero(~seg.protected)  # places in row order, the row order kept
        rows_pos = np.searchsorted(seg.rows, running.rows[seg.order[free]])  # place in seg.rows
        queues = running.queues[seg.order[free]]
        by = np.argsort(queues, kind="stable")  # (queue, row), stable: rows ascending within a queue
        q, r = queues[by], rows_pos[by]
        requests = seg.requests[free[by]]
        first = np.ones(len(by), dtype=np.bool_)
        first[1:] = (q[1:] != q[:-1]) | (r[1:] != r[:-1])
        starts = np.flatnonzero(first)
        sums = np.add.reduceat(requests, starts, axis=0) if len(starts) else requests[:0]
        counts = np.diff(np.r_[starts, len(by)])
        seg_q = q[starts]
        bounds = np.searchsorted(seg_q, np.arange(n_queues + 1))
        # Per queue number: its rows (places in seg.rows), what its pods free there and how many.
        self.parts = [
            (r[starts[a:b]], sums[a:b], counts[a:b]) for a, b in itertools.pairwise(bounds.tolist())
        ]
        # In all, per row (``free`` is in row order: one segmented sum).
        self.total = np.zeros((len(seg.rows), seg.requests.shape[1]), dtype=np.int64)
        self.total_count = np.zeros(len(seg.rows), dtype=np.intp)
        if len(free):
            row_first = np.flatnonzero(np.r_[True, rows_pos[1:] != rows_pos[:-1]])
            self.total[rows_pos[row_first]] = np.add.reduceat(seg.requests[free], row_first, axis=0)
            self.total_count[rows_pos[row_first]] = np.diff(np.r_[row_first, len(free)])

    def room(self, allowed: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
        """Per row of ``seg.rows``: what the pods of the ``allowed`` queues free, and how many they are."""
        taken = np.flatnonzero(allowed).tolist()
        if 2 * len(taken) <= len(allowed):
            room = np.zeros_like(self.total)
            count = np.zeros_like(self.total_count)
            sign = 1
        else:
            room, count = self.total.copy(), self.total_count.copy()
            taken, sign = np.flatnonzero(~allowed).tolist(), -1
        for qn in taken:
            at, sums, counts = self.parts[qn]
            # (a queue's rows are distinct: plain fancy-index arithmetic adds each once)
            room[at] += sign * sums
            count[at] += sign * counts
        return room, count


def _segments(ssn: Session) -> _BySegments:
    cached = ssn.victim_rooms.get(("segments",))
    if isinstance(cached, _BySegments):
        return cached
    out = _BySegments(ssn.running)
    ssn.victim_rooms[("segments",)] = out
    return out


def _fast(ssn: Session, candidate_queue: CandidateQueue, min_runtime: float, queue: str) -> _Summed:
    running = ssn.running
    seg = _segments(ssn)
    allowed = np.fromiter(
        (candidate_queue(ssn, q, queue) for q in running.queue_names),
        dtype=np.bool_,
        count=len(running.queue_names),
    )
    r = len(ssn.snapshot.index)
    if not len(seg.starts):
        chosen = np.zeros(len(seg.order), dtype=np.bool_)
        return _Summed(ssn, np.zeros(0, dtype=np.intp), np.zeros((0, r), dtype=np.int64), chosen)
    if min_runtime <= 0:
        # Who may be a victim depends on the queue only: the sums per queue, worked out once a cycle.
        chosen = allowed[running.queues] & ~seg.protected_at
        room, count = seg.by_queue(running).room(allowed)
    else:
        chosen_sorted = allowed[running.queues[seg.order]] & ~seg.protected
        chosen_sorted &= ~seg.young(ssn, min_runtime)
        chosen = np.zeros(len(seg.order), dtype=np.bool_)
        chosen[seg.order] = chosen_sorted
        count = np.add.reduceat(chosen_sorted.astype(np.intp), seg.starts)
        room = np.add.reduceat(np.where(chosen_sorted[:, None], seg.requests, 0), seg.starts, axis=0)
    some = count > 0
    return _Summed(ssn, seg.rows[some], np.ascontiguousarray(room[some]), chosen)
