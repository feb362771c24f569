"""AdmissionReview decoding (what is malformed) and response building (exact shapes)."""

from __future__ import annotations

import base64
import time
from typing import Any

import orjson
import pytest

from admission.review import (
    DECODE_DEPTH,
    MalformedReview,
    allow,
    clamp_depth,
    decode_review,
    deny,
    encode,
    patch,
)
from extender.core.validation import FieldError


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
    (
        "update without oldObject",
        body(review(operation="UPDATE")),
        "request.oldObject is required for UPDATE",
    ),
    ("object a string", body(review(object="x")), "request.object must be an object or null, got a string"),
    ("request a list", body({**review(), "request": []}), "AdmissionReview has no request"),
    ("uid a number", body(review(uid=5)), "request.uid must be a string, got a number"),
    (
        "operation a list",
        body(review(operation=["CREATE"])),
        "request.operation must be a string, got a list",
    ),
    (
        "unknown operation",
        body(review(operation="PATCH")),
        "request.operation must be one of CREATE, UPDATE, DELETE, CONNECT, got 'PATCH'",
    ),
    ("kind a list", body(review(kind=[])), "request.kind must be an object, got a list"),
    (
        "kind.kind a number",
        body(review(kind={"kind": 1})),
        "request.kind.kind must be a string, got a number",
    ),
    (
        "resource a string",
        body(review(resource="queues")),
        "request.resource must be an object, got a string",
    ),
    (
        "resource.group a boolean",
        body(review(resource={"group": True})),
        "request.resource.group must be a string, got a boolean",
    ),
    (
        "requestKind a list",
        body(review(requestKind=[1])),
        "request.requestKind must be an object, got a list",
    ),
    ("namespace an object", body(review(namespace={})), "request.namespace must be a string, got an object"),
    ("name a number", body(review(name=1.5)), "request.name must be a string, got a number"),
    ("subResource a list", body(review(subResource=[])), "request.subResource must be a string, got a list"),
    ("dryRun a string", body(review(dryRun="yes")), "request.dryRun must be true or false, got a string"),
    ("userInfo a list", body(review(userInfo=[])), "request.userInfo must be an object, got a list"),
    (
        "userInfo.username a number",
        body(review(userInfo={"username": 7})),
        "request.userInfo.username must be a string, got a number",
    ),
    ("options a string", body(review(options="x")), "request.options must be an object, got a string"),
    (
        "kind a huge list",
        body({**review(), "kind": list(range(10_000))}),
        "kind must be AdmissionReview, got a list",
    ),
    ("a body that is a number", b"1", "body is not a JSON object, got a number"),
    ("a number out of range", b'{"kind": 1e400}', "body is not JSON: "),
    ("NaN", b'{"kind": NaN}', "body is not JSON: "),
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


def test_nulls_in_the_envelope_read_as_absent() -> None:
    req = decode_review(body(review(kind=None, resource=None, namespace=None, dryRun=None, userInfo=None)))
    assert (req.kind, req.group, req.resource, req.namespace, req.dry_run) == ("", "", "", "", False)


def test_a_wrongly_typed_object_is_not_a_malformed_review() -> None:
    """The object is the rules' business: they deny naming the field; only the envelope is checked here."""
    req = decode_review(body(review(object={"spec": "x", "metadata": []})))
    assert req.object == {"spec": "x", "metadata": []}


def test_a_review_nested_beyond_orjson_is_cut_not_refused() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    raw = body(review(object={"spec": {"x": 0}})).replace(b'{"x":0}', b'{"x":' + deep + b"}")
    req = decode_review(raw)
    assert req.uid == "u1"
    # Cut to null at DECODE_DEPTH levels from the top of the body: still far deeper than any limit.
    node: Any = req.object
    assert node is not None
    depth = 0
    node = node["spec"]["x"]
    while isinstance(node, list):
        node, depth = node[0] if node else None, depth + 1
    assert node is None
    assert depth == DECODE_DEPTH - 4


@pytest.mark.parametrize(
    ("raw", "depth", "want", "cut"),
    [
        (b"[1]", 1, b"[1]", False),
        (b"[[1],[2]]", 1, b"[null,null]", True),
        (b'{"a":{"b":[]},"c":"[[["}', 2, b'{"a":{"b":null},"c":"[[["}', True),
        (rb'{"a":"\\","b":[[{}]]}', 2, rb'{"a":"\\","b":[null]}', True),
        (rb'["\"[",[[]]]', 2, rb'["\"[",[null]]', True),
    ],
)
def test_clamp_depth(raw: bytes, depth: int, want: bytes, cut: bool) -> None:
    orjson.loads(raw)
    assert clamp_depth(raw, depth) == (want, cut)
    orjson.loads(want)


def test_clamping_a_hostile_body_stays_linear() -> None:
    """An unterminated string of escaped quotes must not make the scan quadratic."""
    hostile = b'["' + b'\\"' * 500_000
    start = time.monotonic()
    assert clamp_depth(hostile, DECODE_DEPTH) == (hostile, False)
    assert time.monotonic() - start < 2
    with pytest.raises(MalformedReview, match=r"^body is not JSON: "):
        decode_review(b"[" * 2000 + hostile)


def test_deny_lists_fifty_problems_then_counts_the_rest() -> None:
    errors = [FieldError(field=f"f{i}", message="bad") for i in range(60)]
    message = deny("u", errors)["response"]["status"]["message"]
    assert message.startswith("f0: bad; f1: bad")
    assert message.endswith("f49: bad; ... and 10 more problems")


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
