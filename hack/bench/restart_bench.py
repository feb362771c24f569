#!/usr/bin/env python3
"""Cold restart at scale: how long pumice takes to bind a new pod after a restart, and how much memory.

Starts the real control plane (tests/e2e: etcd, kube-apiserver, kube-scheduler with pumice's extender
config), then fills it as a busy cluster is filled, fast and without scheduling anything:

- ``--nodes`` fake Nodes (8 cpu, 32Gi, 110 pods each);
- ``--pods`` bound pods over ``--namespaces`` namespaces: most of them (all but ``--plain``) in vcjobs of
  ``--gang`` pods, each vcjob with its PodGroup and its pods exactly as pumice's job controller would make
  them (the pure reconcile builds the bodies), the rest plain pods (half pumice's, half the default
  scheduler's); every pod is created with ``spec.nodeName`` set and its status then patched to Running, as
  a kubelet would. Creates go through a bounded pool of concurrent requests.

A first pumice (the warm-up, from this tree, started as ``tests/e2e/pumice.py`` starts it) registers its
webhooks, creates the queues and writes every vcjob and PodGroup status, so the cluster is settled as a
running pumice leaves it.
Then, for each ``--src`` (a source tree; default this one), ``--repeat`` times: pumice is stopped (SIGTERM),
a plain pod and a gang of 8 pods (its PodGroup made while pumice still ran) are created while it is down,
pumice is started again (``--leader-elect=false`` when its ``serve`` knows the flag) and the bench
measures, from the moment the process is spawned:

- ready: ``/readyz`` answers 200 (every informer listed);
- first bind: the plain pod bound; gang bound: all 8 bound;
- vcjob bound: a vcjob created as soon as admission takes it (the webhooks refuse while pumice starts),
  to all its pods bound (the job controller's path, behind every other job's first reconcile);
- pumice's peak RSS (``VmHWM`` of /proc/<pid>/status, read at the end) and its RSS then (``VmRSS``);
- before the restarts, the time a bare paged LIST of every pod takes (the API server's share: no restart
  can be ready sooner);
- kube-apiserver's and etcd's RSS (what the machine has to hold for the cluster itself).

It prints one line per restart and a table. Nothing is asserted: figures depend on the machine (2 shared
cores here). ``--profile DIR`` adds one restart per ``--src`` run under py-spy (``py-spy record``, the
``py-spy`` package) for its first ``--profile-seconds``, its raw stacks written there (its figures are
printed, marked profiled: sampling slows it down a little).

    .venv/bin/python hack/bench/restart_bench.py --pods 20000
    .venv/bin/python hack/bench/restart_bench.py                          # 5 000 nodes x 100 000 pods
    git archive BASE | tar -x -C /tmp/base && \\
    .venv/bin/python hack/bench/restart_bench.py --src /tmp/base --src .  # before and after, one cluster
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from controllers.kube.client import ApiError, KubeClient  # noqa: E402
from controllers.kube.kubeconfig import load_config  # noqa: E402
from extender.deploy.scheduler_config import scheduler_config  # noqa: E402
from extender.jobs.model import parse_job  # noqa: E402
from extender.jobs.reconcile import World, reconcile  # noqa: E402
from tests.e2e.controlplane import DEFAULT_ASSETS, ControlPlane, free_port  # noqa: E402
from tests.e2e.pumice import PUMICE_POD_NAME, Pumice, _apply_crds  # noqa: E402

BATCH = "/apis/batch.volcano.sh/v1alpha1"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"
ASSETS_128 = "/usr/local/kubebuilder-1.28/bin"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument(
        "--pods", type=int, action="append",
        help="bound pods (default 100 000); repeat for stages on one cluster, filled up to each in turn",
    )  # fmt: skip
    p.add_argument("--gang", type=int, default=8, help="pods per vcjob")
    p.add_argument("--plain", type=float, default=0.1, help="share of plain pods (not in a vcjob)")
    p.add_argument("--namespaces", type=int, default=10)
    p.add_argument("--concurrency", type=int, default=48, help="creates in flight at once")
    p.add_argument(
        "--src", type=Path, action="append",
        help="pumice source tree to restart (repeatable; one not there yet is waited for)",
    )  # fmt: skip
    p.add_argument("--repeat", type=int, default=1, help="restarts per --src")
    p.add_argument("--kube", choices=("1.24", "1.28"), default="1.24", help="control-plane version")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a restart may take to bind")
    p.add_argument("--settle", type=float, default=1800.0, help="seconds the warm-up may take to settle")
    p.add_argument("--profile", type=Path, help="one more restart per --src under py-spy; stacks here")
    p.add_argument("--profile-seconds", type=int, default=90)
    p.add_argument("--keep-dir", action="store_true", help="keep the control-plane dir and logs")
    p.add_argument("--save-fixtures", type=Path, help="save a settled vcjob, PodGroup, pod and node here")
    return p.parse_args(argv)


# --- filling the cluster ---------------------------------------------------------------------------------


async def bounded(calls: Iterable[Callable[[], Awaitable[Any]]], limit: int) -> list[Any]:
    """Run the calls with at most ``limit`` in flight; their results in order."""
    sem = asyncio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with sem:
            for attempt in range(8):
                try:
                    return await call()
                except ApiError as e:
                    if e.status == 409:
                        return None
                    if e.status not in (429, 500, 503, 504) or attempt == 7:
                        raise
                except (OSError, TimeoutError):
                    if attempt == 7:
                        raise
                await asyncio.sleep(0.2 * 2**attempt)
            return None

    return list(await asyncio.gather(*(one(c) for c in calls)))


def node_body(i: int) -> dict[str, Any]:
    name = f"n-{i}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": f"zone-{i % 4}",
                "pumice.e2e/fake-node": "true",
            },
        },
        "spec": {},
    }


def node_status(i: int) -> dict[str, Any]:
    cap = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "status": {
            "capacity": cap,
            "allocatable": dict(cap),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [{"type": "InternalIP", "address": f"10.1.{i // 250}.{i % 250 + 1}"}],
        }
    }


def running_status(pod: dict[str, Any], n: int) -> dict[str, Any]:
    """What a kubelet reports of a running pod (as tests/e2e/fake_kubelet.py writes it)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    ip = f"10.{64 + n // 65000}.{(n // 250) % 260 % 256}.{n % 250 + 1}"
    return {
        "status": {
            "phase": "Running",
            "hostIP": "10.1.0.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": now,
            "conditions": [
                {"type": kind, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
                for kind in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": [
                {
                    "name": c["name"],
                    "image": c.get("image", "registry.k8s.io/pause:3.7"),
                    "imageID": "fake://sha256:0123",
                    "containerID": f"fake://{pod['metadata']['name']}-{c['name']}",
                    "ready": True,
                    "started": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": now}},
                    "lastState": {},
                }
                for c in pod["spec"]["containers"]
            ],
        }
    }


def container(cpu: str = "100m", memory: str = "128Mi") -> dict[str, Any]:
    return {
        "name": "main",
        "image": "registry.k8s.io/pause:3.7",
        "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
    }


def vcjob_body(name: str, ns: str, replicas: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            "queue": "default",
            "maxRetry": 3,
            "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"labels": {"app": "train", "team": f"team-{hash(ns) % 7}"}},
                        "spec": {"restartPolicy": "Never", "containers": [container()]},
                    },
                }
            ],
        },
    }


def plain_pod(name: str, ns: str, scheduler: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web", "tier": name[-1]}},
        "spec": {
            "schedulerName": scheduler,
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 1,
            "containers": [container("50m", "64Mi")],
        },
    }


@dataclass
class Filled:
    nodes: int = 0
    jobs: int = 0
    pods: int = 0
    seconds: float = 0.0
    per_phase: dict[str, float] = field(default_factory=dict)


async def fill(client: KubeClient, args: argparse.Namespace, pods: int, have: Filled) -> Filled:
    """Fill the cluster up to ``pods`` bound pods (``have``: what an earlier stage made)."""
    out = Filled()
    t0 = time.monotonic()
    lim = args.concurrency

    async def node(i: int) -> None:
        await client.post("/api/v1/nodes", node_body(i))
        await client.request(
            "PATCH", f"/api/v1/nodes/n-{i}/status", body=node_status(i),
            content_type="application/merge-patch+json",
        )  # fmt: skip

    await bounded([lambda i=i: node(i) for i in range(have.nodes, args.nodes)], lim)  # type: ignore[misc]
    out.nodes = args.nodes
    out.per_phase["nodes"] = time.monotonic() - t0
    namespaces = [f"rb-{k}" for k in range(args.namespaces)]
    for ns in namespaces:
        try:
            await client.post("/api/v1/namespaces", {"metadata": {"name": ns}})
        except ApiError as e:
            if e.status != 409:
                raise
    plain = int(pods * args.plain)
    jobs = (pods - plain) // args.gang
    placed = have.pods

    def next_node() -> str:
        nonlocal placed
        placed += 1
        return f"n-{(placed * 7919) % args.nodes}"

    async def bind_and_run(pod: dict[str, Any]) -> None:
        ns = pod["metadata"]["namespace"]
        pod["spec"]["nodeName"] = next_node()
        created = await client.post(f"/api/v1/namespaces/{ns}/pods", pod)
        if created is None:
            return
        await client.request(
            "PATCH", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}/status",
            body=running_status(created, placed), content_type="application/merge-patch+json",
        )  # fmt: skip

    async def one_job(j: int) -> None:
        ns = namespaces[j % len(namespaces)]
        created = await client.post(f"{BATCH}/namespaces/{ns}/jobs", vcjob_body(f"job-{j}", ns, args.gang))
        plan = reconcile(World(job=parse_job(created), pods=[], now=time.time(), gang_admission=False))
        if plan.podgroup_create is not None:
            await client.post(f"{SCHED}/namespaces/{ns}/podgroups", plan.podgroup_create)
        await asyncio.gather(*(bind_and_run(p) for p in plan.create_pods))

    t1 = time.monotonic()
    step = 500
    for start in range(have.jobs, jobs, step):
        await bounded(
            [lambda j=j: one_job(j) for j in range(start, min(jobs, start + step))],  # type: ignore[misc]
            max(1, lim // args.gang),
        )
        done = min(jobs, start + step)
        rate = (done - have.jobs) * args.gang / max(time.monotonic() - t1, 1e-9)
        print(f"  vcjobs {done}/{jobs} ({rate:.0f} pods/s)", file=sys.stderr, flush=True)
    out.per_phase["vcjobs"] = time.monotonic() - t1
    t2 = time.monotonic()
    await bounded(
        [
            lambda i=i: bind_and_run(  # type: ignore[misc]
                plain_pod(
                    f"plain-{i}", namespaces[i % len(namespaces)], "volcano" if i % 2 else "default-scheduler"
                )
            )
            for i in range(have.pods - have.jobs * args.gang, plain)
        ],
        lim,
    )
    out.per_phase["plain"] = time.monotonic() - t2
    out.jobs, out.pods = jobs, jobs * args.gang + plain
    out.seconds = time.monotonic() - t0
    return out


# --- watching the cluster settle --------------------------------------------------------------------------


async def count_phase(
    client: KubeClient, path: str, phase_of: Callable[[dict[str, Any]], Any]
) -> tuple[int, int]:
    """(objects, objects whose phase is Running) over a paged LIST."""
    total = running = 0
    cont = ""
    while True:
        q = [("limit", "2000")] + ([("continue", cont)] if cont else [])
        page = await client.get(path, q)
        for o in page.get("items") or []:
            if not str((o.get("metadata") or {}).get("name") or "").startswith("job-"):
                continue  # a restart's own objects: their pods never run (no kubelet)
            total += 1
            running += phase_of(o) == "Running"
        cont = (page.get("metadata") or {}).get("continue") or ""
        if not cont:
            return total, running


async def save_fixtures(client: KubeClient, where: Path) -> None:
    """A settled vcjob (job-0 of rb-0), its PodGroup and one of its pods, as the API server returns them
    (what hack/bench/restart_memory.py copies)."""
    job = await client.get(f"{BATCH}/namespaces/rb-0/jobs/job-0")
    pg = await client.get(f"{SCHED}/namespaces/rb-0/podgroups/job-0-{job['metadata']['uid']}")
    pod = await client.get("/api/v1/namespaces/rb-0/pods/job-0-worker-0")
    node = await client.get("/api/v1/nodes/n-0")
    for name, obj in (("vcjob", job), ("podgroup", pg), ("pod", pod), ("node", node)):
        (where / f"restart_{name}.json").write_bytes(orjson.dumps(obj, option=orjson.OPT_INDENT_2))


async def list_floor(client: KubeClient, limit: int = 500) -> tuple[int, float]:
    """A bare paged LIST of every pod, decoded and dropped: what the API server alone allows a restart."""
    t0 = time.monotonic()
    n, cont = 0, ""
    while True:
        page = await client.get(
            "/api/v1/pods", [("limit", str(limit))] + ([("continue", cont)] if cont else [])
        )
        n += len(page.get("items") or [])
        cont = (page.get("metadata") or {}).get("continue") or ""
        if not cont:
            return n, time.monotonic() - t0


async def settle(client: KubeClient, deadline: float) -> tuple[int, int]:
    """Wait until every vcjob and PodGroup of the bench is Running (the warm-up's statuses written)."""
    while True:
        try:
            jobs = await count_phase(
                client, f"{BATCH}/jobs", lambda o: ((o.get("status") or {}).get("state") or {}).get("phase")
            )
            groups = await count_phase(
                client, f"{SCHED}/podgroups", lambda o: (o.get("status") or {}).get("phase")
            )
        except (ApiError, OSError, TimeoutError) as e:  # a loaded API server times out now and then
            print(f"  settling: a LIST failed ({e!r}); again", file=sys.stderr, flush=True)
            await asyncio.sleep(5.0)
            continue
        print(f"  settling: vcjobs {jobs[1]}/{jobs[0]} Running, PodGroups {groups[1]}/{groups[0]}",
              file=sys.stderr, flush=True)  # fmt: skip
        if jobs[0] == jobs[1] and groups[1] >= jobs[0]:
            return jobs[0], groups[0]
        if time.monotonic() > deadline:
            raise TimeoutError("the warm-up pumice did not settle every vcjob and PodGroup")
        await asyncio.sleep(5.0)


# --- one restart -----------------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in MiB (empty when it is gone)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) // 1024
    except OSError:
        pass
    return out


def knows_leader_elect(src: Path) -> bool:
    help_text = subprocess.run(
        [sys.executable, "-m", "extender.main", "serve", "--help"],
        cwd=src, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)}, check=False,
    ).stdout  # fmt: skip
    return "--leader-elect" in help_text


def pumice_argv(plane: ControlPlane, src: Path, extender_port: str, webhook_port: str) -> list[str]:
    """The argv tests/e2e/pumice.py starts pumice with (same ports: kube-scheduler's config names them)."""
    argv = [
        sys.executable, "-m", "extender.main", "serve",
        f"--kubeconfig={plane.kubeconfig_path}",
        f"--extender-bind=127.0.0.1:{extender_port}",
        f"--webhook-bind=127.0.0.1:{webhook_port}",
        "--metrics-bind=127.0.0.1:0",
        f"--webhook-url-base=https://127.0.0.1:{webhook_port}",
        f"--cert-dir={plane.workdir / 'pumice-certs'}",
    ]  # fmt: skip
    if knows_leader_elect(src):
        argv.append("--leader-elect=false")
    return argv


def spawn(argv: list[str], src: Path, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start pumice in its own session (so its group can be signalled), its output to ``log_path``."""
    with log_path.open("wb") as log:
        return subprocess.Popen(
            argv, cwd=src, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


async def wait_ready(url: str, proc: subprocess.Popen[bytes], deadline: float) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"pumice exited with {proc.returncode}")
            try:
                async with s.get(url, timeout=aiohttp.ClientTimeout(total=1.0)) as r:
                    if r.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            await asyncio.sleep(0.05)
    raise TimeoutError("pumice not ready")


async def bound_nodes(client: KubeClient, ns: str, selector: str) -> list[str]:
    page = await client.get(f"/api/v1/namespaces/{ns}/pods", [("labelSelector", selector)])
    return [str((p.get("spec") or {}).get("nodeName") or "") for p in page.get("items") or []]


async def create_vcjob_when_admitted(client: KubeClient, ns: str, name: str, deadline: float) -> float:
    """Create a vcjob, retrying while admission refuses (pumice starting); when it was taken."""
    while True:
        try:
            await client.post(f"{BATCH}/namespaces/{ns}/jobs", vcjob_body(name, ns, 4))
            return time.monotonic()
        except ApiError as e:
            if e.status == 409:
                return time.monotonic()
            if time.monotonic() > deadline:
                raise
        except (OSError, TimeoutError):
            if time.monotonic() > deadline:
                raise
        await asyncio.sleep(0.1)


def rss_of(name: str, plane: ControlPlane) -> int:
    proc = plane.processes.get(name)
    return proc_status(proc.pid).get("VmRSS", 0) if proc is not None and proc.pid else 0


async def restart(
    plane: ControlPlane, client: KubeClient, args: argparse.Namespace, src: Path, run: int,
    ports: tuple[str, str], *, profiled: bool = False,
) -> dict[str, Any]:  # fmt: skip
    ns = "rb-0"
    tag = f"r{run}"
    # The new gang's PodGroup is made while pumice runs: its webhook admits PodGroups.
    await client.post(
        f"{SCHED}/namespaces/{ns}/podgroups",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": f"gang-{tag}", "namespace": ns},
            "spec": {"minMember": 8, "queue": "default"},
        },
    )
    plane.stop_process("pumice")
    for i in range(8):
        pod = plain_pod(f"gang-{tag}-{i}", ns, "volcano")
        pod["metadata"]["labels"] = {"bench": f"gang-{tag}"}
        pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": f"gang-{tag}"}
        await client.post(f"/api/v1/namespaces/{ns}/pods", pod)
    single = plain_pod(f"single-{tag}", ns, "volcano")
    single["metadata"]["labels"] = {"bench": f"single-{tag}"}
    await client.post(f"/api/v1/namespaces/{ns}/pods", single)

    argv = pumice_argv(plane, src, *ports)
    if profiled:
        args.profile.mkdir(parents=True, exist_ok=True)
        out_file = args.profile / f"restart-{src.name or 'src'}-{run}.txt"
        argv = [str(shutil.which("py-spy")), "record", "--rate", "50", "--nonblocking", "--format", "raw",
                "--duration", str(args.profile_seconds), "-o", str(out_file), "--", *argv]  # fmt: skip
    log_path = plane.logs_dir / f"pumice-restart-{run}.log"
    env = {**plane.env(), "PYTHONPATH": str(src), "POD_NAMESPACE": "default", "POD_NAME": PUMICE_POD_NAME}
    t0 = time.monotonic()
    proc = spawn(argv, src, env, log_path)
    pid = proc.pid
    if profiled:  # the pumice child of py-spy
        await asyncio.sleep(0.5)
        kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()  # noqa: ASYNC240 (procfs)
        pid = int(kids[0]) if kids else proc.pid
    deadline = t0 + args.timeout
    out: dict[str, Any] = {"src": str(src), "run": run}
    peak = 0

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, proc_status(pid).get("VmHWM", 0))
            await asyncio.sleep(0.2)

    sampler = asyncio.create_task(sample())
    try:
        await wait_ready(f"http://127.0.0.1:{ports[0]}/readyz", proc, deadline)
        out["ready_s"] = time.monotonic() - t0
        job_created = asyncio.create_task(create_vcjob_when_admitted(client, ns, f"new-{tag}", deadline))
        while time.monotonic() < deadline:
            single_nodes = await bound_nodes(client, ns, f"bench=single-{tag}")
            gang_nodes = await bound_nodes(client, ns, f"bench=gang-{tag}")
            job_nodes = await bound_nodes(client, ns, f"volcano.sh/job-name=new-{tag}")
            now = time.monotonic() - t0
            if "first_bind_s" not in out and any(single_nodes):
                out["first_bind_s"] = now
            if "gang_bound_s" not in out and gang_nodes and all(gang_nodes):
                out["gang_bound_s"] = now
            if "vcjob_bound_s" not in out and len(job_nodes) == 4 and all(job_nodes):
                out["vcjob_bound_s"] = now
                out["vcjob_admitted_s"] = (await job_created) - t0
            if all(k in out for k in ("first_bind_s", "gang_bound_s", "vcjob_bound_s")):
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(5.0)  # the reconcilers' first pass goes on: let the peak show
    finally:
        sampler.cancel()
        st = proc_status(pid)
        out["peak_rss_mib"] = max(peak, st.get("VmHWM", 0))
        out["rss_mib"] = st.get("VmRSS", 0)
        out["apiserver_rss_mib"] = rss_of("kube-apiserver", plane)
        out["etcd_rss_mib"] = rss_of("etcd", plane)
        out["log"] = str(log_path)
    # Keep it running as "pumice" for the next restart (its stop_process sends SIGTERM to the group).
    from tests.e2e.controlplane import ManagedProcess

    managed = ManagedProcess(name="pumice", argv=argv, log_path=log_path, popen=proc, stop_timeout=15.0)
    plane._processes["pumice"] = managed  # the bench adopts the process it spawned
    return out


def fmt(v: Any) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v if v is not None else "-")


async def warm_up(
    plane: ControlPlane, client: KubeClient, args: argparse.Namespace, ports: tuple[str, str]
) -> Pumice:
    """pumice from this tree, as tests/e2e/pumice.py starts it but with the bench's patience (a loaded
    machine takes minutes to list 100 000 pods), then kube-scheduler on its extender config."""
    pumice = Pumice(extender_url=f"http://127.0.0.1:{ports[0]}", webhook_url=f"https://127.0.0.1:{ports[1]}")
    await asyncio.to_thread(
        plane.start_process,
        "pumice",
        pumice_argv(plane, REPO, *ports),
        cwd=REPO,
        env={"POD_NAMESPACE": "default", "POD_NAME": PUMICE_POD_NAME},
        ready_url=f"{pumice.extender_url}/readyz",
        timeout=args.timeout,
    )
    deadline = time.monotonic() + args.timeout
    while True:
        try:
            await client.get(f"{SCHED}/queues/default")
            break
        except ApiError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)
    conf = scheduler_config(
        extender_url=pumice.extender_url,
        api_version=plane.scheduler_config_api_version,
        kubeconfig=str(plane.kubeconfig_path),
        with_default_profile=True,
        leader_elect=False,
    )
    # (tests/e2e/pumice.py's config; kube-scheduler too lists every pod before it takes its probe pod)
    await asyncio.to_thread(plane.start_scheduler, conf, timeout=args.timeout)
    return pumice


async def wait_for_tree(src: Path) -> Path:
    """A source tree given before it exists (copied there once ready): waited for."""
    main = src / "extender" / "main.py"
    if not main.exists():
        print(f"waiting for {src} to exist", file=sys.stderr, flush=True)
    while not main.exists():  # noqa: ASYNC110 (polling a directory someone else fills)
        await asyncio.sleep(5.0)
    return src.resolve()  # noqa: ASYNC240


async def main_async(args: argparse.Namespace, plane: ControlPlane) -> list[dict[str, Any]]:
    client = KubeClient(await load_config(str(plane.kubeconfig_path)), pool=args.concurrency + 8)
    try:
        t0 = time.monotonic()
        await asyncio.to_thread(_apply_crds, plane)
        have = Filled()
        ports = (str(free_port()), str(free_port()))
        results = []
        run = 0
        for stage in args.pods or [100_000]:
            plane.stop_process("pumice")  # nothing runs while the cluster is filled
            for kind in ("mutating", "validating"):  # its webhooks would refuse while it is down
                path = f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/pumice-{kind}"
                try:
                    await client.delete(path)
                except ApiError as e:
                    if e.status != 404:
                        raise
            filled = await fill(client, args, stage, have)
            have = Filled(nodes=args.nodes, jobs=filled.jobs, pods=filled.pods)
            phases = ", ".join(f"{k} {v:.0f} s" for k, v in filled.per_phase.items())
            print(
                f"filled: {filled.nodes} nodes, {filled.jobs} vcjobs, {filled.pods} bound Running pods in "
                f"{filled.seconds:.0f} s ({phases}); kube-apiserver RSS {rss_of('kube-apiserver', plane)} "
                f"MiB, etcd {rss_of('etcd', plane)} MiB",
                flush=True,
            )
            await warm_up(plane, client, args, ports)
            warm = time.monotonic()
            await settle(client, warm + args.settle)
            print(f"warm-up pumice settled every status in {time.monotonic() - warm:.0f} s", flush=True)
            if args.save_fixtures is not None:
                await save_fixtures(client, args.save_fixtures)
            n, took = await list_floor(client)
            print(f"a bare paged LIST of the {n} pods (500 a page, decoded only): {took:.1f} s", flush=True)
            for src in args.src or [REPO]:
                tree = await wait_for_tree(src)
                for k in range(args.repeat + (args.profile is not None)):
                    run += 1
                    profiled = k == args.repeat
                    r = await restart(plane, client, args, tree, run, ports, profiled=profiled)
                    r = {"pods": filled.pods, "profiled": profiled, **r}
                    results.append(r)
                    print(" ".join(f"{k}={fmt(v)}" for k, v in r.items()), flush=True)
        print(f"total bench time {time.monotonic() - t0:.0f} s", flush=True)
        return results
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.kube == "1.28":
        os.environ["KUBEBUILDER_ASSETS"] = ASSETS_128
    else:
        os.environ.setdefault("KUBEBUILDER_ASSETS", DEFAULT_ASSETS)
    if args.profile is not None and shutil.which("py-spy") is None:
        print("--profile needs py-spy on PATH (pip install py-spy)", file=sys.stderr)
        return 2
    plane = ControlPlane(keep_dir=args.keep_dir or None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        plane.start(timeout=120)
        print(f"control plane: {plane.describe()}; {os.cpu_count()} cores", flush=True)
        results = asyncio.run(main_async(args, plane))
    except BaseException:
        print(plane.log_tails(30), file=sys.stderr)
        raise
    finally:
        plane.stop()
    print(f"\nrestart at {args.nodes} nodes (gangs of {args.gang}), kube {args.kube}")
    cols = ("pods", "profiled", "src", "run", "ready_s", "first_bind_s", "gang_bound_s", "vcjob_admitted_s",
            "vcjob_bound_s", "peak_rss_mib", "rss_mib", "apiserver_rss_mib", "etcd_rss_mib")  # fmt: skip
    print(" | ".join(cols))
    for r in results:
        print(" | ".join(fmt(r.get(c)) for c in cols))
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
