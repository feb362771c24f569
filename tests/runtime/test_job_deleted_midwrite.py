"""A vcjob deleted while the job controller writes its status: the watch's DELETE can arrive before the
write's response, and the response must not bring the job back into the cache (CI saw a deleted job's
pods left behind while its sync retried a status write to a gone object, backing off to 5 minutes). A
write that meets a 404 checks the job is gone and cleans up as a watched deletion would."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from controllers.kube.client import ApiError
from controllers.reconcilers.jobs import JobController
from extender.jobs.model import parse_job
from extender.jobs.reconcile import reconcile
from tests.runtime.test_job_events import BLOCKED, JOB, Recorder

Obj = dict[str, Any]


class Client:
    """A status merge-patch answered with the patched job, after ``during_write`` runs (a watch event
    arriving meanwhile); ``gone`` makes the job's writes and reads 404."""

    def __init__(self) -> None:
        self.during_write: Callable[[], None] = lambda: None
        self.gone = False
        self.deleted: list[str] = []

    async def merge_patch(self, path: str, body: Obj) -> Obj:
        if self.gone and "/jobs/" in path:
            raise ApiError(404, {"reason": "NotFound"}, "PATCH", path)
        self.during_write()
        if path.endswith("/status"):
            return {**JOB, "metadata": {**JOB["metadata"], "resourceVersion": "4"}, "status": body["status"]}
        return body

    async def get(self, path: str) -> Obj:
        if self.gone:
            raise ApiError(404, {"reason": "NotFound"}, "GET", path)
        return copy.deepcopy(JOB)

    async def post(self, path: str, body: Obj) -> Obj:
        return body

    async def delete(self, path: str) -> Obj:
        self.deleted.append(path.rsplit("/", 1)[-1])
        return {}


def controller(client: Client) -> JobController:
    jc = JobController(client, scheduler_names=frozenset({"volcano"}), events=Recorder())  # type: ignore[arg-type]
    jc.jobs["ns/big"] = copy.deepcopy(JOB)
    jc.podgroups["ns/big-uid-big"] = BLOCKED
    jc.pods["ns/big"] = {"big-w-0": {"metadata": {"name": "big-w-0", "namespace": "ns"}}}
    return jc


async def _perform(jc: JobController) -> None:
    obj = jc.jobs["ns/big"]
    job = parse_job(obj)
    await jc.perform("ns/big", job, obj, reconcile(jc.world("ns/big", job)))


async def test_a_delete_seen_during_the_write_is_not_undone_by_its_response() -> None:
    client = Client()
    jc = controller(client)
    client.during_write = lambda: jc._remove_job(JOB)  # the watch's DELETE, before the response
    await _perform(jc)
    assert "ns/big" not in jc.jobs
    await jc.sync("ns/big")  # what the work queue does next: the deletion's cleanup
    assert "big-w-0" in client.deleted


async def test_a_write_that_meets_404_cleans_up_as_a_deletion() -> None:
    """The watch has not said so yet, but the API server has no such job: no retry, the pods go."""
    client = Client()
    jc = controller(client)
    client.gone = True
    await _perform(jc)  # no exception: nothing to retry
    assert "ns/big" not in jc.jobs
    await jc.sync("ns/big")
    assert "big-w-0" in client.deleted
