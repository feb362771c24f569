"""Raw Kubernetes objects (decoded JSON) into the frozen model.

The only place in the core that reads raw dicts. Every function raises :class:`InvalidObject` naming the
field when the object cannot be read, so the cache can log and skip it and a handler can answer 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.api import labels as L
from extender.core.errors import InvalidObject, InvalidQuantity
from extender.core.model import (
    Condition,
    GroupPhase,
    Node,
    NodeConstraints,
    Pod,
    PodGroup,
    PodPhase,
    PodUID,
    PriorityClass,
    Queue,
    QueueState,
    Requirement,
    Taint,
    Toleration,
)
from extender.core.resources import add, parse_resource_list

Obj = Mapping[str, Any]


def _map(obj: Obj, key: str, where: str) -> Obj:
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise InvalidObject(f"{where}.{key}: expected an object, got {type(v).__name__}")
    return v


def _list(obj: Obj, key: str, where: str) -> list[Any]:
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InvalidObject(f"{where}.{key}: expected a list, got {type(v).__name__}")
    return v


def _item(v: object, where: str) -> Obj:
    """A list element that must be an object."""
    if not isinstance(v, Mapping):
        raise InvalidObject(f"{where}: expected an object, got {type(v).__name__}")
    return v


def _resources(raw: object, where: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidObject(f"{where}: expected a resource list")
    try:
        return parse_resource_list(raw)
    except InvalidQuantity as e:
        raise InvalidObject(f"{where}: {e}") from None


def _meta(obj: Obj, kind: str) -> Obj:
    _item(obj, kind)
    meta = _map(obj, "metadata", kind)
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InvalidObject(f"{kind}.metadata.name: required")
    return meta


def pod_requests(spec: Obj) -> dict[str, int]:
    """What a pod asks of its node: sum over containers, at least the largest init container, plus
    overhead, plus one ``pods`` slot (kube-scheduler's NodeResourcesFit accounting)."""
    total: dict[str, int] = {}
    for i, c in enumerate(_list(spec, "containers", "spec")):
        where = f"spec.containers[{i}]"
        requests = _map(_item(c, where), "resources", where).get("requests")
        total = add(total, _resources(requests, f"{where}.resources.requests"))
    for i, c in enumerate(_list(spec, "initContainers", "spec")):
        where = f"spec.initContainers[{i}]"
        init = _resources(
            _map(_item(c, where), "resources", where).get("requests"), f"{where}.resources.requests"
        )
        for k, v in init.items():
            if v > total.get(k, 0):
                total[k] = v
    total = add(total, _resources(spec.get("overhead"), "spec.overhead"))
    total["pods"] = 1
    return {k: v for k, v in total.items() if v}


def _requirement(raw: object, is_field: bool, where: str) -> Requirement:
    raw = _item(raw, where)
    key, op = raw.get("key"), raw.get("operator")
    if not isinstance(key, str) or not isinstance(op, str):
        raise InvalidObject(f"{where}: key and operator are required")
    values = _list(raw, "values", where)
    return Requirement(key=key, operator=op, values=tuple(str(v) for v in values), field=is_field)


def node_constraints(spec: Obj) -> NodeConstraints:
    selector = tuple(sorted((str(k), str(v)) for k, v in _map(spec, "nodeSelector", "spec").items()))
    terms: tuple[tuple[Requirement, ...], ...] | None = None
    node_aff = _map(_map(spec, "affinity", "spec"), "nodeAffinity", "spec.affinity")
    required = _map(node_aff, "requiredDuringSchedulingIgnoredDuringExecution", "spec.affinity.nodeAffinity")
    if required:
        where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        parsed: list[tuple[Requirement, ...]] = []
        for j, raw_term in enumerate(_list(required, "nodeSelectorTerms", where)):
            at = f"{where}[{j}]"
            term = _item(raw_term, at)
            parsed.append(
                tuple(
                    [_requirement(r, False, at) for r in _list(term, "matchExpressions", at)]
                    + [_requirement(r, True, at) for r in _list(term, "matchFields", at)]
                )
            )
        terms = tuple(parsed)
    tolerations = tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in (
            _item(t, f"spec.tolerations[{i}]") for i, t in enumerate(_list(spec, "tolerations", "spec"))
        )
    )
    return NodeConstraints(node_selector=selector, affinity_terms=terms, tolerations=tolerations)


def parse_pod(obj: Obj) -> Pod:
    meta = _meta(obj, "Pod")
    spec = _map(obj, "spec", "Pod")
    status = _map(obj, "status", "Pod")
    ann = _map(meta, "annotations", "metadata")
    uid = meta.get("uid")
    if not isinstance(uid, str) or not uid:
        raise InvalidObject("Pod.metadata.uid: required")
    group = ann.get(L.GROUP_NAME_ANNOTATION) or ann.get(L.GROUP_NAME_ANNOTATION_VOLCANO) or None
    try:
        phase = PodPhase(status.get("phase") or "Pending")
    except ValueError:
        phase = PodPhase.UNKNOWN
    gates = _list(spec, "schedulingGates", "spec")
    return Pod(
        uid=PodUID(uid),
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        scheduler_name=str(spec.get("schedulerName") or "default-scheduler"),
        requests=pod_requests(spec),
        group_name=str(group) if group else None,
        queue_name=str(ann.get(L.QUEUE_NAME_ANNOTATION) or "") or None,
        task=str(ann.get(L.TASK_SPEC_ANNOTATION) or ""),
        node_name=str(spec.get("nodeName") or ""),
        phase=phase,
        priority=_int(spec, "priority", "spec", 0),
        constraints=node_constraints(spec),
        created=str(meta.get("creationTimestamp") or ""),
        deleting=bool(meta.get("deletionTimestamp")),
        gated=any(isinstance(g, Mapping) and g.get("name") == L.GANG_SCHEDULING_GATE for g in gates),
        planned_node=str(ann.get(L.PLANNED_NODE_ANNOTATION) or ""),
        labels={str(k): str(v) for k, v in _map(meta, "labels", "metadata").items()},
    )


def parse_node(obj: Obj) -> Node:
    meta = _meta(obj, "Node")
    spec = _map(obj, "spec", "Node")
    status = _map(obj, "status", "Node")
    alloc = status.get("allocatable") or status.get("capacity")
    taints = tuple(
        Taint(key=str(t.get("key") or ""), value=str(t.get("value") or ""), effect=str(t.get("effect") or ""))
        for t in (_item(t, f"spec.taints[{i}]") for i, t in enumerate(_list(spec, "taints", "spec")))
    )
    return Node(
        name=str(meta["name"]),
        allocatable=_resources(alloc, "Node.status.allocatable"),
        labels={str(k): str(v) for k, v in _map(meta, "labels", "metadata").items()},
        taints=taints,
        unschedulable=bool(spec.get("unschedulable")),
        created=str(meta.get("creationTimestamp") or ""),
    )


def _conditions(status: Obj) -> tuple[Condition, ...]:
    return tuple(
        Condition(
            type=str(c.get("type") or ""),
            status=str(c.get("status") or ""),
            reason=str(c.get("reason") or ""),
            message=str(c.get("message") or ""),
            last_transition_time=str(c.get("lastTransitionTime") or ""),
            transition_id=str(c.get("transitionID") or ""),
        )
        for c in _list(status, "conditions", "status")
        if isinstance(c, Mapping)
    )


def _int(obj: Obj, key: str, where: str, default: int) -> int:
    v = obj.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidObject(f"{where}.{key}: expected an integer, got {v!r}")
    return v


def parse_podgroup(obj: Obj, default_queue: str = L.DEFAULT_QUEUE) -> PodGroup:
    meta = _meta(obj, "PodGroup")
    spec = _map(obj, "spec", "PodGroup")
    status = _map(obj, "status", "PodGroup")
    mtm = _map(spec, "minTaskMember", "spec")
    try:
        phase = GroupPhase(status.get("phase") or "Pending")
    except ValueError:
        phase = GroupPhase.PENDING
    return PodGroup(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        uid=str(meta.get("uid") or ""),
        min_member=_int(spec, "minMember", "spec", 1),
        min_task_member={str(k): _int(mtm, k, "spec.minTaskMember", 0) for k in mtm},
        queue=str(spec.get("queue") or default_queue),
        priority_class=str(spec.get("priorityClassName") or ""),
        min_resources=_resources(spec.get("minResources"), "spec.minResources"),
        phase=phase,
        conditions=_conditions(status),
        running=_int(status, "running", "status", 0),
        succeeded=_int(status, "succeeded", "status", 0),
        failed=_int(status, "failed", "status", 0),
        created=str(meta.get("creationTimestamp") or ""),
    )


def parse_queue(obj: Obj) -> Queue:
    meta = _meta(obj, "Queue")
    spec = _map(obj, "spec", "Queue")
    status = _map(obj, "status", "Queue")
    try:
        state = QueueState(status.get("state") or "Open")
    except ValueError:
        state = QueueState.UNKNOWN
    reclaimable = spec.get("reclaimable")
    return Queue(
        name=str(meta["name"]),
        weight=_int(spec, "weight", "spec", 1),
        capability=_resources(spec.get("capability"), "spec.capability"),
        deserved=_resources(spec.get("deserved"), "spec.deserved"),
        guarantee=_resources(_map(spec, "guarantee", "spec").get("resource"), "spec.guarantee.resource"),
        parent=str(spec.get("parent") or ""),
        reclaimable=True if reclaimable is None else bool(reclaimable),
        priority=_int(spec, "priority", "spec", 0),
        state=state,
        created=str(meta.get("creationTimestamp") or ""),
    )


def parse_priority_class(obj: Obj) -> PriorityClass:
    meta = _meta(obj, "PriorityClass")
    return PriorityClass(
        name=str(meta["name"]),
        value=_int(obj, "value", "PriorityClass", 0),
        global_default=bool(obj.get("globalDefault")),
    )
