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

from controllers.simulate.trace import LEAF_LABEL, SPINE_LABEL
from extender.core.gpus import MEMORY, NUMBER, GpuRequest, gpu_request, node_gpus, pod_hold

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
    """The cards of a simulated cluster's nodes, and the state their pods put them in."""

    def __init__(self, nodes: Iterable[Obj]) -> None:
        # node name -> (card key -> position, each card's memory)
        self.nodes: dict[str, tuple[dict[str, int], list[int]]] = {}
        for node in nodes:
            meta = node.get("metadata") or {}
            gpus = node_gpus(meta.get("annotations") or {}, (node.get("status") or {}).get("capacity") or {})
            if gpus is not None and gpus.share:
                keys = {c.key: i for i, c in enumerate(gpus.share)}
                self.nodes[str(meta.get("name"))] = (keys, [c.memory for c in gpus.share])
        self.cards = sum(len(m) for _, m in self.nodes.values())
        self.memory = sum(sum(m) for _, m in self.nodes.values())
        # pod uid -> (the raw object read, its request): objects are replaced on change, never edited
        self._asks: dict[str, tuple[Obj, GpuRequest | None]] = {}

    def _request(self, pod: Obj) -> GpuRequest | None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid"))
        seen = self._asks.get(uid)
        if seen is not None and seen[0] is pod:
            return seen[1]
        request = gpu_request(meta.get("annotations") or {}, pod.get("spec") or {})
        self._asks[uid] = (pod, request)
        return request

    def state(self, pods: Iterable[Obj]) -> GpuState:
        used = {name: [0] * len(mem) for name, (_, mem) in self.nodes.items()}
        whole = {name: [False] * len(mem) for name, (_, mem) in self.nodes.items()}
        pending: list[GpuRequest] = []
        for pod in pods:
            request = self._request(pod)
            if request is None or request.kind not in (MEMORY, NUMBER):
                continue
            if (pod.get("status") or {}).get("phase") in _DONE:
                continue
            node = str((pod.get("spec") or {}).get("nodeName") or "")
            if not node:
                pending.append(request)
                continue
            hold = pod_hold((pod.get("metadata") or {}).get("annotations") or {}, request)
            if hold is None or node not in self.nodes:
                continue
            keys = self.nodes[node][0]
            for key, memory, _ in hold.cards:
                if key in keys:
                    used[node][keys[key]] += memory
                    whole[node][keys[key]] |= hold.whole
        allocated = stranded = 0
        free_cards: list[int] = []  # free memory of each card that is not held whole
        idle_per_node: list[int] = []
        for name, (_, card_memory) in self.nodes.items():
            idle = 0
            for i, m in enumerate(card_memory):
                taken = m if whole[name][i] else min(used[name][i], m)
                allocated += taken
                if 0 < taken < m:
                    stranded += m - taken
                if not whole[name][i]:
                    free_cards.append(m - taken)
                idle += taken == 0 and not whole[name][i]
            idle_per_node.append(idle)
        free = self.memory - allocated
        idle_cards = sum(idle_per_node)
        best_card = max(free_cards, default=0)
        best_node = max(idle_per_node, default=0)
        unplaceable = 0
        for r in pending:
            if r.kind == MEMORY:
                unplaceable += r.amount <= free and r.amount > best_card
            else:
                unplaceable += r.amount <= idle_cards and r.amount > best_node
        return GpuState(
            total=self.memory,
            allocated=allocated,
            stranded=stranded,
            pending=len(pending),
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
