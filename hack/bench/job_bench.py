#!/usr/bin/env python3
"""Job controller throughput on a real control plane: vcjobs/s from the first create to the last Running.

Starts etcd + kube-apiserver + pumice + kube-scheduler (tests/e2e), N fake Nodes and the fake kubelet, then
creates M small Jobs (``--tasks`` tasks of ``--replicas`` pods each, ``env`` and ``svc`` plugins unless
``--no-plugins``) through a bounded pool of creates, and watches Jobs until every one reports phase
Running. Each Job costs the controller a PodGroup, its pods, plugin objects and several status writes, on
top of kube-scheduler binding each pod through pumice's extender. Prints figures; asserts nothing.

    .venv/bin/python hack/bench/job_bench.py                   # 1 000 jobs x 1 pod, 100 nodes
    .venv/bin/python hack/bench/job_bench.py --jobs 200 --replicas 4 --tasks 2
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from hack.bench.e2e_throughput import percentile, process_cpu, pumice_metrics  # noqa: E402
from tests.e2e import kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.e2e.fake_kubelet import FakeKubelet  # noqa: E402
from tests.e2e.pumice import ensure_pumice  # noqa: E402

BATCH = "batch.volcano.sh/v1alpha1"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--tasks", type=int, default=1)
    p.add_argument("--replicas", type=int, default=1, help="pods per task")
    p.add_argument("--concurrency", type=int, default=32, help="job creates in flight at once")
    p.add_argument("--no-plugins", action="store_true", help="no env/svc plugins (pods and PodGroup only)")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--keep-dir", action="store_true")
    return p.parse_args(argv)


def job_body(i: int, args: argparse.Namespace) -> dict[str, Any]:
    tasks = [
        {
            "name": f"t{t}",
            "replicas": args.replicas,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "c",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                        }
                    ],
                }
            },
        }
        for t in range(args.tasks)
    ]
    spec: dict[str, Any] = {"tasks": tasks}
    if not args.no_plugins:
        spec["plugins"] = {"env": [], "svc": ["--disable-network-policy=true"]}
    return {"apiVersion": BATCH, "kind": "Job", "metadata": {"name": f"j-{i:05d}"}, "spec": spec}


async def watch_running(
    api: Any, ns: str, version: str, running: dict[str, float], expected: int, done: asyncio.Event
) -> None:
    path = kube.collection_path(BATCH, "jobs", ns)
    while not done.is_set():
        async for ev in kube.watch_events(api, path, resource_version=version):
            obj = ev["object"]
            version = obj["metadata"]["resourceVersion"]
            name = obj["metadata"]["name"]
            phase = ((obj.get("status") or {}).get("state") or {}).get("phase")
            if phase == "Running" and name not in running:
                running[name] = time.monotonic()
                if len(running) >= expected:
                    done.set()
                    return


async def run(args: argparse.Namespace, plane: ControlPlane) -> dict[str, Any]:
    async with await kube.new_api_client(plane.kubeconfig_path) as api:
        await kube.create_fake_nodes(api, args.nodes, prefix="bench", concurrency=32)
        ns = "bench"
        await kube.create_namespace(api, ns)
        async with FakeKubelet(api):
            version = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", ns)))["metadata"][
                "resourceVersion"
            ]
            running: dict[str, float] = {}
            sent: dict[str, float] = {}
            done = asyncio.Event()
            watcher = asyncio.create_task(watch_running(api, ns, version, running, args.jobs, done))
            sem = asyncio.Semaphore(args.concurrency)
            errors: list[str] = []

            async def create(i: int) -> None:
                body = job_body(i, args)
                async with sem:
                    sent[body["metadata"]["name"]] = time.monotonic()
                    try:
                        await kube.request(api, "POST", kube.collection_path(BATCH, "jobs", ns), body=body)
                    except Exception as err:  # a figure, not a failure
                        errors.append(f"{body['metadata']['name']}: {err}")

            cpu_before = process_cpu(plane)
            start = time.monotonic()
            async with asyncio.TaskGroup() as tg:
                for i in range(args.jobs):
                    tg.create_task(create(i))
            created = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), args.timeout)
            watcher.cancel()
            cpu_after = process_cpu(plane)
    lat = [running[n] - sent[n] for n in running if n in sent]
    elapsed = max(running.values(), default=start) - start
    return {
        "jobs": args.jobs,
        "pods": args.jobs * args.tasks * args.replicas,
        "errors": errors[:3],
        "n_errors": len(errors),
        "running": len(running),
        "create_s": created - start,
        "elapsed_s": elapsed,
        "jobs_per_s": len(running) / max(elapsed, 1e-9),
        "p50_s": statistics.median(lat) if lat else float("nan"),
        "p99_s": percentile(lat, 99) if lat else float("nan"),
        "cpu_s": {k: round(cpu_after[k] - v, 2) for k, v in cpu_before.items() if k in cpu_after},
    }


def pumice_counters(plane: ControlPlane) -> dict[str, float]:
    wanted = ("pumice_job_", "pumice_scheduling_cycle", "pumice_status_writes")
    return {k: v for k, v in pumice_metrics(plane).items() if k.startswith(wanted)}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plane = ControlPlane(keep_dir=args.keep_dir)
    try:
        plane.start()
        ensure_pumice(plane)
        r = asyncio.run(run(args, plane))
        plugins = "off" if args.no_plugins else "env+svc"
        print(
            f"job controller, {args.nodes} nodes: {r['running']}/{r['jobs']} jobs Running "
            f"({r['pods']} pods, {args.tasks} task(s) x {args.replicas}, plugins {plugins})"
        )
        print(f"  created in {r['create_s']:.1f} s; all Running after {r['elapsed_s']:.1f} s")
        pods_per_s = r["jobs_per_s"] * args.tasks * args.replicas
        print(f"  throughput: {r['jobs_per_s']:.1f} jobs/s ({pods_per_s:.1f} pods/s)")
        print(f"  create -> Running latency: p50 {r['p50_s']:.2f} s, p99 {r['p99_s']:.2f} s")
        print(f"  CPU seconds: {r['cpu_s']}")
        print(f"  pumice: {pumice_counters(plane)}")
        if r["n_errors"]:
            print(f"  create errors: {r['n_errors']} e.g. {r['errors']}")
    except BaseException:
        print(plane.log_tails(30), file=sys.stderr)
        raise
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
