"""Keyword builders for scheduling scenarios.

Each builder returns the RAW Kubernetes object (a decoded JSON dict, as the API server sends it) and the
``run``/``snapshot`` helpers push them through :mod:`extender.core.parse`, so every scenario exercises the
parser as well as the scheduler. Defaults are the boring case: an open ``default`` queue, a 4-cpu 8Gi node,
a 1-cpu 1Gi pod of the ``volcano`` scheduler.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import yaml

from extender.api import labels as L
from extender.core.model import GroupKey, PodUID, group_key
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.core.timestamps import epoch
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.registry import SchedulerConf, load_conf

Raw = dict[str, Any]

T0 = "2024-01-01T00:00:00Z"
NOW = epoch(T0) + 3600.0
# Volcano's CI conf (its e2e tests run with it).
VOLCANO_CI_CONF = """\
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""
GPU = "nvidia.com/gpu"


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    unschedulable: bool = False,
    gpus: int = 0,
    extra: Mapping[str, str] | None = None,
) -> Raw:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    if gpus:
        alloc[GPU] = str(gpus)
    alloc.update(extra or {})
    spec: Raw = {}
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {}), "creationTimestamp": T0},
        "spec": spec,
        "status": {"allocatable": alloc, "capacity": dict(alloc)},
    }


def pod(
    name: str,
    group: str | None = None,
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    node: str = "",
    phase: str = "Pending",
    priority: int = 0,
    task: str = "",
    selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Mapping[str, str]] = (),
    scheduler: str = "volcano",
    created: str = T0,
    gpus: int = 0,
    namespace: str = "default",
    queue: str | None = None,
    affinity: Sequence[Sequence[Mapping[str, Any]]] | None = None,
    uid: str | None = None,
    deleting: bool = False,
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    pod_affinity: Mapping[str, Any] | None = None,
    anti_affinity: Mapping[str, Any] | None = None,
    spread: Sequence[Mapping[str, Any]] = (),
    preferred_nodes: Sequence[Mapping[str, Any]] = (),
    task_label: str = "",
) -> Raw:
    """``affinity`` is required node affinity: a list of terms, each a list of matchExpressions.

    ``pod_affinity`` / ``anti_affinity`` are raw ``podAffinity`` / ``podAntiAffinity`` blocks (see
    :func:`required` and :func:`preferred`), ``spread`` raw topologySpreadConstraints (see
    :func:`spread_by`), ``preferred_nodes`` raw preferred node affinity terms (see :func:`prefer_node`).
    """
    requests: dict[str, Any] = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    if gpus:
        requests[GPU] = str(gpus)
    requests.update(extra or {})
    annotations: dict[str, str] = {}
    if group is not None:
        annotations[L.GROUP_NAME_ANNOTATION] = group
    if task:
        annotations[L.TASK_SPEC_ANNOTATION] = task
    if queue is not None:
        annotations[L.QUEUE_NAME_ANNOTATION] = queue
    spec: Raw = {
        "schedulerName": scheduler,
        "priority": priority,
        "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = dict(selector)
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    aff: Raw = {}
    if affinity is not None:
        aff["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [dict(r) for r in term]} for term in affinity]
            }
        }
    if preferred_nodes:
        aff.setdefault("nodeAffinity", {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
            dict(t) for t in preferred_nodes
        ]
    if pod_affinity is not None:
        aff["podAffinity"] = dict(pod_affinity)
    if anti_affinity is not None:
        aff["podAntiAffinity"] = dict(anti_affinity)
    if aff:
        spec["affinity"] = aff
    if spread:
        spec["topologySpreadConstraints"] = [dict(c) for c in spread]
    meta: Raw = {
        "name": name,
        "namespace": namespace,
        "uid": uid or name,
        "annotations": annotations,
        "creationTimestamp": created,
    }
    if deleting:
        meta["deletionTimestamp"] = T0
    if labels or task_label:
        meta["labels"] = {**(labels or {}), **({L.TASK_SPEC_ANNOTATION: task_label} if task_label else {})}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def term(topology_key: str = HOSTNAME, namespaces: Sequence[str] | None = None, **match_labels: str) -> Raw:
    """A PodAffinityTerm selecting pods by ``match_labels`` (``app="web"``)."""
    out: Raw = {"labelSelector": {"matchLabels": dict(match_labels)}, "topologyKey": topology_key}
    if namespaces is not None:
        out["namespaces"] = list(namespaces)
    return out


def required(*terms: object) -> Raw:
    """A podAffinity / podAntiAffinity block of required terms."""
    return {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}


def preferred(*weighted: tuple[int, Raw]) -> Raw:
    """A podAffinity / podAntiAffinity block of ``(weight, term)`` preferred terms."""
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "podAffinityTerm": t} for w, t in weighted
        ]
    }


def spread_by(topology_key: str = ZONE, max_skew: int = 1, hard: bool = True, **match_labels: str) -> Raw:
    return {
        "maxSkew": max_skew,
        "topologyKey": topology_key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
        "labelSelector": {"matchLabels": dict(match_labels)},
    }


def prefer_node(weight: int, *exprs: Mapping[str, Any]) -> Raw:
    return {"weight": weight, "preference": {"matchExpressions": [dict(e) for e in exprs]}}


def podgroup(
    name: str,
    min_member: int,
    queue: str = "default",
    phase: str = "Pending",
    min_resources: Mapping[str, str] | None = None,
    min_task_member: Mapping[str, int] | None = None,
    priority_class: str = "",
    namespace: str = "default",
    created: str = T0,
) -> Raw:
    spec: Raw = {"minMember": min_member, "queue": queue}
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    if min_task_member is not None:
        spec["minTaskMember"] = dict(min_task_member)
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "uid": f"pg-{name}", "creationTimestamp": created},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    weight: int = 1,
    capability: Mapping[str, str] | None = None,
    state: str = "Open",
    deserved: Mapping[str, str] | None = None,
    created: str = T0,
    parent: str | None = None,
    guarantee: Mapping[str, str] | None = None,
    reclaimable: bool = True,
    priority: int | None = None,
) -> Raw:
    spec: Raw = {"weight": weight, "reclaimable": reclaimable}
    if guarantee is not None:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if priority is not None:
        spec["priority"] = priority
    if parent is not None:
        spec["parent"] = parent
    if capability is not None:
        spec["capability"] = dict(capability)
    if deserved is not None:
        spec["deserved"] = dict(deserved)
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": spec,
        "status": {"state": state},
    }


def priority_class(name: str, value: int) -> Raw:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def gang(
    name: str,
    size: int,
    min_member: int | None = None,
    cpu: str = "1",
    memory: str = "1Gi",
    queue: str = "default",
    phase: str = "Inqueue",
    **pod_kw: Any,
) -> tuple[Raw, list[Raw]]:
    """A PodGroup and ``size`` waiting pods ``<name>-0..``; ``min_member`` defaults to ``size``."""
    pg = podgroup(name, size if min_member is None else min_member, queue=queue, phase=phase)
    pods = [pod(f"{name}-{i}", group=name, cpu=cpu, memory=memory, **pod_kw) for i in range(size)]
    return pg, pods


def snapshot(
    nodes: Iterable[Raw] = (),
    pods: Iterable[Raw] = (),
    groups: Iterable[Raw] = (),
    queues: Iterable[Raw] | None = None,
    plans: Mapping[str, str] | None = None,
    priority_classes: Iterable[Raw] = (),
) -> Snapshot:
    """``queues`` defaults to one open ``default`` queue."""
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in ([queue("default")] if queues is None else queues)],
        priority_classes=[parse_priority_class(pc) for pc in priority_classes],
        plans={PodUID(k): v for k, v in (plans or {}).items()},
    )


def conf_of(conf: SchedulerConf | str | None) -> SchedulerConf:
    return conf if isinstance(conf, SchedulerConf) else load_conf(conf)


def run(
    nodes: Iterable[Raw] = (),
    pods: Iterable[Raw] = (),
    groups: Iterable[Raw] = (),
    queues: Iterable[Raw] | None = None,
    conf: SchedulerConf | str | None = None,
    plans: Mapping[str, str] | None = None,
    priority_classes: Iterable[Raw] = (),
    now: float = NOW,
) -> CycleResult:
    """One cycle of ``conf`` (a loaded conf, its YAML text, or None for Volcano's default conf), at
    ``now`` (by default an hour after the builders' creation time)."""
    snap = snapshot(nodes, pods, groups, queues, plans, priority_classes)
    return run_cycle(snap, conf_of(conf), now)


def placed(result: CycleResult, prefix: str = "") -> dict[str, str]:
    """Placements whose pod uid starts with ``prefix`` (uids are pod names in these builders)."""
    return {str(k): v for k, v in sorted(result.placements.items()) if k.startswith(prefix)}


def key(name: str, namespace: str = "default") -> GroupKey:
    """The key of the group ``namespace/name`` (the cycle's results are keyed by it)."""
    return group_key(namespace, name)


def conf_with(
    *plugins: str,
    actions: str = "enqueue, allocate, backfill",
    arguments: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A one-tier conf enabling exactly ``plugins``, with optional ``arguments`` per plugin name."""
    args = arguments or {}
    tier = [{"name": n, **({"arguments": dict(args[n])} if n in args else {})} for n in plugins]
    return yaml.safe_dump({"actions": actions, "tiers": [{"plugins": tier}]}, sort_keys=False)


def replay(ssn: Session, operations: list[tuple[str, int, int]]) -> Iterator[None]:
    """Apply ``(op, pod index, node index)`` steps (place / discard / commit, on pods ``p<i>``) to
    a session's statements, yielding after each so a test can check an invariant at every step."""
    stmt = ssn.statement()
    for op, pod_i, node_i in operations:
        uid = PodUID(f"p{pod_i}")
        if op == "place" and uid not in ssn.plans:
            stmt.place(uid, node_i, "default")
        elif op == "discard":
            stmt.discard()
        elif op == "commit":
            stmt.commit()
            stmt = ssn.statement()
        yield
