"""Malformed and adversarial AdmissionReview bodies at every served webhook path, over HTTP.

About 5 000 requests in all (:data:`EXAMPLES` per path), derandomized so CI sees the same ones every run.
Bodies are mostly valid reviews of the path's kind with a few values replaced anywhere in them (the
envelope or the objects: wrong types, huge or edge numbers, bad quantities, values nested a thousand deep),
and some arbitrary JSON and arbitrary bytes. Whatever arrives, the server must answer:

- never a 5xx (a 500 would hand the decision to the webhook's failurePolicy, and is a bug);
- 400 with a reason only for a body that is not a well-formed v1 AdmissionReview;
- otherwise 200 with a valid AdmissionReview v1 that echoes ``request.uid``; a denial carries a
  ``status.message``; a patch is base64 JSONPatch.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from admission.lookup import StaticLookup
from admission.server import make_admission_app
from admission.webhooks import Webhook, served_webhooks
from extender.core.model import PodGroup, Queue, QueueState
from tests.fuzz.strategies import OBJECTS, Raw, deep_json, json_values, mutated

Client = TestClient[Any, Any]

CLUSTER = StaticLookup(
    queues=[
        Queue(name="root"),
        Queue(name="default"),
        Queue(name="q1", deserved={"cpu": 4000}),
        Queue(name="q2", parent="q1"),
        Queue(name="shut", state=QueueState.CLOSED),
    ],
    podgroups=[PodGroup(namespace="ns", name="pg", queue="q1")],
    scheduling_gates=True,
)
WEBHOOKS = {w.path: w for w in served_webhooks()}
EXAMPLES = 420  # per path: 12 paths, about 5 000 requests
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")


def _review(w: Webhook, uid: str, operation: str, obj: Raw, sub: str) -> Raw:
    # The stored object starts equal to the new one (an update changing nothing); mutations tell them apart.
    old = copy.deepcopy(obj)
    gvk = {"group": w.group, "version": w.version, "kind": str(obj.get("kind", ""))}
    gvr = {"group": w.group, "version": w.version, "resource": w.resource}
    request: Raw = {
        "uid": uid,
        "kind": gvk,
        "resource": gvr,
        "requestKind": gvk,
        "requestResource": gvr,
        "name": obj["metadata"].get("name", ""),
        "namespace": obj["metadata"].get("namespace", ""),
        "operation": operation,
        "userInfo": {"username": "kube-admin", "groups": ["system:masters"]},
        "object": None if operation == "DELETE" else obj,
        "oldObject": old if operation in ("UPDATE", "DELETE") else None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    }
    if sub:
        request["subResource"] = sub
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


@cache
def reviews(w: Webhook) -> st.SearchStrategy[Raw]:
    obj = OBJECTS[w.resource]()
    # Mostly the row's own operations, so the rules run; sometimes any other.
    operation = st.one_of(
        st.sampled_from(w.operations), st.sampled_from(w.operations), st.sampled_from(OPERATIONS)
    )
    review = st.builds(
        _review,
        st.just(w),
        st.sampled_from(("0d8f7c1e-5b1a-4a53-9d55-3a3f1f6a9e01", "u")),
        operation,
        obj,
        st.sampled_from(("", "", "", "", "status")),
    )
    return mutated(review, max_mutations=3, values=json_values(max_deep=1500, deep_marker=True))


ANY_JSON = json_values(deep_marker=True)


@st.composite
def bodies(draw: st.DrawFn, w: Webhook) -> tuple[bytes, object]:
    """(the body sent, the document it encodes, or None for bytes that are not JSON): eight in ten a review
    of the path's kind, the rest arbitrary JSON and arbitrary bytes."""
    pick = draw(st.integers(min_value=0, max_value=9))
    if pick == 9:
        return draw(st.binary(max_size=64)), None
    doc = draw(reviews(w) if pick < 8 else ANY_JSON)
    return deep_json(orjson.dumps(doc)), doc


def sent_uid(doc: object) -> object:
    request = doc.get("request") if isinstance(doc, dict) else None
    return request.get("uid") if isinstance(request, dict) else None


@pytest.fixture
async def client(aiohttp_client: Callable[..., Any]) -> Client:
    c: Client = await aiohttp_client(make_admission_app(lambda: CLUSTER))
    return c


@pytest.mark.parametrize("path", sorted(WEBHOOKS))
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
async def test_any_body_gets_a_wire_correct_answer(client: Client, path: str, data: st.DataObject) -> None:
    body, doc = data.draw(bodies(WEBHOOKS[path]))
    resp = await client.post(path, data=body, headers={"Content-Type": "application/json"})
    assert resp.status in (200, 400), (resp.status, await resp.text())
    if resp.status == 400:
        assert (await resp.text()).startswith("malformed AdmissionReview: ")
        event("400")
        return
    assert resp.content_type == "application/json"
    review = orjson.loads(await resp.read())
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    response = review["response"]
    uid = sent_uid(doc)
    assert isinstance(uid, str) and uid
    assert response["uid"] == uid
    assert isinstance(response["allowed"], bool)
    assert set(response) <= {"uid", "allowed", "status", "patchType", "patch", "warnings"}
    event("denied" if not response["allowed"] else "patched" if "patch" in response else "allowed")
    if not response["allowed"]:
        status = response["status"]
        assert isinstance(status["code"], int) and 400 <= status["code"] < 500
        assert isinstance(status["message"], str) and status["message"]
        assert "patch" not in response
    elif "patch" in response:
        assert response["patchType"] == "JSONPatch"
        ops = orjson.loads(base64.b64decode(response["patch"], validate=True))
        assert isinstance(ops, list) and ops
        assert all(op["op"] in ("add", "replace", "remove") and op["path"].startswith("/") for op in ops)
