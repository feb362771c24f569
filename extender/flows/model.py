"""JobFlow and JobTemplate as the pure core reads them (``flow.volcano.sh/v1alpha1``), and Volcano's keys.

A JobFlow is a list of entries (``spec.flows[]``); each names a JobTemplate in the flow's namespace, may
wait for other entries (``dependsOn.targets``, optionally with ``dependsOn.probe``) and may override parts
of the template's job spec (``patch.jobSpec``). The job made for an entry is named ``<flow>-<template>``,
carries Volcano's ``volcano.sh/createdByJobTemplate`` label and annotation (``<namespace>.<template>``)
and is controlled by the flow (a controller owner reference), as Volcano's jobflow controller makes it.

:func:`parse_jobflow` raises :class:`InvalidObject` naming the field, and nothing else, whatever the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.core.fields import list_field as _list
from extender.core.fields import list_item as _item
from extender.core.fields import object_field as _map

Obj = Mapping[str, Any]

FLOW_VERSION: Final = "v1alpha1"
FLOW_API_VERSION: Final = f"{L.FLOW_GROUP}/{FLOW_VERSION}"
JOBFLOW_KIND: Final = "JobFlow"
JOBTEMPLATE_KIND: Final = "JobTemplate"
JOB_API_VERSION: Final = f"{L.BATCH_GROUP}/{L.BATCH_VERSION}"
# Volcano's label and annotation on every job a flow created: "<namespace>.<template>".
CREATED_BY_TEMPLATE: Final = "volcano.sh/createdByJobTemplate"


class RetainPolicy(StrEnum):
    RETAIN = "retain"
    DELETE = "delete"


class FlowPhase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEED = "Succeed"
    TERMINATING = "Terminating"
    FAILED = "Failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpGet:
    task: str
    path: str
    port: int
    header: tuple[str, str] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TcpSocket:
    task: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskStatus:
    task: str
    phase: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    http: tuple[HttpGet, ...] = ()
    tcp: tuple[TcpSocket, ...] = ()
    task_status: tuple[TaskStatus, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.http or self.tcp or self.task_status)


@dataclass(frozen=True, slots=True, kw_only=True)
class FlowEntry:
    name: str  # the JobTemplate's name; also the entry's name in targets
    targets: tuple[str, ...] = ()
    probe: Probe = Probe()
    patch: Obj | None = None  # patch.jobSpec, raw


@dataclass(frozen=True, slots=True, kw_only=True)
class JobFlow:
    namespace: str
    name: str
    uid: str
    flows: tuple[FlowEntry, ...]
    retain: RetainPolicy = RetainPolicy.RETAIN
    deleting: bool = False
    status: Obj = field(default_factory=dict)  # raw, as stored

    def job_name(self, entry: str) -> str:
        return job_name(self.name, entry)


def job_name(flow: str, template: str) -> str:
    """Volcano's name for the job of one flow entry."""
    return f"{flow}-{template}"


def template_key(namespace: str, template: str) -> str:
    """The value of :data:`CREATED_BY_TEMPLATE` on a job made from ``template``."""
    return f"{namespace}.{template}"


def _str(obj: Obj, key: str, where: str, *, required: bool = False) -> str:
    v = obj.get(key)
    if v is None:
        if required:
            raise InvalidObject(f"{where}.{key}: required")
        return ""
    if not isinstance(v, str):
        raise InvalidObject(f"{where}.{key}: expected a string, got {type(v).__name__}")
    return v


def _port(obj: Obj, where: str) -> int:
    v = obj.get("port")
    if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= 65535:
        raise InvalidObject(f"{where}.port: expected a port number 1..65535")
    return v


def parse_probe(raw: Obj, where: str) -> Probe:
    http = []
    for i, h in enumerate(_list(raw, "httpGetList", where)):
        at = f"{where}.httpGetList[{i}]"
        item = _item(h, at)
        header = _map(item, "httpHeader", at)
        hdr = None
        if header:
            hdr = (_str(header, "name", f"{at}.httpHeader"), _str(header, "value", f"{at}.httpHeader"))
        path = _str(item, "path", at) or "/"
        http.append(HttpGet(task=_str(item, "taskName", at), path=path, port=_port(item, at), header=hdr))
    tcp = []
    for i, t in enumerate(_list(raw, "tcpSocketList", where)):
        at = f"{where}.tcpSocketList[{i}]"
        item = _item(t, at)
        tcp.append(TcpSocket(task=_str(item, "taskName", at), port=_port(item, at)))
    statuses = []
    for i, s in enumerate(_list(raw, "taskStatusList", where)):
        at = f"{where}.taskStatusList[{i}]"
        item = _item(s, at)
        statuses.append(
            TaskStatus(
                task=_str(item, "taskName", at, required=True), phase=_str(item, "phase", at, required=True)
            )
        )
    return Probe(http=tuple(http), tcp=tuple(tcp), task_status=tuple(statuses))


def parse_entry(raw: object, where: str) -> FlowEntry:
    item = _item(raw, where)
    name = _str(item, "name", where, required=True)
    if not name:
        raise InvalidObject(f"{where}.name: must not be empty")
    depends = _map(item, "dependsOn", where)
    targets = []
    for i, t in enumerate(_list(depends, "targets", f"{where}.dependsOn")):
        if not isinstance(t, str):
            raise InvalidObject(f"{where}.dependsOn.targets[{i}]: expected a string")
        targets.append(t)
    probe = parse_probe(_map(depends, "probe", f"{where}.dependsOn"), f"{where}.dependsOn.probe")
    patch = _map(item, "patch", where)
    job_spec = _map(patch, "jobSpec", f"{where}.patch") if patch else {}
    return FlowEntry(name=name, targets=tuple(targets), probe=probe, patch=job_spec or None)


def parse_jobflow(obj: Obj) -> JobFlow:
    if not isinstance(obj, Mapping):
        raise InvalidObject("JobFlow: expected an object")
    meta = _map(obj, "metadata", "metadata")
    spec = _map(obj, "spec", "spec")
    entries = tuple(parse_entry(f, f"spec.flows[{i}]") for i, f in enumerate(_list(spec, "flows", "spec")))
    retain_raw = _str(spec, "jobRetainPolicy", "spec") or RetainPolicy.RETAIN.value
    try:
        retain = RetainPolicy(retain_raw)
    except ValueError:
        raise InvalidObject(f"spec.jobRetainPolicy: {retain_raw!r} is not one of retain, delete") from None
    status = obj.get("status")
    return JobFlow(
        namespace=_str(meta, "namespace", "metadata") or "default",
        name=_str(meta, "name", "metadata", required=True),
        uid=_str(meta, "uid", "metadata"),
        flows=entries,
        retain=retain,
        deleting=bool(meta.get("deletionTimestamp")),
        status=status if isinstance(status, Mapping) else {},
    )


def owner_reference(flow: JobFlow) -> dict[str, Any]:
    return {
        "apiVersion": FLOW_API_VERSION,
        "kind": JOBFLOW_KIND,
        "name": flow.name,
        "uid": flow.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _controller_field(obj: Obj, field: str, *, kind: str, group: str) -> str | None:
    """A string field of ``obj``'s controller owner reference when it is a ``kind`` of API group ``group``."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    for ref in refs if isinstance(refs, list) else ():
        if (
            isinstance(ref, Mapping)
            and ref.get("controller")
            and ref.get("kind") == kind
            and str(ref.get("apiVersion", "")).startswith(f"{group}/")
        ):
            value = ref.get(field)
            return value if isinstance(value, str) else None
    return None


def controller_uid(obj: Obj, *, kind: str, group: str) -> str | None:
    """The UID of ``obj``'s controller owner when it is a ``kind`` of API group ``group``."""
    return _controller_field(obj, "uid", kind=kind, group=group)


def controller_name(obj: Obj, *, kind: str, group: str) -> str | None:
    return _controller_field(obj, "name", kind=kind, group=group)
