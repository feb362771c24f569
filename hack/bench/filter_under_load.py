"""Filter latency while scheduling cycles run, and the cost of one incremental cycle (prints figures).

Builds a cache of ``--nodes`` nodes holding ``--pending`` pods in 10-pod gangs that can never be placed
(each pod asks more cpu than any node has: the backlog Volcano re-tries every session), runs the real
scheduling loop beside the extender app on a loopback port, streams a new placeable 10-pod gang into
the cache every ``--every`` seconds, and keeps ``--callers`` concurrent filter callers busy with pods
that already hold a plan (kube-scheduler's hot path: the answer is the plan, by UID). Reports filter
p50/p99/max while cycles run, the cycles' own times, how long a new pod waits for its plan, and one
inline cycle after one new gang with the backlog present.

``--running N`` adds N bound, Running pods (in 10-pod gangs with their PodGroups) over the nodes, the
heap of a full cluster; ``--heap frozen`` then settles it as ``pumice serve`` does once its informers
have listed (extender.process.heap), ``--heap as-is`` leaves the collector alone. The full collections
that ran while the callers were busy, and their wall time, are printed.

``--switch-interval S`` sets CPython's switch interval (``sys.setswitchinterval``, 0.005 by default) as
``pumice serve --switch-interval`` does: how long the event loop may wait for the GIL while the cycle's
thread runs pure Python. ``--forecast thread|process`` runs forecasts back to back while the callers
are busy (forecast_bench's 1 000 nodes x 1 000 pending jobs, as ``pumice serve --forecast-in`` runs
them: in a worker thread, or in a worker process).

    .venv/bin/python hack/bench/filter_under_load.py                 # 5 000 nodes, 10 000 pending
    .venv/bin/python hack/bench/filter_under_load.py --running 100000 --heap as-is
    .venv/bin/python hack/bench/filter_under_load.py --running 100000 --switch-interval 0.001 \\
        --forecast process
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controllers.forecast.runner import ForecastRun, in_thread
from controllers.forecast.worker import ForecastProcess
from controllers.scheduling.scheduler import build_scheduler
from controllers.simulate.forecast import ForecastInput, ForecastSettings
from controllers.state.cache import ClusterCache
from controllers.state.cluster import cluster_state
from extender.core.model import PodUID
from extender.plugins.registry import load_conf
from extender.process import heap
from extender.server.app import make_extender_app
from extender.server.metrics import Histogram
from hack.bench.extender_bench import StubExecutor, node, pct
from hack.bench.forecast_bench import cluster as forecast_cluster


def gang_pods(name: str, cpu: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pg = {"metadata": {"name": name, "namespace": "bench", "uid": name}, "spec": {"minMember": 10}}
    pods = [
        {
            "metadata": {
                "name": f"{name}-{i}",
                "namespace": "bench",
                "uid": f"{name}-{i}",
                "creationTimestamp": "2026-11-22T10:00:00Z",
                "annotations": {"scheduling.k8s.io/group-name": name},
            },
            "spec": {
                "schedulerName": "volcano",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
            },
            "status": {"phase": "Pending"},
        }
        for i in range(10)
    ]
    return pg, pods


def add_gang(cache: ClusterCache, name: str, cpu: str) -> list[dict[str, Any]]:
    pg, pods = gang_pods(name, cpu)
    cache.upsert_podgroup(pg)
    for p in pods:
        cache.upsert_pod(p)
    return pods


def add_running(cache: ClusterCache, count: int, nodes: int) -> None:
    """``count`` bound, Running pods in 10-pod gangs, round robin over the nodes (100m cpu each)."""
    for g in range(count // 10):
        pg, pods = gang_pods(f"running-{g:06d}", "100m")
        pg["status"] = {"phase": "Running", "running": 10}
        cache.upsert_podgroup(pg)
        for i, p in enumerate(pods):
            p["spec"]["nodeName"] = f"node-{(g * 10 + i) % nodes:05d}"
            p["status"] = {"phase": "Running"}
            cache.upsert_pod(p)


class Handled(Histogram):
    """The extender app's own latency figures (the handler, from request to answer), kept raw."""

    def __init__(self) -> None:
        super().__init__("h", "h")
        self.filters: list[float] = []

    def observe(self, label: str, seconds: float) -> None:
        if label == "filter":
            self.filters.append(seconds)


class FullCollections:
    """The collector's full (generation 2) passes while counting: how many, and their wall time."""

    def __init__(self) -> None:
        self.count, self.seconds, self._start, self.on = 0, 0.0, 0.0, False
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if not self.on or info["generation"] != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.count += 1
            self.seconds += time.perf_counter() - self._start


async def forecasts(run: ForecastRun, inp: ForecastInput, stop: asyncio.Event, cpu: list[float]) -> None:
    """Forecasts back to back until ``stop`` (each one's CPU seconds into ``cpu``)."""
    conf = load_conf()
    while not stop.is_set():
        cpu.append((await run(inp, conf, ForecastSettings())).cpu_seconds)


async def run(args: argparse.Namespace) -> None:
    if args.switch_interval is not None:
        sys.setswitchinterval(args.switch_interval)
    state = cluster_state(frozenset({"volcano"}))
    cache = state.cache
    cache.replace_nodes([node(i) for i in range(args.nodes)])
    cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    for g in range(args.pending // 10):
        add_gang(cache, f"stuck-{g:05d}", "64")  # more than any node's 32 cpu
    add_running(cache, args.running, args.nodes)
    # Built before the heap settles: in serve a forecast's input is the cache's own (settled) objects.
    forecast_inp = forecast_cluster(1000, 1000, 26)[1] if args.forecast != "off" else None
    if args.heap == "frozen":
        heap.settle()
    sched = build_scheduler(state, load_conf(), StubExecutor())
    t0 = time.perf_counter()
    sched.loop.cycle()
    cold = time.perf_counter() - t0
    # One new gang at a time, a cycle after each: the best and the median of a few, wall and CPU (the
    # machine's other load shows in the wall figure only).
    walls: list[float] = []
    cpus: list[float] = []
    for i in range(args.incremental):
        add_gang(cache, f"one-more-{i}", "1")
        c0, t0 = time.thread_time(), time.perf_counter()
        sched.loop.cycle()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.thread_time() - c0)
    walls.sort()
    cpus.sort()
    print(f"nodes={args.nodes} pending={args.pending} (unplaceable, gangs of 10)")
    print(f"  cold cycle over the backlog: {cold * 1000:.0f} ms")
    planned_now = sched.shared.ledger.plan_count()
    mid = len(walls) // 2
    print(
        f"  one cycle after one new 10-pod gang: {walls[0] * 1000:.1f} ms (median {walls[mid] * 1000:.1f},"
        f" CPU {cpus[0] * 1000:.1f}/{cpus[mid] * 1000:.1f}) ({planned_now} planned);"
        " target (#24) < 5 ms (11 ms before)"
    )

    handled = Handled()
    app = make_extender_app(sched.verbs, handled)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    names = [f"node-{i:05d}" for i in range(args.nodes)]
    loop_task = asyncio.create_task(sched.run())
    stop = asyncio.Event()
    planned: list[bytes] = []
    fresh: list[tuple[str, bytes, float]] = []
    to_plan: list[float] = []
    counter = itertools.count()

    async def stream() -> None:
        while not stop.is_set():
            now = time.perf_counter()
            for p in add_gang(cache, f"new-{next(counter):05d}", "1"):
                fresh.append((p["metadata"]["uid"], orjson.dumps({"Pod": p, "NodeNames": names}), now))
            # Pods the loop has planned join the hot path kube-scheduler takes: a filter answered by UID.
            waiting = []
            for uid, body, created in fresh:
                if sched.shared.ledger.is_planned(PodUID(uid)):
                    planned.append(body)
                    to_plan.append(time.perf_counter() - created)
                else:
                    waiting.append((uid, body, created))
            fresh[:] = waiting
            await asyncio.sleep(args.every)

    worker = ForecastProcess(niceness=args.forecast_niceness) if args.forecast == "process" else None
    forecast_cpu: list[float] = []
    if forecast_inp is not None:
        # One forecast first, outside the window: a worker process's start (the fork server, a new
        # interpreter importing pumice) is paid once per serve, not per forecast.
        await (worker or in_thread)(forecast_inp, load_conf(), ForecastSettings())
        forecaster = asyncio.create_task(forecasts(worker or in_thread, forecast_inp, stop, forecast_cpu))
        await asyncio.sleep(0.5)
    lat: list[float] = []
    handled.filters.clear()
    cycles_before, seconds_before = sched.shared.stats.cycles, sched.shared.stats.cycle_seconds
    full = FullCollections()
    full.on = True
    async with aiohttp.ClientSession() as http:

        async def caller() -> None:
            while not stop.is_set():
                if not planned:
                    await asyncio.sleep(0.01)
                    continue
                body = planned[next(counter) % len(planned)]
                t = time.perf_counter()
                async with http.post(f"http://127.0.0.1:{port}/filter", data=body) as r:
                    await r.read()
                lat.append(time.perf_counter() - t)

        tasks = [asyncio.create_task(stream())] + [asyncio.create_task(caller()) for _ in range(args.callers)]
        await asyncio.sleep(args.seconds)
        stop.set()
        await asyncio.gather(*tasks)
    full.on = False
    if forecast_inp is not None:
        await forecaster
    if worker is not None:
        worker.close()
    loop_task.cancel()
    await runner.cleanup()
    n = sched.shared.stats.cycles - cycles_before
    spent = sched.shared.stats.cycle_seconds - seconds_before
    print(
        f"  {args.callers} filter callers for {args.seconds:g} s, a new gang every {args.every:g} s: "
        f"{len(lat)} filters, p50 {pct(lat, 0.5):.2f} ms, p99 {pct(lat, 0.99):.2f} ms, "
        f"max {max(lat) * 1000:.1f} ms; target (#24) p99 < 5 ms while cycles run"
    )
    h = handled.filters
    if h:
        print(
            f"  the filter handler itself: p50 {pct(h, 0.5):.2f} ms, p99 {pct(h, 0.99):.2f} ms, "
            f"max {max(h) * 1000:.1f} ms (the rest is waiting for the event loop)"
        )
    print(f"  cycles meanwhile: {n}, mean {spent / max(n, 1) * 1000:.1f} ms (run off the event loop)")
    print(f"  switch interval {sys.getswitchinterval() * 1000:g} ms; forecast {args.forecast}", end="")
    if forecast_cpu:
        print(f": {len(forecast_cpu)} forecasts, {sum(forecast_cpu):.1f} s CPU in all", end="")
    print()
    print(
        f"  heap {args.heap} ({args.running} running pods): {full.count} full collections meanwhile, "
        f"{full.seconds * 1000:.0f} ms wall in all"
    )
    if to_plan:
        print(f"  new pod -> planned: p50 {pct(to_plan, 0.5):.0f} ms, p99 {pct(to_plan, 0.99):.0f} ms")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pending", type=int, default=10_000)
    p.add_argument("--callers", type=int, default=16)
    p.add_argument("--every", type=float, default=0.1)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--incremental", type=int, default=9, help="new gangs, each followed by a cycle, timed")
    p.add_argument("--running", type=int, default=0, help="bound Running pods besides (10-pod gangs)")
    p.add_argument(
        "--heap", choices=("frozen", "as-is"), default="frozen", help="as pumice serve does, or not"
    )
    p.add_argument("--switch-interval", type=float, default=None, help="sys.setswitchinterval (s)")
    p.add_argument("--forecast", choices=("off", "thread", "process"), default="off")
    p.add_argument("--forecast-niceness", type=int, default=10, help="added to the worker process's nice")
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
