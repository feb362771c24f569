"""One node's summed scores (and its fit) in plain floats: the score cache's common refresh, one row changed.

After a placement the cached fit mask and scores of a request are brought up to date for the one node
whose free capacity changed (:class:`~extender.framework.node_cache.NodeCache`). Through numpy that is a
few dozen calls on one-element arrays, each costing far more than its arithmetic; here the same
arithmetic runs on Python numbers, for the scorers that can (:class:`RowScorer`).

Why it is the same, bit for bit: numpy's float64 add, subtract, multiply, divide and abs are the IEEE-754
operations Python's floats perform; an int64 (or an int weight) is converted to float64 rounding to
nearest in both; ``np.maximum``/``np.minimum`` with a constant keep the value unless the constant is
strictly beyond it, as the comparisons below do (a fraction is never -0.0: its numerator is a whole
number and its divisor positive). Each ``node_score_row`` follows its plugin's ``node_score`` step by
step, in the same order, and the terms are summed in plugin order from zero as ``NodeCache`` sums arrays.
A hypothesis test (tests/core/test_row_scores.py) compares both over random rows, requests and weights.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from extender.core.resources import Vector

if TYPE_CHECKING:
    from extender.framework.session import Session


@runtime_checkable
class RowScorer(Protocol):
    """A row-local ``node_score`` plugin that also scores one node alone, as a float: bit for bit what its
    ``node_score`` gives that node (``free[[row]]``, ``rows=[row]``), and None exactly when it gives None.
    One-row fractions come from ``ssn.nodes.row_fraction``, and the row's free capacity is read through
    them alone (so a hypothetical row, :meth:`RowScores.total_at`, scores as ``node_score`` scores it)."""

    def node_score_row(self, ssn: Session, request: Vector, row: int) -> float | None: ...


class RowScores:
    """The one-row fit and scores of a session's ``free`` (owned by its NodeCache)."""

    def __init__(
        self,
        ssn: Session,
        alloc: npt.NDArray[np.int64],
        free: npt.NDArray[np.int64],
        scorers: Sequence[RowScorer],
    ) -> None:
        self._ssn = ssn
        self._alloc = alloc
        self._free = free
        self._scorers = scorers
        # Per resource column: allocatable as floats, and the divisor safe from zero (as NodeCache.fraction).
        self._columns: dict[int, tuple[list[float], list[float]]] = {}
        # The pass under way: (row, request, the request and the row's free capacity as ints, fractions).
        self._pass: tuple[int, Vector, list[int], list[int], dict[int, float]] | None = None

    def fits(self, request: Vector, row: int) -> bool:
        """Whether ``free[row]`` covers ``request`` in every resource (:func:`extender.core.fit.fits`)."""
        return not any(map(operator.lt, self._free[row].tolist(), request.tolist()))

    def total(self, request: Vector, row: int) -> float:
        """The summed scores of node ``row`` for ``request`` (every scorer a :class:`RowScorer`)."""
        return self.total_at(request, row, self._free[row].tolist())

    def total_at(self, request: Vector, row: int, free: list[int]) -> float:
        """:meth:`total` were node ``row``'s free capacity ``free``: a hypothetical row, such as the node
        with copies of a run on it (what ``NodeCache.scores_at`` gives that row; a scorer reads the row's
        free capacity only through :meth:`fraction`, which reads it from the pass)."""
        self._pass = (row, request, request.tolist(), free, {})
        total: float | None = None
        try:
            for p in self._scorers:
                s = p.node_score_row(self._ssn, request, row)
                if s is None:
                    continue
                total = s + 0.0 if total is None else total + s
        finally:
            self._pass = None
        return 0.0 if total is None else total

    def fraction(self, request: Vector, row: int, column: int) -> float:
        """:meth:`NodeCache.fraction` of node ``row`` alone: ``(allocatable - free + request) /
        allocatable`` clipped to [0, 1], an allocatable of 0 dividing by 1."""
        memo = self._pass
        if memo is not None and memo[0] == row and memo[1] is request:
            hit = memo[4].get(column)
            if hit is not None:
                return hit
            asked, free = memo[2][column], memo[3][column]
        else:
            asked, free = int(request[column]), int(self._free[row, column])
        columns = self._columns.get(column)
        if columns is None:
            alloc = self._alloc[:, column].astype(np.float64)
            columns = self._columns[column] = (alloc.tolist(), np.where(alloc > 0, alloc, 1.0).tolist())
        f = columns[0][row] - free
        f += asked
        f /= columns[1][row]
        if f < 0.0:
            f = 0.0
        if f > 1.0:
            f = 1.0
        if memo is not None and memo[0] == row and memo[1] is request:
            memo[4][column] = f
        return f
