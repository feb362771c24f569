"""CPU time of one forecast (prints figures, asserts nothing): ``--nodes`` eight-GPU nodes, each running
one job that holds it whole with an expected runtime (uniform over four hours), and ``--jobs`` pending
gangs of one, two or four pods asking 1, 2, 4 or 8 GPUs each, in two queues; pumice's default conf.

The forecast is what ``pumice serve`` runs every ``--forecast-interval`` seconds in a worker thread
(:func:`controllers.simulate.forecast.forecast`, its input taken from the cache as the forecaster takes
it); its CPU time is the worker thread's. Printed for the default settings and for a budget of fewer
steps (``--max-steps``), with how far the budget's starts are from the default's.

    .venv/bin/python hack/bench/forecast_bench.py                      # 1 000 nodes x 1 000 pending jobs
    .venv/bin/python hack/bench/forecast_bench.py --nodes 200 --jobs 200 --max-steps 24
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections import Counter
from typing import Any

from controllers.simulate.cluster import EPOCH, SimCluster
from controllers.simulate.forecast import ForecastInput, ForecastSettings, forecast
from extender.core.model import GroupKey, group_key
from extender.core.timestamps import rfc3339
from extender.forecast.model import Forecast
from extender.forecast.runtimes import Runtime
from extender.plugins.registry import load_conf

Obj = dict[str, Any]
TARGET_MS = 300  # CPU per forecast at 1 000 nodes x 1 000 pending jobs (issue #26)


def _pod(name: str, group: str, gpus: int, node: str = "") -> Obj:
    ask = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": name,
            "annotations": {"scheduling.k8s.io/group-name": group},
            "creationTimestamp": rfc3339(EPOCH - 100),
        },
        "spec": {
            "schedulerName": "volcano",
            "nodeName": node,
            "containers": [
                {"name": "m", "resources": {"requests": ask, "limits": {"nvidia.com/gpu": str(gpus)}}}
            ],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }


def _group(name: str, queue: str, phase: str, min_member: int, created: float) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"pg-{name}",
            "creationTimestamp": rfc3339(created),
        },
        "spec": {"minMember": min_member, "queue": queue},
        "status": {"phase": phase},
    }


def cluster(nodes: int, jobs: int, seed: int) -> tuple[SimCluster, ForecastInput]:
    rnd = random.Random(seed)
    conf = load_conf(None)
    c = SimCluster(conf, now=EPOCH)
    alloc = {"cpu": "96", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}
    for i in range(nodes):
        name = f"n{i}"
        meta = {"name": name, "labels": {"kubernetes.io/hostname": name}}
        c.add(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": meta,
                "status": {"allocatable": alloc, "capacity": alloc},
            }
        )
    for q in ("root", "default", "research", "product"):
        c.add(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": q},
                "spec": {"weight": 1},
            }
        )
    runtimes: dict[GroupKey, Runtime] = {}
    started: dict[GroupKey, float] = {}
    for i in range(nodes):
        c.add(_group(f"r{i}", rnd.choice(("research", "product")), "Running", 1, EPOCH - 200))
        c.add(_pod(f"r{i}-0", f"r{i}", 8, node=f"n{i}"))
        key = group_key("bench", f"r{i}")
        runtimes[key] = Runtime.declared(rnd.uniform(60, 4 * 3600) + 100)
        started[key] = EPOCH - 100
    for j in range(jobs):
        size, gpus = rnd.choice((1, 2, 4)), rnd.choice((1, 2, 4, 8))
        c.add(_group(f"p{j}", rnd.choice(("research", "product")), "Inqueue", size, EPOCH - 50 + j * 0.01))
        for m in range(size):
            c.add(_pod(f"p{j}-{m}", f"p{j}", gpus))
        runtimes[group_key("bench", f"p{j}")] = Runtime.declared(rnd.uniform(60, 4 * 3600))
    c.settle()
    inp = ForecastInput(
        models=c.cache.models(),
        now=c.now,
        runtimes=runtimes,
        started=started,
        aside=c.state.pending.settled_asides(),
        settled=c.state.pending.settled(),
    )
    return c, inp


def _once(inp: ForecastInput, settings: ForecastSettings) -> tuple[Forecast, float]:
    t0 = time.perf_counter()
    f = forecast(inp, load_conf(None), settings)
    return f, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--max-steps", type=int, default=24, help="the budget compared with the default settings")
    ap.add_argument(
        "--window", type=int, default=16, help="groups per queue a cycle looks at, with the budget"
    )
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    t0 = time.process_time()
    _, inp = cluster(args.nodes, args.jobs, args.seed)
    built = time.process_time() - t0
    print(
        f"{args.nodes} nodes, {args.jobs} pending jobs, {len(inp.models.pods)} pods "
        f"(built in {built:.1f} s CPU)"
    )
    runs = [
        ("default settings", ForecastSettings()),
        (
            f"budget: max {args.max_steps} steps, window {args.window}",
            ForecastSettings(max_steps=args.max_steps, window=args.window),
        ),
    ]
    results: dict[str, Forecast] = {}
    for label, settings in runs:
        cpu, wall = [], []
        for _ in range(args.repeat):
            f, seconds = _once(inp, settings)
            cpu.append(f.cpu_seconds)
            wall.append(seconds)
        results[label] = f
        outlooks = ", ".join(
            f"{k.value} {v}" for k, v in sorted(Counter(g.outlook for g in f.groups.values()).items())
        )
        # Every group's outlook, start, range and position (not the CPU time): equal digests, the same
        # forecast.
        digest = hashlib.sha256(repr(sorted(f.groups.items())).encode()).hexdigest()[:16]
        print(
            f"{label}: digest {digest}, CPU {statistics.median(cpu) * 1000:.0f} ms "
            f"(median of {args.repeat}; issue #26's "
            f"target: < {TARGET_MS} ms at 1 000 x 1 000), wall {statistics.median(wall) * 1000:.0f} ms, "
            f"{f.steps} steps; {outlooks}"
        )
    exact, budget = (results[label] for label, _ in runs)
    errors = sorted(
        abs((budget.groups[k].start or 0) - (g.start or 0)) / max((g.start or 0) - exact.computed_at, 600.0)
        for k, g in exact.groups.items()
        if g.start is not None and k in budget.groups and budget.groups[k].start is not None
    )
    if errors:
        p50, p90 = statistics.median(errors), errors[int(0.9 * (len(errors) - 1))]
        print(
            f"budget vs default: starts differ by a median {100 * p50:.1f}% of the wait "
            f"(p90 {100 * p90:.1f}%)"
        )


if __name__ == "__main__":
    main()
