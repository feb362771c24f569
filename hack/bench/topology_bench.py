"""Planning one large gang with network topology: a 512-pod gang, ``networkTopology`` hard at a middle
tier, on 5 000 nodes under 8 tiers of HyperNodes (prints figures, asserts nothing).

Leaves of 20 nodes (tier 1, exactMatch members), then each tier groups two HyperNodes of the tier below
(HyperNode members) up to tier 8. Nodes are 64 cpu / 256Gi, already used at random (0-56 cpu), so the
gang does not fit the first HyperNodes tried by name. The conf is Volcano's default tiers plus
``network-topology-aware``. Figures: the cold cycle (HyperNodes resolved over the node table), a warm one
(the resolution memoized, as in the server between node changes), and the same gang without
``networkTopology`` for comparison; the fastest of ``--repeat`` each.

    .venv/bin/python hack/bench/topology_bench.py [--nodes 5000 --pods 512 --tier 5 --repeat 3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from extender.core.hypernodes import HyperNode, HyperNodeSet, Member
from extender.core.model import Node
from extender.core.node_table import build_node_table
from extender.core.parse import parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.plugins.registry import load_conf

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""
GIB = 1024**3


def hypernodes(names: list[str], leaf: int, tiers: int) -> list[HyperNode]:
    out = [
        HyperNode(
            name=f"t1-{i}", tier=1, members=tuple(Member(type="Node", exact=n) for n in names[s : s + leaf])
        )
        for i, s in enumerate(range(0, len(names), leaf))
    ]
    below = [h.name for h in out]
    for tier in range(2, tiers + 1):
        level = [
            HyperNode(
                name=f"t{tier}-{i}",
                tier=tier,
                members=tuple(Member(type="HyperNode", exact=c) for c in below[s : s + 2]),
            )
            for i, s in enumerate(range(0, len(below), 2))
        ]
        out += level
        below = [h.name for h in level]
    return out


def gang(pods: int, tier: int | None) -> tuple[Any, list[Any]]:
    pg: dict[str, Any] = {
        "metadata": {"name": "train", "namespace": "default", "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"minMember": pods, "queue": "default"},
        "status": {"phase": "Inqueue"},
    }
    if tier is not None:
        pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": tier}
    raw = [
        {
            "metadata": {
                "name": f"train-{i}",
                "namespace": "default",
                "uid": f"train-{i}",
                "annotations": {"scheduling.k8s.io/group-name": "train"},
                "creationTimestamp": "2024-01-01T00:00:00Z",
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "m", "resources": {"requests": {"cpu": "8", "memory": "32Gi"}}}],
            },
            "status": {"phase": "Pending"},
        }
        for i in range(pods)
    ]
    return parse_podgroup(pg), [parse_pod(p) for p in raw]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=512)
    ap.add_argument("--tier", type=int, default=5, help="highestTierAllowed of the gang")
    ap.add_argument("--tiers", type=int, default=8)
    ap.add_argument("--leaf", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    names = [f"node-{i:05d}" for i in range(a.nodes)]
    nodes = [Node(name=n, allocatable={"cpu": 64_000, "memory": 256 * GIB, "pods": 110}) for n in names]
    table = build_node_table(nodes, ("cpu", "memory", "pods"))
    used = np.zeros_like(table.alloc)
    cpu, mem = table.index.names.index("cpu"), table.index.names.index("memory")
    for r in range(a.nodes):
        c = rng.randrange(0, 57, 8)
        used[r, cpu] = c * 1000
        used[r, mem] = c * 4 * GIB
    objs = hypernodes(names, a.leaf, a.tiers)
    conf = load_conf(CONF)
    queue = parse_queue({"metadata": {"name": "default"}, "spec": {"weight": 1}, "status": {"state": "Open"}})

    def snapshot(tier: int | None, hn: HyperNodeSet) -> Snapshot:
        pg, pods = gang(a.pods, tier)
        return build_snapshot(
            nodes=table,
            pods=pods,
            podgroups=[pg],
            queues=[queue],
            used=used,
            reserved=np.zeros_like(used),
            queue_usage={},
            hypernodes=hn,
        )

    def timed(tier: int | None, fresh: bool) -> tuple[float, int, str]:
        best = float("inf")
        shared = HyperNodeSet(objs)
        placed, why = 0, ""
        for _ in range(a.repeat):
            hn = HyperNodeSet(objs) if fresh else shared
            snap = snapshot(tier, hn)
            if not fresh:
                hn.tree(snap.nodes)  # resolved once, as the server's first cycle after a change does
            t0 = time.perf_counter()
            result = run_cycle(snap, conf, 0.0)
            best = min(best, time.perf_counter() - t0)
            placed = len(result.placements)
            why = next(iter(result.unschedulable.values())).message if result.unschedulable else ""
            rows = np.asarray(sorted({table.node_pos[n] for n in result.placements.values()}), dtype=np.intp)
            tree = shared.tree(table.nodes)
            inside = [d for d in tree.domains if len(rows) and np.isin(rows, d.rows).all()]
            if inside and not why:
                why = f"inside {inside[0].name}, tier {inside[0].tier}, {len(inside[0].rows)} nodes"
        return best, placed, why

    print(
        f"{a.nodes} nodes, {len(objs)} HyperNodes in {a.tiers} tiers (leaves of {a.leaf}), gang of {a.pods}"
    )
    for label, tier, fresh in (
        (f"hard tier {a.tier}, cold (resolves HyperNodes)", a.tier, True),
        (f"hard tier {a.tier}, warm (resolution memoized)", a.tier, False),
        ("no networkTopology", None, False),
    ):
        seconds, placed, why = timed(tier, fresh)
        extra = f"  ({why})" if why else ""
        print(f"{label:48s} {seconds * 1000:8.1f} ms  placed {placed}{extra}")
    t0 = time.perf_counter()
    tree = HyperNodeSet(objs).tree(table.nodes)
    took = (time.perf_counter() - t0) * 1000
    print(f"{'HyperNode resolution alone':48s} {took:8.1f} ms  {len(tree.domains)} domains")


if __name__ == "__main__":
    main()
