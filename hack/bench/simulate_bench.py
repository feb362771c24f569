"""Speed of ``pumice simulate`` trace mode (prints figures, asserts nothing).

Runs ``examples/simulate/gpu-fleet.yaml`` scaled to ``--nodes`` (GPU and CPU pools in the example's 4:1
ratio) and ``--jobs`` (arrivals kept at the example's rate per node, so the load per node stays), under
``--conf`` (default: pumice's default conf), and prints wall time, events, cycles and the cluster figures.

    .venv/bin/python hack/bench/simulate_bench.py                          # 1 000 nodes x 10 000 jobs
    .venv/bin/python hack/bench/simulate_bench.py --nodes 500 --jobs 3000 \
        --conf examples/simulate/reclaim.conf
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import time
from pathlib import Path

import yaml

from controllers.simulate.engine import TraceRun
from controllers.simulate.trace import parse_trace
from extender.plugins.registry import load_conf

FLEET = Path(__file__).resolve().parents[2] / "examples" / "simulate" / "gpu-fleet.yaml"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--conf", help="a volcano-scheduler.conf (default: pumice's default conf)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    doc = yaml.safe_load(FLEET.read_text())
    base_nodes = sum(p["count"] for p in doc["nodes"])
    for pool in doc["nodes"]:
        pool["count"] = max(1, pool["count"] * args.nodes // base_nodes)
    gen = doc["generate"][0]
    gen["count"] = args.jobs
    gen["every"] = 60.0 * base_nodes / args.nodes  # the same arrivals per node as the example
    t0 = time.perf_counter()
    trace = parse_trace(doc)
    conf = load_conf(Path(args.conf).read_text() if args.conf else None)
    run = TraceRun(trace, conf)
    events = 0

    def count(_t: float) -> None:
        nonlocal events
        events += 1

    run.progress = count
    prof = cProfile.Profile() if args.profile else None
    if prof:
        prof.enable()
    result = run.run()
    if prof:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    wall = time.perf_counter() - t0
    nodes = sum(p.count for p in trace.pools)
    finished = sum(j.end is not None for j in result.jobs)
    print(f"{nodes} nodes, {len(trace.jobs)} jobs ({finished} finished), conf {args.conf or 'default'}")
    print(f"wall {wall:.1f} s: {events} event times, {result.cycles} cycles ({result.cycles / wall:.0f}/s)")
    print(f"CPU {time.process_time():.1f} s (target, #24: 1 000 nodes x 10 000 jobs < 30 s)")
    print(f"virtual {result.makespan / 3600:.1f} h; evictions {result.evictions}")
    alloc = ", ".join(f"{k} {100 * v:.1f}%" for k, v in result.allocation.items())
    print(
        f"allocation {alloc}; fragmentation {100 * result.fragmentation:.1f}% of free {result.key_resource}"
    )
    # What was decided and measured (every job's start, end and placements; the series): equal digests,
    # the same simulation (a faster change of the step must keep it).
    decided = repr((result.jobs, result.series, result.evictions, result.cycles)).encode()
    print(f"digest {hashlib.sha256(decided).hexdigest()[:16]}")
    for q in result.queues:
        if q.jobs:
            print(f"  {q.name}: {q.jobs} jobs, wait p50 {q.wait_p50 or 0:.0f}s p95 {q.wait_p95 or 0:.0f}s")


if __name__ == "__main__":
    main()
