"""The admission app against the exact AdmissionReview bodies kube-apiserver v1.24 sends.

Golden inputs come from ``wire_samples/`` (captured bodies, see its README); variants change one thing
in a captured envelope. Responses are compared with the captured replies that kube-apiserver accepted:
same keys, same nesting, ``request.uid`` echoed, base64 JSONPatch.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

import admission.server as server
from admission.lookup import Lookup, LookupUnavailable, StaticLookup
from admission.server import METRICS_KEY, make_admission_app
from extender.api.limits import Limits
from extender.core.model import PodGroup, Queue, QueueState
from tests.admission.builders import apply_patch
from tests.contract.samples import SAMPLES, sample

Raw = dict[str, Any]
Client = TestClient[Any, Any]

CLUSTER = StaticLookup(
    queues=[
        Queue(name="root"),
        Queue(name="default"),
        Queue(name="q1", deserved={"cpu": 4000}),
        Queue(name="shut", state=QueueState.CLOSED),
    ],
    podgroups=[PodGroup(namespace="ns", name="pg-in-q1", queue="q1")],
    scheduling_gates=True,
)


def sample_headers(name: str) -> tuple[str, dict[str, str]]:
    """The request line target and the headers kube-apiserver sent (Host and Content-Length excluded)."""
    first, *rest = (SAMPLES / name).read_text().splitlines()
    target = first.split()[1]
    headers = dict(line.split(": ", 1) for line in rest if line)
    return target, {k: v for k, v in headers.items() if k not in ("Host", "Content-Length")}


def shape(doc: object) -> object:
    """Keys and nesting of a JSON document, values dropped."""
    if isinstance(doc, dict):
        return {k: shape(v) for k, v in doc.items()}
    return type(doc).__name__


def envelope(
    operation: str,
    *,
    resource: str,
    obj: Raw | None,
    old: Raw | None = None,
    uid: str = "0d8f7c1e-5b1a-4a53-9d55-3a3f1f6a9e01",
) -> Raw:
    """An AdmissionReview the way kube-apiserver builds one (cf. the wire samples) for a Volcano resource."""
    kinds = {"queues": "Queue", "podgroups": "PodGroup"}
    gvk = {"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": kinds[resource]}
    gvr = {"group": "scheduling.volcano.sh", "version": "v1beta1", "resource": resource}
    meta = (obj or old or {}).get("metadata", {})
    request: Raw = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": meta.get("name", ""),
        "operation": operation,
        "userInfo": {"username": "kube-admin", "groups": ["system:masters", "system:authenticated"]},
        "object": obj,
        "oldObject": old,
        "dryRun": False,
        "options": {"kind": f"{operation.title()}Options", "apiVersion": "meta.k8s.io/v1"},
    }
    if meta.get("namespace"):
        request["namespace"] = meta["namespace"]
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


def queue(name: str, **spec: Any) -> Raw:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def podgroup(name: str, **spec: Any) -> Raw:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }


@pytest.fixture
async def client(aiohttp_client: Callable[..., Any]) -> Client:
    c: Client = await aiohttp_client(make_admission_app(lambda: CLUSTER))
    return c


async def post(client: Client, path: str, doc: Raw | bytes, status: int = 200) -> Any:
    data = doc if isinstance(doc, bytes) else orjson.dumps(doc)
    resp = await client.post(path, data=data, headers={"Content-Type": "application/json"})
    assert resp.status == status, await resp.text()
    if status != 200:
        return await resp.text()
    assert resp.content_type == "application/json"
    return orjson.loads(await resp.read())


def decoded_patch(review: Raw) -> list[Raw]:
    ops: list[Raw] = orjson.loads(base64.b64decode(review["response"]["patch"]))
    return ops


# ----------------------------------------------------------------------------------------------------------
# Captured requests


async def test_captured_pod_of_another_scheduler_is_allowed(client: Client) -> None:
    req = sample("admission-validating-pod-create-request.json")
    target, headers = sample_headers("admission-validating-pod-create-request.headers.txt")
    assert target == "/validate?timeout=5s"
    resp = await client.post("/pods/validate?timeout=5s", data=orjson.dumps(req), headers=headers)
    assert resp.status == 200
    got = orjson.loads(await resp.read())
    assert got == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": req["request"]["uid"], "allowed": True},
    }
    accepted = sample("admission-validating-allow-response.json")
    accepted["response"].pop("warnings")
    assert shape(got) == shape(accepted)


async def test_captured_pod_denied_by_the_throwaway_webhook_is_ours_to_allow(client: Client) -> None:
    req = sample("admission-validating-pod-create-request-denied.json")
    got = await post(client, "/pods/validate", req)
    assert got["response"] == {"uid": req["request"]["uid"], "allowed": True}


async def test_captured_mutating_request_of_another_scheduler_gets_no_patch(client: Client) -> None:
    req = sample("admission-mutating-pod-create-request.json")
    got = await post(client, "/pods/mutate", req)
    assert got["response"] == {"uid": "bfbcb7c8-6928-49c1-b8e7-cfe8fa08b211", "allowed": True}


async def test_gang_pod_gets_the_gate_as_a_jsonpatch(client: Client) -> None:
    req = sample("admission-mutating-pod-create-request.json")
    pod = req["request"]["object"]
    pod["spec"]["schedulerName"] = "volcano"
    pod["metadata"]["annotations"] = {"scheduling.k8s.io/group-name": "pg-in-q1"}
    got = await post(client, "/pods/mutate", req)
    assert shape(got) == shape(sample("admission-mutating-jsonpatch-response.json"))
    assert got["response"]["uid"] == req["request"]["uid"]
    assert got["response"]["patchType"] == "JSONPatch"
    ops = decoded_patch(got)
    assert ops == [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "pumice.dev/gang"}]}]
    assert apply_patch(pod, ops)["spec"]["schedulingGates"] == [{"name": "pumice.dev/gang"}]


async def test_gang_pod_with_other_gates_keeps_them(client: Client) -> None:
    req = sample("admission-mutating-pod-create-request.json")
    pod = req["request"]["object"]
    pod["spec"].update(schedulerName="volcano", schedulingGates=[{"name": "example.com/quota"}])
    pod["metadata"]["annotations"] = {"scheduling.volcano.sh/group-name": "pg-in-q1"}
    got = await post(client, "/pods/mutate", req)
    patched = apply_patch(pod, decoded_patch(got))
    assert patched["spec"]["schedulingGates"] == [{"name": "example.com/quota"}, {"name": "pumice.dev/gang"}]


async def test_our_pod_with_a_bad_budget_is_denied_like_the_captured_denial(client: Client) -> None:
    req = sample("admission-validating-pod-create-request.json")
    pod = req["request"]["object"]
    pod["spec"]["schedulerName"] = "volcano"
    pod["metadata"]["annotations"] = {"volcano.sh/jdb-min-available": "0"}
    got = await post(client, "/pods/validate", req)
    assert shape(got) == shape(sample("admission-validating-deny-response.json"))
    assert got["response"] == {
        "uid": req["request"]["uid"],
        "allowed": False,
        "status": {
            "code": 400,
            "message": "metadata.annotations[volcano.sh/jdb-min-available]: must be a positive "
            "integer, got '0'",
        },
    }


# ----------------------------------------------------------------------------------------------------------
# Queues and PodGroups


async def test_queue_create_is_defaulted_then_validated(client: Client) -> None:
    new = queue("q2", capability={"cpu": "8"}, deserved={"cpu": "4"})
    got = await post(client, "/queues/mutate", envelope("CREATE", resource="queues", obj=new))
    ops = decoded_patch(got)
    assert ops == [
        {"op": "add", "path": "/spec/reclaimable", "value": True},
        {"op": "add", "path": "/spec/weight", "value": 1},
    ]
    defaulted = apply_patch(new, ops)
    got = await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=defaulted))
    assert got["response"] == {"uid": "0d8f7c1e-5b1a-4a53-9d55-3a3f1f6a9e01", "allowed": True}


async def test_queue_create_denied_names_every_field(client: Client) -> None:
    bad = queue("q2", weight=-1, capability={"cpu": "2"}, deserved={"cpu": "3"})
    got = await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=bad))
    assert got["response"]["allowed"] is False
    assert got["response"]["status"] == {
        "code": 400,
        "message": "spec.weight: must be an integer from 1 to 65535, got -1; "
        "spec.deserved[cpu]: 3 is above spec.capability[cpu] 2; deserved must be at most the capability",
    }


async def test_queue_update(client: Client) -> None:
    old = queue("q1", weight=1, deserved={"cpu": "4"})
    ok = envelope("UPDATE", resource="queues", obj=queue("q1", weight=3, deserved={"cpu": "4"}), old=old)
    assert (await post(client, "/queues/validate", ok))["response"]["allowed"] is True
    loop = envelope("UPDATE", resource="queues", obj=queue("q1", weight=1, parent="q1"), old=old)
    got = await post(client, "/queues/validate", loop)
    assert got["response"]["status"]["message"] == "spec.parent: queue 'q1' cannot be its own parent"


@pytest.mark.parametrize(
    ("name", "allowed", "message"),
    [
        ("root", False, "metadata.name: the root queue cannot be deleted"),
        ("default", False, "metadata.name: the default queue 'default' cannot be deleted"),
        (
            "q1",
            False,
            "metadata.name: queue 'q1' still has PodGroups; delete them (or the jobs that own them) first",
        ),
        ("shut", True, None),
    ],
)
async def test_queue_delete(client: Client, name: str, allowed: bool, message: str | None) -> None:
    got = await post(
        client, "/queues/validate", envelope("DELETE", resource="queues", obj=None, old=queue(name))
    )
    assert got["response"]["allowed"] is allowed
    if message is not None:
        assert got["response"]["status"] == {"code": 403, "message": message}


async def test_podgroup_gets_the_default_queue(client: Client) -> None:
    got = await post(
        client, "/podgroups/mutate", envelope("CREATE", resource="podgroups", obj=podgroup("pg", minMember=2))
    )
    assert decoded_patch(got) == [{"op": "add", "path": "/spec/queue", "value": "default"}]


@pytest.mark.parametrize(
    ("queue_name", "message"),
    [
        ("q1", None),
        ("shut", "spec.queue: queue 'shut' is Closed; PodGroups can only be submitted to an Open queue"),
        ("gone", "spec.queue: queue 'gone' does not exist; create it or choose another queue"),
    ],
)
async def test_podgroup_create(client: Client, queue_name: str, message: str | None) -> None:
    doc = envelope("CREATE", resource="podgroups", obj=podgroup("pg", minMember=2, queue=queue_name))
    got = await post(client, "/podgroups/validate", doc)
    assert got["response"]["allowed"] is (message is None)
    if message is not None:
        assert got["response"]["status"] == {"code": 400, "message": message}


# ----------------------------------------------------------------------------------------------------------
# HTTP edge


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "malformed AdmissionReview: body is not JSON"),
        (
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1", "request": {"uid": "u"}}',
            "malformed AdmissionReview: apiVersion must be admission.k8s.io/v1, got "
            "'admission.k8s.io/v1beta1'",
        ),
        (
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": '
            b'{"operation": "CREATE"}}',
            "malformed AdmissionReview: request.uid is required",
        ),
        (
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1"}',
            "malformed AdmissionReview: AdmissionReview has no request",
        ),
    ],
)
async def test_malformed_body_is_400_with_a_reason(client: Client, body: bytes, reason: str) -> None:
    text = await post(client, "/queues/validate", body, status=400)
    assert text.startswith(reason)
    assert client.app[METRICS_KEY].malformed["/queues/validate"] == 1


async def test_oversized_body_is_413(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "MAX_BODY", 1024)
    text = await post(client, "/pods/validate", b" " * 2048, status=413)
    assert "larger than 1024 bytes" in text


async def test_unsynced_cache_is_503(aiohttp_client: Callable[..., Any]) -> None:
    def unavailable() -> Lookup:
        raise LookupUnavailable("queues not listed yet")

    c: Client = await aiohttp_client(make_admission_app(unavailable))
    doc = envelope("CREATE", resource="queues", obj=queue("q2"))
    assert (
        await post(c, "/queues/validate", doc, status=503)
        == "pumice cannot answer yet: queues not listed yet"
    )


async def test_a_failing_rule_is_500_so_the_failure_policy_applies(
    client: Client, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(server, "admit", broken)
    doc = envelope("CREATE", resource="queues", obj=queue("q2"))
    assert (
        await post(client, "/queues/validate", doc, status=500)
        == "pumice admission failed; see the pumice log"
    )
    assert client.app[METRICS_KEY].failed["/queues/validate"] == 1
    assert "admission rule failed" in caplog.text


async def test_only_served_paths_are_mounted(client: Client) -> None:
    for path in ("/commands/mutate", "/validate"):
        assert (await client.post(path, data=b"{}")).status == 404
    assert (await client.get("/queues/validate")).status == 405


async def test_metrics_count_per_path(client: Client) -> None:
    await post(client, "/queues/mutate", envelope("CREATE", resource="queues", obj=queue("q2")))
    await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=queue("q2", weight=0)))
    await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=queue("q3", weight=2)))
    metrics = client.app[METRICS_KEY]
    assert metrics.requests == {"/queues/mutate": 1, "/queues/validate": 2}
    assert metrics.patched == {"/queues/mutate": 1}
    assert metrics.denied == {"/queues/validate": 1}


# ----------------------------------------------------------------------------------------------------------
# Hardening: bad input is a 400 (envelope) or a denial naming the field (object), never a 5xx


async def test_podgroup_update_to_cpu_1e400_is_denied(client: Client) -> None:
    """``kubectl patch podgroup pg -p '{"spec":{"minResources":{"cpu":"1e400"}}}'`` used to pass (UPDATE was
    not registered) and then crash the scheduler."""
    old = podgroup("pg", minMember=2, queue="q1", minResources={"cpu": "2"})
    new = podgroup("pg", minMember=2, queue="q1", minResources={"cpu": "1e400"})
    got = await post(
        client, "/podgroups/validate", envelope("UPDATE", resource="podgroups", obj=new, old=old)
    )
    assert got["response"] == {
        "uid": "0d8f7c1e-5b1a-4a53-9d55-3a3f1f6a9e01",
        "allowed": False,
        "status": {
            "code": 400,
            "message": "spec.minResources[cpu]: 1e400 is out of range; pumice accepts at most "
            "4611686018427387904m",
        },
    }


def _with_request(**fields: Any) -> bytes:
    doc = envelope("CREATE", resource="queues", obj=queue("q2"))
    doc["request"].update(fields)
    return orjson.dumps(doc)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_with_request(kind=[]), "malformed AdmissionReview: request.kind must be an object, got a list"),
        (_with_request(object="x"), "malformed AdmissionReview: request.object must be an object or null"),
        (
            _with_request(resource={"resource": 1}),
            "malformed AdmissionReview: request.resource.resource must be",
        ),
        (_with_request(uid=True), "malformed AdmissionReview: request.uid must be a string, got a boolean"),
        (_with_request(dryRun="false"), "malformed AdmissionReview: request.dryRun must be true or false"),
        (_with_request(userInfo=[]), "malformed AdmissionReview: request.userInfo must be an object"),
        (
            _with_request(operation="UPDATE"),
            "malformed AdmissionReview: request.oldObject is required for UPDATE",
        ),
        (
            b'{"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": []}',
            "malformed AdmissionReview: AdmissionReview has no request",
        ),
    ],
)
async def test_a_wrongly_typed_envelope_is_400(client: Client, body: bytes, reason: str) -> None:
    text = await post(client, "/queues/validate", body, status=400)
    assert text.startswith(reason)


@pytest.mark.parametrize(
    ("path", "resource", "obj", "message"),
    [
        ("/queues/validate", "queues", {"metadata": {"name": "q2"}, "spec": "x"}, "spec: must be an object"),
        (
            "/queues/validate",
            "queues",
            queue("q2", capability=[1]),
            "spec.capability: must be a map of resource name to quantity",
        ),
        (
            "/queues/validate",
            "queues",
            queue("q2", weight=True),
            "spec.weight: must be an integer from 1 to 65535, got True",
        ),
        (
            "/podgroups/validate",
            "podgroups",
            {"metadata": {"name": "pg", "namespace": "ns"}, "spec": ["x"]},
            "spec: must be an object",
        ),
        (
            "/podgroups/validate",
            "podgroups",
            podgroup("pg", queue="q1", minMember=None, minTaskMember=[]),
            "spec.minTaskMember: must be a map of task name to count",
        ),
    ],
)
async def test_a_wrongly_typed_object_is_a_denial(
    client: Client, path: str, resource: str, obj: Raw, message: str
) -> None:
    for op, old in (("CREATE", None), ("UPDATE", obj)):
        got = await post(client, path, envelope(op, resource=resource, obj=obj, old=old))
        assert got["response"]["allowed"] is False, op
        assert got["response"]["status"]["message"] == message


async def test_an_object_nested_100000_deep_is_a_denial(client: Client) -> None:
    doc = envelope("CREATE", resource="queues", obj=queue("q2", capability={"cpu": "X"}))
    deep = b"[" * 100_000 + b"]" * 100_000
    body = orjson.dumps(doc).replace(b'"X"', deep)
    got = await post(client, "/queues/validate", body)
    assert got["response"]["allowed"] is False
    message = got["response"]["status"]["message"]
    assert message.startswith("spec.capability[cpu][0][0][0]")
    assert message.endswith(
        "nested more than 64 levels deep, the most pumice accepts (Kubernetes objects nest about 20); "
        "flatten this value"
    )


async def test_a_large_body_is_decoded_off_the_event_loop(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    original = asyncio.to_thread

    async def spy(func: Callable[..., Any], /, *args: Any) -> Any:
        calls.append(func.__name__)
        return await original(func, *args)

    monkeypatch.setattr(asyncio, "to_thread", spy)  # the module admission.server calls it on
    small = queue("q2")
    await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=small))
    assert calls == []
    big = queue("q2")
    big["metadata"]["annotations"] = {"note": "x" * (server.THREAD_DECODE + 1)}
    got = await post(client, "/queues/validate", envelope("CREATE", resource="queues", obj=big))
    assert got["response"]["allowed"] is True
    assert calls == ["decode_review"]


async def test_an_object_beyond_the_size_limit_is_a_denial(aiohttp_client: Callable[..., Any]) -> None:
    c: Client = await aiohttp_client(make_admission_app(lambda: CLUSTER, Limits(max_object_bytes=1000)))
    big = queue("q2")
    big["metadata"]["annotations"] = {"note": "x" * 2000}
    got = await post(c, "/queues/validate", envelope("CREATE", resource="queues", obj=big))
    assert got["response"]["status"]["message"] == (
        "object: 2122 bytes as JSON, more than the 1000 bytes pumice accepts (etcd's default request limit); "
        "the largest part is metadata (2039 bytes)"
    )
