"""Snapshot mode: what pumice would do with a cluster as ``kubectl get ... -o yaml`` shows it.

The objects (Nodes, Pods, PodGroups, Queues, PriorityClasses; Volcano Jobs, expanded as the job
controller would when their pods are not in the snapshot) are loaded into a simulated cluster
(:mod:`controllers.simulate.cluster`), which cycles until nothing changes: pods are bound where the
scheduler plans them, victims leave, and when a rule waits for time (a fair window, an SLA deadline)
the clock moves to that time. The clock starts at ``now`` (by default the newest creationTimestamp in
the snapshot). With ``cycles`` (``--cycles N``) it runs exactly N scheduling sessions instead, at that
clock, with no fixpoint: N = 1 is one session, to compare one to one with a Volcano session. A session's
decisions are carried out as in ``serve``: plans bind, victims leave, and a placement that waited for its
victims binds once they are gone, without another session (Volcano binds its pipelined tasks in a later
session); the clock does not move, so what waits for time (a fair window, an SLA) stays waiting.

ResourceQuotas, PodDisruptionBudgets, HyperNodes and Numatopologies are loaded for the plugins that read
them (``resourcequota``, ``drf``'s namespace weights, ``pdb``, ``network-topology-aware``, ``numa-aware``).
Pods of a ReplicaSet, StatefulSet or batch Job whose PodGroup is not in the snapshot get the group pumice's
workload controller would create (sized from the owner's annotations when the owner is in the snapshot,
else the defaults), as ``serve`` would.

Not simulated: the Eviction API's own PodDisruptionBudget check (only the ``pdb`` plugin's, when the conf
has it), the owners of evicted pods (a ReplicaSet or job controller would create new ones), and
kube-scheduler's own filters (host ports, volumes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controllers.shares_view import Cluster, SharesView, compute_shares
from controllers.simulate.cluster import SimCluster
from controllers.simulate.jobs import expand
from extender.api import labels as L
from extender.core.model import GroupPhase, group_key
from extender.core.parse import pod_requests
from extender.core.timestamps import epoch, rfc3339
from extender.core.workloads import WORKLOAD_KINDS, desired_podgroup, named_group, workload_owner
from extender.plugins.queue_shares import CAPACITY, PROPORTION
from extender.plugins.registry import SchedulerConf

Obj = dict[str, Any]

_KINDS = (
    "Node",
    "Pod",
    "PodGroup",
    "Queue",
    "PriorityClass",
    "ResourceQuota",
    "PodDisruptionBudget",
    "HyperNode",
    "Numatopology",
)


def _is_workload(o: Obj) -> bool:
    return (str(o.get("apiVersion", "")).rpartition("/")[0], str(o.get("kind", ""))) in WORKLOAD_KINDS


def _workload_groups(objs: Iterable[Obj]) -> list[Obj]:
    """The PodGroups pumice's workload controller would create for the snapshot's workload pods that name
    no group and whose owner's group is not in the snapshot: one per owner, from its first pod."""
    owners = {
        str(m.get("uid")): o for o in objs if _is_workload(o) and isinstance(m := o.get("metadata"), dict)
    }
    have = {
        (str(m.get("namespace") or "default"), str(m.get("name")))
        for o in objs
        if o.get("kind") == "PodGroup" and isinstance(m := o.get("metadata"), dict)
    }
    out = []
    for o in objs:
        meta = o.get("metadata")
        if o.get("kind") != "Pod" or not isinstance(meta, dict) or named_group(meta) is not None:
            continue
        owner = workload_owner(meta)
        if owner is None:
            continue
        try:
            requests = pod_requests(o.get("spec") or {})
        except ValueError:
            continue  # the cache lists the pod as unreadable, with why
        desired = desired_podgroup(o, owner, owners.get(owner.uid, {}), requests)
        key = (str(desired.body["metadata"]["namespace"]), desired.name)
        if key not in have:
            have.add(key)
            out.append(desired.body)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    pod: str
    node: str
    group: str
    queue: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Eviction:
    pod: str
    node: str
    reason: str
    message: str
    by: str  # the PodGroup that takes its place


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupState:
    name: str
    queue: str
    phase: str
    min_member: int
    running: int
    waiting: int
    reason: str  # why it waits ("" when nothing holds it back)
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotResult:
    now: str
    cycles: int
    placements: tuple[Placement, ...]
    evictions: tuple[Eviction, ...]
    podgroups: tuple[GroupState, ...]
    shares: SharesView
    ignored: tuple[str, ...]  # objects the simulation does not act on, each with why
    queue_objects: Mapping[str, Obj]  # the Queues simulated, by name (those pumice creates at start too)


def flatten(docs: Iterable[object]) -> list[Obj]:
    """Objects from YAML documents, ``List`` kinds (what ``kubectl get -o yaml`` prints) unwrapped."""
    out: list[Obj] = []
    for d in docs:
        if d is None:
            continue
        if not isinstance(d, dict):
            raise ValueError(f"expected Kubernetes objects, got a {type(d).__name__}")
        if d.get("kind") == "List" or (str(d.get("kind", "")).endswith("List") and "items" in d):
            out.extend(flatten(d.get("items") or ()))
        else:
            out.append(d)
    return out


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict) or not meta.get("name"):
        raise ValueError(f"a {obj.get('kind') or 'object'} without metadata.name")
    return meta


def _where(meta: object) -> str:
    """``namespace/name`` (or ``name``) of an object's metadata, however odd it is."""
    m = meta if isinstance(meta, dict) else {}
    return "/".join(str(m[k]) for k in ("namespace", "name") if m.get(k)) or "<unnamed>"


def _default_now(objs: Iterable[Obj]) -> float:
    return max(
        (epoch(str((o.get("metadata") or {}).get("creationTimestamp") or "")) for o in objs), default=0.0
    )


def simulate_snapshot(
    objects: Iterable[Obj],
    conf: SchedulerConf,
    *,
    now: float | None = None,
    default_queue: str = L.DEFAULT_QUEUE,
    limit: int = 200,
    cycles: int | None = None,
) -> SnapshotResult:
    """What pumice does with ``objects``: cycles until nothing changes (at most ``limit``), the clock
    moving to the time a rule waits for; or, with ``cycles``, exactly that many scheduling sessions at
    ``now`` (each one cycle, its binds, its victims leaving and the phases that follow), with no fixpoint:
    ``cycles=1`` is one session."""
    objs = [dict(o) for o in objects]
    start = _default_now(objs) if now is None else now
    cluster = SimCluster(conf, now=start, default_queue=default_queue)
    ignored: list[str] = []
    # What the API server's priority admission would write into spec.priority of expanded jobs' pods.
    priorities = {
        str(_meta(o)["name"]): o["value"]
        for o in objs
        if o.get("kind") == "PriorityClass"
        and type(o.get("value")) is int
        and isinstance(o.get("metadata"), dict)
    }
    have_pods = {
        (str(m.get("namespace") or "default"), str((m.get("labels") or {}).get(L.JOB_NAME_KEY)))
        for o in objs
        if o.get("kind") == "Pod" and isinstance(m := o.get("metadata"), dict)
    }
    queues: set[str] = set()
    for o in objs:
        kind = o.get("kind")
        try:
            meta = _meta(o)
            meta.setdefault("uid", f"{kind}/{meta.get('namespace') or ''}/{meta['name']}")
            if kind in _KINDS:
                if kind == "Queue":
                    queues.add(meta["name"])
                cluster.add(o)  # the cache skips and remembers what it cannot read (listed below)
            elif _is_workload(o):
                continue  # read for its pods' PodGroup (below)
            elif kind == "Job" and str(o.get("apiVersion", "")).startswith("batch.volcano.sh/"):
                if (str(meta.get("namespace") or "default"), meta["name"]) in have_pods:
                    continue  # its pods and PodGroup are in the snapshot already
                _, pg, pods = expand(o, created=rfc3339(start), priorities=priorities)
                for x in (pg, *pods):
                    cluster.add(x)
            else:
                ignored.append(f"{kind} {_where(meta)}")
        except ValueError as e:  # one unreadable object is that object's problem, never the run's
            ignored.append(f"{kind} {_where(o.get('metadata'))}: {e}")
    for pg in _workload_groups(objs):
        try:
            cluster.add(pg)
        except ValueError as e:
            ignored.append(f"PodGroup {_where(pg['metadata'])}: {e}")
    for name in ("root", default_queue):  # pumice serve creates these at start
        if name not in queues:
            q = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name}}
            cluster.add({**q, "spec": {"weight": 1}, "status": {"state": "Open"}})
    if cycles is not None:
        for _ in range(cycles):
            cluster.step(force=True)
    else:
        steps = 0
        while steps < limit:
            steps += cluster.settle(limit=limit - steps)
            if cluster.due is None or steps >= limit:
                break
            cluster.now = max(cluster.now, cluster.due)
    ignored += [f"{kind} {name}: {why}" for (kind, name), why in sorted(cluster.cache.unreadable().items())]
    return _result(cluster, conf, ignored)


def _result(cluster: SimCluster, conf: SchedulerConf, ignored: list[str]) -> SnapshotResult:
    cache = cluster.cache
    placements = []
    for uid, node in cluster.bound.items():
        pod = cache.pod(uid)
        if pod is None or pod.node_name != node:
            continue  # bound, then evicted
        key = group_key(pod.namespace, pod.group_name) if pod.group_name else pod.key
        placements.append(Placement(pod=pod.key, node=node, group=key, queue=cache.pod_queue(pod) or ""))
    placements.sort(key=lambda p: p.pod)
    groups = []
    for key in sorted(cluster.podgroups):
        g = cache.group(key)
        if g is None:
            continue
        pods = [p for u in cache.members(key) if (p := cache.pod(u)) is not None]
        u = cluster.scheduler.shared.reasons.get(key)
        phase = g.phase
        groups.append(
            GroupState(
                name=key,
                queue=g.queue,
                phase=phase.value,
                min_member=g.min_member,
                running=sum(1 for p in pods if p.holds_resources),
                waiting=sum(1 for p in pods if p.waiting),
                reason=u.reason if u is not None and phase != GroupPhase.RUNNING else "",
                message=u.message if u is not None and phase != GroupPhase.RUNNING else "",
            )
        )
    names = {p.name for tier in conf.spec.tiers for p in tier}
    plugin = CAPACITY if CAPACITY in names and PROPORTION not in names else PROPORTION
    hierarchy = any(
        p.name == CAPACITY and p.switches.get("enableHierarchy", False)
        for tier in conf.spec.tiers
        for p in tier
    )
    shares = compute_shares(
        list(cluster.queues.values()),
        Cluster(
            nodes=list(cluster.nodes.values()),
            pods=list(cluster.pods.values()),
            podgroups=list(cluster.podgroups.values()),
        ),
        plugin=plugin,
        hierarchy=hierarchy and plugin == CAPACITY,
        default_queue=cache.default_queue,
    )
    return SnapshotResult(
        now=rfc3339(cluster.now),
        cycles=cluster.cycles,
        placements=tuple(placements),
        evictions=tuple(
            Eviction(pod=e.pod, node=e.node, reason=e.reason, message=e.message, by=e.by)
            for e in cluster.evictions
        ),
        podgroups=tuple(groups),
        shares=shares,
        ignored=tuple(ignored),
        queue_objects=dict(cluster.queues),
    )
