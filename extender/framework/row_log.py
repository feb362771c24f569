"""Which rows of the session's ``free`` changed since a recent clock, from a log of the changes.

:class:`~extender.framework.node_cache.NodeCache` stamps each changed row with its row clock; asking
which rows changed since clock ``c`` is a pass over every row's stamp (``stamp > c``). After a placement
the answer is one row, asked for every request the next pod's fit and scores read: the log answers that
from the changes alone. It holds one entry per change, the row and the clock after it (never decreasing,
several rows of one change share it), and answers only while it reaches back to ``c`` and few changes
followed; otherwise the caller makes the pass. Exactly the rows the pass finds, with repeats (property
test: tests/core/test_row_scores.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Final

LOGGED: Final = 4096  # changes kept before the log starts afresh
FEW: Final = 64  # up to this many changes since a clock, the log answers


class RowLog:
    """The changes to rows after clock ``since`` (two lists of ints rather than pairs: no object for the
    garbage collector to walk)."""

    def __init__(self) -> None:
        self.since = 0
        self._rows: list[int] = []
        self._clocks: list[int] = []

    def touched(self, clock: int, row: int) -> None:
        """Row ``row`` changed, the clock now ``clock`` (one more than before)."""
        if len(self._rows) >= LOGGED:
            self._rows, self._clocks, self.since = [], [], clock - 1
        self._rows.append(row)
        self._clocks.append(clock)

    def touched_rows(self, clock: int, rows: Sequence[int]) -> None:
        """These rows changed, the clock now ``clock`` (``len(rows)`` more than before)."""
        if len(rows) > FEW or len(self._rows) + len(rows) > LOGGED:
            self._rows, self._clocks, self.since = [], [], clock  # (earlier clocks: the pass answers)
        else:
            self._rows.extend([int(row) for row in rows])
            self._clocks.extend([clock] * len(rows))

    def after(self, start: int, clock: int) -> list[int] | None:
        """The rows changed after clock ``start`` (a row may repeat), the clock now ``clock``; None when
        the log does not reach back to ``start`` or more than a few changes followed it."""
        if start < self.since or clock - start > FEW:
            return None
        return self._rows[bisect.bisect_right(self._clocks, start) :]

    def one(self, start: int, clock: int) -> int | None:
        """The one row changed after clock ``start`` (perhaps more than once), or None."""
        rows = self.after(start, clock)
        if not rows:
            return None
        row = rows[0]
        return row if all(r == row for r in rows) else None
