"""Always on (issue #23): two pumice replicas as the chart runs them, behind two endpoint routers (the
extender's and the webhooks' Service), on a control plane of their own.

- kill -9 of the leader while gang jobs are being created: every job runs, no pod is duplicated, no node
  double-booked, no pod bound without the leader's reservation; the failover time is printed;
- a rolling restart of both replicas while a client creates a vcjob every 100 ms: no create refused, every
  job runs; the planned handover's time is printed;
- a deposed leader (paused past its lease, then resumed: on the newest plane only; or its Lease taken
  over) binds nothing and writes nothing once its renew deadline has passed;
- kube-apiserver stopped for 20 s and started again mid-run (on the older planes only): no replica exits,
  no job or pod is lost, and scheduling resumes.

Job counts: ``PUMICE_E2E_HA_JOBS`` (default 40 jobs of 2 pods for the kill test; the failover and soak
benchmarks in hack/bench run the issue's full counts).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.controlplane import ControlPlane, _http, skip_reason
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.ha import LEASE, NAMESPACE, USERS, HaPumice

BATCH = "batch.volcano.sh/v1alpha1"
JOBS = int(os.environ.get("PUMICE_E2E_HA_JOBS", "40"))
LEASE_DURATION = 10.0  # pumice's default, as the chart runs it

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def ha_plane() -> Iterator[ControlPlane]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    plane = ControlPlane(users=USERS, audit_users=USERS)
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="module")
def ha(ha_plane: ControlPlane) -> Iterator[HaPumice]:
    pumice = HaPumice(ha_plane)
    try:
        pumice.start()
        yield pumice
    except BaseException:
        print(ha_plane.log_tails(60))
        raise
    finally:
        pumice.stop()


# The two costliest scenarios (1.5 minutes each on 2 shared cores) run on one control plane each, so CI's
# e2e runs on the two planes stay within its 20 minutes: the paused leader on the newest (the fence does not
# depend on the release, and the Lease taken over tries a deposed leader on every plane), the kube-apiserver
# outage on the older ones (pumice's watch fault handling does not depend on the release either; what does,
# kube-scheduler's own recovery, is not under test).
NEWEST = (1, 28)


def on_one_plane(cp: ControlPlane, *, newest: bool, why: str) -> None:
    if ((cp.version.major, cp.version.minor) >= NEWEST) != newest:
        where = f"{NEWEST[0]}.{NEWEST[1]}+" if newest else f"before {NEWEST[0]}.{NEWEST[1]}"
        pytest.skip(
            f"runs on Kubernetes {where} only, to keep CI's two e2e runs within 20 minutes ({why}; this is "
            f"{cp.version})"
        )


@pytest.fixture
def replicas_up(ha: HaPumice) -> HaPumice:
    """Every replica running and a leader elected, whatever the test before did."""
    for i in range(len(ha.replicas)):
        if not ha.running(i):
            ha.start_replica(i)
    deadline = time.monotonic() + 60
    while ha.leader() is None:
        if time.monotonic() > deadline:
            gauges = [(i, ha.running(i), ha.metric(i, "pumice_leader")) for i in range(len(ha.replicas))]
            raise AssertionError(f"no leader: {gauges}\n{ha.cp.log_tails(30)}")
        time.sleep(0.2)
    return ha


def job_body(name: str, replicas: int = 2, cpu: str = "100m") -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "32Mi"}}}
    return {
        "apiVersion": BATCH,
        "kind": "Job",
        "metadata": {"name": name},
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


class Binds:
    """When each pod was first seen bound (monotonic), from a poll of the namespace's pods."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.bound: dict[str, float] = {}
        self.created: dict[str, float] = {}  # job -> when the client sent its create (monotonic)
        self.job_of: dict[str, str] = {}
        self.uids: dict[str, set[str]] = {}

    async def run(self) -> None:
        path = kube.collection_path("v1", "pods", self.namespace)
        while True:
            try:
                pods = (await kube.list_objects(self.api, path))["items"]
            except Exception:  # the API server may be away (the outage test): poll again
                await asyncio.sleep(0.5)
                continue
            now = time.monotonic()
            for p in pods:
                name = p["metadata"]["name"]
                self.uids.setdefault(name, set()).add(p["metadata"]["uid"])
                self.job_of[name] = p["metadata"].get("labels", {}).get("volcano.sh/job-name", "")
                if p["spec"].get("nodeName") and name not in self.bound:
                    self.bound[name] = now
            await asyncio.sleep(0.1)

    def gangs_bound(self, replicas: int = 2) -> dict[str, float]:
        """Each job whose pods are all bound, with when its last pod was."""
        by_job: dict[str, list[float]] = {}
        for name, t in self.bound.items():
            by_job.setdefault(self.job_of.get(name, ""), []).append(t)
        return {j: max(ts) for j, ts in by_job.items() if j and len(ts) >= replicas}

    def next_gang_after(self, t: float, *, quiet: float = 1.0) -> float | None:
        """Seconds from ``t`` to the first gang bound entirely by its new leader: every pod of it first seen
        bound ``quiet`` seconds or more after ``t`` (binds kube-scheduler was making on the old leader's
        answers land within milliseconds of them; they are no failover). A bind's time is when a poll first
        showed it, so the figure errs long by up to a poll."""
        by_job: dict[str, list[float]] = {}
        for name, at in self.bound.items():
            by_job.setdefault(self.job_of.get(name, ""), []).append(at)
        after = [max(ts) for j, ts in by_job.items() if j and len(ts) >= 2 and min(ts) >= t + quiet]
        return min(after) - t if after else None

    def job_created_after(self, t: float) -> float | None:
        """Seconds from ``t`` to the first gang bound of a job created after ``t`` (the whole way: the job
        controller's PodGroup and pods, admission, binds)."""
        after = [g for j, g in self.gangs_bound().items() if self.created.get(j, -1.0) > t]
        return min(after) - t if after else None


@asynccontextmanager
async def workload(
    cp: ControlPlane, name: str, *, nodes: int = 8, cpu: str = "8"
) -> AsyncIterator[tuple[client.ApiClient, str, Binds]]:
    async with await kube.new_api_client(cp.kubeconfig_path) as api:
        ns = f"ha-{name}"
        await kube.create_namespace(api, ns)
        created = await kube.create_fake_nodes(api, nodes, prefix=f"{name}-n", cpu=cpu, concurrency=8)
        binds = Binds(api, ns)
        poll = asyncio.get_running_loop().create_task(binds.run())
        try:
            yield api, ns, binds
        finally:
            poll.cancel()
            await asyncio.gather(poll, return_exceptions=True)
            await kube.delete_nodes(api, created)


async def create_job(
    api: client.ApiClient, ns: str, name: str, *, attempts: int = 1, binds: Binds | None = None
) -> bool:
    """Whether the API server took the job (the webhooks admitted it)."""
    if binds is not None:
        binds.created[name] = time.monotonic()
    for i in range(attempts):
        try:
            await kube.request(api, "POST", kube.collection_path(BATCH, "jobs", ns), body=job_body(name))
            return True
        except Exception as err:
            if "AlreadyExists" in str(err):
                return True
            if i == attempts - 1:
                body = getattr(err, "body", "")  # the Status: which webhook failed, and how
                print(f"create {ns}/{name} refused: {str(err)[:120]} {str(body)[:400]}")
                return False
            await asyncio.sleep(0.5)
    return False


async def all_running(api: client.ApiClient, ns: str, names: set[str], within: float) -> None:
    missing: set[str] = set()

    async def check() -> bool:
        jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", ns)))["items"]
        running = {
            j["metadata"]["name"]
            for j in jobs
            if ((j.get("status") or {}).get("state") or {}).get("phase") == "Running"
        }
        missing.clear()
        missing.update(names - running)
        return not missing

    try:
        await kube.wait_for(check, within, interval=0.5, message=f"{len(names)} jobs Running in {ns}")
    except TimeoutError as err:
        pods = (await kube.list_objects(api, kube.collection_path("v1", "pods", ns)))["items"]
        stuck = [
            (p["metadata"]["name"], p["status"].get("phase"), p["spec"].get("nodeName"),
             [g["name"] for g in p["spec"].get("schedulingGates") or []],
             [(c["type"], c["status"], c.get("reason")) for c in p["status"].get("conditions") or []])
            for p in pods
            if p["metadata"].get("labels", {}).get("volcano.sh/job-name") in missing
        ]  # fmt: skip
        raise AssertionError(f"{err}: not Running: {sorted(missing)[:10]}; their pods: {stuck[:10]}") from err


async def invariants(api: client.ApiClient, ns: str, binds: Binds, replicas: int = 2) -> None:
    """No duplicate pod, no double-booked node, no gang bound in part."""
    pods = (await kube.list_objects(api, kube.collection_path("v1", "pods", ns)))["items"]
    alive = [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") in ("Pending", "Running")
    ]
    per_job = Counter(p["metadata"]["labels"].get("volcano.sh/job-name") for p in alive)
    assert all(n == replicas for n in per_job.values()), per_job
    assert all(len(uids) == 1 for uids in binds.uids.values()), "a pod was created twice"
    nodes = {n["metadata"]["name"]: n for n in (await kube.list_objects(api, "/api/v1/nodes"))["items"]}
    everywhere = (await kube.list_objects(api, "/api/v1/pods"))["items"]
    used: Counter[str] = Counter()
    for p in everywhere:
        if p["metadata"].get("deletionTimestamp") or p["status"].get("phase") not in ("Pending", "Running"):
            continue
        if p["spec"].get("nodeName"):
            used[p["spec"]["nodeName"]] += sum(
                _milli(c["resources"]["requests"]["cpu"]) for c in p["spec"]["containers"]
            )
    over = {
        n: u for n, u in used.items() if n in nodes and u > _milli(nodes[n]["status"]["allocatable"]["cpu"])
    }
    assert not over, f"double-booked nodes: {over}"
    bound_per_job = Counter(
        p["metadata"]["labels"].get("volcano.sh/job-name") for p in alive if p["spec"].get("nodeName")
    )
    assert all(n in (0, replicas) for n in bound_per_job.values()), f"a gang bound in part: {bound_per_job}"


def _milli(q: str) -> int:
    return int(q[:-1]) if q.endswith("m") else int(float(q) * 1000)


async def test_kill_9_of_the_leader_while_gang_jobs_are_created(replicas_up: HaPumice) -> None:
    ha, cp = replicas_up, replicas_up.cp
    unreserved_before = ha.sum_metric("pumice_binds_unreserved_total")
    async with workload(cp, "kill") as (api, ns, binds), FakeKubelet(api):
        names = [f"k-{i:03d}" for i in range(JOBS)]
        leader = ha.leader()
        assert leader is not None
        killed_at = 0.0
        restart: asyncio.Task[None] | None = None
        refused = 0
        for i, name in enumerate(names):
            if i == JOBS // 3:
                killed_at = await asyncio.to_thread(ha.kill, leader)

                # The kubelet restarts the container a few seconds later, as a Deployment's pod would be.
                async def back() -> None:
                    await asyncio.sleep(3)
                    await asyncio.to_thread(ha.start_replica, leader)

                restart = asyncio.get_running_loop().create_task(back())
            refused += not await create_job(api, ns, name, attempts=20, binds=binds)
            await asyncio.sleep(0.05)
        assert restart is not None
        await restart
        await all_running(api, ns, set(names), within=240)
        await invariants(api, ns, binds)
        failover = binds.next_gang_after(killed_at)
        new_job = binds.job_created_after(killed_at)
        assert failover is not None and new_job is not None
        print(
            f"\nkill -9 of the leader -> next gang bound: {failover:.1f} s "
            f"(lease duration {LEASE_DURATION:g} s), a job created after the kill bound after "
            f"{new_job:.1f} s; {JOBS} gang jobs, {refused} creates refused"
        )
        assert refused == 0  # the other replica's webhooks answered meanwhile
        # The target (lease + 2 s) is the failover benchmark's to check, on a machine of its own: shared CI
        # cores stretch every step of a job's way (PodGroup, admission, pods, binds). A sanity bound here.
        assert failover < LEASE_DURATION + 30, failover
    assert ha.sum_metric("pumice_binds_unreserved_total") == unreserved_before == 0


async def test_a_rolling_restart_refuses_no_create(replicas_up: HaPumice) -> None:
    ha, cp = replicas_up, replicas_up.cp
    async with workload(cp, "roll") as (api, ns, binds), FakeKubelet(api):
        names: list[str] = []
        refused: list[str] = []
        stop = asyncio.Event()

        async def client_loop() -> None:
            i = 0
            while not stop.is_set():
                name = f"r-{i:04d}"
                names.append(name)
                if not await create_job(api, ns, name, binds=binds):
                    refused.append(name)
                i += 1
                await asyncio.sleep(0.1)

        creating = asyncio.get_running_loop().create_task(client_loop())
        await asyncio.sleep(2)
        handovers: list[float] = []
        for i in range(len(ha.replicas)):
            was_leader = ha.leader() == i
            sent = await asyncio.to_thread(ha.stop_replica, i)
            if was_leader:
                handovers.append(sent)
            await asyncio.to_thread(ha.start_replica, i)
            await asyncio.sleep(2)
        stop.set()
        await creating
        created = set(names) - set(refused)
        await all_running(api, ns, created, within=180)
        await invariants(api, ns, binds)
        times = [binds.next_gang_after(t, quiet=0.5) for t in handovers]
        print(
            f"\nrolling restart: {len(names)} creates, {len(refused)} refused; SIGTERM of the leader -> "
            f"next gang bound: {', '.join(f'{t:.1f} s' for t in times if t is not None)}"
        )
        assert refused == []
        # Target 3 s (hack/bench/failover_bench.py); a sanity bound here, as above.
        assert handovers and all(t is not None and t < 30 for t in times), times


def audited_after(cp: ControlPlane, user: str, since_wall: float) -> list[str]:
    out = []
    for e in cp.audited_writes(user):
        at = datetime.strptime(
            e["requestReceivedTimestamp"][:26].rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f"
        ).replace(tzinfo=UTC)
        if at.timestamp() >= since_wall and e.get("responseStatus", {}).get("code", 0) < 400:
            ref = e.get("objectRef") or {}
            out.append(
                f"{e['verb']} {ref.get('resource')}/{ref.get('subresource', '')} {ref.get('name', '')}"
            )
    return out


async def test_a_paused_leader_resumes_deposed_and_binds_and_writes_nothing(replicas_up: HaPumice) -> None:
    ha, cp = replicas_up, replicas_up.cp
    on_one_plane(
        cp,
        newest=True,
        why="the fence does not depend on the release; the Lease taken over covers a deposed leader on "
        "every plane",
    )
    async with workload(cp, "pause") as (api, ns, binds), FakeKubelet(api):
        old = ha.leader()
        assert old is not None
        await create_job(api, ns, "before", attempts=20)
        await all_running(api, ns, {"before"}, within=60)
        # Paused at a quiet moment: a write already on its way when a process freezes lands when it thaws,
        # whatever any check before it said (fencing on the client side cannot stop a request in flight).
        await asyncio.sleep(3)
        await asyncio.to_thread(ha.signal, old, signal.SIGSTOP)  # partitioned, paused: cannot renew
        try:
            deadline = time.monotonic() + 3 * LEASE_DURATION
            while ha.leader() in (None, old):
                assert time.monotonic() < deadline, "no takeover"
                await asyncio.sleep(0.2)
            # Work for the new leader while the old one is frozen with its term's memory.
            for i in range(4):
                await create_job(api, ns, f"during-{i}", attempts=40)
        finally:
            resumed = time.time()
            await asyncio.to_thread(ha.signal, old, signal.SIGCONT)
        for i in range(4):
            await create_job(api, ns, f"after-{i}", attempts=20)
        await all_running(
            api,
            ns,
            {"before", *(f"during-{i}" for i in range(4)), *(f"after-{i}" for i in range(4))},
            within=120,
        )
        await asyncio.sleep(2)
        await invariants(api, ns, binds)
        assert ha.metric(old, "pumice_leader") == 0
        writes = audited_after(cp, USERS[old], resumed)
        assert writes == [], writes  # its deadline passed while it was frozen: the fence refused everything
        assert audited_after(cp, USERS[1 - old], resumed)  # (the audit log does record the leader's writes)


async def test_a_leader_whose_lease_is_taken_over_writes_nothing(replicas_up: HaPumice) -> None:
    ha, cp = replicas_up, replicas_up.cp
    async with workload(cp, "depose") as (api, ns, binds), FakeKubelet(api):
        path = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE}"
        for _ in range(10):  # the leader renews every 2 s: retry a write that lost to a renewal
            lease = await kube.request(api, "GET", path)
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            lease["spec"].update(
                holderIdentity="an-operator", leaseDurationSeconds=3600, renewTime=now, acquireTime=now
            )
            lease["metadata"].pop("annotations", None)
            taken = time.time()
            try:
                await kube.request(api, "PUT", path, body=lease)
                break
            except Exception as err:
                if "Conflict" not in str(err) and "409" not in str(err):
                    raise
        await asyncio.sleep(2)
        assert ha.leader() is None
        # Creates go on (admission is every replica's); nothing is scheduled or reconciled by anyone.
        assert await create_job(api, ns, "unled")
        await asyncio.sleep(4)
        jobs = (await kube.list_objects(api, kube.collection_path(BATCH, "jobs", ns)))["items"]
        assert [j.get("status", {}).get("state", {}).get("phase") for j in jobs] in ([None], [""])
        for user in USERS:
            assert audited_after(cp, user, taken + 0.5) == [], user
        await kube.request(api, "DELETE", path)  # the operator lets go: a replica leads again
        await all_running(api, ns, {"unled"}, within=60)
        await invariants(api, ns, binds)


async def api_back(api: client.ApiClient, within: float = 60) -> None:
    """Until a request to the restarted API server succeeds (pooled connections to the old one fail once)."""
    deadline = time.monotonic() + within
    while True:
        try:
            await kube.list_objects(api, "/api/v1/namespaces")
            return
        except Exception:
            assert time.monotonic() < deadline, "kube-apiserver did not come back"
            await asyncio.sleep(0.5)


async def test_kube_apiserver_down_for_20s_loses_nothing_and_scheduling_resumes(
    replicas_up: HaPumice,
) -> None:
    ha, cp = replicas_up, replicas_up.cp
    on_one_plane(cp, newest=False, why="pumice's watch fault handling does not depend on the release")
    pids = {i: cp.processes[r.process].pid for i, r in enumerate(ha.replicas)}
    async with workload(cp, "outage") as (api, ns, binds):
        kubelet = FakeKubelet(api)
        await kubelet.start()
        names = {f"o-{i:02d}" for i in range(10)}
        for name in sorted(names):
            assert await create_job(api, ns, name, attempts=20)
        await all_running(api, ns, names, within=120)
        pods = kube.collection_path("v1", "pods", ns)
        before = {p["metadata"]["uid"] for p in (await kube.list_objects(api, pods))["items"]}
        await kubelet.stop()  # the fake kubelet is no kubelet: it does not ride out an outage
        await asyncio.to_thread(cp.stop_apiserver)
        await asyncio.sleep(20)
        await asyncio.to_thread(ha.launch, cp.start_apiserver)
        back = time.monotonic()
        await api_back(api)
        kubelet = FakeKubelet(api)
        await kubelet.start()
        try:
            alive = [
                ha.running(i) and cp.processes[r.process].pid == pids[i] for i, r in enumerate(ha.replicas)
            ]
            assert all(alive), "a replica exited: " + cp.log_tails(40)
            assert await create_job(api, ns, "after-outage", attempts=40)

            groups = kube.collection_path("scheduling.volcano.sh/v1beta1", "podgroups", ns)

            async def admitted() -> bool | None:
                """pumice's part after the outage: the job reconciled by a leader, its PodGroup admitted
                (Inqueue) by the scheduling loop, and its pods created. Planning itself is not seen in the API
                on every release (only a pod kube-scheduler holds as unschedulable is annotated), and binding
                waits for kube-scheduler."""
                pgs = (await kube.list_objects(api, groups))["items"]
                phases = [
                    (g.get("status") or {}).get("phase")
                    for g in pgs
                    if g["metadata"]["name"].startswith("after-outage-")
                ]
                items = (await kube.list_objects(api, pods))["items"]
                mine = [p for p in items if p["metadata"]["name"].startswith("after-outage-")]
                return (len(mine) == 2 and phases in (["Inqueue"], ["Running"])) or None

            await kube.wait_for(admitted, 120, interval=0.2, message="after-outage admitted")
            resumed = time.monotonic() - back
            await all_running(api, ns, {*names, "after-outage"}, within=120)
            running = time.monotonic() - back
            after = {p["metadata"]["uid"] for p in (await kube.list_objects(api, pods))["items"]}
            assert before <= after, "pods lost"
            await invariants(api, ns, binds)
            print(
                f"\nkube-apiserver down 20 s: every replica stayed up; a job created after its return "
                f"admitted with its pods created {resumed:.1f} s and Running {running:.1f} s after it"
            )
            # Running also waits for kube-scheduler's own informers, whose re-list backoff after an outage
            # grows to 30 s (client-go's reflector): bounded by all_running above, not here.
            assert resumed < 30, resumed
            assert ha.leader() is not None
        finally:
            await kubelet.stop()


def test_the_default_lease_namespace_outside_a_pod_exists_on_a_bare_control_plane(
    ha_plane: ControlPlane,
) -> None:
    """``--leader-elect-resource-namespace`` defaults to kube-system outside a pod: kube-apiserver itself
    makes it (with default, kube-public and kube-node-lease), so leader election works on any cluster."""
    assert _http("GET", f"{ha_plane.server_url}/api/v1/namespaces/kube-system", ha_plane.token)[0] == 200
