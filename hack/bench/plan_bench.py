"""Planning-time benchmark of the pure scheduling core (prints figures, asserts nothing).

Builds a cluster of N nodes (plain cpu/memory nodes plus a GPU pool, some labelled, a few tainted or
cordoned) and M Inqueue gangs of 1–8 pods with mixed cpu/memory/GPU requests across a few weighted
queues, then times ``build_snapshot`` and one ``schedule()`` cycle with Volcano's default conf.

    .venv/bin/python hack/bench/plan_bench.py                 # 5 000 x 2 000, then 1 000 x 2 000
    .venv/bin/python hack/bench/plan_bench.py --nodes 5000 --gangs 2000 [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import time

from extender.core.model import (
    GroupPhase,
    Node,
    NodeConstraints,
    Pod,
    PodGroup,
    PodUID,
    Queue,
    Taint,
    Toleration,
)
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.session import CycleResult
from extender.plugins.registry import load_conf, schedule

GiB = 2**30
GPU = "nvidia.com/gpu"
QUEUES = (("default", 1), ("research", 2), ("prod", 4), ("batch", 1))


def make_cluster(
    n_nodes: int, n_gangs: int, seed: int
) -> tuple[list[Node], list[Pod], list[PodGroup], list[Queue]]:
    rng = random.Random(seed)
    nodes: list[Node] = []
    for i in range(n_nodes):
        gpu = i % 10 == 0
        alloc = {
            "cpu": rng.choice((8_000, 16_000, 32_000)),
            "memory": rng.choice((32, 64, 128)) * GiB,
            "pods": 110,
        }
        if gpu:
            alloc[GPU] = 8
        taints = (Taint(key="dedicated", value="infra", effect="NoSchedule"),) if i % 97 == 0 else ()
        nodes.append(
            Node(
                name=f"node-{i:05d}",
                allocatable=alloc,
                labels={"zone": f"z{i % 3}", "pool": "gpu" if gpu else "cpu"},
                taints=taints,
                unschedulable=i % 211 == 0,
            )
        )
    queues = [Queue(name=q, weight=w) for q, w in QUEUES]
    rng = random.Random(seed + 1)  # the same gangs whatever the node count
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    for g in range(n_gangs):
        size = rng.randint(1, 8)
        qname = QUEUES[g % len(QUEUES)][0]
        created = f"2024-01-01T{g // 3600 % 24:02d}:{g // 60 % 60:02d}:{g % 60:02d}Z"
        kind = rng.random()
        req: dict[str, int] = {
            "cpu": rng.choice((250, 500, 1000, 2000, 4000)),
            "memory": rng.choice((1, 2, 4, 8)) * GiB,
        }
        constraints = NodeConstraints()
        if kind < 0.15:
            req[GPU] = rng.choice((1, 2, 4))
            constraints = NodeConstraints(node_selector=(("pool", "gpu"),))
        elif kind < 0.30:
            constraints = NodeConstraints(node_selector=(("zone", f"z{g % 3}"),))
        elif kind < 0.35:
            constraints = NodeConstraints(
                tolerations=(
                    Toleration(key="dedicated", operator="Equal", value="infra", effect="NoSchedule"),
                )
            )
        req["pods"] = 1
        name = f"job-{g:05d}"
        groups.append(
            PodGroup(
                namespace="bench",
                name=name,
                min_member=size,
                queue=qname,
                min_resources={k: v * size for k, v in req.items()},
                phase=GroupPhase.INQUEUE,
                created=created,
            )
        )
        for t in range(size):
            pods.append(
                Pod(
                    uid=PodUID(f"{name}-{t}"),
                    namespace="bench",
                    name=f"{name}-{t}",
                    scheduler_name="volcano",
                    requests=dict(req),
                    group_name=name,
                    queue_name=qname,
                    task="worker",
                    constraints=constraints,
                    created=created,
                )
            )
    return nodes, pods, groups, queues


def bench(n_nodes: int, n_gangs: int, seed: int, profile: bool) -> None:
    nodes, pods, groups, queues = make_cluster(n_nodes, n_gangs, seed)
    conf = load_conf(None)
    t0 = time.perf_counter()
    snap: Snapshot = build_snapshot(nodes=nodes, pods=pods, podgroups=groups, queues=queues)
    t1 = time.perf_counter()
    prof = cProfile.Profile() if profile else None
    if prof is not None:
        prof.enable()
    t2 = time.perf_counter()
    result: CycleResult = schedule(snap, conf)
    t3 = time.perf_counter()
    if prof is not None:
        prof.disable()
    planned = len(result.placements)
    cycle = t3 - t2
    print(
        f"nodes={n_nodes} gangs={n_gangs} pods={len(pods)}: snapshot {1000 * (t1 - t0):.1f} ms, "
        f"cycle {1000 * cycle:.1f} ms, planned {planned} pods ({len(result.ready)} gangs whole, "
        f"{len(result.unschedulable)} unschedulable), {planned / cycle if cycle else 0:.0f} pods/s"
    )
    if prof is not None:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=0, help="number of nodes (default: 5000, then 1000)")
    ap.add_argument("--gangs", type=int, default=2000, help="number of Inqueue gangs (1-8 pods each)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of the cycle")
    a = ap.parse_args()
    for n in [a.nodes] if a.nodes else [5000, 1000]:
        bench(n, a.gangs, a.seed, a.profile)


if __name__ == "__main__":
    main()
