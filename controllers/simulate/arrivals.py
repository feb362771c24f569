"""The figures of a replay where pods arrive until a multiple of the cluster's GPUs has been asked and never
leave (the openb experiment, :mod:`controllers.simulate.openb`): after every arrival, the share of the
cluster's GPUs the arrived pods asked, the share allocated, and the paper's fragmentation measure.

- **allocation ratio**: GPU held over all GPU (a card held whole counts whole, a shared one what its pods
  ask), what "Beware of Fragmentation" (Weng et al., USENIX ATC '23) plots against the GPU arrived;
- **arrived**: the GPU the pods that arrived so far asked (placed or dropped), over all GPU;
- **fragmentation** (the paper's measure): the idle GPU the trace's frequent pod shapes
  (:attr:`Trace.shapes`: the shapes that make up 95 % of its pods, by how often they occur) cannot use,
  weighted by how often each occurs (:class:`extender.core.gpu_frag.FragMeasure` with the paper's
  choices: one weighting for every node, a shape barred from a node's GPU model finds all of its idle
  GPU fragmented, shapes without GPUs count too, memory is not looked at), over all GPU (the paper's
  "amount": a policy that allocates more leaves less to fragment), and over the idle GPU (its "ratio",
  near 100 % once the cluster is full whatever the policy).

The curve is the paper's: for each whole percent of GPU arrived, the mean over the arrivals whose arrived
share rounds to it. Card state comes from :class:`controllers.simulate.gpumetrics.GpuCards` (the pods'
objects, never the plugin's state), and only the nodes a change touched are measured again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from controllers.simulate.gpumetrics import GpuCards, GpuState
from extender.core.gpu_frag import Cards, FragMeasure, Mix, Shape
from extender.core.gpu_frag_cache import FragCache, RowClock


@dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """Means over the arrivals at one whole ``percent`` of the GPUs arrived (shares 0..1)."""

    percent: int
    allocation: float
    fragmentation: float  # of all GPU
    fragmentation_ratio: float  # of the idle GPU


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrivalFigures:
    """A replay's arrival figures: the pods, the cluster's cards, the share arrived at the end, and the
    curve (a :class:`Point` for each whole percent some arrival rounds to)."""

    pods: int
    placed: int
    dropped: int
    gpus: int
    arrived: float
    curve: tuple[Point, ...]

    def at(self, percent: int) -> Point | None:
        return next((p for p in self.curve if p.percent == percent), None)

    @property
    def end(self) -> Point | None:
        """The point at the share arrived at the end (130 % in the paper's replay)."""
        return self.at(round(100 * self.arrived))


class PaperFragmentation:
    """The paper's measure over the cards of :class:`GpuCards`, kept per node (see the module docstring).
    ``model_label``: the node label naming a node's GPU model."""

    def __init__(self, cards: GpuCards, shapes: Sequence[tuple[Shape, float]], model_label: str) -> None:
        self.cards = cards
        models = [str(labels.get(model_label, "")) for labels in cards.labels]
        known = sorted({m for m in models if m})
        pos = {m: i for i, m in enumerate(known)}
        self.model = np.array([pos.get(m, len(known)) for m in models], dtype=np.intp)
        blind = [(Shape(cards=s.cards, share=s.share, cpu=s.cpu, models=s.models), w) for s, w in shapes]
        self.clock = RowClock(len(cards.names))
        self._memory = np.full(len(cards.names), np.iinfo(np.int64).max // 2, dtype=np.int64)  # not looked at
        self.cache = FragCache(
            FragMeasure(Mix(blind, known, per_model=False, cpu_shapes=True)), self.clock, self._rows
        )

    def _rows(self, rows: npt.NDArray[np.intp]) -> Cards:
        c = self.cards
        size, sharers, whole = c.size[rows], c.sharers[rows], c.whole[rows]
        avail = np.where(whole > 0, 0, np.maximum(size - c.used[rows], 0))
        idle = (sharers == 0) & (whole == 0) & (size > 0)
        return Cards(size, avail, idle, c.cpu_left[rows], self._memory[rows], self.model[rows])

    def figure(self) -> tuple[float, float]:
        """(fragmented GPU, idle GPU), in cards."""
        c = self.cards
        if c.dirty:
            self.clock.touch(np.fromiter(c.dirty, dtype=np.intp, count=len(c.dirty)))
            c.dirty.clear()
        terms = self.cache.terms()
        return float(terms.frag.sum()), float(terms.free.sum())


class Arrivals:
    """Follows a replay arrival by arrival (:meth:`arrived`, then :meth:`sample` once its cycles are done)."""

    def __init__(self, cards: GpuCards, shapes: Sequence[tuple[Shape, float]], model_label: str) -> None:
        self.cards = cards
        self.paper = PaperFragmentation(cards, shapes, model_label)
        self.gpus = cards.cards
        self.card_memory = cards.total / max(cards.cards, 1)  # a share ask, in cards
        self.pods = self.dropped = 0
        self._asked = 0.0
        self._points: list[tuple[float, float, float, float]] = []

    def arrived(self, requests: Sequence[tuple[int, int]]) -> None:
        """Pods arrived asking (whole cards, memory of one card) each."""
        for cards, memory in requests:
            self.pods += 1
            self._asked += cards + memory / self.card_memory

    def sample(self, state: GpuState) -> None:
        """After an arrival's cycles, with the cards' ``state`` then."""
        frag, idle = self.paper.figure()
        self._points.append(
            (
                self._asked / max(self.gpus, 1),
                state.allocation,
                frag / max(self.gpus, 1),
                frag / idle if idle > 0 else 0.0,
            )
        )

    def figures(self) -> ArrivalFigures:
        points = np.asarray(self._points, dtype=np.float64).reshape(-1, 4)
        curve: list[Point] = []
        if len(points):
            percent = np.round(points[:, 0] * 100).astype(np.int64)
            for p in np.unique(percent).tolist():
                at = points[percent == p].mean(axis=0).tolist()
                curve.append(
                    Point(percent=int(p), allocation=at[1], fragmentation=at[2], fragmentation_ratio=at[3])
                )
        return ArrivalFigures(
            pods=self.pods,
            placed=self.pods - self.dropped,
            dropped=self.dropped,
            gpus=self.gpus,
            arrived=float(points[-1, 0]) if len(points) else 0.0,
            curve=tuple(curve),
        )
