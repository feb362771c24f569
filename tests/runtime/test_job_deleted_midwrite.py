"""A vcjob deleted while the job controller writes its status: the watch's DELETE can arrive before the
write's response, and the response must not bring the job back into the cache (CI saw a deleted job's
pods left behind while its sync retried a status write to a gone object, backing off to 5 minutes). A
write that meets a 404 checks the job is gone and cleans up as a watched deletion would. Against the
in-process API server (tests.fakeapi)."""

from __future__ import annotations

import copy
from typing import Any

from controllers.kube.client import KubeClient
from controllers.reconcilers.jobs import JobController
from controllers.state.indexes import watched_objects
from extender.jobs.model import parse_job
from extender.jobs.reconcile import reconcile
from tests.fakeapi import FakeApiServer
from tests.runtime.test_job_events import BLOCKED, JOB, JOB_PATH, Recorder

Obj = dict[str, Any]
# A pod of the job (the store places it under the job by its owner reference).
POD: Obj = {
    "metadata": {
        "name": "big-w-0",
        "namespace": "ns",
        "ownerReferences": [
            {
                "apiVersion": "batch.volcano.sh/v1alpha1",
                "kind": "Job",
                "name": "big",
                "uid": "uid-big",
                "controller": True,
            }
        ],
    }
}


def controller(kube: KubeClient) -> JobController:
    store = watched_objects(frozenset({"volcano"}))
    jc = JobController(kube, store, scheduler_names=frozenset({"volcano"}), events=Recorder())  # type: ignore[arg-type]  # EventRecorder's double
    store.handlers()["jobs"].upsert(copy.deepcopy(JOB))
    store.handlers()["podgroups"].upsert(BLOCKED)
    store.handlers()["pods"].upsert(POD)
    return jc


def deleted(api: FakeApiServer) -> list[str]:
    return [path.rsplit("/", 1)[-1] for method, path in api.hits() if method == "DELETE"]


async def _perform(jc: JobController) -> None:
    obj = jc.jobs["ns/big"]
    job = parse_job(obj)
    await jc.perform("ns/big", job, obj, reconcile(jc.world("ns/big", job)))


async def test_a_delete_seen_during_the_write_is_not_undone_by_its_response(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    fake_api.seed(JOB_PATH, JOB)
    jc = controller(kube)

    def watch_delete(request: Any) -> None:  # the watch's DELETE, before the write's response
        if request.method == "PATCH" and request.path.endswith("/status"):
            jc.store.handlers()["jobs"].remove(JOB)

    fake_api.after = watch_delete
    await _perform(jc)
    assert "ns/big" not in jc.jobs
    await jc.sync("ns/big")  # what the work queue does next: the deletion's cleanup
    assert "big-w-0" in deleted(fake_api)


async def test_a_write_that_meets_404_cleans_up_as_a_deletion(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    """The watch has not said so yet, but the API server has no such job: no retry, the pods go."""
    jc = controller(kube)  # the API server does not hold the job (gone)
    await _perform(jc)  # no exception: nothing to retry
    assert "ns/big" not in jc.jobs
    await jc.sync("ns/big")
    assert "big-w-0" in deleted(fake_api)
