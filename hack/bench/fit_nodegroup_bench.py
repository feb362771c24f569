"""Planning time with resource-strategy-fit and nodegroup on, next to Volcano's default conf (prints
figures, asserts nothing).

The cluster and gangs of ``plan_bench.py``; every node also carries a ``volcano.sh/nodegroup-name`` (the
GPU pool one group, the cpu nodes two by zone), and each queue has a node group affinity (required,
preferred, one with a preferred anti-affinity). Both confs run on that same snapshot: Volcano's default,
and the default plus ``nodegroup`` and ``resource-strategy-fit`` (proportional cpu/memory kept for idle
GPUs, MostAllocated on GPUs, LeastAllocated on cpu). Cold cycles (a fresh session each), the fastest of
``--repeat``. ``--inert`` measures the hooks' own cost: every queue may use every group alike and nothing
is kept for GPUs, so both confs must place every pod on the same node (checked) and only the plugins'
work differs.

    .venv/bin/python hack/bench/fit_nodegroup_bench.py --nodes 5000 --gangs 2000 --repeat 3 [--inert]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from extender.api import labels as L
from extender.core.model import Node, NodeGroupAffinity
from extender.core.snapshot import build_snapshot
from extender.framework.conf import DEFAULT_CONF
from extender.framework.cycle import run_cycle
from extender.plugins.registry import load_conf
from hack.bench.plan_bench import GPU, make_cluster  # a sibling script, by the repository's root

PLUGINS = f"""\
  - name: nodegroup
  - name: resource-strategy-fit
    arguments:
      resources:
        {GPU}: {{type: MostAllocated, weight: 2}}
        cpu: {{type: LeastAllocated, weight: 1}}
      proportional:
        enable: true
        resources: {GPU}
        resourceProportion:
          {GPU}.cpu: 1
          {GPU}.memory: 2
"""
AFFINITY = {
    "default": NodeGroupAffinity(required=("cpu-a", "cpu-b", "gpu")),
    "research": NodeGroupAffinity(required=("gpu", "cpu-a"), preferred=("gpu",)),
    "prod": NodeGroupAffinity(required=("cpu-a", "cpu-b", "gpu"), preferred=("cpu-b",)),
    "batch": NodeGroupAffinity(required=("cpu-a", "cpu-b"), preferred=("gpu",), anti_preferred=("gpu",)),
}


def grouped(nodes: list[Node]) -> list[Node]:
    out = []
    for n in nodes:
        group = (
            "gpu" if n.labels.get("pool") == "gpu" else ("cpu-a" if n.labels.get("zone") != "z2" else "cpu-b")
        )
        out.append(dataclasses.replace(n, labels={**n.labels, L.NODEGROUP_LABEL: group}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--gangs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--inert", action="store_true", help="plugins on, with no effect on placements")
    a = ap.parse_args()
    nodes, pods, groups, queues = make_cluster(a.nodes, a.gangs, a.seed)
    nodes = grouped(nodes)
    everywhere = NodeGroupAffinity(required=("cpu-a", "cpu-b", "gpu"))
    queues = [
        dataclasses.replace(q, node_group_affinity=everywhere if a.inert else AFFINITY.get(q.name))
        for q in queues
    ]
    plugins = PLUGINS
    if a.inert:
        plugins = plugins.replace(f"{GPU}.cpu: 1", f"{GPU}.cpu: 0").replace(
            f"{GPU}.memory: 2", f"{GPU}.memory: 0"
        )
        plugins = plugins.replace(
            "      resources:\n", "      resourceStrategyFitWeight: 0\n      resources:\n", 1
        )
    confs = {"default": load_conf(None), "+nodegroup+rsf": load_conf(DEFAULT_CONF + plugins)}
    # Interleaved, so a busy machine slows both alike.
    times: dict[str, list[float]] = {label: [] for label in confs}
    results = {}
    for _ in range(a.repeat):
        for label, conf in confs.items():
            snap = build_snapshot(nodes=nodes, pods=pods, podgroups=groups, queues=queues)
            t0 = time.perf_counter()
            results[label] = run_cycle(snap, conf, 0.0)
            times[label].append(time.perf_counter() - t0)
    if a.inert and results["default"].placements != results["+nodegroup+rsf"].placements:
        print("the inert plugins changed placements: the comparison is void")
    for label, result in results.items():
        print(
            f"{label:>15}: nodes={a.nodes} gangs={a.gangs} pods={len(pods)}: "
            f"cycle {1000 * min(times[label]):.0f} ms "
            f"(first {1000 * times[label][0]:.0f} ms), planned {len(result.placements)} pods, "
            f"{len(result.ready)} gangs whole, {len(result.unschedulable)} unschedulable"
        )


if __name__ == "__main__":
    main()
