"""Raw Kubernetes objects (decoded JSON) into the frozen model: Pods, Nodes, PodGroups, Queues,
PriorityClasses, ResourceQuotas and PodDisruptionBudgets.

With :mod:`extender.core.parse_affinity` (a pod's node and inter-pod constraints), the domain parsers it
calls (GPU, NUMA, network topology) and the field readers of :mod:`extender.core.fields`, the only place
in the core that reads raw dicts: objects are parsed once, when they enter the cache, never in a handler.
Every function raises :class:`InvalidObject` naming the field when the object cannot be read, so the cache
can log and skip it and a handler can answer 400. Defaults are the API server's and Volcano's (a missing
``minMember`` is 1, a missing queue the default queue, an unknown phase Pending or Unknown).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Final

from extender.api import labels as L
from extender.core.budgets import DisruptionBudget
from extender.core.errors import InvalidObject, InvalidQuantity
from extender.core.fields import Obj
from extender.core.fields import int_field as _int
from extender.core.fields import list_field as _list
from extender.core.fields import list_item as _item
from extender.core.fields import metadata as _meta
from extender.core.fields import object_field as _map
from extender.core.fields import positive_duration as _positive_duration
from extender.core.fields import resource_list as _resources
from extender.core.gpus import gpu_request, node_gpus, pod_hold
from extender.core.hypernodes import parse_network_topology
from extender.core.maker import maker
from extender.core.model import (
    Condition,
    GroupPhase,
    Node,
    NodeGroupAffinity,
    Pod,
    PodGroup,
    PodScoring,
    PodUID,
    PriorityClass,
    Queue,
    QueueState,
    Taint,
    pod_phase,
)
from extender.core.numa import numa_request
from extender.core.parse_affinity import label_selector, pod_affinity
from extender.core.pod_spec import SpecMemo, read_spec

# (pod_requests lived here before pod_spec; its callers import it from here)
from extender.core.pod_spec import pod_requests as pod_requests
from extender.core.quantity import to_units
from extender.core.quota import NAMESPACE_WEIGHT_KEY, QuotaEntry, ResourceQuota, request_resource
from extender.core.subgroups import parse_sub_group_policy
from extender.core.timestamps import epoch
from extender.core.workloads import pod_group_name

# Volcano's keys: a job's SLA on its PodGroup (the first key that reads wins), a queue's HDRF position.
SLA_WAITING_TIME_KEYS: Final = ("volcano.sh/sla-waiting-time", "sla-waiting-time")
HIERARCHY_ANNOTATION: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION: Final = "volcano.sh/hierarchy-weights"


_i = sys.intern
_make_pod: Final = maker(Pod)  # (Pod(**fields), sooner: made for every pod listed)


def _task(ann: Obj, labels: Mapping[str, str]) -> str:
    # Volcano reads the annotation first, then the label its job controller also writes.
    return str(ann.get(L.TASK_SPEC_ANNOTATION) or "") or labels.get(L.TASK_SPEC_ANNOTATION, "")


def parse_pod(
    obj: Obj,
    memo: SpecMemo | None = None,
    share_labels: Callable[[dict[str, str]], Mapping[str, str]] | None = None,
) -> Pod:
    """The Pod model of ``obj``; ``memo`` remembers the parts its spec alone decides (see
    :mod:`extender.core.pod_spec`: the same Pod with or without it, only sooner); ``share_labels`` hands
    back an equal mapping to hold instead of the labels read (one held for pods with equal labels)."""
    meta = _meta(obj, "Pod")
    spec = _map(obj, "spec", "Pod")
    status = _map(obj, "status", "Pod")
    ann = _map(meta, "annotations", "metadata")
    uid = meta.get("uid")
    if not isinstance(uid, str) or not uid:
        raise InvalidObject("Pod.metadata.uid: required")
    # The group it names, else its workload's (see extender.core.workloads), else None (implicit).
    group = pod_group_name(meta)
    phase = pod_phase(status.get("phase"))
    gates = _list(spec, "schedulingGates", "spec")
    # The strings many pods repeat (namespaces, nodes, groups, label keys and values, creation seconds)
    # are interned: a cache of 100 000 pods then holds each once, not once per pod.
    read = {_i(str(k)): _i(str(v)) for k, v in _map(meta, "labels", "metadata").items()}
    labels = read if share_labels is None else share_labels(read)
    namespace = _i(str(meta.get("namespace") or "default"))
    # (read here, where its first field was read, so that a pod with several bad fields names the same one)
    parts = read_spec(spec) if memo is None else memo.read(spec)
    scheduled_at, refused = _scheduling(status)
    return _make_pod(
        {
            "uid": PodUID(uid),
            "namespace": namespace,
            "name": str(meta["name"]),
            "scheduler_name": parts.scheduler_name,
            "requests": parts.requests,
            "group_name": _i(str(group)) if group else None,
            "queue_name": _i(str(ann.get(L.QUEUE_NAME_ANNOTATION) or "")) or None,
            "task": _i(_task(ann, labels)),
            "node_name": _i(str(spec.get("nodeName") or "")),
            "phase": phase,
            "priority": parts.priority,
            "constraints": parts.constraints,
            "created": _i(str(meta.get("creationTimestamp") or "")),
            "deleting": bool(meta.get("deletionTimestamp")),
            "gated": any(isinstance(g, Mapping) and g.get("name") == L.GANG_SCHEDULING_GATE for g in gates),
            "planned_node": _i(str(ann.get(L.PLANNED_NODE_ANNOTATION) or "")),
            "expected_runtime": _positive_duration(ann, (L.EXPECTED_RUNTIME_ANNOTATION,)),
            "cooldown": _cooldown(labels, ann),
            "scheduled_at": scheduled_at,
            "scheduler_refused": refused,
            "labels": labels,
            "affinity": pod_affinity(spec, namespace, labels),
            "scoring": _pod_scoring(ann),
            "numa": numa_request(ann, spec),
            "gpu": (gpu := gpu_request(ann, spec) if parts.asks_devices else None),
            "gpu_hold": pod_hold(ann, gpu),
            "preemptable": _preemptable(ann, labels),
            "preemption_policy": parts.preemption_policy,
            "priority_class": parts.priority_class,
        }
    )


# What Go's strconv.ParseBool reads as true (Volcano reads ``volcano.sh/preemptable`` with it).
_GO_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def _preemptable(ann: Obj, labels: Mapping[str, str]) -> bool:
    """Volcano's GetPodPreemptable: the annotation if present, else the label, else true; a value that is
    not a Go bool means false (Volcano logs it and protects the pod)."""
    for source in (ann, labels):
        if L.PREEMPTABLE_ANNOTATION in source:
            return str(source[L.PREEMPTABLE_ANNOTATION]) in _GO_TRUE
    return True


def _pod_scoring(ann: Obj) -> PodScoring | None:
    """resource-strategy-fit's per-pod scoring annotations; a bad weight annotation is kept as a problem
    (the plugin scores such a pod 0, as Volcano does), never an unreadable pod."""
    kind = ann.get(L.RESOURCE_STRATEGY_TYPE_ANNOTATION)
    if not kind:
        return None
    raw = ann.get(L.RESOURCE_STRATEGY_WEIGHT_ANNOTATION)
    key = L.RESOURCE_STRATEGY_WEIGHT_ANNOTATION
    if not raw:
        return PodScoring(type=str(kind), problem=f"annotation {key} is missing")
    try:
        doc = json.loads(str(raw))
    except ValueError as e:
        return PodScoring(type=str(kind), problem=f"annotation {key} is not JSON: {e}")
    if not isinstance(doc, dict) or not all(type(v) is int for v in doc.values()):
        return PodScoring(type=str(kind), problem=f"annotation {key} must map resource names to integers")
    return PodScoring(type=str(kind), weights=tuple(sorted((str(k), v) for k, v in doc.items())))


def _cooldown(labels: Mapping[str, str], ann: Obj) -> float | None:
    """``volcano.sh/cooldown-time`` from the label, else the annotation (Volcano's order); unreadable is
    none (Volcano logs it and protects nothing)."""
    key = (L.COOLDOWN_TIME_KEY,)
    return _positive_duration(labels, key) or _positive_duration(ann, key)


def _scheduling(status: Obj) -> tuple[float, bool]:
    """When the pod's PodScheduled condition turned True (what Volcano's cdp counts from; the first such
    condition's, else 0), and whether kube-scheduler's last attempt at the pod failed (a PodScheduled False:
    Unschedulable, or SchedulerError when an extender could not be reached). One pass over the conditions."""
    at: float | None = None
    refused = False
    for c in _list(status, "conditions", "status"):
        # (dict first: the same answer, without the ABC's slower check for the dicts a decode gives)
        if isinstance(c, (dict, Mapping)) and c.get("type") == "PodScheduled":
            state = c.get("status")
            if state == "True" and at is None:
                at = epoch(str(c.get("lastTransitionTime") or ""))
            elif state == "False":
                refused = True
    return (0.0 if at is None else at), refused


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
        gpus=node_gpus(_map(meta, "annotations", "metadata"), _map(status, "capacity", "Node.status")),
    )


def _conditions(status: Obj) -> tuple[Condition, ...]:
    # (all but the message interned: every PodGroup repeats them, ~300 bytes of strings each otherwise)
    return tuple(
        Condition(
            type=_i(str(c.get("type") or "")),
            status=_i(str(c.get("status") or "")),
            reason=_i(str(c.get("reason") or "")),
            message=str(c.get("message") or ""),
            last_transition_time=_i(str(c.get("lastTransitionTime") or "")),
            transition_id=str(c.get("transitionID") or ""),
        )
        for c in _list(status, "conditions", "status")
        if isinstance(c, Mapping)
    )


def _sla_waiting_time(ann: Obj) -> float | None:
    """The job's own SLA in seconds: the first of Volcano's keys that reads as a positive Go duration.
    An unreadable one is skipped, as Volcano skips it, rather than refusing the whole PodGroup."""
    return _positive_duration(ann, SLA_WAITING_TIME_KEYS)


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
        namespace=_i(str(meta.get("namespace") or "default")),
        name=str(meta["name"]),
        uid=str(meta.get("uid") or ""),
        min_member=_int(spec, "minMember", "spec", 1),
        min_task_member={_i(str(k)): _int(mtm, k, "spec.minTaskMember", 0) for k in mtm},
        queue=_i(str(spec.get("queue") or default_queue)),
        priority_class=_i(str(spec.get("priorityClassName") or "")),
        min_resources=_resources(spec.get("minResources"), "spec.minResources"),
        phase=phase,
        conditions=_conditions(status),
        running=_int(status, "running", "status", 0),
        succeeded=_int(status, "succeeded", "status", 0),
        failed=_int(status, "failed", "status", 0),
        created=_i(str(meta.get("creationTimestamp") or "")),
        sla_waiting_time=_sla_waiting_time(_map(meta, "annotations", "metadata")),
        task_topology={
            k: str(v)
            for k, v in _map(meta, "annotations", "metadata").items()
            if k in L.TASK_TOPOLOGY_ANNOTATIONS
        },
        network_topology=parse_network_topology(spec, _map(meta, "annotations", "metadata")),
        sub_group_policy=parse_sub_group_policy(spec),
        expected_runtime=_positive_duration(
            _map(meta, "annotations", "metadata"), (L.EXPECTED_RUNTIME_ANNOTATION,)
        ),
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
    ann = _map(meta, "annotations", "metadata")
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
        hierarchy=str(ann.get(HIERARCHY_ANNOTATION) or ""),
        hierarchy_weights=str(ann.get(HIERARCHY_WEIGHTS_ANNOTATION) or ""),
        node_group_affinity=_node_group_affinity(spec),
        node_group_limits=str(ann.get(L.NODEGROUP_LIMITS_ANNOTATION) or ""),
    )


def _node_group_affinity(spec: Obj) -> NodeGroupAffinity | None:
    """A Queue's ``spec.affinity`` (Volcano's nodeGroupAffinity / nodeGroupAntiAffinity), or None."""
    if spec.get("affinity") is None:
        return None
    aff = _map(spec, "affinity", "Queue.spec")
    lists: list[tuple[str, ...]] = []
    for part in ("nodeGroupAffinity", "nodeGroupAntiAffinity"):
        rules = _map(aff, part, "Queue.spec.affinity")
        for when in (
            "requiredDuringSchedulingIgnoredDuringExecution",
            "preferredDuringSchedulingIgnoredDuringExecution",
        ):
            names = _list(rules, when, f"Queue.spec.affinity.{part}")
            if not all(isinstance(n, str) for n in names):
                raise InvalidObject(f"Queue.spec.affinity.{part}.{when}: expected node group names")
            lists.append(tuple(names))
    return NodeGroupAffinity(
        required=lists[0], preferred=lists[1], anti_required=lists[2], anti_preferred=lists[3]
    )


def parse_priority_class(obj: Obj) -> PriorityClass:
    meta = _meta(obj, "PriorityClass")
    return PriorityClass(
        name=str(meta["name"]),
        value=_int(obj, "value", "PriorityClass", 0),
        global_default=bool(obj.get("globalDefault")),
        preemption_policy=str(obj.get("preemptionPolicy") or ""),
    )


def parse_resource_quota(obj: Obj) -> ResourceQuota:
    """The entries of ``spec.hard`` that limit pod requests, with ``status.used`` (see
    :mod:`extender.core.quota`); a bad quantity in one of them makes the whole quota unreadable (it names
    the key), one in an entry the scheduler does not read is left to the API server."""
    meta = _meta(obj, "ResourceQuota")
    hard = _map(_map(obj, "spec", "ResourceQuota"), "hard", "spec")
    used = _map(_map(obj, "status", "ResourceQuota"), "used", "status")
    entries: list[QuotaEntry] = []
    for key in sorted(hard):
        resource = request_resource(str(key))
        if resource is None:
            continue
        entries.append(
            QuotaEntry(
                key=str(key),
                resource=resource,
                hard=_quantity(resource, hard[key], f"spec.hard.{key}"),
                used=_quantity(resource, used[key], f"status.used.{key}") if key in used else 0,
            )
        )
    weight = None
    if NAMESPACE_WEIGHT_KEY in hard:
        weight = max(1, _quantity("", hard[NAMESPACE_WEIGHT_KEY], f"spec.hard.{NAMESPACE_WEIGHT_KEY}"))
    return ResourceQuota(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        entries=tuple(entries),
        weight=weight,
    )


def _quantity(resource: str, raw: object, where: str) -> int:
    try:
        return to_units(resource, raw)
    except InvalidQuantity as e:
        raise InvalidObject(f"{where}: {e}") from None


def parse_pod_disruption_budget(obj: Obj) -> DisruptionBudget:
    meta = _meta(obj, "PodDisruptionBudget")
    spec = _map(obj, "spec", "PodDisruptionBudget")
    status = _map(obj, "status", "PodDisruptionBudget")
    return DisruptionBudget(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta["name"]),
        selector=label_selector(spec.get("selector"), "spec.selector"),
        disruptions_allowed=_int(status, "disruptionsAllowed", "status", 0),
        disrupted=frozenset(str(k) for k in _map(status, "disruptedPods", "status")),
    )
