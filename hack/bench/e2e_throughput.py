#!/usr/bin/env python3
"""Scheduling throughput on a real control plane: pods/s from the first create to the last bind.

Starts etcd + kube-apiserver (tests/e2e/controlplane.py), optionally an extra process (pumice serve),
kube-scheduler with the given KubeSchedulerConfiguration, N fake Nodes, then creates M pods with the given
schedulerName through a bounded pool of concurrent creates while a watch records when each pod is first seen
bound. Prints figures; asserts nothing.

    .venv/bin/python hack/bench/e2e_throughput.py                       # stock default-scheduler
    .venv/bin/python hack/bench/e2e_throughput.py --client-qps 500      # without the 50 QPS client limit
    .venv/bin/python hack/bench/e2e_throughput.py --scheduler-config sched.yaml --scheduler-name volcano \\
        --extra-cmd 'pumice serve --kubeconfig={kubeconfig} ...' --extra-ready-url http://127.0.0.1:8080/readyz

``--extra-cmd`` may use ``{kubeconfig}``, ``{server}`` and ``{workdir}``; ``KUBECONFIG`` is set for it too.
The scheduler config file gets ``clientConnection.kubeconfig`` and ``leaderElect: false`` filled in.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Protocol

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.e2e import kube  # noqa: E402 (needs the repo root on sys.path)
from tests.e2e.controlplane import ControlPlane, stock_scheduler_config  # noqa: E402
from tests.e2e.fake_kubelet import FakeKubelet  # noqa: E402


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32, help="creates in flight at once")
    parser.add_argument("--scheduler-name", default="default-scheduler")
    parser.add_argument(
        "--scheduler-config", type=Path, help="KubeSchedulerConfiguration YAML (default: stock)"
    )
    parser.add_argument(
        "--client-qps",
        type=float,
        help="set the scheduler's clientConnection.qps (burst = 2x); kube-scheduler defaults to 50/100",
    )
    parser.add_argument(
        "--extra-cmd", help="a process to start before kube-scheduler, e.g. 'pumice serve ...'"
    )
    parser.add_argument("--extra-ready-url", help="URL that answers 200 once the extra process is ready")
    parser.add_argument(
        "--pumice",
        action="store_true",
        help="run pumice via tests/e2e/pumice.py (CRDs, pumice serve, its scheduler config)",
    )
    parser.add_argument(
        "--bind-verb",
        action="store_true",
        help="with --pumice: delegate binding to pumice's /bind (by default kube-scheduler binds)",
    )
    parser.add_argument("--pod-cpu", default="10m")
    parser.add_argument("--pod-memory", default="16Mi")
    parser.add_argument("--kubelet", action="store_true", help="run the fake kubelet (marks pods Running)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for all binds")
    parser.add_argument("--keep-dir", action="store_true", help="keep the control-plane dir and logs")
    return parser.parse_args(argv)


def scheduler_config(args: argparse.Namespace, plane: ControlPlane) -> dict[str, Any]:
    if args.scheduler_config:
        config: dict[str, Any] = yaml.safe_load(args.scheduler_config.read_text())
    elif args.pumice:  # what ensure_pumice started
        config = yaml.safe_load(plane.scheduler_config_path.read_text())
    else:
        config = stock_scheduler_config(profiles=[{"schedulerName": args.scheduler_name}])
    if args.bind_verb:
        for extender in config.get("extenders") or []:
            extender["bindVerb"] = "bind"
    if args.client_qps:
        connection = config.setdefault("clientConnection", {})
        connection["qps"] = args.client_qps
        connection["burst"] = int(args.client_qps * 2)
    return config


def process_cpu(plane: ControlPlane) -> dict[str, float]:
    """CPU seconds (user + system) each control-plane process has used so far: on a CPU-bound machine
    the steadier figure, as wall-clock throughput swings with whatever else the host runs."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for name, proc in plane.processes.items():
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[name] = (int(fields[11]) + int(fields[12])) / ticks
    out["bench (this process)"] = sum(os.times()[:2])
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class Binds:
    """When each pod was first seen bound; ``done`` fires once ``expected`` pods are."""

    def __init__(self, expected: int) -> None:
        self.at: dict[str, float] = {}
        self.expected = expected
        self.done = asyncio.Event()

    def record(self, name: str) -> None:
        self.at.setdefault(name, time.monotonic())
        self.update()

    def update(self) -> None:
        if len(self.at) >= self.expected:
            self.done.set()


class BindRecorder(Protocol):
    """What :func:`watch_binds` tells of each bound pod (this script's :class:`Binds`, scale_bench's)."""

    def record(self, name: str) -> None: ...


async def watch_binds(api: Any, namespace: str, version: str, binds: BindRecorder) -> None:
    """Record binds as the watch reports them; runs until cancelled."""
    path = kube.collection_path("v1", "pods", namespace)
    while True:
        try:
            async with contextlib.aclosing(
                kube.watch_events(api, path, resource_version=version, timeout_seconds=600)
            ) as events:
                async for event in events:
                    obj = event["object"]
                    version = obj["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED") and obj.get("spec", {}).get("nodeName"):
                        binds.record(obj["metadata"]["name"])
        except kube.WatchExpired:
            listing = await kube.list_objects(api, path)
            version = listing["metadata"]["resourceVersion"]
            for pod in listing["items"]:
                if pod["spec"].get("nodeName"):
                    binds.record(pod["metadata"]["name"])


async def run(args: argparse.Namespace, plane: ControlPlane) -> dict[str, Any]:
    async with await kube.new_api_client(plane.kubeconfig_path) as api:
        t0 = time.monotonic()
        await kube.create_fake_nodes(api, args.nodes, prefix="bench", concurrency=32)
        nodes_s = time.monotonic() - t0
        namespace = "bench"
        await kube.create_namespace(api, namespace)

        kubelet = FakeKubelet(api) if args.kubelet else None
        if kubelet:
            await kubelet.start()
        try:
            # Warm-up: the scheduler has seen the nodes once a pod binds.
            await kube.create_pod(
                api, namespace, kube.pod_manifest("warmup", scheduler_name=args.scheduler_name)
            )

            async def warm() -> bool:
                pod = await kube.get_pod(api, namespace, "warmup")
                return bool(pod["spec"].get("nodeName"))

            await kube.wait_for(warm, 60, message="the warm-up pod to bind")
            await kube.request(api, "DELETE", f"{kube.collection_path('v1', 'pods', namespace)}/warmup")

            version = (await kube.list_objects(api, kube.collection_path("v1", "pods", namespace)))[
                "metadata"
            ]["resourceVersion"]
            binds = Binds(args.pods)
            created_at: dict[str, float] = {}
            sent_at: dict[str, float] = {}
            watcher = asyncio.create_task(watch_binds(api, namespace, version, binds))
            semaphore = asyncio.Semaphore(args.concurrency)
            errors: list[str] = []

            async def create(i: int) -> None:
                name = f"p-{i:05d}"
                manifest = kube.pod_manifest(
                    name, cpu=args.pod_cpu, memory=args.pod_memory, scheduler_name=args.scheduler_name
                )
                async with semaphore:
                    sent_at[name] = time.monotonic()
                    try:
                        await kube.create_pod(api, namespace, manifest)
                    except Exception as err:  # a figure, not a failure: count and report it
                        errors.append(f"{name}: {err}")
                        return
                    created_at[name] = time.monotonic()

            cpu_before = process_cpu(plane)
            start = time.monotonic()
            async with asyncio.TaskGroup() as group:
                for i in range(args.pods):
                    group.create_task(create(i))
            created_all = time.monotonic()
            binds.expected = args.pods - len(errors)
            binds.update()
            finished = asyncio.create_task(binds.done.wait())
            await asyncio.wait({watcher, finished}, timeout=args.timeout, return_when=asyncio.FIRST_COMPLETED)
            finished.cancel()
            watcher.cancel()
            cpu_after = process_cpu(plane)
            outcome, _ = await asyncio.gather(watcher, finished, return_exceptions=True)
            if not isinstance(outcome, asyncio.CancelledError | None):
                raise outcome
        finally:
            if kubelet:
                await kubelet.stop()

    latencies = [binds.at[n] - sent_at[n] for n in binds.at if n in sent_at]
    last_bound = max(binds.at.values(), default=start)
    elapsed = last_bound - start
    return {
        "nodes": args.nodes,
        "pods": args.pods,
        "concurrency": args.concurrency,
        "create_errors": len(errors),
        "first_errors": errors[:3],
        "bound": len(binds.at),
        "nodes_s": nodes_s,
        "create_s": created_all - start,
        "creates_per_s": (args.pods - len(errors)) / max(created_all - start, 1e-9),
        "elapsed_s": elapsed,
        "pods_per_s": len(binds.at) / max(elapsed, 1e-9),
        "p50_ms": 1000 * statistics.median(latencies) if latencies else float("nan"),
        "p90_ms": 1000 * percentile(latencies, 90) if latencies else float("nan"),
        "p99_ms": 1000 * percentile(latencies, 99) if latencies else float("nan"),
        "max_ms": 1000 * max(latencies) if latencies else float("nan"),
        "cpu_s": {k: round(cpu_after[k] - v, 2) for k, v in cpu_before.items() if k in cpu_after},
    }


def print_table(result: dict[str, Any], args: argparse.Namespace) -> None:
    config = str(args.scheduler_config or ("pumice" if args.pumice else "stock"))
    qps = f", client qps {args.client_qps:g}" if args.client_qps else ""
    print(f"\nscheduler config: {config}{qps}; schedulerName {args.scheduler_name}; kubelet {args.kubelet}")
    rows = [
        ("nodes", f"{result['nodes']}", f"created in {result['nodes_s']:.1f} s"),
        ("pods created", f"{result['pods'] - result['create_errors']}/{result['pods']}", ""),
        ("create phase", f"{result['create_s']:.2f} s", f"{result['creates_per_s']:.0f} creates/s"),
        ("pods bound", f"{result['bound']}", ""),
        ("first create -> last bind", f"{result['elapsed_s']:.2f} s", ""),
        ("throughput", f"{result['pods_per_s']:.1f} pods/s", ""),
        ("create->bound p50", f"{result['p50_ms']:.0f} ms", ""),
        ("create->bound p90", f"{result['p90_ms']:.0f} ms", ""),
        ("create->bound p99", f"{result['p99_ms']:.0f} ms", ""),
        ("create->bound max", f"{result['max_ms']:.0f} ms", ""),
        *((f"cpu: {name}", f"{secs:.2f} s", "") for name, secs in result["cpu_s"].items()),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value, note in rows:
        print(f"  {label:<{width}}  {value:>16}  {note}")
    if not args.client_qps and not args.scheduler_config and not args.pumice:
        print("  note: kube-scheduler's client defaults to 50 QPS / burst 100, and every bind is a request;")
        print("        pass --client-qps to measure the scheduler rather than its rate limiter")
    if result["first_errors"]:
        print("  create errors (first 3):", *result["first_errors"], sep="\n    ")
    print("json:", json.dumps({k: v for k, v in result.items() if k != "first_errors"}))


def pumice_metrics(plane: ControlPlane) -> dict[str, float]:
    """pumice's /metrics as ``{series: value}`` (empty when it does not answer)."""
    from tests.e2e.controlplane import _http

    url = getattr(plane, "_pumice").extender_url  # noqa: B009 (set by ensure_pumice)
    status, body = _http("GET", f"{url}/metrics")
    values: dict[str, float] = {}
    if status == 200:
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                values[name] = float(value)
    return values


def print_pumice_metrics(plane: ControlPlane) -> None:
    """pumice's own view of the run: cycles, time in them, extender verb latency (from /metrics)."""
    values = pumice_metrics(plane)
    if not values:
        return
    cycles = values.get("pumice_scheduling_cycles_total", 0)
    seconds = values.get("pumice_scheduling_cycle_seconds_total", 0)
    print(
        f"  pumice: {cycles:.0f} cycles, {seconds:.2f} s in cycles"
        f" ({1000 * seconds / max(cycles, 1):.2f} ms each)"
    )
    for verb in ("filter", "bind"):
        n = values.get(f'pumice_extender_request_seconds_count{{verb="{verb}"}}', 0)
        total = values.get(f'pumice_extender_request_seconds_sum{{verb="{verb}"}}', 0)
        if n:
            print(f"  pumice: {verb} {n:.0f} calls, mean {1000 * total / n:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plane = ControlPlane(keep_dir=args.keep_dir)
    try:
        plane.start()
        if args.extra_cmd:
            command = args.extra_cmd.format(
                kubeconfig=plane.kubeconfig_path, server=plane.server_url, workdir=plane.workdir
            )
            plane.start_process("extra", shlex.split(command), ready_url=args.extra_ready_url, timeout=60)
        if args.pumice:
            from tests.e2e.pumice import ensure_pumice

            ensure_pumice(plane)
        if not args.pumice or args.scheduler_config or args.client_qps or args.bind_verb:
            plane.start_scheduler(scheduler_config(args, plane))
        result = asyncio.run(run(args, plane))
        print_table(result, args)
        if args.pumice:
            print_pumice_metrics(plane)
    except BaseException:
        print(plane.log_tails(30), file=sys.stderr)
        raise
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
