#!/usr/bin/env python3
"""Soak: a stream of gang jobs for half an hour while either pumice replica is killed every 20-60 s.

Starts etcd + kube-apiserver + kube-scheduler (tests/e2e), two pumice replicas as the chart runs them behind
an endpoint router each for the extender and the webhooks (tests/e2e/ha.py), fake Nodes and the fake kubelet.
For ``--minutes``: a client creates a gang job (a vcjob of ``--replicas`` pods, minAvailable = replicas)
every ``--every`` seconds (retrying a refused create, as a client would, and counting it); the fake kubelet
runs every bound pod and ends it successfully after ``--runtime`` seconds, so nodes free up; every 20-60 s
(at random, ``--seed``) a replica, the leader or the standby, is SIGKILLed and started again 2 s later, as
its kubelet would. Throughout, every pod is watched: a pod name seen with two UIDs is a duplicate, a node
whose bound, live pods request more than it has is double-booked. At the end, after ``--settle``, every job
must have run (Running, Completing or Completed): the others are lost.

Prints the figures and exits 1 if anything was lost, duplicated or double-booked. Not in CI:

    .venv/bin/python hack/bench/soak_bench.py                   # 30 minutes
    .venv/bin/python hack/bench/soak_bench.py --minutes 10
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from hack.bench.kill_bench import job_body, kube_cpu_milli  # noqa: E402
from tests.e2e import kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.e2e.fake_kubelet import FakeKubelet  # noqa: E402
from tests.e2e.ha import USERS, HaPumice  # noqa: E402

BATCH = "batch.volcano.sh/v1alpha1"
NS = "soak"
RAN = ("Running", "Completing", "Completed")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30.0)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--replicas", type=int, default=2, help="pods per gang job")
    p.add_argument("--every", type=float, default=0.5, help="seconds between job creates")
    p.add_argument("--runtime", type=float, default=20.0, help="seconds a pod runs before it succeeds")
    p.add_argument("--kill-min", type=float, default=20.0)
    p.add_argument("--kill-max", type=float, default=60.0)
    p.add_argument("--settle", type=float, default=180.0)
    p.add_argument("--seed", type=int, default=23)
    return p.parse_args(argv)


class Watch:
    """Every pod seen: its UIDs by name; double-booked nodes seen at any time."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.uids: dict[str, set[str]] = {}
        self.over: dict[str, int] = {}
        self.cap: dict[str, int] = {}

    async def run(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                if not self.cap:
                    nodes = (await kube.list_objects(self.api, "/api/v1/nodes"))["items"]
                    self.cap = {
                        n["metadata"]["name"]: kube_cpu_milli(n["status"]["allocatable"]["cpu"])
                        for n in nodes
                    }
                pods = (await kube.list_objects(self.api, kube.collection_path("v1", "pods", NS)))["items"]
                used: Counter[str] = Counter()
                for p in pods:
                    self.uids.setdefault(p["metadata"]["name"], set()).add(p["metadata"]["uid"])
                    node = p["spec"].get("nodeName")
                    if (
                        node
                        and not p["metadata"].get("deletionTimestamp")
                        and p["status"].get("phase") in ("Pending", "Running")
                    ):
                        used[node] += sum(
                            kube_cpu_milli(c["resources"]["requests"]["cpu"]) for c in p["spec"]["containers"]
                        )
                for node, u in used.items():
                    if u > self.cap.get(node, 1 << 60):
                        self.over[node] = max(self.over.get(node, 0), u)
            await asyncio.sleep(0.5)


async def finisher(api: Any, kubelet: FakeKubelet, runtime: float) -> None:
    """Ends each Running pod successfully ``runtime`` seconds after it was first seen running."""
    since: dict[tuple[str, str], float] = {}
    done: set[tuple[str, str]] = set()
    while True:
        with contextlib.suppress(Exception):
            pods = (await kube.list_objects(api, kube.collection_path("v1", "pods", NS)))["items"]
            now = time.monotonic()
            for p in pods:
                key = (NS, p["metadata"]["name"])
                if p["status"].get("phase") != "Running" or key in done:
                    continue
                if now - since.setdefault(key, now) >= runtime:
                    done.add(key)
                    with contextlib.suppress(Exception):
                        await kubelet.succeed(*key)
        await asyncio.sleep(1.0)


async def killer(ha: HaPumice, args: argparse.Namespace, until: float, kills: list[str]) -> None:
    rng = random.Random(args.seed)
    while True:
        await asyncio.sleep(rng.uniform(args.kill_min, args.kill_max))
        if time.monotonic() >= until:
            return
        victim = rng.randrange(len(ha.replicas))
        role = "leader" if ha.leader() == victim else "standby"
        await asyncio.to_thread(ha.kill, victim)
        kills.append(role)
        print(
            f"  {time.strftime('%H:%M:%S')} killed replica {victim} ({role}); {len(kills)} kills", flush=True
        )
        await asyncio.sleep(2)
        await asyncio.to_thread(ha.start_replica, victim)


async def run(args: argparse.Namespace, cp: ControlPlane, ha: HaPumice) -> dict[str, Any]:
    async with await kube.new_api_client(cp.kubeconfig_path) as api:
        per_node = max(4, int(args.replicas * args.runtime / args.every / args.nodes * 2) + 2)
        await kube.create_fake_nodes(
            api, args.nodes, prefix="soak", cpu=str(per_node // 10 + 1), concurrency=16
        )
        await kube.create_namespace(api, NS)
        async with FakeKubelet(api) as kubelet:
            watch = Watch(api)
            until = time.monotonic() + args.minutes * 60
            kills: list[str] = []
            background = [
                asyncio.create_task(watch.run()),
                asyncio.create_task(finisher(api, kubelet, args.runtime)),
            ]
            kill_task = asyncio.create_task(killer(ha, args, until, kills))
            names: list[str] = []
            refusals = 0
            while time.monotonic() < until:
                name = f"s-{len(names):05d}"
                names.append(name)
                for _ in range(60):  # a client retries a refused create
                    try:
                        await kube.request(
                            api,
                            "POST",
                            kube.collection_path(BATCH, "jobs", NS),
                            body=job_body(len(names) - 1, args.replicas) | {"metadata": {"name": name}},
                        )
                        break
                    except Exception as err:
                        if "AlreadyExists" in str(err):
                            break
                        refusals += 1
                        await asyncio.sleep(1.0)
                await asyncio.sleep(args.every)
            kill_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await kill_task
            for i in range(len(ha.replicas)):
                if not ha.running(i):
                    await asyncio.to_thread(ha.start_replica, i)

            async def all_ran() -> bool:
                jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", NS)))["items"]
                phases = {
                    j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase")
                    for j in jobs
                }
                return all(phases.get(n) in RAN for n in names)

            with contextlib.suppress(TimeoutError):
                await kube.wait_for(all_ran, args.settle, interval=2.0, message="every job ran")
            jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", NS)))["items"]
            for t in background:
                t.cancel()
            await asyncio.gather(*background, return_exceptions=True)
    phases = {j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase") for j in jobs}
    lost = [n for n in names if phases.get(n) not in RAN]
    duplicated = [n for n, u in watch.uids.items() if len(u) > 1]
    return {
        "jobs": len(names), "kills": Counter(kills), "lost": lost, "duplicated": duplicated,
        "double_booked": watch.over, "refusals": refusals,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cp = ControlPlane(users=USERS)
    ha = HaPumice(cp)
    started = time.monotonic()
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
    print(
        f"soak: {args.minutes:g} min, {r['jobs']} gang jobs x {args.replicas} pods, kills {dict(r['kills'])}"
    )
    print(
        f"  lost {len(r['lost'])}, duplicated pods {len(r['duplicated'])}, "
        f"double-booked nodes {len(r['double_booked'])}"
    )
    print(
        f"  refused creates retried {r['refusals']}; pumice_binds_unreserved_total {unreserved:g} "
        f"(surviving replicas); "
        f"{(time.monotonic() - started) / 60:.1f} min in all"
    )
    if r["lost"]:
        print(f"  lost: {r['lost'][:20]}")
    return 0 if not (r["lost"] or r["duplicated"] or r["double_booked"]) else 1


if __name__ == "__main__":
    sys.exit(main())
