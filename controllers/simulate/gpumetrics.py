"""GPU and network-topology figures of a simulated cluster: what ``pumice simulate`` adds to its report when
a trace has GPU cards (``gpus`` on a node pool) or leaf labels (``topology``).

Computed from the simulated API server's objects alone, as a tool looking at a real cluster would: each
node's cards from its status ``capacity`` and annotations (:func:`extender.core.gpus.node_gpus`), each
bound pod's cards from the annotations the scheduler wrote on it before it bound (``volcano.sh/gpu-index``,
read by :func:`extender.core.gpus.pod_hold`). No plugin state is read, so the figures check the plugin
rather than repeat it. gpushare cards only (the family a trace's ``gpus`` registers).

At one moment:

- **allocation**: GPU memory in use over all cards' memory; a card held whole (``volcano.sh/gpu-number``)
  counts its full memory, a shared one what its pods ask (at most its memory);
- **fragmentation**: free memory on cards that are partly in use, over all free memory. Memory there can
  serve only asks smaller than what is left of a card; binpack keeps it low by filling cards before
  opening idle ones, spread raises it by putting each pod on the idlest card;
- **stranded asks**: of the pending pods asking GPUs, the share that the cluster's free GPUs could hold
  in total but no single card (a ``gpu-memory`` ask) or node (a ``gpu-number`` ask: that many idle cards
  on one node) can: what fragmentation costs, counted in pods.

Topology, per gang of two or more pods when it starts: how many leaf switches (``topology.pumice.dev/leaf``)
its pods span, and whether it is inside one leaf and inside one spine.

A pod planned but not yet bound (waiting for victims to leave) holds nothing here; the simulation binds
every other plan right after the cycle that made it, so samples see the cycle's whole outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from controllers.simulate.trace import LEAF_LABEL, SPINE_LABEL
from extender.core.gpus import MEMORY, NUMBER, GpuRequest, gpu_request, node_gpus, pod_hold
from extender.core.parse import pod_requests
from extender.core.resources import parse_resource_list

Obj = Mapping[str, Any]
_DONE = ("Succeeded", "Failed")


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuState:
    """The GPUs at one moment (memory in the device plugin's unit)."""

    total: int  # every card's memory
    allocated: int  # in use: shared asks, and whole cards at their full memory
    stranded: int  # free memory on cards partly in use
    pending: int  # pending pods asking GPUs
    unplaceable: int  # of those, asks the free total holds but no card (memory) or node (number) does

    @property
    def free(self) -> int:
        return self.total - self.allocated

    @property
    def allocation(self) -> float:
        return self.allocated / self.total if self.total else 0.0

    @property
    def fragmentation(self) -> float:
        return self.stranded / self.free if self.free else 0.0

    @property
    def stranded_asks(self) -> float:
        return self.unplaceable / self.pending if self.pending else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFigures:
    """A run's GPU figures: shares 0..1, ``mean`` time-weighted like the other rates, ``end`` at the last
    event (0 allocation when every job finished; ``--until`` stops at a moment of interest)."""

    cards: int
    memory: int
    allocation_mean: float
    allocation_peak: float
    allocation_end: float
    fragmentation_mean: float
    fragmentation_end: float
    stranded_asks_mean: float
    stranded_asks_end: float


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyFigures:
    """Where gangs of two or more pods ran, counted at each start (a restarted gang counts again)."""

    gangs: int
    in_one_leaf: int
    in_one_spine: int
    leaves_mean: float  # leaf switches a gang's pods span, on average


class GpuCards:
    """The cards of a simulated cluster's nodes and the state their pods put them in, followed pod by pod
    (:meth:`changed`, called for every change the simulated API server stores, as a watch would): a sample
    costs a pass over the cards, never over the pods. Also each node's cpu and memory left (for
    :class:`PaperFragmentation`) and which rows changed since the last look (``dirty``)."""

    def __init__(self, nodes: Iterable[Obj]) -> None:
        listed = []
        for node in nodes:
            meta = node.get("metadata") or {}
            status = node.get("status") or {}
            gpus = node_gpus(meta.get("annotations") or {}, status.get("capacity") or {})
            if gpus is not None and gpus.share:
                listed.append((str(meta.get("name")), gpus.share, meta.get("labels") or {}, status))
        self.rows = {name: r for r, (name, _, _, _) in enumerate(listed)}
        width = max((len(cards) for _, cards, _, _ in listed), default=0)
        n = len(listed)
        # node name -> card key -> position
        self._keys = {name: {c.key: i for i, c in enumerate(cards)} for name, cards, _, _ in listed}
        self.size = np.zeros((n, width), dtype=np.int64)
        for r, (_, cards, _, _) in enumerate(listed):
            self.size[r, : len(cards)] = [c.memory for c in cards]
        self.used = np.zeros_like(self.size)
        self.sharers = np.zeros_like(self.size)
        self.whole = np.zeros(self.size.shape, dtype=np.int64)  # pods holding the card whole (0 or 1)
        alloc = [parse_resource_list(status.get("allocatable") or {}) for _, _, _, status in listed]
        self.cpu_left = np.array([a.get("cpu", 0) for a in alloc], dtype=np.int64)
        self.memory_left = np.array([a.get("memory", 0) for a in alloc], dtype=np.int64)
        self.labels = [labels for _, _, labels, _ in listed]
        self.names = [name for name, _, _, _ in listed]
        self.cards = int((self.size > 0).sum())
        self.total = self.memory = int(self.size.sum())  # every card's memory
        # What each pod puts on the cards now: (row, ((card, memory, whole), ...), cpu, memory), and the
        # pending pods' asks; each pod's raw object is read once per change.
        self._held: dict[str, tuple[int, tuple[tuple[int, int, int], ...], int, int]] = {}
        self._pending: dict[str, GpuRequest] = {}
        self.dirty: set[int] = set()
        # Per node (allocated, stranded, idle cards), and their sums: a sample costs no pass over cards.
        self._rows = [(0, 0, int(c)) for c in (self.size > 0).sum(axis=1).tolist()]
        self._allocated = self._stranded = 0
        self._idle = sum(i for _, _, i in self._rows)

    def changed(self, uid: str, pod: Obj | None) -> None:
        """Pod ``uid`` is now ``pod`` (None: deleted)."""
        old = self._held.pop(uid, None)
        if old is not None:
            self._apply(old, -1)
        self._pending.pop(uid, None)
        if pod is None or (pod.get("status") or {}).get("phase") in _DONE:
            return
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        request = gpu_request(meta.get("annotations") or {}, spec)
        node = str(spec.get("nodeName") or "")
        if not node:
            if request is not None and request.kind in (MEMORY, NUMBER):
                self._pending[uid] = request
            return
        row = self.rows.get(node)
        if row is None:
            return
        cards: tuple[tuple[int, int, int], ...] = ()
        hold = pod_hold(meta.get("annotations") or {}, request)
        if hold is not None and request is not None and request.kind in (MEMORY, NUMBER):
            keys = self._keys[node]
            cards = tuple((keys[k], m, int(hold.whole)) for k, m, _ in hold.cards if k in keys)
        try:
            asks = pod_requests(spec)
        except ValueError:
            asks = {}
        held = (row, cards, asks.get("cpu", 0), asks.get("memory", 0))
        self._held[uid] = held
        self._apply(held, 1)

    def _apply(self, held: tuple[int, tuple[tuple[int, int, int], ...], int, int], sign: int) -> None:
        row, cards, cpu, memory = held
        for card, m, whole in cards:
            self.used[row, card] += sign * m
            self.sharers[row, card] += sign
            self.whole[row, card] += sign * whole
        self.cpu_left[row] -= sign * cpu
        self.memory_left[row] -= sign * memory
        self.dirty.add(row)
        if cards:
            self._refresh(row)

    def _refresh(self, row: int) -> None:
        allocated = stranded = idle = 0
        for m, u, w in zip(
            self.size[row].tolist(), self.used[row].tolist(), self.whole[row].tolist(), strict=True
        ):
            taken = m if w > 0 else min(u, m)
            allocated += taken
            stranded += m - taken if 0 < taken < m else 0
            idle += m > 0 and taken == 0 and w == 0
        a, s, i = self._rows[row]
        self._allocated += allocated - a
        self._stranded += stranded - s
        self._idle += idle - i
        self._rows[row] = (allocated, stranded, idle)

    def avail(self) -> npt.NDArray[np.int64]:
        """Each card's memory left to share (0 on a card held whole or missing)."""
        out: npt.NDArray[np.int64] = np.where(self.whole > 0, 0, np.maximum(self.size - self.used, 0))
        return out

    def state(self) -> GpuState:
        free = self.total - self._allocated
        unplaceable = 0
        if self._pending:  # the best card and node are looked for only when some pod waits
            taken = np.where(self.whole > 0, self.size, np.minimum(self.used, self.size))
            free_cards = np.where(self.whole == 0, self.size - taken, 0)
            best_card = int(free_cards.max(initial=0))
            best_node = max((i for _, _, i in self._rows), default=0)
            for r in self._pending.values():
                if r.kind == MEMORY:
                    unplaceable += r.amount <= free and r.amount > best_card
                else:
                    unplaceable += r.amount <= self._idle and r.amount > best_node
        return GpuState(
            total=self.total,
            allocated=self._allocated,
            stranded=self._stranded,
            pending=len(self._pending),
            unplaceable=unplaceable,
        )


class GangPlaces:
    """Leaf and spine labels by node, and the places of gangs as they start."""

    def __init__(self, nodes: Iterable[Obj]) -> None:
        self.leaf: dict[str, str] = {}
        self.spine: dict[str, str] = {}
        for node in nodes:
            meta = node.get("metadata") or {}
            labels = meta.get("labels") or {}
            name = str(meta.get("name"))
            if LEAF_LABEL in labels:
                self.leaf[name] = str(labels[LEAF_LABEL])
            if SPINE_LABEL in labels:
                self.spine[name] = str(labels[SPINE_LABEL])
        self.gangs = self.in_one_leaf = self.in_one_spine = self.leaves = 0

    def started(self, nodes: Iterable[str]) -> None:
        """A gang started on ``nodes`` (one entry per pod)."""
        where = list(nodes)
        if len(where) < 2:
            return
        leaves = {self.leaf.get(n, f"node {n}") for n in where}  # an unlabelled node is a leaf of its own
        spines = {self.spine.get(n, f"node {n}") for n in where}
        self.gangs += 1
        self.leaves += len(leaves)
        self.in_one_leaf += len(leaves) == 1
        self.in_one_spine += len(spines) == 1

    def figures(self) -> TopologyFigures:
        return TopologyFigures(
            gangs=self.gangs,
            in_one_leaf=self.in_one_leaf,
            in_one_spine=self.in_one_spine,
            leaves_mean=self.leaves / self.gangs if self.gangs else 0.0,
        )
