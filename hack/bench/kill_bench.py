#!/usr/bin/env python3
"""kill -9 under load: jobs created while pumice is SIGKILLed and restarted, then the invariants checked.

Starts etcd + kube-apiserver + pumice + kube-scheduler (tests/e2e), fake Nodes and the fake kubelet, then
creates ``--jobs`` gang jobs (``--replicas`` pods each, minAvailable = replicas) while a killer sends
SIGKILL to pumice's process group every ``--every`` seconds, ``--kills`` times, restarting it each time.
Once everything settles it counts what a user would call a failure:

- lost: a job that never reaches Running;
- duplicated: a job with more pods than replicas, or two pods of one name (by UID over the run);
- double-booked: a node whose bound pods request more than it has.

Prints the figures and exits 1 if any is non-zero (it is a check as well as a benchmark).

    .venv/bin/python hack/bench/kill_bench.py                    # 180 jobs x 2 pods, 10 kills
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.e2e import kube  # noqa: E402
from tests.e2e.controlplane import ControlPlane  # noqa: E402
from tests.e2e.fake_kubelet import FakeKubelet  # noqa: E402
from tests.e2e.pumice import ensure_pumice  # noqa: E402

BATCH = "batch.volcano.sh/v1alpha1"
NS = "killbench"
# One replica, as before leader election: a restarted process need not wait out its predecessor's Lease
# (hack/bench/soak_bench.py kills one of two replicas instead).
SINGLE = ("--leader-elect=false",)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=20)
    p.add_argument("--jobs", type=int, default=180)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--every", type=float, default=3.0, help="seconds between kills")
    p.add_argument("--settle", type=float, default=240.0, help="seconds to wait for every job to run")
    return p.parse_args(argv)


def job_body(i: int, replicas: int) -> dict[str, Any]:
    container = {
        "name": "c",
        "image": "busybox",
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
    }
    return {
        "apiVersion": BATCH,
        "kind": "Job",
        "metadata": {"name": f"k-{i:04d}"},
        "spec": {
            "minAvailable": replicas,
            "tasks": [
                {
                    "name": "w",
                    "replicas": replicas,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
                }
            ],
        },
    }


async def killer(plane: ControlPlane, kills: int, every: float, done: list[int]) -> None:
    for _ in range(kills):
        await asyncio.sleep(every)
        popen = plane.processes["pumice"].popen
        if popen is not None and popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(popen.pid, signal.SIGKILL)
            await asyncio.to_thread(popen.wait)
        await asyncio.to_thread(ensure_pumice, plane, restart=True, extra_args=SINGLE)
        done.append(1)


async def run(args: argparse.Namespace, plane: ControlPlane) -> dict[str, Any]:
    async with await kube.new_api_client(plane.kubeconfig_path) as api:
        # Room for every pod with a margin, so a job that does not run was lost, not starved.
        per_node = -(-args.jobs * args.replicas // args.nodes) + 2
        await kube.create_fake_nodes(
            api, args.nodes, prefix="kb", cpu=str(per_node // 10 + 1), concurrency=16
        )
        await kube.create_namespace(api, NS)
        async with FakeKubelet(api):
            kills: list[int] = []
            kill_task = asyncio.create_task(killer(plane, args.kills, args.every, kills))
            start = time.monotonic()
            sem = asyncio.Semaphore(8)
            create_errors = 0

            async def create(i: int) -> None:
                nonlocal create_errors
                async with sem:
                    for _ in range(30):  # the webhook is down while pumice restarts: retry like a client
                        try:
                            await kube.request(
                                api,
                                "POST",
                                kube.collection_path(BATCH, "jobs", NS),
                                body=job_body(i, args.replicas),
                            )
                            return
                        except Exception as err:
                            if "AlreadyExists" in str(err):
                                return
                            await asyncio.sleep(1.0)
                    create_errors += 1

            async with asyncio.TaskGroup() as tg:
                for i in range(args.jobs):
                    tg.create_task(create(i))
                    await asyncio.sleep(0.02)
            await kill_task

            async def all_running() -> bool:
                jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", NS)))["items"]
                running = sum(
                    ((j.get("status") or {}).get("state") or {}).get("phase") == "Running" for j in jobs
                )
                return bool(running == args.jobs)

            with contextlib.suppress(TimeoutError, AssertionError):
                await kube.wait_for(all_running, args.settle, message="every job Running")
            elapsed = time.monotonic() - start
            jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", NS)))["items"]
            pods = (await kube.list_objects(api, kube.collection_path("v1", "pods", NS)))["items"]
            nodes = (await kube.list_objects(api, "/api/v1/nodes"))["items"]
    running = {
        j["metadata"]["name"]
        for j in jobs
        if ((j.get("status") or {}).get("state") or {}).get("phase") == "Running"
    }
    alive = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase") in ("Pending", "Running")
    ]
    per_job = Counter(p["metadata"]["labels"].get("volcano.sh/job-name") for p in alive)
    # Pod names are unique in a namespace, so a duplicate shows as a job with more pods than replicas.
    duplicated = sum(n > args.replicas for n in per_job.values())
    cap = {n["metadata"]["name"]: kube_cpu_milli(n["status"]["allocatable"]["cpu"]) for n in nodes}
    used: Counter[str] = Counter()
    for p in alive:
        if p["spec"].get("nodeName"):
            used[p["spec"]["nodeName"]] += sum(
                kube_cpu_milli(c["resources"]["requests"]["cpu"]) for c in p["spec"]["containers"]
            )
    double_booked = sum(used[n] > cap.get(n, 0) for n in used)
    return {
        "jobs": args.jobs, "kills": len(kills), "lost": args.jobs - len(running), "duplicated": duplicated,
        "double_booked": double_booked, "create_errors": create_errors, "elapsed_s": elapsed,
        "pods_alive": len(alive),
    }  # fmt: skip


def kube_cpu_milli(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plane = ControlPlane()
    try:
        plane.start()
        ensure_pumice(plane, extra_args=SINGLE)
        r = asyncio.run(run(args, plane))
    except BaseException:
        print(plane.log_tails(30), file=sys.stderr)
        raise
    finally:
        plane.stop()
    print(
        f"kill -9 under load: {r['jobs']} jobs x {args.replicas} pods, "
        f"{r['kills']} kills every {args.every:g} s"
    )
    print(f"  lost {r['lost']}, duplicated {r['duplicated']}, double-booked nodes {r['double_booked']}")
    print(
        f"  settled after {r['elapsed_s']:.1f} s; {r['pods_alive']} pods alive; "
        f"creates given up: {r['create_errors']}"
    )
    return 0 if not (r["lost"] or r["duplicated"] or r["double_booked"]) else 1


if __name__ == "__main__":
    sys.exit(main())
