"""``admission.k8s.io/v1`` AdmissionReview bodies: decode a request, build a response.

Only v1 is spoken (kube-apiserver >= 1.16 sends it when a webhook lists only ``v1`` in
``admissionReviewVersions``). A body that is not a v1 AdmissionReview with a ``request.uid`` raises
:class:`MalformedReview`, which the server turns into an HTTP 400; everything else is answered with a
response that echoes ``request.uid``: allowed, denied with ``status.code`` and a message naming each field
at fault, or allowed with a base64 JSONPatch. Response shapes follow the captures in ``shared/wire-samples``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal, NotRequired, TypedDict

import orjson

from admission.base import FieldError, Obj, PatchOp

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


def _str(obj: Mapping[str, object], key: str) -> str:
    v = obj.get(key)
    return v if isinstance(v, str) else ""


def _object(request: Mapping[str, object], key: str) -> Obj | None:
    v = request.get(key)
    if v is None or isinstance(v, dict):
        return v
    raise MalformedReview(f"request.{key} must be an object or null")


def decode_review(body: bytes) -> AdmissionRequest:
    """The request of an AdmissionReview body; raises :class:`MalformedReview` on anything else."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise MalformedReview(f"body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise MalformedReview("body is not a JSON object")
    if doc.get("kind") != KIND:
        raise MalformedReview(f"kind must be {KIND}, got {doc.get('kind')!r}")
    if doc.get("apiVersion") != API_VERSION:
        raise MalformedReview(f"apiVersion must be {API_VERSION}, got {doc.get('apiVersion')!r}")
    request = doc.get("request")
    if not isinstance(request, dict):
        raise MalformedReview("AdmissionReview has no request")
    uid = _str(request, "uid")
    if not uid:
        raise MalformedReview("request.uid is required")
    operation = _str(request, "operation")
    if not operation:
        raise MalformedReview("request.operation is required")
    obj, old = _object(request, "object"), _object(request, "oldObject")
    if obj is None and operation in ("CREATE", "UPDATE"):
        raise MalformedReview(f"request.object is required for {operation}")
    resource = request.get("resource")
    resource = resource if isinstance(resource, dict) else {}
    kind = request.get("kind")
    kind = kind if isinstance(kind, dict) else {}
    return AdmissionRequest(
        uid=uid,
        operation=operation,
        group=_str(resource, "group"),
        version=_str(resource, "version"),
        resource=_str(resource, "resource"),
        sub_resource=_str(request, "subResource"),
        kind=_str(kind, "kind"),
        namespace=_str(request, "namespace"),
        name=_str(request, "name"),
        object=obj,
        old_object=old,
        dry_run=request.get("dryRun") is True,
    )


def _review(response: AdmissionResponse) -> AdmissionReview:
    return {"apiVersion": API_VERSION, "kind": KIND, "response": response}


def allow(uid: str, warnings: Iterable[str] = ()) -> AdmissionReview:
    response: AdmissionResponse = {"uid": uid, "allowed": True}
    if w := list(warnings):
        response["warnings"] = w
    return _review(response)


def deny_message(errors: Iterable[FieldError]) -> str:
    """All field errors in one line: ``spec.weight: must be …; spec.deserved[cpu]: …``."""
    return "; ".join(str(e) for e in errors)


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
