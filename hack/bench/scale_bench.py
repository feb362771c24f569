#!/usr/bin/env python3
"""End-to-end scale: kube-scheduler alone, a do-nothing extender and pumice on one real control plane each.

For every scenario, each mode gets a fresh etcd + kube-apiserver with the same fake nodes, the same pods
and the same KubeSchedulerConfiguration (pumice's generated one: client QPS 500, percentageOfNodesToScore
100, the ``volcano`` profile); only the extender differs:

- ``alone``: no extender (kube-scheduler filters and scores every node for every pod);
- ``noop``: ``hack/bench/noop_extender.py`` (filter keeps every node, prioritize scores 0);
- ``pumice``: ``pumice serve`` (plans whole gangs, pins the planned node at filter).

Scenarios: a mix (``gang8``: PodGroups of minMember 8; ``gang64``; ``single``: plain pods) and an order
(``while``: pods created while the scheduler runs; ``first``: pods created, then kube-scheduler started).
PodGroups and the ``scheduling.k8s.io/group-name`` annotation are created in every mode, so the API server
does the same work; only pumice reads them. ``gang1000`` creates one PodGroup of minMember 1 000 while
scheduling and reports the time from its last pod's create to all 1 000 bound.

Figures per run: pods/s (``while``: first create to last bind; ``first``: first bind to last bind, as
kube-scheduler's start-up takes seconds in every mode), create→bound p50/p99 (``first``: from the first
bind), CPU seconds of each process from /proc
(kube-apiserver, etcd, kube-scheduler, the extender), pumice's cycles and filter latency from /metrics.

Sizing (``--pods auto``): the first run (kube-scheduler alone) is tried with 10 000 pods, then 6 000,
then 3 000; a size whose creates fail or time out, or whose run would not finish inside ``--budget`` for
the whole matrix, is given up and the reason printed. ``--profile DIR`` runs ``py-spy record`` on pumice
for each of its runs (py-spy from PyPI; root or ptrace rights needed).

    .venv/bin/python hack/bench/scale_bench.py                                  # 1 000 nodes, sized
    .venv/bin/python hack/bench/scale_bench.py --pods 3000 --mixes gang8 --orders first --repeat 2
    .venv/bin/python hack/bench/scale_bench.py --nodes 5000 --pods 3000 --mixes gang8 --orders first
    KUBEBUILDER_ASSETS=/usr/local/kubebuilder-1.28/bin .venv/bin/python hack/bench/scale_bench.py ...
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(REPO))

from extender.deploy.scheduler_config import scheduler_config  # noqa: E402
from hack.bench.e2e_throughput import watch_binds  # noqa: E402 (a sibling script, by the repository's root)
from tests.e2e import kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane, _http, free_port  # noqa: E402
from tests.e2e.pumice import _apply_crds, ensure_pumice  # noqa: E402

MODES = ("alone", "noop", "pumice")
MIXES = {"gang8": 8, "gang64": 64, "single": 1}
ORDERS = ("while", "first")
SIZES = (10_000, 6_000, 3_000)
PG_PATH = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
NAMESPACE = "bench"


@dataclass
class Scenario:
    mix: str
    order: str
    pods: int

    @property
    def name(self) -> str:
        return f"{self.mix}/{self.order}"

    @property
    def gang(self) -> int:
        return 1000 if self.mix == "gang1000" else MIXES[self.mix]


@dataclass
class Run:
    mode: str
    scenario: str
    pods: int
    bound: int = 0
    create_errors: int = 0
    first_errors: list[str] = field(default_factory=list)
    finished: bool = False
    elapsed_s: float = 0.0
    create_s: float = 0.0
    pods_per_s: float = 0.0
    p50_ms: float = float("nan")
    p99_ms: float = float("nan")
    gang_last_create_to_bound_s: float = float("nan")
    cpu_s: dict[str, float] = field(default_factory=dict)
    pumice: dict[str, float] = field(default_factory=dict)


# --- processes ------------------------------------------------------------------------------------------


def process_cpu(plane: ControlPlane) -> dict[str, float]:
    """CPU seconds (user + system, children included) of each process the plane started, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for name, proc in plane.processes.items():
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # utime, stime, cutime, cstime: fields 14-17 of stat, 11-14 after the command.
        out[name] = sum(int(x) for x in fields[11:15]) / ticks
    out["bench"] = sum(os.times()[:2])
    return out


def pumice_metrics(url: str) -> dict[str, float]:
    status, body = _http("GET", f"{url}/metrics")
    values: dict[str, float] = {}
    if status == 200:
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                with contextlib.suppress(ValueError):
                    values[name] = float(value)
    return values


def pumice_figures(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    def d(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    cycles = d("pumice_scheduling_cycles_total")
    out = {"cycles": cycles, "cycle_s": d("pumice_scheduling_cycle_seconds_total")}
    for verb in ("filter", "prioritize", "bind"):
        n = d(f'pumice_extender_request_seconds_count{{verb="{verb}"}}')
        if n:
            out[f"{verb}_calls"] = n
            out[f"{verb}_mean_ms"] = 1000 * d(f'pumice_extender_request_seconds_sum{{verb="{verb}"}}') / n
    return out


def config_for(mode: str, plane: ControlPlane, port: int) -> dict[str, Any]:
    config = scheduler_config(
        extender_url=f"http://127.0.0.1:{port}",
        api_version=plane.scheduler_config_api_version,
        kubeconfig=str(plane.kubeconfig_path),
        leader_elect=False,
    )
    if mode == "alone":
        config.pop("extenders")
    loaded: dict[str, Any] = yaml.safe_load(yaml.safe_dump(config))
    return loaded


class Mode:
    """Starts the extender of a mode (before the pods) and kube-scheduler (before or after them)."""

    def __init__(self, name: str, plane: ControlPlane, profile: Path | None) -> None:
        self.name, self.plane, self.profile = name, plane, profile
        self.port = free_port()
        self.pumice_url: str | None = None
        self.spy: subprocess.Popen[bytes] | None = None

    def start_extender(self) -> None:
        if self.name == "noop":
            self.plane.start_process(
                "noop",
                [
                    sys.executable,
                    str(HERE / "noop_extender.py"),
                    f"--kubeconfig={self.plane.kubeconfig_path}",
                    f"--bind=127.0.0.1:{self.port}",
                ],
                ready_url=f"http://127.0.0.1:{self.port}/readyz",
                timeout=60,
            )
        elif self.name == "pumice":
            self.pumice_url = ensure_pumice(self.plane, start_scheduler=False).extender_url
            self.port = int(self.pumice_url.rsplit(":", 1)[1])

    def start_scheduler(self, timeout: float = 60.0) -> None:
        self.plane.start_scheduler(config_for(self.name, self.plane, self.port), timeout=timeout)

    def start_profile(self, label: str) -> None:
        pid = self.plane.processes["pumice"].pid if "pumice" in self.plane.processes else None
        if self.profile is None or pid is None:
            return
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self.profile.mkdir(parents=True, exist_ok=True)
        out = self.profile / f"{label}.txt"
        self.spy = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(pid),
                "--format",
                "raw",
                "--rate",
                "200",
                "-o",
                str(out),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop_profile(self) -> None:
        if self.spy is not None:
            self.spy.send_signal(2)  # SIGINT: py-spy writes its file
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.spy.wait(30)
            self.spy = None


# --- the run --------------------------------------------------------------------------------------------


class Binds:
    def __init__(self) -> None:
        self.at: dict[str, float] = {}
        self.changed = asyncio.Event()

    def record(self, name: str) -> None:
        if name not in self.at:
            self.at[name] = time.monotonic()
            self.changed.set()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


async def create_all(
    api: Any, scenario: Scenario, concurrency: int, sent_at: dict[str, float], errors: list[str]
) -> tuple[float, float]:
    """Create the scenario's PodGroups and pods (a gang's pods in a row, gangs interleaved by the pool);
    returns (start, when the last create returned)."""
    gang = scenario.gang
    semaphore = asyncio.Semaphore(concurrency)

    async def podgroup(g: int) -> None:
        body = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"g-{g:05d}"},
            "spec": {"minMember": gang, "queue": "default"},
        }
        async with semaphore:
            try:
                await kube.request(api, "POST", PG_PATH.format(ns=NAMESPACE), body=body)
            except Exception as err:  # a figure, not a failure
                errors.append(f"podgroup g-{g:05d}: {err}")

    async def pod(i: int) -> None:
        name = f"p-{i:05d}"
        annotations = {GROUP_ANNOTATION: f"g-{i // gang:05d}"} if gang > 1 else None
        manifest = kube.pod_manifest(
            name, cpu="10m", memory="16Mi", scheduler_name="volcano", annotations=annotations
        )
        async with semaphore:
            sent_at[name] = time.monotonic()
            try:
                await kube.create_pod(api, NAMESPACE, manifest)
            except Exception as err:
                errors.append(f"{name}: {err}")
                sent_at.pop(name, None)

    start = time.monotonic()
    if scenario.order == "first" and gang > 1:
        async with asyncio.TaskGroup() as group:
            for g in range(scenario.pods // gang):
                group.create_task(podgroup(g))
    async with asyncio.TaskGroup() as group:
        for i in range(scenario.pods):
            if gang > 1 and i % gang == 0 and scenario.order == "while":
                # The PodGroup just before its gang's pods, as a job controller would make them.
                await podgroup(i // gang)
            group.create_task(pod(i))
    return start, time.monotonic()


async def one_run(args: argparse.Namespace, mode: Mode, scenario: Scenario, label: str) -> Run:
    plane = mode.plane
    run = Run(mode=mode.name, scenario=scenario.name, pods=scenario.pods)
    async with await kube.new_api_client(plane.kubeconfig_path) as api:
        await kube.create_fake_nodes(api, args.nodes, prefix="bench", concurrency=32)
        await kube.create_namespace(api, NAMESPACE)
        mode.start_extender()
        if scenario.order == "while":
            mode.start_scheduler()
            await warm_up(api)
        listing = await kube.list_objects(api, kube.collection_path("v1", "pods", NAMESPACE))
        binds = Binds()
        watcher = asyncio.create_task(
            watch_binds(api, NAMESPACE, listing["metadata"]["resourceVersion"], binds)
        )
        sent_at: dict[str, float] = {}
        errors: list[str] = []
        metrics_before = pumice_metrics(mode.pumice_url) if mode.pumice_url else {}
        cpu_before = process_cpu(plane)
        mode.start_profile(label)
        create_start, created = await create_all(api, scenario, args.concurrency, sent_at, errors)
        start = create_start
        if scenario.order == "first":
            # pumice plans the backlog while kube-scheduler starts, as it would in a cluster; the clock
            # starts with kube-scheduler in every mode.
            start = time.monotonic()
            # In a thread: its probe pod queues behind the backlog, while binds are being recorded here.
            await asyncio.to_thread(mode.start_scheduler, args.timeout)
            cpu_before.update({"kube-scheduler": 0.0})
        expected = len(sent_at)
        deadline = time.monotonic() + args.timeout
        while len(binds.at) < expected and time.monotonic() < deadline and not watcher.done():
            binds.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(binds.changed.wait(), 5)
        mode.stop_profile()
        cpu_after = process_cpu(plane)
        metrics_after = pumice_metrics(mode.pumice_url) if mode.pumice_url else {}
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    run.create_errors, run.first_errors = len(errors), errors[:3]
    run.bound = len(binds.at)
    run.finished = run.bound >= expected and expected > 0
    run.create_s = created - create_start
    if scenario.order == "first" and binds.at:
        # From the first bind: kube-scheduler's own start-up (seconds, the same in every mode) is not
        # scheduling.
        start = min(binds.at.values())
    last = max(binds.at.values(), default=start)
    run.elapsed_s = last - start
    run.pods_per_s = run.bound / max(run.elapsed_s, 1e-9)
    # "while": from each pod's create; "first": from the first bind.
    while_ = scenario.order == "while"
    latencies = [t - (sent_at[n] if while_ else start) for n, t in binds.at.items() if n in sent_at]
    if latencies:
        run.p50_ms = 1000 * statistics.median(latencies)
        run.p99_ms = 1000 * percentile(latencies, 99)
    if scenario.mix == "gang1000" and run.finished:
        run.gang_last_create_to_bound_s = last - max(sent_at.values())
    run.cpu_s = {k: round(cpu_after[k] - cpu_before.get(k, 0.0), 2) for k in cpu_after}
    run.pumice = pumice_figures(metrics_before, metrics_after) if metrics_after else {}
    return run


async def warm_up(api: Any) -> None:
    """One pod bound: kube-scheduler (and the extender) have seen the nodes."""
    await kube.create_pod(api, NAMESPACE, kube.pod_manifest("warmup", scheduler_name="volcano"))

    async def bound() -> bool:
        return bool((await kube.get_pod(api, NAMESPACE, "warmup"))["spec"].get("nodeName"))

    await kube.wait_for(bound, 120, message="the warm-up pod to bind")
    await kube.request(api, "DELETE", f"{kube.collection_path('v1', 'pods', NAMESPACE)}/warmup")


def run_mode(args: argparse.Namespace, mode_name: str, scenario: Scenario, label: str) -> Run:
    """One run on a fresh control plane; a run that fails is reported as such (with the log tails on
    stderr), and the matrix goes on."""
    plane = ControlPlane(keep_dir=args.keep_dir)
    try:
        plane.start()
        _apply_crds(plane)
        mode = Mode(mode_name, plane, args.profile)
        return asyncio.run(one_run(args, mode, scenario, label))
    except Exception as err:
        print(plane.log_tails(20), file=sys.stderr)
        failed = Run(mode=mode_name, scenario=scenario.name, pods=scenario.pods)
        failed.first_errors = [f"run failed: {err!r}"[:300]]
        return failed
    finally:
        plane.stop()


# --- sizing and the report -------------------------------------------------------------------------------


def sized(args: argparse.Namespace, scenarios: list[Scenario]) -> tuple[int, list[Run], str]:
    """The largest size in SIZES the first scenario serves with kube-scheduler alone, within the budget."""
    notes = []
    first = scenarios[0]
    runs_left = len(scenarios) * len(args.modes) * args.repeat
    for size in SIZES:
        scenario = Scenario(first.mix, first.order, size // MIXES[first.mix] * MIXES[first.mix])
        t0 = time.monotonic()
        run = run_mode(args, "alone", scenario, f"size-{size}")
        took = time.monotonic() - t0
        report([run], header=False)
        if run.create_errors:
            notes.append(f"{size} pods: {run.create_errors} creates failed ({run.first_errors[:1]})")
            continue
        if not run.finished:
            notes.append(f"{size} pods: {run.bound} bound within {args.timeout:.0f} s")
            continue
        if took * runs_left > args.budget:
            notes.append(
                f"{size} pods: a run took {took:.0f} s, the matrix ({runs_left} runs) would not fit "
                f"--budget {args.budget:.0f} s"
            )
            continue
        notes.append(f"{size} pods: served")
        return size, [run], "; ".join(notes)
    return SIZES[-1], [], "; ".join(notes) + f"; using {SIZES[-1]} anyway"


def report(runs: list[Run], *, header: bool = True) -> None:
    if header:
        print(
            f"\n{'scenario':<16}{'mode':<8}{'pods':>6}{'bound':>7}{'pods/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
            f"{'gang s':>8}  cpu s (apiserver/etcd/sched/ext)   pumice"
        )
    for r in runs:
        cpu = r.cpu_s
        ext = cpu.get("pumice", cpu.get("noop", 0.0))
        gang = (
            f"{r.gang_last_create_to_bound_s:8.2f}"
            if r.gang_last_create_to_bound_s == r.gang_last_create_to_bound_s
            else " " * 8
        )
        pm = r.pumice
        extra = (
            f"{pm.get('cycles', 0):.0f} cycles {pm.get('cycle_s', 0):.2f} s,"
            f" filter {pm.get('filter_calls', 0):.0f} x {pm.get('filter_mean_ms', 0):.2f} ms"
            if pm
            else ""
        )
        print(
            f"{r.scenario:<16}{r.mode:<8}{r.pods:>6}{r.bound:>7}{r.pods_per_s:>9.1f}{r.p50_ms:>9.0f}{r.p99_ms:>9.0f}"
            f"{gang}  {cpu.get('kube-apiserver', 0):5.1f} {cpu.get('etcd', 0):5.1f} "
            f"{cpu.get('kube-scheduler', 0):5.1f} {ext:5.1f}{'':>12}{extra}"
            + (f"  [{r.create_errors} create errors]" if r.create_errors else "")
            + ("" if r.finished else "  [unfinished]")
            + (f"  {r.first_errors[0]}" if r.first_errors and not r.create_errors else "")
        )
    sys.stdout.flush()


def ratios(runs: list[Run]) -> None:
    print("\nratios (best of repeats; pods/s):")
    by: dict[tuple[str, str], float] = {}
    for r in runs:
        if r.finished:
            by[(r.scenario, r.mode)] = max(by.get((r.scenario, r.mode), 0.0), r.pods_per_s)
    for scenario in sorted({s for s, _ in by}):
        alone, noop, ours = (by.get((scenario, m)) for m in MODES)
        target = 1.2 if scenario.endswith("/first") else 1.0
        parts = [f"{scenario:<16}"]
        if ours and alone:
            parts.append(f"pumice/alone {ours / alone:4.2f} (target >= {target})")
        if ours and noop:
            parts.append(f"pumice/noop {ours / noop:4.2f} (target >= 1.0)")
        print("  " + "   ".join(parts))
    gang = [r for r in runs if r.mode == "pumice" and r.scenario.startswith("gang1000")]
    for r in gang:
        print(
            f"  1 000-pod gang: last create -> all bound {r.gang_last_create_to_bound_s:.2f} s (target < 5 s)"
        )


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--pods", default="auto", help="pods per scenario, or 'auto' (see Sizing)")
    ap.add_argument("--mixes", default="gang8,gang64,single,gang1000")
    ap.add_argument("--orders", default="while,first")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--concurrency", type=int, default=32, help="creates in flight")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for all binds")
    ap.add_argument("--budget", type=float, default=4 * 3600.0, help="seconds the whole matrix may take")
    ap.add_argument("--profile", type=Path, help="py-spy raw profiles of pumice go here")
    ap.add_argument("--json", type=Path, help="write every run here")
    ap.add_argument("--keep-dir", action="store_true")
    args = ap.parse_args()
    args.modes = args.modes.split(",")
    return args


def main() -> int:
    args = parse_args()
    scenarios: list[Scenario] = []
    for mix in args.mixes.split(","):
        if mix == "gang1000":
            scenarios.append(Scenario("gang1000", "while", 1000))
            continue
        scenarios += [Scenario(mix, order, 0) for order in args.orders.split(",")]
    plane = ControlPlane()
    print(f"{plane.describe()}; {os.cpu_count()} CPUs; {args.nodes} nodes; modes {', '.join(args.modes)}")
    runs: list[Run] = []
    sized_scenarios = [s for s in scenarios if s.mix != "gang1000"]
    if args.pods == "auto" and sized_scenarios:
        size, first_runs, notes = sized(args, sized_scenarios)
        print(f"sizing: {notes}")
        runs += first_runs
    else:
        size = int(args.pods) if args.pods != "auto" else SIZES[-1]
    for s in sized_scenarios:
        # Whole gangs only: a last gang short of its minMember would never be placed.
        s.pods = size // s.gang * s.gang
    done = {(r.scenario, r.mode) for r in runs}
    for rep in range(args.repeat):
        for scenario in scenarios:
            for mode in args.modes:
                if rep == 0 and (scenario.name, mode) in done:
                    continue
                label = f"{scenario.mix}-{scenario.order}-{mode}-{rep}"
                run = run_mode(args, mode, scenario, label)
                report([run], header=not runs)
                runs.append(run)
                if args.json:
                    args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=1))
    print(f"\n{args.nodes} nodes; {size} pods per scenario; {args.repeat} repeat(s)")
    report(runs)
    ratios(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
