"""pumice against the same kube-scheduler without an extender and with a do-nothing extender.

Three runs of hack/bench/e2e_throughput.py, each on a fresh control plane, N fake nodes, M plain pods
with ``schedulerName: volcano``, and one kube-scheduler configuration (pumice's generated one: client
QPS 500, percentageOfNodesToScore 100); only the extender differs. pumice runs twice: as generated
(kube-scheduler binds) and with binding delegated to pumice's /bind. Prints pods/s and the ratios.

    .venv/bin/python hack/bench/e2e_compare.py [--nodes 100 --pods 1000 --repeat 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from extender.deploy.scheduler_config import scheduler_config  # noqa: E402
from hack.bench import e2e_throughput  # noqa: E402 (a sibling script, by the repository's root)
from tests.e2e.controlplane import free_port, scheduler_config_api_version  # noqa: E402


def run(argv: list[str]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        e2e_throughput.main(argv)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("json: "))
    result: dict[str, Any] = json.loads(line[len("json: ") :])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--pods", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    common = ["--nodes", str(args.nodes), "--pods", str(args.pods), "--scheduler-name", "volcano"]
    port = free_port()
    with_ext = scheduler_config(
        extender_url=f"http://127.0.0.1:{port}",
        api_version=scheduler_config_api_version(),  # what the kube-scheduler in KUBEBUILDER_ASSETS loads
        leader_elect=False,
    )
    without = {k: v for k, v in with_ext.items() if k != "extenders"}
    tmp = Path(tempfile.mkdtemp(prefix="pumice-bench-"))
    (tmp / "none.yaml").write_text(yaml.safe_dump(without))
    (tmp / "noop.yaml").write_text(yaml.safe_dump(with_ext))
    noop = f"{sys.executable} {HERE / 'noop_extender.py'} --kubeconfig {{kubeconfig}} --bind 127.0.0.1:{port}"
    results: dict[str, list[dict[str, Any]]] = {
        "no extender": [],
        "no-op extender": [],
        "pumice": [],
        "pumice, /bind": [],
    }
    for _ in range(args.repeat):
        results["no extender"].append(run([*common, "--scheduler-config", str(tmp / "none.yaml")]))
        results["no-op extender"].append(
            run(
                [
                    *common,
                    "--scheduler-config",
                    str(tmp / "noop.yaml"),
                    "--extra-cmd",
                    noop,
                    "--extra-ready-url",
                    f"http://127.0.0.1:{port}/readyz",
                ]
            )
        )
        results["pumice"].append(run([*common, "--pumice"]))
        results["pumice, /bind"].append(run([*common, "--pumice", "--bind-verb"]))
    print(f"\n{args.nodes} nodes, {args.pods} pods, {args.repeat} run(s) each (best shown)")
    best = {k: max(r["pods_per_s"] for r in v) for k, v in results.items()}
    for name, runs in results.items():
        r = max(runs, key=lambda x: x["pods_per_s"])
        every = ", ".join(f"{x['pods_per_s']:.1f}" for x in runs)
        print(
            f"  {name:<18} {r['pods_per_s']:7.1f} pods/s   create->bound p50 {r['p50_ms']:6.0f} ms"
            f"  p99 {r['p99_ms']:6.0f} ms   (all runs: {every})"
        )
    print("  CPU seconds per run (mean), by process:")
    for name, runs in results.items():
        procs = sorted({p for r in runs for p in r["cpu_s"]})
        mean = {p: sum(r["cpu_s"].get(p, 0.0) for r in runs) / len(runs) for p in procs}
        total = sum(mean.values())
        parts = ", ".join(f"{p} {v:.2f}" for p, v in mean.items())
        print(f"    {name:<18} total {total:5.2f}: {parts}")
    for name in ("pumice", "pumice, /bind"):
        print(f"  {name} / no extender:    {best[name] / best['no extender']:.2f}")
        print(f"  {name} / no-op extender: {best[name] / best['no-op extender']:.2f}")


if __name__ == "__main__":
    main()
