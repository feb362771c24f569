"""The GPU figures the metrics export, card by card, from a full snapshot: what the ``deviceshare`` plugin
accounts (Volcano's gpushare and vGPU cards). Part of the composition root (computed by
:mod:`extender.queue_figures` over the snapshot it already takes, exported by :mod:`extender.queue_families`);
nothing else imports it.

Each card of each node (``Node.gpus``: the device plugin's capacity and annotations, unhealthy cards left
out) with its memory, the memory its pods hold (a card held whole, ``volcano.sh/gpu-number``, counts its
full memory) and how many pods share it, from the holds the cache keeps (``Snapshot.device_holds``: bound
pods by their annotations, planned ones by their plan). Across the cluster, as ``pumice simulate`` reports
them for a trace:

- **fragmentation**: free memory on cards partly in use, over all free memory (memory there serves only
  asks smaller than what is left of a card);
- **stranded asks**: pending pods asking GPUs that the free total could hold but no card (a
  ``gpu-memory`` ask) or node (a ``gpu-number`` ask: that many idle cards on one node) can.

Pure: a snapshot in, numbers out. vGPU asks are counted as pending, never as stranded (their fit also
depends on cores and sharer counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.core.gpus import MEMORY, NUMBER
from extender.core.snapshot import Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class CardFigures:
    node: str
    card: str  # gpushare: the index; vGPU: the uuid
    family: str  # gpushare | vgpu
    memory: int
    used: int
    pods: int

    @property
    def free(self) -> int:
        return max(self.memory - self.used, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFigures:
    cards: tuple[CardFigures, ...] = ()
    fragmentation: float = 0.0
    pending: int = 0  # pending pods asking GPUs
    stranded: int = 0  # of those, asks the free total holds but no card or node does


def gpu_figures(snap: Snapshot) -> GpuFigures:
    used: dict[tuple[str, str], int] = {}
    pods: dict[tuple[str, str], int] = {}
    whole: set[tuple[str, str]] = set()
    for node, hold in snap.device_holds.values():
        for key, memory, _cores in hold.cards:
            used[(node, key)] = used.get((node, key), 0) + memory
            pods[(node, key)] = pods.get((node, key), 0) + 1
            if hold.whole:
                whole.add((node, key))
    cards = []
    for n in snap.nodes:
        if n.gpus is None:
            continue
        for family, of_family in (("gpushare", n.gpus.share), ("vgpu", n.gpus.vgpu)):
            for gpu in of_family:
                k = (n.name, gpu.key)
                held = gpu.memory if k in whole else min(used.get(k, 0), gpu.memory)
                cards.append(
                    CardFigures(
                        node=n.name,
                        card=gpu.key,
                        family=family,
                        memory=gpu.memory,
                        used=held,
                        pods=pods.get(k, 0),
                    )
                )
    free = sum(c.free for c in cards)
    partly = sum(c.free for c in cards if c.used)
    pending = stranded = 0
    idle_per_node: dict[str, int] = {}
    for c in cards:
        if c.family == "gpushare" and not c.used:
            idle_per_node[c.node] = idle_per_node.get(c.node, 0) + 1
    largest_free = max((c.free for c in cards if c.family == "gpushare"), default=0)
    for pod in snap.pods.values():
        if pod.gpu is None or not pod.waiting:
            continue
        pending += 1
        ask = pod.gpu
        if ask.kind == MEMORY and ask.amount <= free and ask.amount > largest_free:
            stranded += 1
        elif ask.kind == NUMBER and ask.amount <= sum(idle_per_node.values()):
            stranded += ask.amount > max(idle_per_node.values(), default=0)
    return GpuFigures(
        cards=tuple(cards),
        fragmentation=partly / free if free else 0.0,
        pending=pending,
        stranded=stranded,
    )
