"""Every node's gpushare cards and their use as node × card matrices: deviceshare's working state for
``volcano.sh/gpu-memory`` and ``volcano.sh/gpu-number`` pods, kept across cycles.

:class:`ShareCards` holds, per row (the snapshot's node order) and card position, each card's memory
(0 where a row has fewer cards), the memory its pods use, how many pods share it and whether one holds it
whole. Pods are put on and taken off with :meth:`ShareCards.add`; every change moves the row's stamp on
:attr:`ShareCards.clock`, and what is judged per request is cached and judged again only for the rows
that changed since (a pod's fit and score depend on its row alone), so judging a pod over thousands of
nodes costs the rows that changed, not the cluster.

:meth:`ShareCards.judge` and :meth:`ShareCards.choose` decide exactly as
:func:`extender.core.gpu_cards.decide` does for the gpushare family (the same card rule, order and score
arithmetic; a test compares them over random use); ``choose`` also takes the card a caller prefers
(the fragmentation policy's, when it fits).

Invariants: no card is given beyond its memory or shared once held whole; a row's figures depend on that
row only; ``used``/``sharers``/``whole`` are sums of the holds added, so adding and taking off a hold
leaves them as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.gpu_cards import CardUse, Choice
from extender.core.gpu_frag import Cards
from extender.core.gpu_frag_cache import RowClock, row_key, row_keys
from extender.core.gpus import BINPACK, MEMORY, NUMBER, SPREAD, GpuRequest, NodeGpus

Ints = npt.NDArray[np.int64]
Rows = npt.NDArray[np.intp]
_BIG = np.iinfo(np.int64).max
_FEW_ROWS = 8  # rows judged one by one rather than as arrays


class ShareCards:
    """The gpushare cards of ``rows`` nodes (``gpus``: the rows that have any) and their use."""

    def __init__(self, rows: int, gpus: Mapping[int, NodeGpus]) -> None:
        width = max((len(g.share) for g in gpus.values()), default=0)
        self.memory = np.zeros((rows, width), dtype=np.int64)
        self.index = np.zeros((rows, width), dtype=np.int64)  # each position's card index
        for row, g in gpus.items():
            self.memory[row, : len(g.share)] = [c.memory for c in g.share]
            self.index[row, : len(g.share)] = [c.index for c in g.share]
        self.valid = np.zeros((rows, width), dtype=np.bool_)
        for row, g in gpus.items():
            self.valid[row, : len(g.share)] = True
        self.cards = self.valid.sum(axis=1)
        self.used = np.zeros_like(self.memory)
        self.sharers = np.zeros_like(self.memory)
        self.whole = np.zeros_like(self.memory)  # pods holding the card whole (0 or 1)
        self.clock = RowClock(rows)
        self._judged: dict[
            tuple[str, int, str], tuple[int, npt.NDArray[np.bool_], npt.NDArray[np.float64]]
        ] = {}

    def __len__(self) -> int:
        return len(self.memory)

    # --- use -------------------------------------------------------------------------------------------
    def add(self, row: int, taken: Sequence[tuple[int, int, int]], whole: bool, sign: int) -> None:
        """Put a pod's cards (position, memory, cores) on (sign 1) or off (-1) row ``row``."""
        for i, memory, _ in taken:
            self.used[row, i] += sign * memory
            self.sharers[row, i] += sign
            if whole:
                self.whole[row, i] += sign
        self.clock.touch(row)

    def add_many(self, holds: Sequence[tuple[int, Sequence[tuple[int, int, int]], bool, int]]) -> None:
        """:meth:`add` for many (row, taken, whole, sign) at once (the rows touched once)."""
        rows = [r for r, taken, _, _ in holds for _ in taken]
        cards = [i for _, taken, _, _ in holds for i, _, _ in taken]
        memory = [sign * m for _, taken, _, sign in holds for _, m, _ in taken]
        sign = [s for _, taken, _, s in holds for _ in taken]
        whole = [s if w else 0 for _, taken, w, s in holds for _ in taken]
        at = (np.asarray(rows, dtype=np.intp), np.asarray(cards, dtype=np.intp))
        np.add.at(self.used, at, np.asarray(memory, dtype=np.int64))
        np.add.at(self.sharers, at, np.asarray(sign, dtype=np.int64))
        np.add.at(self.whole, at, np.asarray(whole, dtype=np.int64))
        self.clock.touch(np.unique(np.asarray([r for r, _, _, _ in holds], dtype=np.intp)))

    def update(self, row: int, use: Sequence[CardUse]) -> None:
        """Set row ``row`` to ``use`` (one per card, in order)."""
        n = len(use)
        self.used[row, :n] = [u.memory for u in use]
        self.sharers[row, :n] = [u.sharers for u in use]
        self.whole[row, :n] = [int(u.whole) for u in use]
        self.clock.touch(row)

    def use(self, row: int) -> list[CardUse]:
        """Row ``row``'s cards as :class:`CardUse` (group counts are not kept here)."""
        n = int(self.cards[row])
        return [
            CardUse(memory=int(m), sharers=int(s), whole=bool(w))
            for m, s, w in zip(
                self.used[row, :n].tolist(),
                self.sharers[row, :n].tolist(),
                self.whole[row, :n].tolist(),
                strict=True,
            )
        ]

    def avail(self, rows: Rows | slice = slice(None)) -> Ints:
        """Each card's memory left to share (0 on a card held whole or missing)."""
        out: Ints = np.where(self.whole[rows] > 0, 0, np.maximum(self.memory[rows] - self.used[rows], 0))
        return out

    def frag_cards(self, rows: Rows, cpu: Ints, memory: Ints, model: npt.NDArray[np.intp]) -> Cards:
        """``rows`` as the fragmentation measure reads them (cpu and memory left and model per row)."""
        idle = self.valid[rows] & (self.sharers[rows] == 0) & (self.whole[rows] == 0)
        return Cards(self.memory[rows], self.avail(rows), idle, cpu[rows], memory[rows], model[rows])

    def _frag_arrays(
        self, cpu: Ints, memory: Ints, model: npt.NDArray[np.intp]
    ) -> tuple[npt.NDArray[Any], ...]:
        """Every array :meth:`frag_cards` reads, per row."""
        return (self.memory, self.valid, self.used, self.sharers, self.whole, cpu, memory, model)

    def frag_states(self, rows: Rows, cpu: Ints, memory: Ints, model: npt.NDArray[np.intp]) -> list[bytes]:
        """Each of ``rows``' state as bytes: rows with equal states are equal in :meth:`frag_cards`."""
        return row_keys(self._frag_arrays(cpu, memory, model), rows)

    def frag_state(self, cpu: Ints, memory: Ints, model: npt.NDArray[np.intp]) -> Callable[[int], bytes]:
        """One row's :meth:`frag_states` (the same bytes), for arrays changed in place only."""
        arrays = self._frag_arrays(cpu, memory, model)
        return lambda row: row_key(arrays, row)

    # --- judging ---------------------------------------------------------------------------------------
    def judge(
        self, request: GpuRequest, policy: str
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Per node, whether a gpushare ``request`` fits and its score by ``policy`` (0 where it does not
        fit, and for any policy but binpack and spread). Read-only; cached per ask, rows judged again as
        they change."""
        key = (request.kind, request.amount, policy if policy in (BINPACK, SPREAD) else "")
        seen = self._judged.get(key)
        if seen is None:
            rows = len(self.memory)
            at, fit, score = 0, np.zeros(rows, dtype=np.bool_), np.zeros(rows, dtype=np.float64)
        else:
            at, fit, score = seen
        dirty = self.clock.since(at)
        if len(dirty) > _FEW_ROWS:
            fit[dirty], score[dirty] = self._judge_rows(request, key[2], dirty)
        else:  # a few rows (a placement since): card by card in Python costs less than array calls
            for row in dirty.tolist():
                c = self.choose(row, request, key[2])
                fit[row], score[row] = c.taken is not None, c.score
        self._judged[key] = (self.clock.clock, fit, score)
        return fit, score

    def _judge_rows(
        self, request: GpuRequest, policy: str, rows: Rows
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        n = len(rows)
        score = np.zeros(n, dtype=np.float64)
        if not self.memory.shape[1]:  # no node has gpushare cards
            return np.zeros(n, dtype=np.bool_), score
        valid, used, sharers = self.valid[rows], self.used[rows], self.sharers[rows]
        whole, memory = self.whole[rows] > 0, self.memory[rows]
        if request.kind == NUMBER:
            idle = (valid & (sharers == 0)).sum(axis=1)
            enough: npt.NDArray[np.bool_] = idle >= request.amount
            left = (idle - request.amount).astype(np.float64)
            cards = np.maximum(self.cards[rows], 1).astype(np.float64)
            if policy == BINPACK:
                score = np.where(enough, 100.0 * (1 - left / cards), 0.0)
            elif policy == SPREAD:
                score = np.where(enough, 100.0 * left / cards, 0.0)
            return enough, score
        ok = valid & ~whole & (memory - used >= request.amount)
        fit: npt.NDArray[np.bool_] = np.asarray(ok.any(axis=1), dtype=np.bool_)
        at = np.arange(n)
        if policy == BINPACK:
            pick = np.argmax(np.where(ok, used, -1), axis=1)
            size = np.maximum(memory[at, pick], 1)
            score = np.where(fit, 100.0 * np.minimum(used[at, pick], size) / size, 0.0)
        elif policy == SPREAD:
            pick = np.argmin(np.where(ok, sharers, _BIG), axis=1)
            score = np.where(fit & (sharers[at, pick] == 0), 100.0, 0.0)
        return fit, score

    def choose(self, row: int, request: GpuRequest, policy: str, prefer: int | None = None) -> Choice:
        """The cards ``request`` takes on row ``row`` (as :func:`~extender.core.gpu_cards.decide`; a share
        goes to card ``prefer`` when it fits there), or why it cannot."""
        n = int(self.cards[row])
        if not n:
            return Choice(taken=None, why="no shared GPU cards")
        used, sharers = self.used[row, :n].tolist(), self.sharers[row, :n].tolist()
        whole, memory = (self.whole[row, :n] > 0).tolist(), self.memory[row, :n].tolist()
        if request.kind == NUMBER:
            idle = [i for i in range(n) if sharers[i] == 0]
            if len(idle) < request.amount:
                return Choice(taken=None, why=f"{len(idle)} idle GPU cards of {n}, {request.amount} asked")
            left = len(idle) - request.amount
            score = (
                100.0 * (1 - left / n)
                if policy == BINPACK
                else (100.0 * left / n if policy == SPREAD else 0.0)
            )
            return Choice(taken=tuple((i, 0, 0) for i in idle[: request.amount]), score=score)
        if request.kind != MEMORY:
            return Choice(taken=None, why="not a gpushare ask")
        order = list(range(n))
        if policy == BINPACK:
            order.sort(key=lambda i: -used[i])
        elif policy == SPREAD:
            order.sort(key=lambda i: sharers[i])
        if prefer is not None and 0 <= prefer < n:
            order.insert(0, prefer)
        for i in order:
            if not whole[i] and memory[i] - used[i] >= request.amount:
                if policy == BINPACK:
                    score = 100.0 * min(used[i], memory[i]) / memory[i] if memory[i] else 0.0
                else:
                    score = 100.0 if policy == SPREAD and sharers[i] == 0 else 0.0
                return Choice(taken=((i, request.amount, 0),), score=score)
        most = max((memory[i] - used[i] for i in range(n) if not whole[i]), default=0)
        return Choice(taken=None, why=f"no GPU card has {request.amount} memory free (the most free: {most})")
