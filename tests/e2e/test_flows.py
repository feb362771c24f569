"""Workflows on a real kube-apiserver + kube-scheduler with fake nodes and the fake kubelet: Volcano's own
example/jobflow DAG runs in order and ends Succeed (and its jobs are deleted, jobRetainPolicy delete); a
failing stage fails the flow; a taskStatusList probe starts the next job while the previous one runs; a
restart of pumice mid-flow creates no duplicate; a CronJob with a one-minute schedule respects Forbid,
starts its run, and trims its history.

The CronJob test does not wait for the wall clock: it sets ``status.lastScheduleTime`` two minutes back, as
if pumice had been down, so the controller's real catch-up rule (at most one run, the latest time due) starts
a run at once."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

FLOW = "flow.volcano.sh/v1alpha1"
BATCH = "batch.volcano.sh/v1alpha1"


def job_spec(sel: dict[str, str], *tasks: str, **extra: Any) -> dict[str, Any]:
    return {
        "minAvailable": len(tasks) or 1,
        "schedulerName": "volcano",
        "queue": "default",
        "tasks": [
            {
                "name": t,
                "replicas": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": sel,
                        "containers": [
                            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                        ],
                    }
                },
            }
            for t in (tasks or ("main",))
        ],
        **extra,
    }


async def create(
    api: client.ApiClient, gv: str, plural: str, ns: str, body: dict[str, Any]
) -> dict[str, Any]:
    obj: dict[str, Any] = await kube.request(api, "POST", kube.collection_path(gv, plural, ns), body=body)
    return obj


async def templates(api: client.ApiClient, ns: str, sel: dict[str, str], names: str, **extra: Any) -> None:
    for n in names:
        body = {
            "apiVersion": FLOW,
            "kind": "JobTemplate",
            "metadata": {"name": n},
            "spec": job_spec(sel, **extra),
        }
        await create(api, FLOW, "jobtemplates", ns, body)


async def create_flow(
    api: client.ApiClient, ns: str, name: str, flows: list[dict[str, Any]], **spec: Any
) -> None:
    body = {
        "apiVersion": FLOW,
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {"flows": flows, **spec},
    }

    async def attempt() -> bool:
        try:
            await create(api, FLOW, "jobflows", ns, body)
        except ApiException as e:
            # pumice's view of templates lags the API server by one watch event: retry that denial only.
            if e.status == 400 and "not found" in str(e.body):
                return False
            raise
        return True

    await kube.wait_for(attempt, 30, message="the JobFlow admitted")


async def jobs(api: client.ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list_objects(api, kube.collection_path(BATCH, "jobs", ns))
    return {j["metadata"]["name"]: j for j in listing.get("items") or ()}


async def get_flow(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = await kube.request(
        api, "GET", f"{kube.collection_path(FLOW, 'jobflows', ns)}/{name}"
    )
    return obj


async def wait_jobs(
    api: client.ApiClient, ns: str, want: set[str], within: float = 30
) -> dict[str, dict[str, Any]]:
    async def check() -> tuple[dict[str, dict[str, Any]]] | None:
        have = await jobs(api, ns)
        return (have,) if set(have) == want else None  # a tuple: an empty dict is a match too

    return (await kube.wait_for(check, within, message=lambda: f"jobs {sorted(want)}"))[0]


async def wait_job_phase(api: client.ApiClient, ns: str, name: str, phase: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        job = (await jobs(api, ns)).get(name)
        return job if job and job.get("status", {}).get("state", {}).get("phase") == phase else None

    return await kube.wait_for(check, 30, message=f"job {name} {phase}")


async def wait_flow_phase(api: client.ApiClient, ns: str, name: str, phase: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        flow = await get_flow(api, ns, name)
        return flow if flow.get("status", {}).get("state", {}).get("phase") == phase else None

    return await kube.wait_for(check, 30, message=f"flow {name} {phase}")


async def finish(
    api: client.ApiClient, kubelet: FakeKubelet, ns: str, job: str, *, fail: bool = False, wait: bool = True
) -> None:
    pod = f"{job}-main-0"

    async def running() -> bool:
        try:
            p = await kube.request(api, "GET", f"{kube.collection_path('v1', 'pods', ns)}/{pod}")
        except ApiException as e:
            if e.status == 404:
                return False
            raise
        return bool(p.get("status", {}).get("phase") == "Running")

    await kube.wait_for(running, 30, message=f"pod {pod} Running")
    if fail:
        await kubelet.fail(ns, pod, exit_code=2)
    else:
        await kubelet.succeed(ns, pod)
        if wait:
            await wait_job_phase(api, ns, job, "Completed")


EXAMPLE: list[dict[str, Any]] = [
    {"name": "a"},
    {"name": "b", "dependsOn": {"targets": ["a"]}},
    {"name": "c", "dependsOn": {"targets": ["b"]}},
    {"name": "d", "dependsOn": {"targets": ["b"]}},
    {"name": "e", "dependsOn": {"targets": ["c", "d"]}},
]


async def test_volcano_example_dag_runs_in_order_and_succeeds(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    await templates(kube_api, namespace, sel, "abcde")
    await create_flow(kube_api, namespace, "test", EXAMPLE, jobRetainPolicy="delete")
    have = await wait_jobs(kube_api, namespace, {"test-a"})
    assert have["test-a"]["metadata"]["labels"] == {"volcano.sh/createdByJobTemplate": f"{namespace}.a"}
    await finish(kube_api, fake_kubelet, namespace, "test-a")
    await wait_jobs(kube_api, namespace, {"test-a", "test-b"})
    await finish(kube_api, fake_kubelet, namespace, "test-b")
    await wait_jobs(kube_api, namespace, {"test-a", "test-b", "test-c", "test-d"})
    await finish(kube_api, fake_kubelet, namespace, "test-c")
    await asyncio.sleep(0.5)  # e must wait for d too
    assert "test-e" not in await jobs(kube_api, namespace)
    await finish(kube_api, fake_kubelet, namespace, "test-d")
    await wait_jobs(kube_api, namespace, {f"test-{x}" for x in "abcde"})
    await finish(kube_api, fake_kubelet, namespace, "test-e", wait=False)  # then deleted at once
    flow = await wait_flow_phase(kube_api, namespace, "test", "Succeed")
    hist = {j["name"]: [h["state"] for h in j["runningHistories"]] for j in flow["status"]["jobStatusList"]}
    assert set(hist) == {f"test-{x}" for x in "abcde"} and all(h[-1] == "Completed" for h in hist.values())
    await wait_jobs(kube_api, namespace, set())  # jobRetainPolicy: delete


async def test_a_failing_stage_fails_the_flow(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=sel)
    await templates(
        kube_api, namespace, sel, "ab", policies=[{"event": "PodFailed", "action": "TerminateJob"}]
    )
    await create_flow(kube_api, namespace, "bad", EXAMPLE[:2])
    await wait_jobs(kube_api, namespace, {"bad-a"})
    await finish(kube_api, fake_kubelet, namespace, "bad-a", fail=True)
    flow = await wait_flow_phase(kube_api, namespace, "bad", "Failed")
    assert flow["status"]["terminatedJobs"] == ["bad-a"]
    assert set(await jobs(kube_api, namespace)) == {"bad-a"}  # b is never started


async def test_task_status_probe_starts_the_next_job_while_the_previous_runs(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    srv = {
        "apiVersion": FLOW,
        "kind": "JobTemplate",
        "metadata": {"name": "srv"},
        "spec": job_spec(sel, "master", "worker"),
    }
    await create(kube_api, FLOW, "jobtemplates", namespace, srv)
    await templates(kube_api, namespace, sel, ["cli"])  # type: ignore[arg-type]  # one name
    probe = {"taskStatusList": [{"taskName": "master", "phase": "Running"}]}
    await create_flow(
        kube_api,
        namespace,
        "p",
        [{"name": "srv"}, {"name": "cli", "dependsOn": {"targets": ["srv"], "probe": probe}}],
    )
    have = await wait_jobs(kube_api, namespace, {"p-srv", "p-cli"})
    # p-cli came once the master task ran, not when p-srv finished (nothing here completes it). The job's
    # own phase may still read Pending for a moment: the job controller counts the task's pods first.
    assert have["p-srv"].get("status", {}).get("state", {}).get("phase") in (None, "Pending", "Running")
    await wait_job_phase(kube_api, namespace, "p-srv", "Running")
    await wait_flow_phase(kube_api, namespace, "p", "Running")  # its status follows the jobs' (a write later)

    # An HTTP probe pumice makes itself: the fake pods' IPs answer nothing, so the next stage waits and
    # the flow's status says why.
    http = {"httpGetList": [{"taskName": "master", "port": 8080, "path": "/healthz"}]}
    await create_flow(
        kube_api,
        namespace,
        "h",
        [{"name": "srv"}, {"name": "cli", "dependsOn": {"targets": ["srv"], "probe": http}}],
    )

    async def probed() -> dict[str, Any] | None:
        rows = (await get_flow(kube_api, namespace, "h")).get("status", {}).get("probeStatusList", [])
        done = [r for r in rows if r["type"] == "httpGet" and "not probed yet" not in r["message"]]
        return done[0] if done else None

    row = await kube.wait_for(probed, 20, message="an HTTP probe result in the flow's status")
    assert (row["name"], row["target"], row["ready"], row["port"]) == ("cli", "srv", False, 8080)
    assert "h-cli" not in await jobs(kube_api, namespace)


async def test_restarting_pumice_mid_flow_creates_no_duplicate(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    ensure_pumice(control_plane)
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=sel)
    await templates(kube_api, namespace, sel, "ab")
    await create_flow(kube_api, namespace, "rs", EXAMPLE[:2])
    first = await wait_jobs(kube_api, namespace, {"rs-a"})
    ensure_pumice(control_plane, restart=True)
    again = await wait_jobs(kube_api, namespace, {"rs-a"})
    assert again["rs-a"]["metadata"]["uid"] == first["rs-a"]["metadata"]["uid"]
    await finish(kube_api, fake_kubelet, namespace, "rs-a")
    await wait_jobs(kube_api, namespace, {"rs-a", "rs-b"})
    await finish(kube_api, fake_kubelet, namespace, "rs-b")
    await wait_flow_phase(kube_api, namespace, "rs", "Succeed")
    assert set(await jobs(kube_api, namespace)) == {"rs-a", "rs-b"}  # retain (the default)


async def test_cronjob_respects_forbid_starts_its_run_and_trims_history(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    sel = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=sel)
    cron = await create(
        kube_api,
        BATCH,
        "cronjobs",
        namespace,
        {
            "apiVersion": BATCH,
            "kind": "CronJob",
            "metadata": {"name": "cj"},
            "spec": {
                "schedule": "*/1 * * * *",
                "concurrencyPolicy": "Forbid",
                "suspend": True,
                "successfulJobsHistoryLimit": 1,
                "jobTemplate": {"spec": job_spec(sel)},
            },
        },
    )
    # A run still active from before (owned by the CronJob, as its runs are).
    owner = {
        "apiVersion": BATCH,
        "kind": "CronJob",
        "name": "cj",
        "uid": cron["metadata"]["uid"],
        "controller": True,
    }
    await create(
        kube_api,
        BATCH,
        "jobs",
        namespace,
        {
            "apiVersion": BATCH,
            "kind": "Job",
            "metadata": {"name": "cj-old", "ownerReferences": [owner]},
            "spec": job_spec(sel),
        },
    )
    await wait_job_phase(kube_api, namespace, "cj-old", "Running")
    path = f"{kube.collection_path(BATCH, 'cronjobs', namespace)}/cj"
    back = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(time.time() - 120))
    merge = "application/merge-patch+json"
    await kube.request(
        kube_api, "PATCH", f"{path}/status", body={"status": {"lastScheduleTime": back}}, content_type=merge
    )
    await kube.request(kube_api, "PATCH", path, body={"spec": {"suspend": False}}, content_type=merge)

    async def forbidden() -> bool:
        cj = await kube.request(kube_api, "GET", path)
        return [a["name"] for a in cj.get("status", {}).get("active", [])] == ["cj-old"]

    await kube.wait_for(forbidden, 15, message="cj-old in status.active")
    await asyncio.sleep(1.0)
    assert set(await jobs(kube_api, namespace)) == {"cj-old"}  # Forbid: no run while cj-old is active
    await finish(kube_api, fake_kubelet, namespace, "cj-old")

    async def new_run() -> str | None:
        names = set(await jobs(kube_api, namespace)) - {"cj-old"}
        return names.pop() if names else None

    run = await kube.wait_for(new_run, 15, message="the due run started")
    assert run.startswith("cj-") and int(run[3:]) >= int(time.time() - 120) // 60
    await finish(kube_api, fake_kubelet, namespace, run)

    # successfulJobsHistoryLimit 1: cj-old is deleted and the run kept. The schedule is every minute, so a
    # later minute's run may have started meanwhile (CI crossed a minute here once): later names only.
    async def trimmed() -> bool:
        have = set(await jobs(kube_api, namespace))
        return run in have and all(n == run or n > run for n in have)

    await kube.wait_for(trimmed, 30, message=f"cj-old deleted and {run} kept")
