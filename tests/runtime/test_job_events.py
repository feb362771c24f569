"""The job controller's Events on a vcjob: why it waits (from its PodGroup) and each phase change with the
policy or Command that caused it, recorded once the status write succeeded, and not again on a reconcile
that changes nothing a user waits on."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.reconcilers.jobs import JobController
from controllers.state.indexes import watched_objects
from extender.jobs.model import parse_job
from extender.jobs.reconcile import reconcile
from tests.fakeapi import FakeApiServer

Obj = dict[str, Any]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
        self.events.append((ref.kind, type_, reason, note))


JOB: Obj = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "big", "namespace": "ns", "uid": "uid-big", "resourceVersion": "3"},
    "spec": {
        "minAvailable": 3,
        "schedulerName": "volcano",
        "queue": "q",
        "tasks": [
            {"name": "w", "replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
        ],
    },
    "status": {"state": {"phase": "Pending"}},
}
BLOCKED = {
    "metadata": {"name": "big-uid-big", "namespace": "ns"},
    "spec": {"minMember": 3, "queue": "q", "minTaskMember": {"w": 3}},
    "status": {
        "phase": "Inqueue",
        "conditions": [
            {
                "type": "Unschedulable",
                "status": "True",
                "reason": "NotEnoughResources",
                "message": "gang 2/3 placeable: needs cpu 1, best node n0 has cpu 0",
            }
        ],
    },
}


JOB_PATH = paths.JOBS.item("big", namespace="ns")


def controller(kube: KubeClient, rec: Recorder) -> JobController:
    store = watched_objects(frozenset({"volcano"}))
    return JobController(kube, store, scheduler_names=frozenset({"volcano"}), events=rec)  # type: ignore[arg-type]  # EventRecorder's double


async def _sync(jc: JobController, obj: Obj) -> None:
    jc.store.handlers()["jobs"].upsert(obj)
    jc.store.handlers()["podgroups"].upsert(BLOCKED)
    job = parse_job(obj)
    await jc.perform("ns/big", job, obj, reconcile(jc.world("ns/big", job)))


async def test_a_blocked_gang_is_told_once_on_its_job(fake_api: FakeApiServer, kube: KubeClient) -> None:
    fake_api.seed(JOB_PATH, JOB)
    rec = Recorder()
    jc = controller(kube, rec)
    await _sync(jc, JOB)
    assert rec.events == [
        (
            "Job",
            "Warning",
            "PodGroupPending",
            "NotEnoughResources: gang 2/3 placeable: needs cpu 1, best node n0 has cpu 0",
        )
    ]
    # The written status now carries the reason; the next reconcile writes nothing and tells nothing.
    written = jc.jobs["ns/big"]
    assert written["status"]["state"]["reason"] == "PodGroupPending"
    await _sync(jc, written)
    assert len(rec.events) == 1


async def test_a_refused_status_write_tells_nothing(fake_api: FakeApiServer, kube: KubeClient) -> None:
    fake_api.seed(JOB_PATH, JOB)
    fake_api.fail[paths.JOBS.status("big", namespace="ns")] = 409  # someone else wrote it meanwhile
    rec = Recorder()
    jc = controller(kube, rec)
    with pytest.raises(ApiError):  # the worker retries it on fresh data
        await _sync(jc, JOB)
    assert rec.events == []
