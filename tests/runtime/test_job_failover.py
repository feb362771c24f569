"""A job policy action half done by a leader that loses its lease completes once under the next leader.

The job controller is level-triggered: what a RestartJob has done is in the objects (the job's status says
Restarting with the new version and retry count; the old pods are still there or going), so the next leader,
reading only the cluster, finishes the restart: the old pods go, the new generation is created once, and the
retry is counted once. The deposed leader's own writes are refused by the fence from the moment its term
ends, so it cannot finish (or repeat) anything itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.kube.informer import Informer
from controllers.leader.decide import Timing
from controllers.leader.fence import fenced_client
from controllers.leader.leadership import Leadership
from controllers.reconcilers.jobs import JobController
from controllers.state.indexes import watched_objects
from tests.fakeapi import FakeApiServer, Recorded, serving

NS, NAME, UID = "ns", "tr", "uid-tr"
JOB = paths.JOBS.item(NAME, namespace=NS)
PG_NAME = f"{NAME}-{UID}"
KINDS = {
    "jobs": paths.JOBS.collection(),
    "pods": paths.PODS.collection(),
    "podgroups": paths.PODGROUPS.collection(),
    "commands": paths.COMMANDS.collection(),
}


def pod(index: int, phase: str, exit_code: int | None = None) -> dict[str, Any]:
    name = f"{NAME}-w-{index}"
    state: dict[str, Any] = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "finishedAt": "2026-01-01T00:01:00Z"}}
    return {
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}-v0",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": NAME,
                    "uid": UID,
                    "controller": True,
                }
            ],
            "labels": {"volcano.sh/job-name": NAME, "volcano.sh/task-spec": "w"},
            "annotations": {
                "volcano.sh/task-spec": "w",
                "volcano.sh/task-index": str(index),
                "volcano.sh/job-version": "0",
                "volcano.sh/job-name": NAME,
                "scheduling.k8s.io/group-name": PG_NAME,
            },
        },
        "spec": {
            "schedulerName": "volcano",
            "nodeName": "n1",
            "containers": [{"name": "main", "image": "img"}],
        },
        "status": {
            "phase": phase,
            "containerStatuses": [{"name": "main", "state": state, "ready": phase == "Running"}],
        },
    }


def seed(fake: FakeApiServer) -> None:
    task = {
        "name": "w",
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "main", "image": "img"}], "restartPolicy": "Never"}},
    }
    fake.seed(
        JOB,
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {
                "name": NAME,
                "namespace": NS,
                "uid": UID,
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {
                "minAvailable": 2,
                "schedulerName": "volcano",
                "queue": "default",
                "maxRetry": 3,
                "policies": [{"event": "PodFailed", "action": "RestartJob"}],
                "tasks": [task],
            },
            "status": {"state": {"phase": "Running"}, "version": 0, "retryCount": 0, "minAvailable": 2},
        },
    )
    fake.seed(
        paths.PODGROUPS.item(PG_NAME, namespace=NS),
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": PG_NAME,
                "namespace": NS,
                "ownerReferences": [
                    {
                        "apiVersion": "batch.volcano.sh/v1alpha1",
                        "kind": "Job",
                        "name": NAME,
                        "uid": UID,
                        "controller": True,
                    }
                ],
            },
            "spec": {"minMember": 2, "queue": "default"},
            "status": {"phase": "Running"},
        },
    )
    fake.seed(paths.PODS.item(f"{NAME}-w-0", namespace=NS), pod(0, "Running"))
    fake.seed(paths.PODS.item(f"{NAME}-w-1", namespace=NS), pod(1, "Failed", exit_code=3))


@contextlib.asynccontextmanager
async def leader(client: KubeClient, lead: Leadership) -> AsyncIterator[JobController]:
    """A replica's job controller with its own store and informers, writing through the fence."""
    store = watched_objects(frozenset({"volcano"}))
    jc = JobController(fenced_client(client, lead), store, scheduler_names=frozenset({"volcano"}), workers=2)
    handlers = store.handlers()
    informers = [Informer(client, path, handlers[kind], name=kind) for kind, path in KINDS.items()]
    tasks = [asyncio.get_running_loop().create_task(i.run()) for i in informers]
    tasks.append(asyncio.get_running_loop().create_task(jc.run()))
    try:
        yield jc
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def until(check: Any, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def job_status(fake: FakeApiServer) -> dict[str, Any]:
    status: dict[str, Any] = fake.objects[JOB].get("status") or {}
    return status


async def test_a_restart_job_half_done_by_a_deposed_leader_completes_once_under_the_next() -> None:
    fake = FakeApiServer()
    seed(fake)
    timing = Timing(lease_duration=1.0, renew_deadline=0.7, retry_period=0.2)
    a = Leadership(identity="a", timing=timing)
    b = Leadership(identity="b", timing=timing)

    def deposed_after_the_status_write(rec: Recorded) -> None:
        # A's restart: the status says Restarting (retry 1, version 1) ... and then A's term ends.
        if rec.method == "PATCH" and rec.path == paths.JOBS.status(NAME, namespace=NS) and a.leading:
            a.step_down()

    fake.after = deposed_after_the_status_write
    async with serving(fake, pool=16) as client:
        a.renewed(a.clock(), new_term=True)
        async with leader(client, a):
            await until(lambda: job_status(fake).get("state", {}).get("phase") == "Restarting")
            await asyncio.sleep(0.5)  # A keeps trying: every write refused before it is sent
        half = job_status(fake)
        assert (half["retryCount"], half["version"]) == (1, 1)
        assert sorted(n for n, _ in fake.under(paths.PODS.collection(NS)).items()) == ["tr-w-0", "tr-w-1"]
        assert not [r for r in fake.requests if r.method == "DELETE"]  # A deleted nothing after its term

        fake.after = None
        b.renewed(b.clock(), new_term=True)
        async with leader(client, b):
            # The old pods go (a kubelet confirms their deletion at once here), the new generation comes.
            await until(
                lambda: (
                    {
                        (o["metadata"]["name"], o["metadata"]["annotations"].get("volcano.sh/job-version"))
                        for o in fake.under(paths.PODS.collection(NS)).values()
                    }
                    == {("tr-w-0", "1"), ("tr-w-1", "1")}
                )
            )
            await asyncio.sleep(0.5)
    done = job_status(fake)
    assert (done["retryCount"], done["version"]) == (1, 1)  # counted once
    creates = [
        r.body["metadata"]["name"] for r in fake.requests if r.method == "POST" and r.path.endswith("/pods")
    ]
    assert sorted(creates) == ["tr-w-0", "tr-w-1"]  # each pod of the new generation created once
