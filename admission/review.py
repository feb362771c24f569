"""``admission.k8s.io/v1`` AdmissionReview bodies: decode a request, build a response.

Only v1 is spoken (kube-apiserver >= 1.16 sends it when a webhook lists only ``v1`` in
``admissionReviewVersions``). A body that is not a v1 AdmissionReview with a ``request.uid``, or whose
envelope has a field of the wrong type, raises :class:`MalformedReview`, which the server turns into an
HTTP 400; everything else is answered with a
response that echoes ``request.uid``: allowed, denied with ``status.code`` and a message naming each field
at fault, or allowed with a base64 JSONPatch. Response shapes follow the captures in
``tests/contract/wire_samples``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, NotRequired, TypedDict

import orjson

from admission.base import PatchOp
from extender.core.validation import FieldError, Obj, shown

API_VERSION: Final = "admission.k8s.io/v1"
KIND: Final = "AdmissionReview"


class MalformedReview(ValueError):
    """The body is not an AdmissionReview this server can answer; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the webhooks use."""

    uid: str
    operation: str
    group: str
    version: str
    resource: str
    sub_resource: str
    kind: str
    namespace: str
    name: str
    object: Obj | None
    old_object: Obj | None
    dry_run: bool


class Status(TypedDict):
    code: int
    message: str


class AdmissionResponse(TypedDict):
    uid: str
    allowed: bool
    status: NotRequired[Status]
    patchType: NotRequired[Literal["JSONPatch"]]
    patch: NotRequired[str]
    warnings: NotRequired[list[str]]


class AdmissionReview(TypedDict):
    apiVersion: str
    kind: str
    response: AdmissionResponse


OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
# orjson decodes at most 1024 levels. A deeper body is cut to this depth before decoding (the parts below
# become null): the object is then denied for its depth, naming the field, rather than the whole review
# refused as if it were not JSON.
DECODE_DEPTH: Final = 512
# A bracket or the quote opening a string; and the rest of a string after its opening quote. Possessive,
# so that scanning is linear even in a hostile body (a backslash can only be read one way).
_STRUCTURE: Final = re.compile(rb'[\[\]{}"]')
_STRING_REST: Final = re.compile(rb'(?s)(?:[^"\\]++|\\.)*+"')


def _what(v: object) -> str:
    """The JSON type of ``v``, for a reason."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int | float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    return "an object" if isinstance(v, dict) else "null"


def _str(obj: Mapping[str, object], key: str, where: str) -> str:
    """An optional string field of the envelope: ``""`` when absent or null."""
    v = obj.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise MalformedReview(f"{where}.{key} must be a string, got {_what(v)}")
    return v


def _map(
    obj: Mapping[str, object], key: str, where: str, fields: tuple[str, ...] = ()
) -> Mapping[str, object]:
    """An optional object field of the envelope, with ``fields`` that must be strings when set."""
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise MalformedReview(f"{where}.{key} must be an object, got {_what(v)}")
    for f in fields:
        _str(v, f, f"{where}.{key}")
    return v


def _object(request: Mapping[str, object], key: str) -> Obj | None:
    v = request.get(key)
    if v is None or isinstance(v, dict):
        return v
    raise MalformedReview(f"request.{key} must be an object or null, got {_what(v)}")


def clamp_depth(body: bytes, depth: int) -> tuple[bytes, bool]:
    """``body`` with every value nested deeper than ``depth`` replaced by ``null``, and whether anything
    was; the nesting is followed bracket by bracket (strings skipped whole), never recursively. A body
    with an unterminated string is returned as it is: it is not JSON whatever its depth."""
    out = bytearray()
    pos, level, cut_from, i = 0, 0, -1, 0
    while (m := _STRUCTURE.search(body, i)) is not None:
        char = body[m.start()]
        if char == 0x22:  # '"': brackets inside a string do not nest
            rest = _STRING_REST.match(body, m.end())
            if rest is None:
                return body, False
            i = rest.end()
            continue
        i = m.end()
        if char in b"[{":
            level += 1
            if level == depth + 1 and cut_from < 0:
                cut_from = m.start()
        else:
            if level == depth + 1 and cut_from >= 0:
                out += body[pos:cut_from] + b"null"
                pos, cut_from = m.end(), -1
            level -= 1
    if not out:
        return body, False
    out += body[pos:]
    return bytes(out), True


def _loads(body: bytes) -> object:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        error = e
    # Only a body with that many brackets can be too deep; anything else is simply not JSON.
    clamped, cut = (body, False)
    if body.count(b"[") + body.count(b"{") > DECODE_DEPTH:
        clamped, cut = clamp_depth(body, DECODE_DEPTH)
    if cut:
        try:
            return orjson.loads(clamped)
        except orjson.JSONDecodeError:
            pass
    raise MalformedReview(f"body is not JSON: {error}") from None


def decode_review(body: bytes) -> AdmissionRequest:
    """The request of an AdmissionReview body; raises :class:`MalformedReview` on anything else.

    The envelope is checked strictly (a field of the wrong type is a malformed review: kube-apiserver never
    sends one), the objects in it not at all: they are the rules' business, and a wrongly typed object
    gets a denial naming its field."""
    doc = _loads(body)
    if not isinstance(doc, dict):
        raise MalformedReview(f"body is not a JSON object, got {_what(doc)}")
    if doc.get("kind") != KIND:
        raise MalformedReview(f"kind must be {KIND}, got {shown(doc.get('kind'))}")
    if doc.get("apiVersion") != API_VERSION:
        raise MalformedReview(f"apiVersion must be {API_VERSION}, got {shown(doc.get('apiVersion'))}")
    request = doc.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("AdmissionReview has no request")
    uid = request.get("uid")
    if uid is None or uid == "":
        raise MalformedReview("request.uid is required")
    if not isinstance(uid, str):
        raise MalformedReview(f"request.uid must be a string, got {_what(uid)}")
    operation = _str(request, "operation", "request")
    if not operation:
        raise MalformedReview("request.operation is required")
    if operation not in OPERATIONS:
        raise MalformedReview(
            f"request.operation must be one of {', '.join(OPERATIONS)}, got {shown(operation)}"
        )
    gvk = ("group", "version", "kind")
    gvr = ("group", "version", "resource")
    kind = _map(request, "kind", "request", gvk)
    _map(request, "requestKind", "request", gvk)
    resource = _map(request, "resource", "request", gvr)
    _map(request, "requestResource", "request", gvr)
    _map(request, "userInfo", "request", ("username", "uid"))
    _map(request, "options", "request")
    _str(request, "requestSubResource", "request")
    dry_run = request.get("dryRun")
    if dry_run is not None and not isinstance(dry_run, bool):
        raise MalformedReview(f"request.dryRun must be true or false, got {_what(dry_run)}")
    obj, old = _object(request, "object"), _object(request, "oldObject")
    if obj is None and operation in ("CREATE", "UPDATE"):
        raise MalformedReview(f"request.object is required for {operation}")
    if old is None and operation == "UPDATE":
        raise MalformedReview("request.oldObject is required for UPDATE")
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        group=_str(resource, "group", "request.resource"),
        version=_str(resource, "version", "request.resource"),
        resource=_str(resource, "resource", "request.resource"),
        sub_resource=_str(request, "subResource", "request"),
        kind=_str(kind, "kind", "request.kind"),
        namespace=_str(request, "namespace", "request"),
        name=_str(request, "name", "request"),
        object=obj,
        old_object=old,
        dry_run=dry_run is True,
    )


def _review(response: AdmissionResponse) -> AdmissionReview:
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def allow(uid: str, warnings: Iterable[str] = ()) -> AdmissionReview:
    response: AdmissionResponse = {"uid": uid, "allowed": True}
    if w := list(warnings):
        response["warnings"] = w
    return _review(response)


# A denial lists the first this many problems, then how many more there are: it is shown as one line.
MAX_LISTED: Final = 50


def deny_message(errors: Iterable[FieldError]) -> str:
    """All field errors in one line: ``spec.weight: must be …; spec.deserved[cpu]: …``."""
    texts = [str(e) for e in errors]
    if len(texts) <= MAX_LISTED:
        return "; ".join(texts)
    return "; ".join(texts[:MAX_LISTED]) + f"; ... and {len(texts) - MAX_LISTED} more problems"


def deny(uid: str, errors: Iterable[FieldError], *, code: int = 400) -> AdmissionReview:
    return _review({"uid": uid, "allowed": False, "status": {"code": code, "message": deny_message(errors)}})


def patch(uid: str, ops: list[PatchOp]) -> AdmissionReview:
    """Allow with ``ops`` applied; a plain allow when there is nothing to change."""
    if not ops:
        return allow(uid)
    encoded = base64.b64encode(orjson.dumps(ops)).decode("ascii")
    return _review({"uid": uid, "allowed": True, "patchType": "JSONPatch", "patch": encoded})


def encode(review: AdmissionReview) -> bytes:
    return orjson.dumps(review)
