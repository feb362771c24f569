"""AdmissionReview decoding (what is malformed) and response building (exact shapes)."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from admission.base import FieldError
from admission.review import MalformedReview, allow, decode_review, deny, encode, patch


def review(**request: Any) -> dict[str, Any]:
    base = {"uid": "u1", "operation": "CREATE", "object": {"metadata": {"name": "x"}}}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {**base, **request}}


def body(doc: object) -> bytes:
    return orjson.dumps(doc)


MALFORMED: list[tuple[str, bytes, str]] = [
    ("not JSON", b"{nope", "body is not JSON: "),
    ("empty", b"", "body is not JSON: "),
    ("not an object", b"[1]", "body is not a JSON object"),
    ("no kind", body({"apiVersion": "admission.k8s.io/v1"}), "kind must be AdmissionReview, got None"),
    (
        "v1beta1",
        body({**review(), "apiVersion": "admission.k8s.io/v1beta1"}),
        "apiVersion must be admission.k8s.io/v1, got 'admission.k8s.io/v1beta1'",
    ),
    ("no request", body({**review(), "request": None}), "AdmissionReview has no request"),
    ("no uid", body(review(uid=None)), "request.uid is required"),
    ("empty uid", body(review(uid="")), "request.uid is required"),
    ("no operation", body(review(operation=None)), "request.operation is required"),
    ("object not an object", body(review(object=[1])), "request.object must be an object or null"),
    ("oldObject not an object", body(review(oldObject="x")), "request.oldObject must be an object or null"),
    ("create without object", body(review(object=None)), "request.object is required for CREATE"),
    (
        "update without object",
        body(review(operation="UPDATE", object=None)),
        "request.object is required for UPDATE",
    ),
]


@pytest.mark.parametrize(("raw", "reason"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed(raw: bytes, reason: str) -> None:
    with pytest.raises(MalformedReview) as info:
        decode_review(raw)
    assert str(info.value).startswith(reason)


def test_decode() -> None:
    req = decode_review(
        body(
            review(
                uid="abc",
                operation="UPDATE",
                resource={"group": "scheduling.volcano.sh", "version": "v1beta1", "resource": "queues"},
                kind={"group": "scheduling.volcano.sh", "version": "v1beta1", "kind": "Queue"},
                subResource="status",
                name="q1",
                namespace="",
                oldObject={"metadata": {"name": "q1"}},
                dryRun=True,
            )
        )
    )
    assert (req.uid, req.operation, req.group, req.version, req.resource, req.sub_resource) == (
        "abc",
        "UPDATE",
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "status",
    )
    assert (req.kind, req.name, req.namespace, req.dry_run) == ("Queue", "q1", "", True)
    assert req.object == {"metadata": {"name": "x"}}
    assert req.old_object == {"metadata": {"name": "q1"}}


def test_delete_needs_no_object() -> None:
    req = decode_review(body(review(operation="DELETE", object=None, name="q1")))
    assert req.object is None and req.name == "q1"


def test_allow_shape() -> None:
    assert allow("u") == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u", "allowed": True},
    }
    assert allow("u", ["careful"])["response"]["warnings"] == ["careful"]


def test_deny_joins_every_field_error() -> None:
    errors = [
        FieldError(field="spec.weight", message="too small"),
        FieldError(field="spec.parent", message="loop"),
    ]
    assert deny("u", errors, code=403) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u",
            "allowed": False,
            "status": {"code": 403, "message": "spec.weight: too small; spec.parent: loop"},
        },
    }


def test_patch_is_base64_jsonpatch() -> None:
    out = patch("u", [{"op": "add", "path": "/spec/weight", "value": 1}])
    response = out["response"]
    assert response["allowed"] is True
    assert response["patchType"] == "JSONPatch"
    assert orjson.loads(base64.b64decode(response["patch"])) == [
        {"op": "add", "path": "/spec/weight", "value": 1}
    ]


def test_empty_patch_is_a_plain_allow() -> None:
    assert patch("u", []) == allow("u")


def test_encode_round_trips() -> None:
    assert orjson.loads(encode(allow("u"))) == allow("u")
