"""The vcjob controller on a real kube-apiserver + kube-scheduler with fake nodes and a fake kubelet
that drives pod phases and exit codes: plugins, restart policies and maxRetry, TaskCompleted, dependsOn,
Commands, and a restart of pumice in the middle of a job's life."""

from __future__ import annotations

import asyncio
import base64
import functools
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from extender.core.timestamps import epoch
from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

BATCH = "batch.volcano.sh/v1alpha1"
BUS = "bus.volcano.sh/v1alpha1"
PG = "scheduling.volcano.sh/v1beta1"


def task(
    name: str, replicas: int, *, selector: dict[str, str], cpu: str = "1", **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": selector,
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            }
        },
        **extra,
    }


async def create_job(api: client.ApiClient, ns: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": BATCH, "kind": "Job", "metadata": {"name": name}, "spec": spec}
    job: dict[str, Any] = await kube.request(api, "POST", kube.collection_path(BATCH, "jobs", ns), body=body)
    return job


async def get_job(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    job: dict[str, Any] = await kube.request(api, "GET", f"{kube.collection_path(BATCH, 'jobs', ns)}/{name}")
    return job


async def job_pods(api: client.ApiClient, ns: str, job: str) -> list[dict[str, Any]]:
    listing = await kube.list_objects(
        api, kube.collection_path("v1", "pods", ns), labelSelector=f"volcano.sh/job-name={job}"
    )
    return list(listing.get("items") or [])


def alive(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        p
        for p in pods
        if not p["metadata"].get("deletionTimestamp")
        and p.get("status", {}).get("phase", "Pending") in ("Pending", "Running", "Unknown")
    ]


async def wait_phase(
    api: client.ApiClient, ns: str, name: str, phase: str, within: float = 30, *, retries: int | None = None
) -> dict[str, Any]:
    """The job once its phase is ``phase`` (and, if given, its ``retryCount`` is ``retries``: a job that
    was Running before a restart reads Running until the restart shows)."""
    seen: list[str] = []

    async def check() -> dict[str, Any] | None:
        job = await get_job(api, ns, name)
        status = job.get("status", {})
        state = status.get("state", {})
        seen.append(
            f"{state.get('phase')} ({state.get('message', '')}), retryCount {status.get('retryCount')}"
        )
        if retries is not None and status.get("retryCount", 0) != retries:
            return None
        return job if state.get("phase") == phase else None

    return await kube.wait_for(check, within, message=lambda: f"job {name} {phase}; last {seen[-1:]}")


async def wait_running_pods(
    api: client.ApiClient, ns: str, job: str, n: int, *, where: Callable[[dict[str, Any]], bool] | None = None
) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        pods = [p for p in await job_pods(api, ns, job) if where is None or where(p)]
        running = [
            p
            for p in pods
            if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return running if len(running) == n else None

    return await kube.wait_for(check, 30, message=f"{n} running pods of {job}")


def _env(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        e["name"]: e.get("value", e.get("valueFrom")) for e in pod["spec"]["containers"][0].get("env", [])
    }


async def test_an_mpi_style_job_runs_with_hosts_env_service_and_ssh_keys(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    await create_job(
        kube_api,
        namespace,
        "mpi",
        {
            "minAvailable": 3,
            "schedulerName": "volcano",
            "plugins": {"ssh": [], "svc": [], "env": []},
            "tasks": [task("master", 1, selector=sel), task("worker", 2, selector=sel)],
        },
    )
    job = await wait_phase(kube_api, namespace, "mpi", "Running")
    status = job["status"]
    assert status["running"] == 3 and status["minAvailable"] == 3
    assert status["taskStatusCount"] == {
        "master": {"phase": {"Running": 1}},
        "worker": {"phase": {"Running": 2}},
    }

    pods = {p["metadata"]["name"]: p for p in await job_pods(kube_api, namespace, "mpi")}
    assert sorted(pods) == ["mpi-master-0", "mpi-worker-0", "mpi-worker-1"]
    w1 = pods["mpi-worker-1"]
    uid = job["metadata"]["uid"]
    assert w1["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == f"mpi-{uid}"
    assert w1["metadata"]["annotations"]["volcano.sh/task-index"] == "1"
    assert w1["spec"]["hostname"] == "mpi-worker-1" and w1["spec"]["subdomain"] == "mpi"
    env = _env(w1)
    assert env["VC_TASK_INDEX"] == "1" and env["VK_TASK_INDEX"] == "1"
    assert "VC_WORKER_HOSTS" in env and "VC_MASTER_NUM" in env

    svc = await kube.request(kube_api, "GET", f"/api/v1/namespaces/{namespace}/services/mpi")
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["metadata"]["ownerReferences"][0]["uid"] == uid
    cm = await kube.request(kube_api, "GET", f"/api/v1/namespaces/{namespace}/configmaps/mpi-svc")
    assert cm["data"]["VC_WORKER_HOSTS"] == "mpi-worker-0.mpi,mpi-worker-1.mpi"
    secret = await kube.request(kube_api, "GET", f"/api/v1/namespaces/{namespace}/secrets/mpi-ssh")
    private = base64.b64decode(secret["data"]["id_rsa"]).decode()
    public = base64.b64decode(secret["data"]["id_rsa.pub"]).decode()
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----") and public.startswith("ssh-ed25519 ")
    assert base64.b64decode(secret["data"]["authorized_keys"]).decode().strip() == public.strip()
    pg = await kube.request(kube_api, "GET", f"{kube.collection_path(PG, 'podgroups', namespace)}/mpi-{uid}")
    assert pg["spec"]["minMember"] == 3 and pg["spec"]["minTaskMember"] == {"master": 1, "worker": 2}


async def test_pod_failed_restarts_the_job_exactly_max_retry_times_then_fails_with_no_pods_left(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    await create_job(
        kube_api,
        namespace,
        "flaky",
        {
            "minAvailable": 2,
            "maxRetry": 2,
            "policies": [{"event": "PodFailed", "action": "RestartJob"}],
            "tasks": [task("worker", 2, selector=sel)],
        },
    )
    restarts_seen = []
    for attempt in range(3):
        pods = await wait_running_pods(kube_api, namespace, "flaky", 2)
        assert {p["metadata"]["annotations"]["volcano.sh/job-retry-count"] for p in pods} == {str(attempt)}
        await fake_kubelet.fail(namespace, "flaky-worker-0", exit_code=3)
        if attempt < 2:

            async def restarted(n: int = attempt + 1) -> int:
                job = await get_job(kube_api, namespace, "flaky")
                return int(job["status"].get("retryCount", 0)) if job["status"].get("retryCount") == n else 0

            restarts_seen.append(await kube.wait_for(restarted, 30, message=f"restart {attempt + 1}"))
    job = await wait_phase(kube_api, namespace, "flaky", "Failed")
    assert restarts_seen == [1, 2]
    assert job["status"]["retryCount"] == 2
    assert job["status"]["state"]["reason"] == "MaxRetryExceeded"

    async def none_alive() -> bool:
        return not alive(await job_pods(kube_api, namespace, "flaky"))

    await kube.wait_for(none_alive, 30, message="no pod of the failed job left running")


async def test_task_completed_completes_the_job_and_removes_the_other_pods(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    await create_job(
        kube_api,
        namespace,
        "ps",
        {
            "tasks": [
                task(
                    "chief", 1, selector=sel, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]
                ),
                task("ps", 2, selector=sel),
            ],
        },
    )
    await wait_phase(kube_api, namespace, "ps", "Running")
    await wait_running_pods(kube_api, namespace, "ps", 3)
    await fake_kubelet.succeed(namespace, "ps-chief-0")
    job = await wait_phase(kube_api, namespace, "ps", "Completed")
    assert job["status"]["state"]["reason"] == "TaskCompleted"

    async def only_chief() -> list[str]:
        pods = await job_pods(kube_api, namespace, "ps")
        # Pods being deleted are not alive yet still listed until the kubelet confirms: wait until they go.
        leaving = any(p["metadata"].get("deletionTimestamp") for p in pods)
        return [p["metadata"]["name"] for p in pods] if not alive(pods) and not leaving else []

    assert await kube.wait_for(only_chief, 30, message="ps pods removed") == ["ps-chief-0"]


async def test_depends_on_holds_back_the_dependent_task_until_its_dependency_runs(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    async with FakeKubelet(kube_api, auto_run=False) as kubelet:
        await create_job(
            kube_api,
            namespace,
            "dep",
            {
                "tasks": [
                    task("master", 1, selector=sel),
                    task("worker", 2, selector=sel, dependsOn={"name": ["master"]}),
                ],
            },
        )

        async def master_bound() -> bool:
            pods = await job_pods(kube_api, namespace, "dep")
            return any(p["metadata"]["name"] == "dep-master-0" and p["spec"].get("nodeName") for p in pods)

        await kube.wait_for(master_bound, 30, message="master bound")
        await asyncio.sleep(1.0)  # time enough for a wrong controller to create workers
        assert [p["metadata"]["name"] for p in await job_pods(kube_api, namespace, "dep")] == ["dep-master-0"]
        await kubelet.run(namespace, "dep-master-0")

        async def workers_bound() -> bool:
            pods = await job_pods(kube_api, namespace, "dep")
            return sum(bool(p["spec"].get("nodeName")) for p in pods) == 3

        await kube.wait_for(workers_bound, 30, message="workers created and bound after the master ran")


async def test_an_abort_command_suspends_the_job_and_a_resume_command_runs_it_again(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=sel)
    job = await create_job(kube_api, namespace, "sus", {"tasks": [task("w", 2, selector=sel)]})
    await wait_phase(kube_api, namespace, "sus", "Running")

    async def command(action: str) -> None:
        body = {
            "apiVersion": BUS,
            "kind": "Command",
            "metadata": {"generateName": f"sus-{action.lower()}-"},
            "action": action,
            "target": {"apiVersion": BATCH, "kind": "Job", "name": "sus", "uid": job["metadata"]["uid"]},
        }
        await kube.request(kube_api, "POST", kube.collection_path(BUS, "commands", namespace), body=body)

    async def no_commands() -> bool:
        listing = await kube.list_objects(kube_api, kube.collection_path(BUS, "commands", namespace))
        return not listing["items"]

    await command("AbortJob")
    await wait_phase(kube_api, namespace, "sus", "Aborted")
    assert not alive(await job_pods(kube_api, namespace, "sus"))
    await kube.wait_for(no_commands, 30, message="the executed Command deleted")

    await command("ResumeJob")
    job = await wait_phase(kube_api, namespace, "sus", "Running")
    assert job["status"]["retryCount"] == 0  # a resume is not a retry
    await wait_running_pods(kube_api, namespace, "sus", 2)
    await kube.wait_for(no_commands, 30, message="the executed Command deleted")


async def test_restarting_pumice_mid_lifecycle_loses_nothing_and_duplicates_no_pod(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    ensure_pumice(control_plane)
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="8", labels=sel)
    await create_job(
        kube_api,
        namespace,
        "rs",
        {
            "maxRetry": 3,
            "policies": [{"event": "PodFailed", "action": "RestartJob"}],
            "tasks": [task("w", 4, selector=sel)],
        },
    )
    await wait_phase(kube_api, namespace, "rs", "Running")
    uids = {p["metadata"]["uid"] for p in await job_pods(kube_api, namespace, "rs")}
    # Stop pumice, fail a pod while it is down, start it again: the failure must still restart the job once.
    control_plane.stop_process("pumice")
    await fake_kubelet.fail(namespace, "rs-w-2", exit_code=1)
    ensure_pumice(control_plane, restart=True)
    job = await wait_phase(kube_api, namespace, "rs", "Running", within=60, retries=1)
    assert job["status"]["retryCount"] == 1
    pods = await wait_running_pods(kube_api, namespace, "rs", 4)
    assert not uids & {p["metadata"]["uid"] for p in pods}, "the restart replaced every pod"
    # Restart again while Running: nothing changes, nothing is created twice.
    ensure_pumice(control_plane, restart=True)
    await asyncio.sleep(1.0)
    after = await job_pods(kube_api, namespace, "rs")
    assert sorted(p["metadata"]["uid"] for p in after) == sorted(p["metadata"]["uid"] for p in pods)
    assert (await get_job(kube_api, namespace, "rs"))["status"]["retryCount"] == 1


async def test_a_job_written_wrong_is_denied_with_the_field_named(
    pumice: None, kube_api: client.ApiClient, namespace: str, test_id: str
) -> None:
    sel = node_labels(test_id)
    with pytest.raises(ApiException) as err:
        await create_job(
            kube_api,
            namespace,
            "bad",
            {"minAvailable": 5, "tasks": [task("w", 2, selector=sel)]},
        )
    assert err.value.status == 400
    assert "minAvailable" in str(err.value.body)


async def test_an_elastic_job_runs_what_fits_and_scaling_down_removes_the_highest_indices(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="3", labels=sel)  # room for 3 of the 4 one-cpu pods
    await create_job(
        kube_api, namespace, "el", {"minAvailable": 2, "tasks": [task("w", 4, selector=sel, minAvailable=2)]}
    )
    job = await wait_phase(kube_api, namespace, "el", "Running")
    await wait_running_pods(kube_api, namespace, "el", 3)
    pg = await kube.request(
        kube_api, "GET", f"{kube.collection_path(PG, 'podgroups', namespace)}/el-{job['metadata']['uid']}"
    )
    assert pg["spec"]["minMember"] == 2

    await kube.request(
        kube_api,
        "PATCH",
        f"{kube.collection_path(BATCH, 'jobs', namespace)}/el",
        body=[{"op": "replace", "path": "/spec/tasks/0/replicas", "value": 2}],
        content_type="application/json-patch+json",
    )

    async def two_left() -> list[str]:
        names = sorted(p["metadata"]["name"] for p in alive(await job_pods(kube_api, namespace, "el")))
        return names if len(names) == 2 else []

    assert await kube.wait_for(two_left, 30, message="scaled down to 2") == ["el-w-0", "el-w-1"]


async def test_a_finished_job_is_deleted_after_its_ttl(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=sel)
    await create_job(
        kube_api, namespace, "ttl", {"ttlSecondsAfterFinished": 2, "tasks": [task("w", 1, selector=sel)]}
    )
    await wait_running_pods(kube_api, namespace, "ttl", 1)
    await fake_kubelet.succeed(namespace, "ttl-w-0")
    job = await wait_phase(kube_api, namespace, "ttl", "Completed")
    due = epoch(job["status"]["state"]["lastTransitionTime"]) + 2
    try:
        assert await get_job(kube_api, namespace, "ttl")  # still there within the TTL
    except ApiException as e:
        # A slow machine may look only after the TTL ran out: gone then is right, gone before is not.
        if e.status != 404 or time.time() < due:
            raise

    async def gone() -> bool:
        try:
            await get_job(kube_api, namespace, "ttl")
        except ApiException as e:
            return e.status == 404
        return False

    await kube.wait_for(gone, 15, message="the job deleted after its TTL")
    await kube.wait_for(lambda: _no_pods(kube_api, namespace, "ttl"), 15, message="its pods removed with it")


async def _no_pods(api: client.ApiClient, ns: str, job: str) -> bool:
    return not await job_pods(api, ns, job)


async def test_close_and_open_queue_commands_set_the_queue_state(
    pumice: None, kube_api: client.ApiClient, namespace: str, test_id: str
) -> None:
    queues = kube.collection_path(PG, "queues")
    name = f"q-{test_id}"[:60]
    await kube.request(
        kube_api,
        "POST",
        queues,
        body={"apiVersion": PG, "kind": "Queue", "metadata": {"name": name}, "spec": {}},
    )
    try:

        async def state(expected: str) -> bool:
            q = await kube.request(kube_api, "GET", f"{queues}/{name}")
            return bool(q.get("status", {}).get("state") == expected)

        await kube.wait_for(lambda: state("Open"), 15, message="the new queue Open")
        for action, expected in (("CloseQueue", "Closed"), ("OpenQueue", "Open")):
            body = {
                "apiVersion": BUS,
                "kind": "Command",
                "metadata": {"generateName": f"{action.lower()}-"},
                "action": action,
                "target": {"apiVersion": PG, "kind": "Queue", "name": name, "uid": "x"},
            }
            await kube.request(kube_api, "POST", kube.collection_path(BUS, "commands", namespace), body=body)
            await kube.wait_for(
                functools.partial(state, expected), 15, message=f"queue {expected} by {action}"
            )
    finally:
        await kube.request(kube_api, "DELETE", f"{queues}/{name}")
