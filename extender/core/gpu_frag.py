"""GPU fragmentation for the pod shapes that arrive: the measure, and how much a placement raises it.

A node's idle GPU is *fragmented for a pod shape* when that shape cannot use it: all of it when the shape
does not fit on the node at all (too few cards with enough room, too little cpu or memory left, a GPU
model it may not use), else the part on cards too small for it (cards in use, for a shape that takes
whole cards; cards with less room than its share, for one that shares a card). A node's *expected
fragmentation* weighs that by how often each shape arrives (:class:`Mix`): the measure of
"Beware of Fragmentation" (Weng et al., USENIX ATC '23), here with memory counted as well as cpu and
amounts in cards (a card's free memory over its memory), so nodes with cards of different sizes compare.
As in the paper, a shape barred from a node's GPU model finds all its idle GPU fragmented
(:class:`Mix` can instead weigh the shapes per model).

:class:`FragMeasure` evaluates it over many nodes at once (node × card × shape arrays) and, for one pod,
what each node's fragmentation would become with the pod on it (on each card it could take, for a pod
sharing a card): the placement that raises it least leaves the most GPU usable by what comes next.
Everything is elementwise or a sum over the last axis of a fixed length, so a row's figures come out
bit-for-bit the same whichever rows are evaluated with it: a row's figures are a function of its state
alone, which :mod:`extender.core.gpu_frag_cache` relies on to keep them per row and per row state.

Invariants: pure (no state beyond the mix it is built with); a node without cards has no fragmentation;
a shape without GPUs is not part of a mix (it cannot use idle GPU whatever the placement, so it would add
the same to every node), though where a pod without GPUs goes still changes the measure through the cpu
and memory it takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

_NEVER = 1 << 30
_FIRST = np.ones(1, dtype=np.bool_)  # (a leading True: np.r_ is several times slower on a few rows)
QUANTUM = 0.04  # rises of the fragmentation closer than this (in cards) count alike
_FIRST_MIX = 8  # pods seen before the first mix is built (until then every shape seen weighs alike)
_MIX_SHAPES = 256  # the most shapes a mix weighs (each costs a column in every figure)
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Shape:
    """What a pod asks, as the measure sees it: ``cards`` whole cards, or ``share`` memory of one card
    (neither: no GPU), ``cpu`` (milli), ``memory`` (bytes) and the GPU ``models`` it may use (sorted;
    empty: any)."""

    cards: int = 0
    share: int = 0
    cpu: int = 0
    memory: int = 0
    models: tuple[str, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.cards > 0 or self.share > 0


@dataclass(frozen=True, slots=True)
class Cards:
    """Rows of nodes as the measure reads them: per card its memory ``size`` (0: no card there), the
    memory left to share (``avail``: 0 on a card held whole) and whether it is ``idle`` (nobody on it);
    per node the cpu and memory left and its GPU ``model`` id (see :class:`Mix`)."""

    size: Ints
    avail: Ints
    idle: Bools
    cpu: Ints
    memory: Ints
    model: npt.NDArray[np.intp]

    def take(self, rows: npt.NDArray[np.intp]) -> Cards:
        return Cards(
            self.size[rows],
            self.avail[rows],
            self.idle[rows],
            self.cpu[rows],
            self.memory[rows],
            self.model[rows],
        )


class Mix:
    """Weighted GPU pod shapes over the GPU models of a cluster (``models``; id ``len(models)`` is a node
    whose model is unknown, which only shapes naming no model may use). ``per_model``: each model weighs
    the shapes that may use it, renormalized (a node is judged by what can come to it); else one weighting
    for every node, where a shape that may not use a node's model finds all its idle GPU fragmented (the
    paper's "no access")."""

    def __init__(
        self,
        shapes: Sequence[tuple[Shape, float]],
        models: Sequence[str],
        *,
        per_model: bool = True,
        cpu_shapes: bool = False,
    ) -> None:
        """``cpu_shapes``: keep shapes without GPUs too, which can use no idle GPU (the paper counts them
        so: every placement's rise then differs by the same amount, so they never change a choice)."""
        gpu = [(s, w) for s, w in shapes if (s.gpu or cpu_shapes) and w > 0]
        self.shapes = tuple(s for s, _ in gpu)
        n = len(gpu)
        self.share = np.fromiter((s.share for s in self.shapes), np.int64, n)
        self.whole = np.fromiter((s.share == 0 for s in self.shapes), np.bool_, n)
        # A shape without GPUs needs more idle cards than any node has: it never uses idle GPU.
        self.need = np.fromiter(
            (1 if s.share else s.cards if s.cards else _NEVER for s in self.shapes), np.int64, n
        )
        self.cpu = np.fromiter((s.cpu for s in self.shapes), np.int64, n)
        self.memory = np.fromiter((s.memory for s in self.shapes), np.int64, n)
        pos = {m: i for i, m in enumerate(models)}
        access = np.zeros((len(models) + 1, n), dtype=np.bool_)
        for t, s in enumerate(self.shapes):
            if not s.models:
                access[:, t] = True
            else:
                access[[pos[m] for m in s.models if m in pos], t] = True
        self.access = access
        raw = np.fromiter((w for _, w in gpu), np.float64, n)
        # per model: a shape counts on the models it may use; else (the paper's) on every node alike
        weights = np.where(access, raw, 0.0) if per_model else np.broadcast_to(raw, access.shape).copy()
        sums = weights.sum(axis=1, keepdims=True)
        self.weight: Floats = np.divide(weights, sums, out=np.zeros_like(weights), where=sums > 0)

    def __len__(self) -> int:
        return len(self.shapes)


@dataclass(frozen=True, slots=True)
class Terms:
    """Per row and shape of a mix: cards that fit the shape (``count``), the free part of the cards
    that do not (``small``, in cards); per row the free GPU (``free``, in cards) and the fragmentation."""

    count: Ints
    small: Floats
    free: Floats
    frag: Floats


class FragMeasure:
    """The measure over a :class:`Mix` (see the module docstring)."""

    def __init__(self, mix: Mix) -> None:
        self.mix = mix

    def _fits(self, avail: Ints, idle: Bools) -> Bools:
        """(rows, cards, shapes): whether each card can serve each shape (a share: room enough; whole
        cards: idle)."""
        m = self.mix
        room = avail[:, :, None] >= m.share[None, None, :]
        out: Bools = np.where(m.whole[None, None, :], idle[:, :, None], room)
        return out

    def _frag(
        self, count: Ints, small: Floats, free: Floats, cpu: Ints, memory: Ints, model: npt.NDArray[np.intp]
    ) -> Floats:
        """Σ_shape weight × (small if the shape fits, else all free GPU), over the last axis; the leading
        axes of ``count``/``small`` are those of ``free``/``cpu``/``memory``/``model`` plus shapes."""
        m = self.mix
        ok = m.access[model] & (count >= m.need) & (cpu[..., None] >= m.cpu) & (memory[..., None] >= m.memory)
        f = np.where(ok, small, free[..., None])
        out: Floats = (f * m.weight[model]).sum(axis=-1)
        return out

    def terms(self, cards: Cards) -> Terms:
        """The terms of every row of ``cards``."""
        size = np.maximum(cards.size, 1)
        frac = cards.avail / size
        fits = self._fits(cards.avail, cards.idle)
        count = fits.sum(axis=1)
        small: Floats = np.where(fits, 0.0, frac[:, :, None]).sum(axis=1)
        free: Floats = frac.sum(axis=1)
        frag = self._frag(count, small, free, cards.cpu, cards.memory, cards.model)
        return Terms(count=count, small=small, free=free, frag=frag)

    def share_delta(self, cards: Cards, terms: Terms, shape: Shape) -> tuple[Floats, npt.NDArray[np.intp]]:
        """For a pod sharing one card (``shape.share``), per row: the least rise of the fragmentation over
        the cards that can take it (inf where none can) and that card (of equal rises the fullest, then
        the first). Cards of a row alike (room, idle, size) are evaluated once."""
        m = self.mix
        rows = len(cards.cpu)
        best = np.full(rows, np.inf)
        card = np.zeros(rows, dtype=np.intp)
        r, c = np.nonzero((cards.avail >= shape.share) & (cards.size > 0))
        if not len(r):
            return best, card
        avail, idle, size = cards.avail[r, c], cards.idle[r, c], cards.size[r, c]
        # One of each (row, room, idle, size), the first card first; rows in order, fullest first.
        order = np.lexsort((c, size, idle, avail, r))
        r, c, avail, idle, size = r[order], c[order], avail[order], idle[order], size[order]
        first = np.ones(len(r), dtype=np.bool_)
        first[1:] = (
            (r[1:] != r[:-1]) | (avail[1:] != avail[:-1]) | (idle[1:] != idle[:-1]) | (size[1:] != size[:-1])
        )
        r, c, avail, idle, size = r[first], c[first], avail[first], idle[first], size[first]
        after = avail - shape.share
        frac, frac_after = avail / size, after / size
        fits = np.where(m.whole[None, :], idle[:, None], avail[:, None] >= m.share[None, :])
        fits_after = (after[:, None] >= m.share[None, :]) & ~m.whole[None, :]
        count = terms.count[r] - fits + fits_after
        small = (
            terms.small[r]
            - np.where(fits, 0.0, frac[:, None])
            + np.where(fits_after, 0.0, frac_after[:, None])
        )
        free = terms.free[r] - shape.share / size
        rise = self._frag(
            count, small, free, cards.cpu[r] - shape.cpu, cards.memory[r] - shape.memory, cards.model[r]
        )
        rise -= terms.frag[r]
        # Per row the least rise, and of equal ones the first in order (the fullest card, then the first).
        starts = np.flatnonzero(np.concatenate((_FIRST, r[1:] != r[:-1])))
        least = np.minimum.reduceat(rise, starts)
        at = np.repeat(least, np.diff(starts, append=len(r)))
        hit = np.flatnonzero(rise == at)
        rh = r[hit]
        chosen = hit[np.concatenate((_FIRST, rh[1:] != rh[:-1]))]
        best[r[chosen]] = rise[chosen]
        card[r[chosen]] = c[chosen]
        return best, card

    def whole_delta(self, cards: Cards, terms: Terms, shape: Shape) -> Floats:
        """For a pod taking ``shape.cards`` idle cards whole, per row (where it fits): the rise."""
        m = self.mix
        size = np.maximum(cards.size.max(axis=1, initial=0), 1)  # a node's shared cards are one size
        # The cards taken were idle: every shape sharing a card could use them, none can now.
        lost = np.where(m.whole, shape.cards, (size[:, None] >= m.share) * shape.cards)
        count = terms.count - lost
        free = terms.free - shape.cards
        frag = self._frag(
            count, terms.small, free, cards.cpu - shape.cpu, cards.memory - shape.memory, cards.model
        )
        out: Floats = frag - terms.frag
        return out

    def cpu_delta(self, cards: Cards, terms: Terms, shape: Shape) -> Floats:
        """For a pod without GPUs, per row: the rise (the cpu and memory it takes from GPU shapes)."""
        frag = self._frag(
            terms.count,
            terms.small,
            terms.free,
            cards.cpu - shape.cpu,
            cards.memory - shape.memory,
            cards.model,
        )
        out: Floats = frag - terms.frag
        return out


def tie_break(
    cards: Cards,
    terms: Terms,
    shape: Shape,
    rise: Floats,
    card: npt.NDArray[np.intp],
    width: int,
    *,
    best_fit: bool = False,
) -> Floats:
    """Per row, what :func:`placement_score` breaks ties of alike rises by (0..``width``, the less the
    better): the idle GPU the node would have left (idle nodes stay whole for large asks); with
    ``best_fit``, for a pod sharing a card, the room the card it takes (``card``) would have left, as a
    fraction of a card stretched over that range: the tightest card fills, larger rooms stay for larger
    shares (rows where the share fits no card: ``width``). The node's idle GPU favours nodes with few
    cards whatever room their cards keep; on openb's share-heavy traces best fit allocates more GPU
    (docs/src/benchmarks.md, issue #25)."""
    size = np.maximum(cards.size.max(axis=1, initial=0), 1)
    if not best_fit or not shape.share:
        out: Floats = terms.free - (shape.cards + shape.share / size)
        return out
    if not cards.avail.shape[1]:
        return np.full(len(card), float(width))  # (no cards at all: a share fits nowhere)
    room = cards.avail[np.arange(len(card)), card] - shape.share
    return np.where(np.isfinite(rise), room / size * width, width)


def placement_score(rise: Floats, left: Floats, width: int) -> Floats:
    """0..100 from the rise of a node's fragmentation (in cards) and what is ``left`` (:func:`tie_break`):
    rises within :data:`QUANTUM` of a card of each other count alike, the lower the better, and within
    that the less left scores up to half a step more. ``width``: the most cards a node has (rises stay
    within it)."""
    step = 50.0 * QUANTUM / width
    level = np.floor(np.where(np.isfinite(rise), rise, width) / QUANTUM)
    out: Floats = 50.0 - level * step + 0.5 * step * (1.0 - np.clip(left, 0, width) / width)
    return out


class ShapeLearner:
    """The GPU pod shapes that arrive, learned online: a histogram whose weights halve every
    ``half_life`` pods seen, and the mix the measure uses (the most frequent shapes until they make up
    ``coverage`` of the weight, at most :data:`_MIX_SHAPES`), rebuilt as pods are seen: after 8, 16, 32,
    ... pods, then every ``half_life // 2`` (:attr:`version` says when; between rebuilds every figure stays
    cached)."""

    def __init__(self, half_life: int, coverage: float) -> None:
        self.half_life = half_life
        self.coverage = coverage
        self._decay = 2.0 ** (1.0 / half_life)  # the weight of a new pod grows by this each pod seen
        self._step = 1.0
        self._weights: dict[Shape, float] = {}
        self.seen = 0
        self.version = 0
        self._built_at = 0
        self._mix: tuple[tuple[Shape, float], ...] = ()

    def see(self, shape: Shape) -> None:
        if not shape.gpu:
            return
        if not self._mix and shape not in self._weights:
            self.version += 1  # (before the first mix, every new shape changes the mix)
        self._weights[shape] = self._weights.get(shape, 0.0) + self._step
        self._step *= self._decay
        if self._step > 1e100:  # rescale: only ratios matter
            self._weights = {s: w * 1e-100 for s, w in self._weights.items() if w > 1e-200}
            self._step *= 1e-100
        self.seen += 1
        if self.seen - self._built_at >= max(_FIRST_MIX, min(self._built_at, self.half_life // 2)):
            self._build()

    def _build(self) -> None:
        self._built_at = self.seen
        self.version += 1
        total = sum(self._weights.values())
        mix: list[tuple[Shape, float]] = []
        covered = 0.0
        for shape, w in sorted(self._weights.items(), key=lambda kv: (-kv[1], kv[0])):
            if covered >= self.coverage * total or len(mix) >= _MIX_SHAPES:
                break
            mix.append((shape, w / total))
            covered += w
        self._mix = tuple(mix)

    def mix(self) -> tuple[tuple[Shape, float], ...]:
        """The shapes the measure weighs now (before the first rebuild: every shape seen, alike)."""
        if not self._mix and self._weights:
            return tuple((s, 1.0) for s in sorted(self._weights))
        return self._mix
