"""The job and Command webhooks over HTTP, with AdmissionReview bodies shaped like kube-apiserver's.

The envelope has the keys of the captured pod request in ``wire_samples/`` (checked below); the object
is a vcjob as ``kubectl create`` sends it after the CRD's structural defaults (``queue: default``,
``maxRetry: 3``) were applied.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from admission.lookup import StaticLookup
from admission.server import METRICS_KEY, make_admission_app
from extender.api.limits import Limits
from extender.core.model import Queue, QueueState
from tests.admission.builders import apply_patch
from tests.contract.samples import sample

UID = "7f3c2a9e-1b4d-4c8e-9f0a-2d6b8e4c1a57"

Raw = dict[str, Any]
Client = TestClient[Any, Any]

CLUSTER = StaticLookup(
    queues=[
        Queue(name="root"),
        Queue(name="default"),
        Queue(name="shut", state=QueueState.CLOSED),
        Queue(name="team"),
        Queue(name="team-a", parent="team"),
    ],
)

GVK = {
    "jobs": {"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"},
    "commands": {"group": "bus.volcano.sh", "version": "v1alpha1", "kind": "Command"},
}


def envelope(operation: str, resource: str, obj: Raw | None, old: Raw | None = None) -> Raw:
    gvk = GVK[resource]
    gvr = {"group": gvk["group"], "version": gvk["version"], "resource": resource}
    meta = (obj or old or {})["metadata"]
    return {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": UID,
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": meta.get("name", ""),
            "namespace": meta["namespace"],
            "operation": operation,
            "userInfo": {"username": "kube-admin", "groups": ["system:masters", "system:authenticated"]},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            "options": {"kind": f"{operation.title()}Options", "apiVersion": "meta.k8s.io/v1"},
        },
    }


def vcjob(name: str = "mpi-demo", **spec: Any) -> Raw:
    pod = {
        "restartPolicy": "OnFailure",
        "containers": [{"name": "mpi", "image": "volcanosh/example-mpi:0.0.3", "resources": {}}],
    }
    body: Raw = {
        "queue": "default",
        "maxRetry": 3,
        "plugins": {"mpi": ["--master=mpimaster", "--worker=mpiworker", "--port=22"]},
        "tasks": [
            {"name": "mpimaster", "replicas": 1, "template": {"metadata": {}, "spec": copy.deepcopy(pod)}},
            {"name": "mpiworker", "replicas": 2, "template": {"metadata": {}, "spec": copy.deepcopy(pod)}},
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": "a3f5b0c2-6d1e-4e59-8b7a-0c9d2e4f6a81",
            "creationTimestamp": "2026-11-22T10:55:29Z",
        },
        "spec": body,
    }


@pytest.fixture
async def client(aiohttp_client: Callable[..., Any]) -> Client:
    c: Client = await aiohttp_client(make_admission_app(lambda: CLUSTER))
    return c


async def post(client: Client, path: str, doc: Raw) -> Raw:
    resp = await client.post(path, data=orjson.dumps(doc), headers={"Content-Type": "application/json"})
    assert resp.status == 200, await resp.text()
    body: Raw = orjson.loads(await resp.read())
    assert body["apiVersion"] == "admission.k8s.io/v1"
    assert body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == UID
    return body


def test_envelope_has_the_captured_keys() -> None:
    captured = sample("admission-validating-pod-create-request.json")
    ours = envelope("CREATE", "jobs", vcjob())
    assert ours.keys() == captured.keys()
    assert ours["request"].keys() == captured["request"].keys()
    assert ours["request"]["kind"].keys() == captured["request"]["kind"].keys()


async def test_create_is_defaulted_then_admitted(client: Client) -> None:
    job = vcjob()
    got = await post(client, "/jobs/mutate", envelope("CREATE", "jobs", job))
    assert got["response"]["patchType"] == "JSONPatch"
    ops = orjson.loads(base64.b64decode(got["response"]["patch"]))
    assert ops == [
        {"op": "add", "path": "/spec/schedulerName", "value": "volcano"},
        {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 1},
        {"op": "add", "path": "/spec/tasks/0/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/tasks/1/minAvailable", "value": 2},
        {"op": "add", "path": "/spec/tasks/1/maxRetry", "value": 3},
        {"op": "add", "path": "/spec/minAvailable", "value": 3},
        {"op": "add", "path": "/spec/plugins/svc", "value": []},
        {"op": "add", "path": "/spec/plugins/ssh", "value": []},
    ]
    defaulted = apply_patch(job, ops)
    got = await post(client, "/jobs/validate", envelope("CREATE", "jobs", defaulted))
    assert got["response"] == {"uid": UID, "allowed": True}


async def test_create_denied_names_every_field(client: Client) -> None:
    job = vcjob(queue="team", minAvailable=5, plugins={"mpi": [], "mxnet": []})
    got = await post(client, "/jobs/validate", envelope("CREATE", "jobs", job))
    assert got["response"] == {
        "uid": UID,
        "allowed": False,
        "status": {
            "code": 400,
            "message": "spec.queue: queue 'team' is not a leaf queue (it has child queues team-a); "
            "jobs run in leaf queues only, choose one of its children; "
            "spec.minAvailable: 5 is greater than the 3 replicas of all tasks; lower minAvailable or add "
            "replicas; "
            "spec.plugins[mpi]: the mpi master task 'master' is not a task of this job "
            "(mpimaster, mpiworker); name a task 'master' or pass --master=<task>; "
            "spec.plugins[mxnet]: unknown job plugin 'mxnet'; known plugins are env, hcclrank, mpi, pytorch, "
            "ray, ssh, svc, tensorflow",
        },
    }
    assert client.app[METRICS_KEY].denied["/jobs/validate"] == 1


async def test_closed_queue(client: Client) -> None:
    got = await post(client, "/jobs/validate", envelope("CREATE", "jobs", vcjob(queue="shut")))
    assert got["response"]["status"] == {
        "code": 400,
        "message": "spec.queue: queue 'shut' is Closed; jobs can only be submitted to an Open queue",
    }


async def test_update_scales_but_cannot_move_queues(client: Client) -> None:
    old = vcjob(minAvailable=3)
    scaled = copy.deepcopy(old)
    scaled["spec"]["tasks"][1]["replicas"] = 4
    got = await post(client, "/jobs/validate", envelope("UPDATE", "jobs", scaled, old))
    assert got["response"] == {"uid": UID, "allowed": True}
    moved = copy.deepcopy(old)
    moved["spec"]["queue"] = "team-a"
    got = await post(client, "/jobs/validate", envelope("UPDATE", "jobs", moved, old))
    assert got["response"]["status"] == {
        "code": 400,
        "message": "spec: spec.queue cannot change after the job is created; only spec.minAvailable, "
        "spec.priorityClassName, spec.tasks[*].replicas, spec.tasks[*].minAvailable can",
    }


async def test_update_is_not_mutated(client: Client) -> None:
    old = vcjob()
    got = await post(client, "/jobs/mutate", envelope("UPDATE", "jobs", old, old))
    assert got["response"] == {"uid": UID, "allowed": True}


def command(action: str, target: object) -> Raw:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "mpi-demo-abortjob-x7k2p", "namespace": "ns"},
        "action": action,
        "target": target,
    }


JOB_REF = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "mpi-demo",
    "uid": "a3f5b0c2-6d1e-4e59-8b7a-0c9d2e4f6a81",
    "controller": True,
    "blockOwnerDeletion": True,
}


async def test_command_for_a_job(client: Client) -> None:
    got = await post(
        client, "/commands/validate", envelope("CREATE", "commands", command("AbortJob", JOB_REF))
    )
    assert got["response"] == {"uid": UID, "allowed": True}
    got = await post(
        client, "/commands/validate", envelope("CREATE", "commands", command("Suspend", JOB_REF))
    )
    assert got["response"]["status"] == {
        "code": 400,
        "message": "action: must be one of AbortJob, CompleteJob, RestartJob, ResumeJob, TerminateJob for a "
        "Job target, got 'Suspend'",
    }


# ----------------------------------------------------------------------------------------------------------
# Hardening: limits and wrongly typed objects are denials naming the field, never an HTTP error


async def test_update_beyond_the_replica_limit_names_the_flag(client: Client) -> None:
    old = vcjob(minAvailable=3)
    scaled = copy.deepcopy(old)
    scaled["spec"]["tasks"][1]["replicas"] = 20_000
    got = await post(client, "/jobs/validate", envelope("UPDATE", "jobs", scaled, old))
    assert got["response"]["status"] == {
        "code": 400,
        "message": "spec.tasks[1].replicas: 20000 is more than the 10000 replicas pumice accepts per task; "
        "lower it, or raise the limit with pumice serve --max-job-replicas N",
    }


async def test_the_replica_limit_is_the_apps(aiohttp_client: Callable[..., Any]) -> None:
    c: Client = await aiohttp_client(make_admission_app(lambda: CLUSTER, Limits(max_replicas=2)))
    got = await post(c, "/jobs/validate", envelope("CREATE", "jobs", vcjob()))
    assert got["response"]["status"]["message"] == (
        "spec.tasks: the replicas of all tasks sum to 3, more than the 2 pumice accepts per job; lower them, "
        "or raise the limit with pumice serve --max-job-replicas N"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spec": "x"}, "spec: must be an object"),
        ({"spec": {"tasks": {"a": 1}}}, "spec.tasks: must be a list of tasks"),
        (
            {"metadata": {"name": "j", "namespace": "ns", "labels": []}},
            "metadata.labels: must be a map of string keys to string values",
        ),
    ],
)
async def test_a_wrongly_typed_job_is_denied(client: Client, change: Raw, message: str) -> None:
    job = {**vcjob(), **change}
    for doc in (envelope("CREATE", "jobs", job), envelope("UPDATE", "jobs", job, vcjob())):
        got = await post(client, "/jobs/validate", doc)
        assert got["response"]["allowed"] is False
        assert got["response"]["status"]["message"].startswith(message)


async def test_a_command_whose_target_kind_is_a_list_is_denied(client: Client) -> None:
    got = await post(
        client,
        "/commands/validate",
        envelope("CREATE", "commands", command("AbortJob", {**JOB_REF, "kind": []})),
    )
    assert got["response"]["status"] == {
        "code": 400,
        "message": "target.kind: must be Job or Queue, got a list",
    }
    updated = envelope("UPDATE", "commands", command("AbortJob", "x"), command("AbortJob", JOB_REF))
    got = await post(client, "/commands/validate", updated)
    assert got["response"]["status"]["message"].startswith("target: required")
