"""Fit masks and summed node scores per request vector, kept exact by a clock on the rows of ``free``.

The session's free capacity (``free``, one row per node) changes a row or a few at a time: a placement,
an eviction, an undo. Every such change is told (:meth:`NodeCache.touched`, by the Statement) and stamps
the rows with a clock that counts changes. A fit mask or a score array is kept per request vector with
the clock it was computed at, and brought up to date by recomputing only the rows stamped since; when
more than a quarter of the rows changed, a full pass is cheaper and is made instead. The shortfall a
refusal quotes (:func:`extender.core.fit.shortfall`) is kept per request and candidate rows while the clock
stands still: in a cycle with a long queue, every group after the room is gone asks for the same one.

Invariants (proved by hypothesis in tests/core/test_score_cache.py, test_node_predicate_cache.py and
test_batch.py):

- a cached mask or score array is always equal, bit for bit, to a fresh computation over the current
  ``free``: so caching changes no placement. This holds because the plugins' ``node_fit`` and (when
  scores are cached) ``node_score`` are row-local (see :mod:`extender.framework.plugin`), a row computed
  alone comes out as it does among all rows, and scores are summed in plugin order from zero either way;
- ``free`` is the session's own array, never rebound: the cache reads it, the Statement writes it;
- scores are cached only when every scorer is row-local (``Hooks.row_local_scores``); otherwise every
  call is a fresh pass over all nodes;
- a shortfall (the closest node and what it lacks, quoted in a reason) is a function of ``free``, the
  request and the candidate mask alone: it is kept per (request, mask) only while the clock stands still,
  so the gangs of one shape that fit nowhere (a full cluster, thousands of them) share one answer.

What it mirrors in Volcano: nothing directly (Volcano recomputes per task); it is what lets pumice run
Volcano's per-task loop over thousands of nodes and pods in one cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.resources import Vector
from extender.framework.hooks import Hooks
from extender.framework.plugin import Rows, Scores
from extender.framework.row_log import RowLog
from extender.framework.row_scores import RowScores

if TYPE_CHECKING:
    from extender.framework.session import Session


class NodeCache:
    """The session's node fit and score caches (the Session's methods of the same names call these)."""

    def __init__(
        self,
        ssn: Session,
        hooks: Hooks,
        free: npt.NDArray[np.int64],
        *,
        cache_scores: bool,
        fast_rows: bool = True,
    ) -> None:
        self._ssn = ssn
        self._fitters = hooks.node_fit
        self._scorers = hooks.node_score
        self._cache_scores = cache_scores and hooks.row_local_scores
        self.free = free
        self._alloc = ssn.snapshot.alloc
        self._nodes = len(ssn.snapshot.nodes)
        # A clock counting changes to rows of ``free``, the clock at each row's last change, and per request
        # vector the fit mask (or summed scores) as of some clock.
        self._clock = 0
        self._row_clock = np.zeros(self._nodes, dtype=np.int64)
        self._log = RowLog()  # the changes, so that "what changed since" a recent clock costs them alone
        # (since, clock, rows, their free capacity): the last answer of _touched_since.
        self._rows_since: tuple[int, int, Rows, npt.NDArray[np.int64]] | None = None
        self._fit_masks: dict[bytes, tuple[fit.Mask, int]] = {}
        # Shortfalls per (request, candidate mask), all as of clock ``_shortfalls_at`` (see ``shortfall``).
        self._cache_shortfalls = cache_scores
        self._shortfalls: dict[tuple[bytes, bytes], fit.Shortfall | None] = {}
        self._shortfalls_at = 0
        self._scores: dict[bytes, tuple[Scores, int]] = {}
        # Allocatable per resource column as floats and a divisor safe from zero (see ``fraction``), and
        # the fractions of the scoring pass under way: (free, rows, request, column -> fractions).
        self._alloc_columns: dict[int, tuple[Scores, Scores]] = {}
        self._fractions: tuple[npt.NDArray[np.int64], Rows | None, Vector, dict[int, Scores]] | None = None
        # One row's fit and scores in plain floats (``one_row``, see row_scores; a hypothetical row too:
        # total_at), when every scorer can score a row so and no node_fit plugin takes part (rows_alone).
        row_scorers = hooks.row_score
        self.one_row = RowScores(ssn, self._alloc, free, row_scorers)
        self._row_scores = fast_rows and len(row_scorers) == len(self._scorers)
        self._row_fits = fast_rows and not self._fitters
        self.rows_alone = self._row_scores and self._row_fits

    # --- the row clock ------------------------------------------------------------------------------
    def touched(self, node: int) -> None:
        """Record that ``free[node]`` changed (Statement does, for every place and undo)."""
        self._clock += 1
        self._row_clock[node] = self._clock
        self._log.touched(self._clock, node)

    def touched_rows(self, nodes: Sequence[int]) -> None:
        """Record that these rows of ``free`` changed (one change each)."""
        self._clock += len(nodes)
        self._row_clock[nodes] = self._clock
        self._log.touched_rows(self._clock, nodes)

    @property
    def clock(self) -> int:
        """The row clock now: how many changes ``free`` has seen."""
        return self._clock

    def changed_since(self, start: int) -> Rows:
        """The rows of ``free`` changed after clock ``start``, ascending (read-only)."""
        if start >= self._clock:
            return np.zeros(0, dtype=np.intp)
        return self._touched_since(start)[0]

    def row_clocks(self, rows: Rows) -> npt.NDArray[np.int64]:
        """The clock at the last change to each of ``rows`` (0: unchanged this cycle)."""
        out: npt.NDArray[np.int64] = self._row_clock[rows]
        return out

    def last_change(self, rows: Rows) -> int:
        """The clock at the latest change to any of ``rows`` (0: none changed this cycle)."""
        return int(self._row_clock[rows].max()) if len(rows) else 0

    def _touched_since(self, start: int) -> tuple[Rows, npt.NDArray[np.int64]]:
        """Rows changed after clock ``start``, and their free capacity now (the fit mask and the scores of
        a request usually ask in turn for the same ``start``: the last answer is kept)."""
        last = self._rows_since
        if last is not None and last[0] == start and last[1] == self._clock:
            return last[2], last[3]
        logged = self._log.after(start, self._clock)
        if logged is None:
            rows = np.flatnonzero(self._row_clock > start)
        else:  # (ascending and distinct, as flatnonzero gives them)
            rows = np.array(sorted(set(logged)), dtype=np.intp)
        free = self.free[rows]
        self._rows_since = (start, self._clock, rows, free)
        return rows, free

    def _stale(self, since: int) -> bool:
        # Past this many changed rows a full recompute is cheaper than indexing them (a changed row costs
        # a few times what a row of a full pass does; a call costs tens of rows).
        if (self._clock - since) * 4 <= self._nodes:
            return False  # fewer changes than that, let alone changed rows
        return len(self._touched_since(since)[0]) * 4 > self._nodes

    # --- fit ----------------------------------------------------------------------------------------
    def fit_mask(self, request: Vector) -> fit.Mask:
        """Nodes whose free capacity now covers ``request``, and that the ``node_fit`` plugins let take it
        (read-only: callers must not modify it)."""
        key = request.tobytes()
        cached = self._fit_masks.get(key)
        end = self._clock
        if cached is None or self._stale(cached[1]):
            mask = self.fits_at(request, self.free, None)
        else:
            mask, start = cached
            if start < end:
                one = self._log.one(start, end) if self._row_fits else None
                if one is not None:
                    mask[one] = self.one_row.fits(request, one)
                else:
                    rows, free = self._touched_since(start)
                    mask[rows] = self.fits_at(request, free, rows)
        self._fit_masks[key] = (mask, end)
        return mask

    def fits_at(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None) -> fit.Mask:
        """Whether nodes ``rows`` (or every node), with ``free`` free (possibly hypothetical, row ``i``
        for node ``rows[i]``), may take ``request``: resources cover it and every ``node_fit`` allows it.
        Bit-for-bit what :meth:`fit_mask` gives those nodes once their free capacity is that."""
        mask = fit.fits(free, request)
        ssn = self._ssn
        for p in self._fitters:
            m = p.node_fit(ssn, request, free) if rows is None else p.node_fit(ssn, request, free, rows)
            if m is not None:
                mask &= m
        return mask

    def fit_refusal(self, request: Vector, candidates: fit.Mask) -> str | None:
        """Why the ``node_fit`` plugins refuse ``request`` on ``candidates`` although they have room for
        it, told for the best-scored of them; None when some node with room takes it (or none has room)."""
        if not self._fitters:
            return None
        roomy = candidates & fit.fits(self.free, request)
        if not roomy.any() or (roomy & self.fit_mask(request)).any():
            return None
        row = int(np.argmax(np.where(roomy, self.scores(request), -np.inf)))
        free = self.free[row].copy()
        for p in self._fitters:
            reason = p.node_fit_reason(self._ssn, request, free, row)
            if reason is not None:
                n = int(roomy.sum())
                return reason if n == 1 else f"{reason} (and so for all {n} nodes with room)"
        return None

    def shortfall(self, request: Vector, mask: fit.Mask) -> fit.Shortfall | None:
        """:func:`extender.core.fit.shortfall` over the session's ``free``: the same answer for the same
        request and mask until a row of ``free`` changes."""
        index, names = self._ssn.snapshot.index, self._ssn.snapshot.node_names
        if not self._cache_shortfalls:
            return fit.shortfall(self.free, request, mask, index, names)
        if self._shortfalls_at != self._clock:
            self._shortfalls.clear()  # (answers for an older ``free``: never asked for again)
            self._shortfalls_at = self._clock
        key = (request.tobytes(), mask.tobytes())
        if key in self._shortfalls:
            return self._shortfalls[key]
        out = self._shortfalls[key] = fit.shortfall(self.free, request, mask, index, names)
        return out

    # --- scores -------------------------------------------------------------------------------------
    def scores(self, request: Vector) -> Scores:
        """Summed plugin scores per node for ``request`` (read-only: callers must not modify it)."""
        if not self._cache_scores:
            return self._sum_scores(request, self.free, None)
        key = request.tobytes()
        cached = self._scores.get(key)
        end = self._clock
        if cached is None or self._stale(cached[1]):
            total = self._sum_scores(request, self.free, None)
        else:
            total, start = cached
            if start < end:
                one = self._log.one(start, end) if self._row_scores else None
                if one is not None:
                    total[one] = self.one_row.total(request, one)
                else:
                    rows, free = self._touched_since(start)
                    total[rows] = self._sum_scores(request, free, rows)
        self._scores[key] = (total, end)
        return total

    def scores_at(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows) -> Scores:
        """Summed scores nodes ``rows`` would get for ``request`` with ``free`` free (row ``i`` for node
        ``rows[i]``; only when every scorer is row-local, see ``Session.batchable``): bit-for-bit what
        :meth:`scores` gives those nodes once their free capacity is that."""
        return self._sum_scores(request, free, rows)

    def fraction(
        self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None, column: int
    ) -> Scores:
        """Per node (``rows``, or every node, with ``free`` as in :meth:`Plugin.node_score`), the share of
        its allocatable ``column`` in use once the pod is on it: ``(allocatable - free + request) /
        allocatable`` clipped to [0, 1], an allocatable of 0 dividing by 1. What nodeorder's and binpack's
        scores are made of; within one scoring pass it is computed once for all of them (read-only)."""
        memo = self._fractions
        if memo is not None and memo[0] is free and memo[1] is rows and memo[2] is request:
            hit = memo[3].get(column)
            if hit is not None:
                return hit
        columns = self._alloc_columns.get(column)
        if columns is None:
            alloc = self._alloc[:, column].astype(np.float64)
            columns = self._alloc_columns[column] = (alloc, np.where(alloc > 0, alloc, 1.0))
        alloc, safe = columns
        if rows is not None:
            alloc, safe = alloc[rows], safe[rows]
        # In-place ufuncs rather than clip(): the same floats, fewer calls (this runs for every placement).
        f = alloc - free[:, column]
        f += request[column]
        f /= safe
        np.maximum(f, 0.0, out=f)
        np.minimum(f, 1.0, out=f)
        if memo is not None and memo[0] is free and memo[1] is rows and memo[2] is request:
            memo[3][column] = f
        return f

    def row_fraction(self, request: Vector, row: int, column: int) -> float:
        """:meth:`fraction` of node ``row`` alone with its free capacity now, as a float (bit for bit the
        same; what :class:`~extender.framework.row_scores.RowScorer` plugins are made of)."""
        return self.one_row.fraction(request, row, column)

    def _sum_scores(self, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None) -> Scores:
        # Summed in plugin order from zero, for all rows or a subset alike: the same floats either way
        # (the first term plus 0.0 is zero plus it, in one call).
        total: Scores | None = None
        ssn = self._ssn
        self._fractions = (free, rows, request, {})
        try:
            for p in self._scorers:
                s = (
                    p.node_score(ssn, request, free)
                    if rows is None
                    else p.node_score(ssn, request, free, rows)
                )
                if s is None:
                    continue
                if total is None:
                    total = s + 0.0
                else:
                    total += s
        finally:
            self._fractions = None
        if total is None:
            total = np.zeros(len(free), dtype=np.float64)
        return total
