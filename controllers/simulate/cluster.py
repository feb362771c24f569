"""A simulated cluster around pumice's real scheduler: what ``pumice simulate`` runs on.

The scheduler is the one ``pumice serve`` runs — the same
:class:`~controllers.state.cluster.ClusterState` (cache, reservation ledger, pending set), the same
:class:`~controllers.scheduling.scheduler.Scheduler` parts (the loop's work set, settled groups left aside,
the pure cycle, applying its decisions; the verbs' ``/bind`` checks) — on a virtual clock.
What this module plays instead of the real parts around it:

- **the API server**: the raw objects, fed to the cache as a watch would (``upsert``/``remove``);
- **kube-scheduler**: every planned pod whose node holds no victims any more is bound through
  :meth:`Verbs.bind`, as kube-scheduler's filter (answered with the planned node) and bind calls do.
  kube-scheduler's own filters (host ports, volumes) are not simulated;
- **the kubelet**: a bound pod runs at once; a victim leaves at once (no grace period), and so does a pod
  that was already terminating when it was added (after the cycle that sees it leaving);
- **the status writer**: PodGroup phases follow :func:`extender.core.gang.next_phase`, the function the
  status writer calls.

Nothing here awaits: the scheduler's background writes (evictions, gate lifts) go to :class:`SimExecutor`,
whose calls complete without suspending, so each runs to its end where :class:`SimWrites` starts it, and a
timer the loop asks for (a fair window, an SLA deadline) is a due time the caller's event loop reads
(:class:`SimLoop`).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, MutableMapping
from dataclasses import dataclass, replace
from sys import intern
from typing import Any, Final, TypeVar

from controllers.scheduling.loop import Loop
from controllers.scheduling.scheduler import Scheduler
from controllers.scheduling.shared import LoopSettings, SchedulingState
from controllers.scheduling.verbs import Verbs
from controllers.scheduling.writes import Writes
from controllers.state.cluster import ClusterState, cluster_state
from extender.api import wire
from extender.core.gang import MemberCounts, is_admitted, next_phase
from extender.core.model import GroupKey, GroupPhase, Pod, PodPhase, PodUID, group_key
from extender.core.snapshot import pod_group_key
from extender.framework.result import Eviction
from extender.plugins.registry import SchedulerConf

Obj = dict[str, Any]
T = TypeVar("T")

# Kinds the scheduler only reads (plugins' inputs), by the cache handler that takes them.
_READ_ONLY: Final = {
    "ResourceQuota": "resourcequotas",
    "PodDisruptionBudget": "poddisruptionbudgets",
    "HyperNode": "hypernodes",
    "Numatopology": "numatopologies",
}
EPOCH = 1_700_000_000.0  # virtual time 0, as epoch seconds (creation timestamps need a date)


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to its end, here (the simulated calls complete at once)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]  # StopIteration.value is Any
    coro.close()
    raise RuntimeError("a simulated call suspended")


@dataclass(frozen=True, slots=True)
class Evicted:
    at: float
    pod: str  # namespace/name
    node: str
    reason: str
    message: str
    by: GroupKey


class SimExecutor:
    """The scheduler's writes, applied to the simulated API server at once (an Executor)."""

    def __init__(self, cluster: SimCluster) -> None:  # no API client: nothing leaves the process
        self.cluster = cluster

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.cluster.bind(PodUID(uid), node)

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        return None  # moves a pod in kube-scheduler's queues; the simulation binds every plan anyway

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        """A plugin's decision written on the pod before it binds (deviceshare's cards, numa-aware's
        cells): the pod object carries it, so the cache counts a bound pod's cards from it."""
        uid = self.cluster.uid_of(namespace, name)
        if uid is not None:
            self.cluster.edit_pod(uid, lambda p: p["metadata"]["annotations"].update(annotations))

    async def lift_gate(self, namespace: str, name: str) -> None:
        uid = self.cluster.uid_of(namespace, name)
        if uid is not None:
            self.cluster.edit_pod(uid, lambda p: p["spec"].pop("schedulingGates", None))

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        self.cluster.evict(PodUID(uid))
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        return None  # the Eviction carries reason and message into the record instead

    async def patch_status(
        self, path: str, body: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        return None


class SimWrites(Writes):
    """The real writes; each runs to its end in place (the simulated calls never suspend)."""

    def __init__(self, cluster: SimCluster, shared: SchedulingState, executor: SimExecutor) -> None:
        super().__init__(shared, executor)
        self.sim = cluster

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        run_now(coro)

    async def _evict(self, pod: Pod, why: Eviction) -> None:
        self.sim.eviction_reasons[pod.uid] = why
        await super()._evict(pod, why)


class SimLoop(Loop):
    """The real loop; a timer it asks for is a due time the simulation's caller reads."""

    def __init__(self, cluster: SimCluster, shared: SchedulingState, writes: Writes) -> None:
        super().__init__(shared, writes, admitted=cluster.dirty.add)
        self.sim = cluster

    def _due_at(self, when: float) -> None:
        due = self.sim.due
        self.sim.due = when if due is None else min(due, when)


def sim_scheduler(cluster: SimCluster, state: ClusterState, conf: SchedulerConf) -> Scheduler:
    """The real scheduler's parts on the cluster's virtual clock, writing to the simulated API server."""
    shared = SchedulingState(state, conf, settings=LoopSettings(), clock=lambda: cluster.now)
    executor = SimExecutor(cluster)
    writes = SimWrites(cluster, shared, executor)
    loop = SimLoop(cluster, shared, writes)
    return Scheduler(shared=shared, writes=writes, loop=loop, verbs=Verbs(shared, loop, executor))


class SimCluster:
    """The simulated API server, kube-scheduler and kubelets; ``now`` is virtual (epoch seconds)."""

    def __init__(
        self,
        conf: SchedulerConf,
        *,
        now: float,
        scheduler_names: frozenset[str] = frozenset({"volcano"}),
        default_queue: str = "default",
        on_evicted: Callable[[PodUID, Obj], None] = lambda _uid, _pod: None,
    ) -> None:
        self.now = now
        self.state = cluster_state(scheduler_names, default_queue)
        self.cache = self.state.cache
        self.ledger = self.state.ledger
        # Raw objects as the API server holds them.
        self.pods: dict[PodUID, Obj] = {}
        self.podgroups: MutableMapping[GroupKey, Obj] = {}  # a forecast's: packed (controllers.state.packed)
        self.nodes: dict[str, Obj] = {}
        self.queues: dict[str, Obj] = {}
        self._names: dict[tuple[str, str], PodUID] = {}
        # Groups whose phase may have changed; the earliest time a scheduler rule wants a cycle.
        self.dirty: set[GroupKey] = set()
        self.due: float | None = None
        self.on_evicted = on_evicted
        self.eviction_reasons: dict[PodUID, Eviction] = {}
        self.evictions: list[Evicted] = []
        self._evicted: list[tuple[PodUID, Obj]] = []  # told to ``on_evicted`` after the step
        self._terminating: set[PodUID] = set()  # added with a deletionTimestamp: gone after the next cycle
        self.bound: dict[PodUID, str] = {}  # every bind the simulation made: pod -> node
        # Told of every pod the API server stores (its new object, None once deleted), as a watch is: the
        # simulation's figures follow the pods that changed instead of reading them all.
        self.pod_watchers: list[Callable[[PodUID, Obj | None], None]] = []
        self.cycles = 0
        self.scheduler = sim_scheduler(self, self.state, conf)

    # --- the API server ------------------------------------------------------------------------------
    def add(self, obj: Obj) -> None:
        """Create or replace an object of a kind the scheduler watches."""
        kind = obj.get("kind")
        meta = obj.get("metadata") or {}
        if kind == "Node":
            self.nodes[str(meta.get("name"))] = obj
            self.cache.upsert_node(obj)
        elif kind == "Queue":
            self.queues[str(meta.get("name"))] = obj
            self.cache.upsert_queue(obj)
        elif kind == "PriorityClass":
            self.cache.upsert_priority_class(obj)
        elif kind == "PodGroup":
            key = group_key(str(meta.get("namespace") or "default"), str(meta.get("name")))
            self.podgroups[key] = obj
            self.cache.upsert_podgroup(obj)
            self.dirty.add(key)
        elif kind in _READ_ONLY:
            self.cache.handlers()[_READ_ONLY[kind]].upsert(obj)
        elif kind == "Pod":
            uid = PodUID(str(meta.get("uid")))
            self.pods[uid] = obj
            self._names[(str(meta.get("namespace") or "default"), str(meta.get("name")))] = uid
            if meta.get("deletionTimestamp"):
                self._terminating.add(uid)
            self._stored(uid)
        else:
            raise ValueError(f"the simulated cluster holds no {kind!r} objects")

    def _stored(self, uid: PodUID, seen: Pod | None = None) -> None:
        raw = self.pods[uid]
        pod = self.cache.upsert_pod(raw, seen=seen)
        if pod is not None:
            self.dirty.add(pod_group_key(pod))
        for watch in self.pod_watchers:
            watch(uid, raw)

    def uid_of(self, namespace: str, name: str) -> PodUID | None:
        return self._names.get((namespace, name))

    def edit_pod(self, uid: PodUID, change: Callable[[Obj], object], seen: Pod | None = None) -> None:
        """Replace pod ``uid`` by ``change`` applied to a copy; ``seen``: the model of the result when the
        caller knows it (else the cache parses the new object)."""
        old = self.pods[uid]
        # A new object, as the API server returns one; the parts ``change`` may edit are copied.
        meta = dict(old.get("metadata") or {})
        meta["annotations"] = dict(meta.get("annotations") or {})
        raw = {**old, "metadata": meta, "spec": dict(old["spec"]), "status": dict(old.get("status") or {})}
        change(raw)
        self.pods[uid] = raw
        self._stored(uid, seen)

    def set_phase(self, uid: PodUID, phase: str) -> None:
        self.edit_pod(uid, lambda p: p.setdefault("status", {}).__setitem__("phase", phase))

    def delete_pod(self, uid: PodUID) -> None:
        raw = self.pods.pop(uid, None)
        if raw is None:
            return
        meta = raw.get("metadata") or {}
        self._names.pop((str(meta.get("namespace") or "default"), str(meta.get("name"))), None)
        pod = self.cache.pod(uid)
        if pod is not None:
            self.dirty.add(pod_group_key(pod))
        self.cache.remove_pod(raw)
        for watch in self.pod_watchers:
            watch(uid, None)

    def delete_podgroup(self, key: GroupKey) -> None:
        raw = self.podgroups.pop(key, None)
        if raw is not None:
            self.cache.remove_podgroup(raw)
        self.dirty.discard(key)

    # --- kube-scheduler and the kubelet --------------------------------------------------------------
    def bind(self, uid: PodUID, node: str) -> None:
        """The Binding the scheduler posts: the pod is on ``node`` and, as a kubelet would start it, runs."""

        def run(p: Obj) -> None:
            p["spec"]["nodeName"] = node
            p.setdefault("status", {})["phase"] = "Running"

        # The bound pod's model is the stored one on ``node`` and running: nothing else a parse reads
        # changes (a bind per pod is the simulation's commonest write; parsing it again cost as much as
        # creating the pod).
        stored = self.cache.pod(uid)
        seen = None if stored is None else replace(stored, node_name=intern(node), phase=PodPhase.RUNNING)
        self.edit_pod(uid, run, seen)
        self.bound[uid] = node

    def evict(self, uid: PodUID) -> None:
        raw = self.pods.get(uid)
        pod = self.cache.pod(uid)
        if raw is None or pod is None:
            return
        self._record_eviction(pod)
        self.delete_pod(uid)
        self._evicted.append((uid, raw))

    def _record_eviction(self, pod: Pod) -> None:
        """Report ``pod``'s eviction with the reason the scheduler gave for it (if it gave one)."""
        why = self.eviction_reasons.pop(pod.uid, None)
        if why is not None:
            self.evictions.append(
                Evicted(
                    at=self.now,
                    pod=pod.key,
                    node=pod.node_name,
                    reason=why.reason,
                    message=why.message,
                    by=why.by,
                )
            )

    def _bind_plans(self) -> int:
        n = 0
        for uid, node in sorted(self.ledger.plans().items()):
            raw = self.pods.get(uid)
            if raw is None or self.ledger.waiting_for(uid):
                continue
            meta = raw["metadata"]
            args: wire.ExtenderBindingArgs = {
                "PodName": meta["name"],
                "PodNamespace": meta.get("namespace") or "default",
                "PodUID": uid,
                "Node": node,
            }
            if not run_now(self.scheduler.verbs.bind(args)):
                n += 1
        return n

    def _sync_phases(self) -> None:
        """What the status writer does for the groups that changed: the phase their pods now give."""
        plans = {str(u) for u in self.ledger.plans()}
        for key in sorted(self.dirty):
            raw, group = self.podgroups.get(key), self.cache.group(key)
            if raw is None or group is None:
                continue
            pods = [p for u in self.cache.members(key) if (p := self.cache.pod(u)) is not None]
            counts = MemberCounts.of(pods, plans)
            phase = next_phase(
                group.phase, admitted=is_admitted(group.phase), counts=counts, min_member=group.min_member
            )
            status = raw.get("status") or {}
            if status.get("phase") != phase.value or status.get("running") != counts.running:
                raw = {
                    **raw,
                    "status": {
                        **status,
                        "phase": phase.value,
                        "running": counts.running,
                        "succeeded": counts.succeeded,
                        "failed": counts.failed,
                    },
                }
                self.podgroups[key] = raw
                self.cache.upsert_podgroup(raw)
        self.dirty.clear()

    def step(self, *, force: bool = False) -> bool:
        """One cycle (when anything changed since the last, or ``force``), its binds, the phases that
        follow, and the owners' answers to evictions; whether anything changed."""
        before = (self.cache.version, self.ledger.plan_version)
        cycles = self.scheduler.shared.stats.cycles
        if force:
            self.scheduler.loop.cycle()
        elif self.state.pending.waiting_groups() or self.cache.unfinished_groups():
            self.scheduler.loop.ensure_fresh()
        else:  # nothing waits: the real loop's cycle would find no work
            self.scheduler.loop.mark_fresh()
        self.cycles += self.scheduler.shared.stats.cycles - cycles
        for uid in sorted(self._terminating):
            self.delete_pod(uid)
        self._terminating.clear()
        bound = self._bind_plans()
        evicted, self._evicted = self._evicted, []
        for uid, raw in evicted:
            self.on_evicted(uid, raw)
        self._sync_phases()
        if bound and not evicted:
            # The binds and phases the cycle's own plans led to: a cycle over them would find nothing new.
            self.scheduler.loop.mark_fresh()
        return (self.cache.version, self.ledger.plan_version) != before

    def settle(self, *, limit: int = 50) -> int:
        """Cycles until nothing changes (at most ``limit`` steps); how many steps ran. A due time that has
        come is cleared first: time passing is the change (groups set aside are looked at again)."""
        force = False
        if self.due is not None and self.due <= self.now:
            self.due = None
            self.state.pending.room_freed()
            force = True
        n = 0
        while n < limit:
            changed = self.step(force=force)
            force = False
            n += 1
            if not changed:
                break
        return n

    def phase(self, key: GroupKey) -> GroupPhase | None:
        g = self.cache.group(key)
        return None if g is None else g.phase
