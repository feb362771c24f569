"""The fragmentation figures of :mod:`extender.core.gpu_frag` kept across placements and cycles, so that
a placement costs the rows it changed and a row state seen before costs a look-up.

:class:`RowClock` says which rows changed since a figure was computed; :class:`FragCache` keeps, per row,
the terms and, per pod shape asked about, the rise, card and score, and computes again only the rows the
clock says changed. Those it looks up first by the row's *state* (every card's memory, room and idleness,
and the cpu, memory and GPU model left), as figures of a state seen before: a row's figures are a function
of its state alone, bit for bit (the measure is elementwise, or sums over an axis of fixed length), and
states repeat a lot. A pod placed and then taken off gives its row back the state it had; the next cycle
plans the same pending pods on the same states; cards of one size take a handful of free amounts, and idle
nodes of one kind are all alike. So the warm cycle finds nearly every changed row's figures known, and the
first computation over a cluster computes each distinct state once. One row's figures can be had alone
(:meth:`FragCache.figures`, the card of a pod just placed), and :meth:`FragCache.plenty` says from which
cpu and memory left on a row they no longer depend on them (the owner need not count such a change).

Invariants: :meth:`FragCache.rise` returns exactly what :class:`~extender.core.gpu_frag.FragMeasure`
computes afresh over every row (a property test compares them over random card states, shape mixes and
changes); the states known are at most :data:`_STATES` (the oldest go first).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.gpu_frag import Cards, Floats, FragMeasure, Shape, Terms, placement_score, tie_break

_RISES = 256  # pod shapes whose rises are kept (the least recently asked go first)
_STATES = 1 << 14  # (shape, row state) figures known (~9 MB with 8 cards a node); past it the older half goes
_LOGGED = 4096  # touches a RowClock logs before it starts its log afresh
_FEW = 64  # up to this many touches since, the log answers; beyond, a pass over the stamps
Figures = tuple[float, int, float]  # a row's rise, card and score for one shape


class RowClock:
    """When each row last changed (``stamp``, on a clock that only moves forward): figures computed at
    clock ``c`` stand for every row whose stamp is not past ``c``. The rows touched are logged too, so
    asking what changed since a recent clock costs the changes, not the rows."""

    def __init__(self, rows: int) -> None:
        self.clock = 1
        self.stamp = np.ones(rows, dtype=np.int64)
        self._first = self.clock  # the log holds every touch after this clock
        # The rows of touch i, at clock _first + 1 + i (one row as an int: the common case, a placement).
        self._log: list[npt.NDArray[np.intp] | int] = []

    def touch(self, rows: npt.NDArray[np.intp] | Sequence[int] | int) -> None:
        self.clock += 1
        self.stamp[rows] = self.clock
        if len(self._log) >= _LOGGED:
            self._log, self._first = [], self.clock - 1
        if isinstance(rows, int):  # (one row, the common case: a pod put on or taken off)
            self._log.append(rows)
        else:
            self._log.append(np.atleast_1d(np.asarray(rows, dtype=np.intp)))

    def since(self, at: int) -> npt.NDArray[np.intp]:
        """The rows changed after clock ``at``."""
        if at >= self.clock:
            return np.zeros(0, dtype=np.intp)
        if at >= self._first and self.clock - at <= _FEW:
            touched = self._log[at - self._first :]
            if all(isinstance(t, int) for t in touched):
                # (placements: a row touched for its cpu and then its cards; a set costs less here)
                return np.array(sorted(set(touched)), dtype=np.intp)
            if len(touched) == 1:
                return touched[0]  # type: ignore[return-value]  # (not an int: the test above)
            arrays = [np.array([t], dtype=np.intp) if isinstance(t, int) else t for t in touched]
            out: npt.NDArray[np.intp] = np.unique(np.concatenate(arrays))
            return out
        return np.flatnonzero(self.stamp > at)


def row_key(arrays: Sequence[npt.NDArray[Any]], row: int) -> bytes:
    """One row's :func:`row_keys` key (the same bytes), with no array built."""
    return b"".join([a[row].tobytes() for a in arrays])


def row_keys(arrays: Sequence[npt.NDArray[Any]], rows: npt.NDArray[np.intp]) -> list[bytes]:
    """Per row of ``rows``, the bytes of that row of every array (1-d arrays: one value per row; 2-d: a
    row of values) one after the other: with arrays of fixed shapes and dtypes, rows with equal keys are
    equal in every array."""
    if len(rows) == 1:  # (one row, the common case after a placement)
        return [row_key(arrays, int(rows[0]))]
    n = len(rows)
    parts = [np.ascontiguousarray(a[rows]).reshape(n, -1).view(np.uint8) for a in arrays]
    m = np.ascontiguousarray(np.concatenate(parts, axis=1))
    keys: list[bytes] = m.view(np.dtype((np.void, m.shape[1]))).ravel().tolist()  # type: ignore[assignment]
    return keys


def state_keys(cards: Cards) -> list[bytes]:
    """Each row's state as bytes: rows with equal keys have equal figures for any shape."""
    fields = (cards.size, cards.avail, cards.idle, cards.cpu, cards.memory, cards.model)
    return row_keys(fields, np.arange(len(cards.cpu), dtype=np.intp))


class FragCache:
    """:class:`~extender.core.gpu_frag.FragMeasure` over every row of a cluster, kept per row and per row
    state (see the module docstring): the terms of every row, and per pod shape asked about the rise, card
    and score on every row. ``cards`` gives the rows asked for (the owner's current state); ``width``: the
    most cards a node has; ``states``: each row's state as bytes, such that rows with equal states have
    equal ``cards`` (cheaper than the default, :func:`state_keys` of ``cards``); ``best_fit``: see
    :func:`~extender.core.gpu_frag.tie_break`."""

    def __init__(
        self,
        measure: FragMeasure,
        clock: RowClock,
        cards: Callable[[npt.NDArray[np.intp]], Cards],
        width: int = 8,
        states: Callable[[npt.NDArray[np.intp]], list[bytes]] | None = None,
        state: Callable[[int], bytes] | None = None,
        best_fit: bool = False,
    ) -> None:
        self.measure = measure
        self.clock = clock
        self._cards = cards
        self._states = states
        self._state = state  # one row's key, as ``states`` gives it (a placement's row: no array built)
        self.width = max(width, 1)
        self.best_fit = best_fit  # ties of a share's rises: the tightest card (gpu_frag.tie_break)
        rows, t = len(clock.stamp), len(measure.mix)
        self._terms = Terms(
            count=np.zeros((rows, t), dtype=np.int64),
            small=np.zeros((rows, t), dtype=np.float64),
            free=np.zeros(rows, dtype=np.float64),
            frag=np.zeros(rows, dtype=np.float64),
        )
        self._terms_at = 0
        # per shape: (clock, rise, card, score, the shape's id in _known); ids are never reused
        self._rises: dict[Shape, tuple[int, Floats, npt.NDArray[np.intp], Floats, int]] = {}
        self._ids = 0
        self._known: dict[tuple[int, bytes], Figures] = {}
        mix = measure.mix
        # The most cpu and memory any shape of the mix needs, plus the most a shape asked about takes.
        self._need = (max(0, int(mix.cpu.max(initial=0))), max(0, int(mix.memory.max(initial=0))))
        self._takes = (0, 0)

    def plenty(self) -> tuple[int, int]:
        """Cpu and memory left from which on a row's figures (and terms) no longer depend on them: with
        at least this much, every shape of the mix fits the cpu and memory left before and after any
        shape asked about so far is placed, so every comparison with them in the measure is true. A row
        whose cpu and memory change from one such amount to another need not be computed again."""
        return self._need[0] + self._takes[0], self._need[1] + self._takes[1]

    def terms(self) -> Terms:
        """Every row's terms (read-only), current."""
        dirty = self.clock.since(self._terms_at)
        if len(dirty):
            t = self.measure.terms(self._cards(dirty))
            self._terms.count[dirty] = t.count
            self._terms.small[dirty] = t.small
            self._terms.free[dirty] = t.free
            self._terms.frag[dirty] = t.frag
        self._terms_at = self.clock.clock
        return self._terms

    def rise(self, shape: Shape) -> tuple[Floats, npt.NDArray[np.intp], Floats]:
        """Per row: how much ``shape`` placed there raises the fragmentation (inf where a shared card
        cannot take it; whether whole cards, cpu or memory suffice is not checked), for a share the card,
        and the placement's score (:func:`~extender.core.gpu_frag.placement_score`). Read-only."""
        seen = self._rises.pop(shape, None)
        if seen is None:
            rows = len(self.clock.stamp)
            self._ids += 1
            self._takes = (max(self._takes[0], shape.cpu), max(self._takes[1], shape.memory))
            at, sid = 0, self._ids
            rise, card, score = np.zeros(rows), np.zeros(rows, dtype=np.intp), np.zeros(rows)
        else:
            at, rise, card, score, sid = seen
        dirty = self.clock.since(at)
        if len(dirty) == 1:
            row = int(dirty[0])
            rise[row], card[row], score[row] = self._row(shape, sid, row)
        elif len(dirty):
            figures = self._figures(shape, sid, dirty)
            n = len(figures)
            rise[dirty] = np.fromiter((f[0] for f in figures), np.float64, n)
            card[dirty] = np.fromiter((f[1] for f in figures), np.intp, n)
            score[dirty] = np.fromiter((f[2] for f in figures), np.float64, n)
        self._rises[shape] = (self.clock.clock, rise, card, score, sid)  # (most recently asked last)
        while len(self._rises) > _RISES:
            del self._rises[next(iter(self._rises))]
        return rise, card, score

    def figures(self, shape: Shape, row: int) -> Figures:
        """Row ``row``'s rise, card and score for ``shape`` now: what :meth:`rise` would give it, without
        bringing the other rows' figures up to date (they are, when next asked)."""
        seen = self._rises.get(shape)
        if seen is None:
            rise, card, score = self.rise(shape)
            return float(rise[row]), int(card[row]), float(score[row])
        if seen[0] >= self.clock.clock or self.clock.stamp[row] <= seen[0]:
            return float(seen[1][row]), int(seen[2][row]), float(seen[3][row])
        return self._row(shape, seen[4], row)

    def _row(self, shape: Shape, sid: int, row: int) -> Figures:
        """Row ``row``'s figures (:meth:`_figures` of that row alone)."""
        if self._state is not None:
            found = self._known.get((sid, self._state(row)))
            if found is not None:
                return found
        return self._figures(shape, sid, np.array([row], dtype=np.intp))[0]

    def _figures(self, shape: Shape, sid: int, rows: npt.NDArray[np.intp]) -> list[Figures]:
        """The figures of ``rows``: those of a known state looked up, each other state computed once."""
        part = None if self._states is not None else self._cards(rows)
        keys = state_keys(part) if part is not None else self._states(rows)  # type: ignore[misc]
        known = self._known
        found = [known.get((sid, k)) for k in keys]
        missing: dict[bytes, int] = {}
        for i, f in enumerate(found):
            if f is None:
                missing.setdefault(keys[i], i)
        if not missing:
            return found  # type: ignore[return-value]  # (none is None)
        at = np.fromiter(missing.values(), np.intp, len(missing))
        fresh = self._cards(rows[at]) if part is None else part.take(at)
        new = dict(zip(missing, self._compute(fresh, shape), strict=True))
        for k, f in new.items():
            known[(sid, k)] = f
        if len(known) > _STATES:  # keep the newer half (a dict keeps insertion order)
            self._known = dict(islice(known.items(), len(known) - _STATES // 2, None))
        return [f if f is not None else new[k] for f, k in zip(found, keys, strict=True)]

    def _compute(self, cards: Cards, shape: Shape) -> list[Figures]:
        """The figures of every row of ``cards``, computed (the plain computation)."""
        terms = self.measure.terms(cards)
        card = np.zeros(len(cards.cpu), dtype=np.intp)
        if shape.share:
            rise, card = self.measure.share_delta(cards, terms, shape)
        elif shape.cards:
            rise = self.measure.whole_delta(cards, terms, shape)
        else:
            rise = self.measure.cpu_delta(cards, terms, shape)
        left = tie_break(cards, terms, shape, rise, card, self.width, best_fit=self.best_fit)
        score = placement_score(rise, left, self.width)
        return list(zip(rise.tolist(), card.tolist(), score.tolist(), strict=True))
