#!/usr/bin/env python3
"""Failover and planned handover, on a real control plane: how long the cluster waits for a new leader.

Starts etcd + kube-apiserver + kube-scheduler (tests/e2e), two pumice replicas as the chart runs them behind
an endpoint router each for the extender and the webhooks (tests/e2e/ha.py), fake Nodes and the fake
kubelet. A client creates a gang (a PodGroup and ``--size`` pods; ``--vcjob``: a Volcano Job of that many
pods, so the job controller's part is counted too) every ``--every`` seconds throughout. Then:

- ``--kills`` times: kill -9 of the leader; the time to the next gang bound (the first gang created after
  the kill whose pods are all bound); the killed replica is started again, as its kubelet would;
- ``--handovers`` times: SIGTERM of the leader (a rolling update's step: the Lease is released at once);
  the time to the next gang bound; the replica is started again.

Prints p50 and p99 of both against the targets (kill -9: the lease duration + 2 s; SIGTERM: 3 s), the
creates refused (should be 0) and pumice_binds_unreserved_total (should be 0). Asserts nothing.

    .venv/bin/python hack/bench/failover_bench.py                  # 10 kills, 5 handovers
    .venv/bin/python hack/bench/failover_bench.py --vcjob --kills 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from hack.bench.e2e_throughput import percentile  # noqa: E402
from tests.e2e import kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.e2e.fake_kubelet import FakeKubelet  # noqa: E402
from tests.e2e.ha import USERS, HaPumice  # noqa: E402

PG = "scheduling.volcano.sh/v1beta1"
BATCH = "batch.volcano.sh/v1alpha1"
NS = "failover"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--handovers", type=int, default=5)
    p.add_argument("--size", type=int, default=2, help="pods per gang")
    p.add_argument("--every", type=float, default=0.25, help="seconds between gang creates")
    p.add_argument("--settle", type=float, default=6.0, help="seconds between one failover and the next")
    p.add_argument("--vcjob", action="store_true", help="gangs as Volcano Jobs (the job controller too)")
    p.add_argument("--lease-duration", type=float, default=10.0)
    return p.parse_args(argv)


class Gangs:
    """Creates gangs and records when each was created and when its last pod was first seen bound."""

    def __init__(self, api: Any, args: argparse.Namespace) -> None:
        self.api = api
        self.args = args
        self.created: dict[str, float] = {}
        self.pod_bound: dict[str, tuple[str, float]] = {}  # pod -> (gang, when first seen bound)
        self.refused = 0

    async def create(self, i: int) -> None:
        name = f"g-{i:05d}"
        self.created[name] = time.monotonic()
        try:
            if self.args.vcjob:
                body = {
                    "apiVersion": BATCH,
                    "kind": "Job",
                    "metadata": {"name": name},
                    "spec": {
                        "minAvailable": self.args.size,
                        "tasks": [
                            {
                                "name": "w",
                                "replicas": self.args.size,
                                "template": {
                                    "spec": {
                                        "restartPolicy": "Never",
                                        "containers": [
                                            {
                                                "name": "c",
                                                "image": "x",
                                                "resources": {"requests": {"cpu": "10m"}},
                                            }
                                        ],
                                    }
                                },
                            }
                        ],
                    },
                }
                await kube.request(self.api, "POST", kube.collection_path(BATCH, "jobs", NS), body=body)
                return
            pg = {
                "apiVersion": PG,
                "kind": "PodGroup",
                "metadata": {"name": name},
                "spec": {"minMember": self.args.size},
            }
            await kube.request(self.api, "POST", kube.collection_path(PG, "podgroups", NS), body=pg)
            for j in range(self.args.size):
                manifest = kube.pod_manifest(
                    f"{name}-{j}",
                    cpu="10m",
                    scheduler_name="volcano",
                    annotations={"scheduling.k8s.io/group-name": name},
                )
                await kube.create_pod(self.api, NS, manifest)
        except Exception as err:
            self.refused += 1
            print(f"  create {name} refused: {str(err)[:200]}", file=sys.stderr)

    async def stream(self, stop: asyncio.Event) -> None:
        i = 0
        while not stop.is_set():
            asyncio.get_running_loop().create_task(self.create(i))
            i += 1
            await asyncio.sleep(self.args.every)

    async def watch(self) -> None:
        """Bind times as the pod watch delivers them (a LIST polled every 50 ms lags by seconds once the
        namespace holds thousands of pods, and loads the API server it measures)."""
        path = kube.collection_path("v1", "pods", NS)
        version = ""
        while True:
            with contextlib.suppress(Exception):
                if not version:
                    listed = await kube.list_objects(self.api, path)
                    self._saw(listed["items"])
                    version = listed["metadata"]["resourceVersion"]
                async for ev in kube.watch_events(
                    self.api, path, resource_version=version, timeout_seconds=3600
                ):
                    obj = ev.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._saw([obj])
            version = ""  # ended, expired or cut: list again
            await asyncio.sleep(0.05)

    def _saw(self, pods: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        for p in pods:
            labels = p["metadata"].get("labels") or {}
            ann = p["metadata"].get("annotations") or {}
            gang = labels.get("volcano.sh/job-name") or ann.get("scheduling.k8s.io/group-name", "")
            if p["spec"].get("nodeName") and gang:
                self.pod_bound.setdefault(p["metadata"]["name"], (gang, now))

    def next_after(self, t: float, quiet: float) -> float | None:
        """Seconds from ``t`` to the first gang bound entirely ``quiet`` seconds or more after ``t``: by the
        new leader (the old one's binds in flight land within milliseconds of ``t``)."""
        by_gang: dict[str, list[float]] = {}
        for gang, at in self.pod_bound.values():
            by_gang.setdefault(gang, []).append(at)
        after = [max(ts) - t for ts in by_gang.values() if len(ts) >= self.args.size and min(ts) >= t + quiet]
        return min(after) if after else None


async def measure(ha: HaPumice, gangs: Gangs, how: str, within: float) -> float | None:
    leader = ha.leader()
    if leader is None:
        return None
    if how == "kill":
        t = await asyncio.to_thread(ha.kill, leader)
    else:
        t = time.monotonic()
        stopping = asyncio.get_running_loop().create_task(asyncio.to_thread(ha.stop_replica, leader))
    deadline = time.monotonic() + within
    took = None
    while time.monotonic() < deadline:
        took = gangs.next_after(t, quiet=1.0 if how == "kill" else 0.5)
        if took is not None:
            break
        await asyncio.sleep(0.05)
    if how != "kill":
        await stopping
    await asyncio.to_thread(ha.start_replica, leader)  # as the kubelet (or the rollout) starts it again
    return took


async def run(args: argparse.Namespace, cp: ControlPlane, ha: HaPumice) -> dict[str, Any]:
    async with await kube.new_api_client(cp.kubeconfig_path) as api:
        # Room for the whole run: a gang every 0.25 s fills 20 nodes of 110 pods in under five minutes,
        # and a full cluster binds nothing (it read as a failover with no gang bound).
        await kube.create_fake_nodes(api, args.nodes, prefix="fo", cpu="64", pods=1000, concurrency=16)
        await kube.create_namespace(api, NS)
        async with FakeKubelet(api):
            gangs = Gangs(api, args)
            stop = asyncio.Event()
            tasks = [asyncio.create_task(gangs.stream(stop)), asyncio.create_task(gangs.watch())]
            await asyncio.sleep(args.settle)
            kills: list[float] = []
            handovers: list[float] = []
            missed = 0
            for how, n, out in (("kill", args.kills, kills), ("sigterm", args.handovers, handovers)):
                for k in range(n):
                    took = await measure(ha, gangs, how, within=args.lease_duration + 60)
                    if took is None:
                        missed += 1
                        # Say why: what each process logged while no gang was bound.
                        print(cp.log_tails(60), file=sys.stderr, flush=True)
                    else:
                        out.append(took)
                    print(
                        f"  {how} {k + 1}/{n}: next gang bound {took if took is None else round(took, 2)} s",
                        flush=True,
                    )
                    await asyncio.sleep(args.settle)
            stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    return {"kills": kills, "handovers": handovers, "missed": missed, "refused": gangs.refused}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cp = ControlPlane(users=USERS)
    ha = HaPumice(
        cp,
        extra_args=(
            f"--leader-elect-lease-duration={args.lease_duration}",
            f"--leader-elect-renew-deadline={args.lease_duration * 0.7}",
        ),
    )
    try:
        cp.start()
        ha.start()
        r = asyncio.run(run(args, cp, ha))
        unreserved = ha.sum_metric("pumice_binds_unreserved_total")
    except BaseException:
        print(cp.log_tails(30), file=sys.stderr)
        raise
    finally:
        ha.stop()
        cp.stop()
    kind = "Volcano Jobs" if args.vcjob else "PodGroups"
    print(
        f"failover: 2 replicas, lease {args.lease_duration:g} s, {kind} of {args.size} pods "
        f"every {args.every:g} s"
    )
    for label, values, target in (
        ("kill -9 -> next gang bound", r["kills"], args.lease_duration + 2),
        ("SIGTERM -> next gang bound", r["handovers"], 3.0),
    ):
        if values:
            print(
                f"  {label}: p50 {percentile(values, 50):.2f} s, p99 {percentile(values, 99):.2f} s, "
                f"max {max(values):.2f} s over {len(values)} (target {target:g} s)"
            )
    print(
        f"  creates refused {r['refused']}, failovers without a gang bound {r['missed']}, "
        f"pumice_binds_unreserved_total {unreserved:g}"
    )
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
