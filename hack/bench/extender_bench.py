"""Extender verb latency and throughput, through real HTTP on loopback (prints figures, asserts nothing).

Builds a cache of N nodes, runs pumice's extender app (the production handlers and Scheduler backend)
on a local port, and drives it like kube-scheduler does with ``nodeCacheCapable: true``: per pod a
filter (pod + all node names), and for the pods that got a node, a bind. Binding uses a stub executor
(no API server), so the figures are pumice's own cost per call. Also measures the fast path (pods of
other schedulers) and prioritize.

    .venv/bin/python hack/bench/extender_bench.py --nodes 1000 --pods 2000
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from controllers.scheduling.scheduler import build_scheduler
from controllers.state.cluster import cluster_state
from extender.plugins.registry import load_conf
from extender.server.app import make_extender_app
from extender.server.metrics import Histogram


class StubExecutor:
    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        return None

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        return None

    async def lift_gate(self, namespace: str, name: str) -> None:
        return None

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        return None

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        return None

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        return None


def node(i: int) -> dict[str, Any]:
    return {
        "metadata": {"name": f"node-{i:05d}", "labels": {"kubernetes.io/hostname": f"node-{i:05d}"}},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}},
    }


def pod(i: int, scheduler: str = "volcano") -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"pod-{i}",
            "namespace": "bench",
            "uid": f"uid-{scheduler}-{i}",
            "creationTimestamp": "2026-11-22T10:00:00Z",
            "labels": {"app": "bench"},
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [
                {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
            ],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] * 1000


async def run(nodes: int, pods: int, concurrency: int) -> None:
    state = cluster_state(frozenset({"volcano"}))
    cache = state.cache
    cache.replace_nodes([node(i) for i in range(nodes)])
    cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    sched = build_scheduler(state, load_conf(), StubExecutor())
    loop_task = asyncio.create_task(sched.run())  # as in pumice serve: filters never run a cycle
    app = make_extender_app(sched.verbs, Histogram("h", "h"))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    base = f"http://127.0.0.1:{port}"
    names = [f"node-{i:05d}" for i in range(nodes)]
    raw_pods = [pod(i) for i in range(pods)]
    # The informer sees pods as they are created, before kube-scheduler asks about them.
    for p in raw_pods:
        cache.upsert_pod(p)
    bodies = [orjson.dumps({"Pod": p, "Nodes": None, "NodeNames": names}) for p in raw_pods]
    print(f"nodes={nodes} pods={pods} filter body={len(bodies[0]) / 1024:.1f} KiB")

    async with aiohttp.ClientSession() as http:

        async def call(verb: str, body: bytes) -> tuple[float, Any]:
            t0 = time.perf_counter()
            async with http.post(
                f"{base}/{verb}", data=body, headers={"Content-Type": "application/json"}
            ) as r:
                data = orjson.loads(await r.read())
            return time.perf_counter() - t0, data

        # Warm up connection and numpy.
        await call("filter", orjson.dumps({"Pod": pod(10**6, "other"), "NodeNames": names}))

        # 1) The scheduling cycle kube-scheduler runs: filter then bind, one pod at a time.
        lat_f: list[float] = []
        lat_b: list[float] = []
        t0 = time.perf_counter()
        for p, body in zip(raw_pods, bodies, strict=True):
            dt, res = await call("filter", body)
            lat_f.append(dt)
            if res["NodeNames"]:
                bind = {
                    "PodName": p["metadata"]["name"],
                    "PodNamespace": "bench",
                    "PodUID": p["metadata"]["uid"],
                    "Node": res["NodeNames"][0],
                }
                dt, _ = await call("bind", orjson.dumps(bind))
                lat_b.append(dt)
        wall = time.perf_counter() - t0
        print(
            f"  filter+bind sequential: {pods / wall:8.0f} pods/s | filter p50 {pct(lat_f, 0.5):.2f} ms"
            f" p99 {pct(lat_f, 0.99):.2f} ms | bind p50 {pct(lat_b, 0.5):.2f} ms"
            f" p99 {pct(lat_b, 0.99):.2f} ms"
            f" | cycles {sched.shared.stats.cycles} ({sched.shared.stats.cycle_seconds * 1000:.0f} ms total)"
        )

        # 2) Fast path: pods of other schedulers.
        other = [
            orjson.dumps({"Pod": pod(i, "default-scheduler"), "NodeNames": names})
            for i in range(min(pods, 1000))
        ]
        lat_o = []
        t0 = time.perf_counter()
        for body in other:
            dt, _ = await call("filter", body)
            lat_o.append(dt)
        wall = time.perf_counter() - t0
        print(
            f"  fast path filter:       {len(other) / wall:8.0f} calls/s | p50 {pct(lat_o, 0.5):.2f} ms"
            f" p99 {pct(lat_o, 0.99):.2f} ms"
        )

        # 3) Prioritize (kube-scheduler skips it when filter returns one node; measured for completeness).
        lat_p = []
        for body in bodies[:500]:
            dt, _ = await call("prioritize", body)
            lat_p.append(dt)
        print(f"  prioritize:             p50 {pct(lat_p, 0.5):.2f} ms p99 {pct(lat_p, 0.99):.2f} ms")

        # 4) Concurrent filters (what many pending pods look like to the server).
        sem = asyncio.Semaphore(concurrency)
        fresh = [pod(pods + i) for i in range(pods)]
        for p in fresh:
            cache.upsert_pod(p)
        fresh_bodies = [orjson.dumps({"Pod": p, "NodeNames": names}) for p in fresh]

        async def one(body: bytes) -> float:
            async with sem:
                dt, _ = await call("filter", body)
                return dt

        t0 = time.perf_counter()
        lat_c = await asyncio.gather(*(one(b) for b in fresh_bodies))
        wall = time.perf_counter() - t0
        print(
            f"  filter x{concurrency} concurrent:  {len(fresh) / wall:8.0f} calls/s"
            f" | p50 {pct(list(lat_c), 0.5):.2f} ms"
            f" p99 {pct(list(lat_c), 0.99):.2f} ms"
        )
    loop_task.cancel()
    await runner.cleanup()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000])
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    for n in args.nodes:
        asyncio.run(run(n, args.pods, args.concurrency))


if __name__ == "__main__":
    main()
