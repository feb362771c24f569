"""The scheduling loop and the state the extender verbs read.

The loop runs a cycle (enqueue, allocate, backfill) against a cache snapshot whenever the cache changes
(debounced) and at least every ``resync`` seconds, its pure part in a worker thread. Its output is a plan
book (pod → node): kube-scheduler's filter calls are answered from it in O(1). A filter for a pod with no
plan cycles inline when few groups wait, else waits (bounded) for the loop's next cycle, so a pod that can
be placed is placed on its first attempt and no filter carries a large backlog's cycle.

After a cycle: admitted groups turn Inqueue in the cache (the status writer persists it); pods that
kube-scheduler already found unschedulable and now have a plan are touched (annotated with the planned
node), which moves them back to kube-scheduler's active queue at once; gated pods (k8s >= 1.27) of a
whole planned gang get their gate lifted.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from controllers.cache import ClusterCache
from controllers.executor import BindError, Executor
from controllers.plans import PlanBook
from extender.api import wire
from extender.core.gang import MemberCounts
from extender.core.model import GroupKey, GroupPhase, Pod, PodUID
from extender.core.snapshot import Snapshot, pod_group_key
from extender.framework.actions import NOT_ENOUGH_RESOURCES
from extender.framework.session import CycleResult, Session, Unschedulable
from extender.plugins.registry import SchedulerConf, schedule

log = logging.getLogger(__name__)

_PENDING_REASON = "waiting for the gang to be planned"


_UNSEEN_REASON = "pumice's watch has not shown this pod yet; it reserves nothing until it does"
_MAX_UNSEEN = 4096


def _pinned(node: str) -> wire.ExtenderFilterResult:
    return {"NodeNames": [node], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}


def _refused(node_names: list[str], reason: str) -> wire.ExtenderFilterResult:
    """No node, with the reason on each. Unresolvable: kube-scheduler's own preemption cannot help a pod
    that waits for pumice (its gang, its queue, its turn), and trying it costs a dry run per node."""
    return {
        "NodeNames": [],
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": dict.fromkeys(node_names, reason),
        "Error": "",
    }


class Scheduler:
    def __init__(
        self,
        cache: ClusterCache,
        conf: SchedulerConf,
        executor: Executor,
        *,
        gates: bool = False,
        resync: float = 1.0,
        debounce: float = 0.02,
        seen_timeout: float = 1.0,
        plan_timeout: float = 1.0,
        inline_groups: int = 64,
        heartbeat: Callable[[], None] = lambda: None,
    ) -> None:
        self.cache = cache
        self.conf = conf
        self.executor = executor
        self.gates = gates
        self.resync = resync
        self.debounce = debounce
        self.seen_timeout = seen_timeout
        self.plan_timeout = plan_timeout
        # At most this many groups with waiting pods, a filter for an unplanned pod cycles inline.
        self.inline_groups = inline_groups
        self.heartbeat = heartbeat
        # Pods refused at filter before the watch showed them (bounded, oldest dropped first).
        self.unseen: dict[PodUID, None] = {}
        self.plans = PlanBook()
        self.reasons: dict[GroupKey, Unschedulable] = {}
        self.rejected: set[PodUID] = set()
        self.touched: dict[PodUID, str] = {}
        self.backlog: set[GroupKey] = set()
        # Groups the last cycle found short of room, untouched since (see Snapshot.settled).
        self.settled: set[GroupKey] = set()
        # Per waiting pod, nodes kube-scheduler's filters refused after we planned it there.
        self.refused: dict[PodUID, frozenset[str]] = {}
        self._cycled_at: tuple[int, int] = (-1, -1)
        self._wake = asyncio.Event()
        # Set (and replaced) after every cycle: a filter waiting for its pod's plan awaits it.
        self._cycle_done = asyncio.Event()
        self._snapshot_version = -1
        self._cycling = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = {
            "cycles": 0,
            "cycle_seconds": 0.0,
            "binds": 0,
            "bind_errors": 0,
            "binds_refused": 0,
            "touches": 0,
            "stale_groups": 0,
            "cycle_errors": 0,
        }
        cache.listeners.append(lambda _kind: self._wake.set())
        # Readiness comes from the informers (set by the composition root); verbs wait for it.
        self.ready_fn: Callable[[], bool] = lambda: True

    @property
    def ready(self) -> bool:
        return self.ready_fn()

    @property
    def scheduler_names(self) -> frozenset[str]:
        return self.cache.scheduler_names

    # --- cycle -------------------------------------------------------------------------------------
    def _prepare(self) -> Snapshot:
        """On the event loop: drain the changes and take an immutable snapshot of the work."""
        snap = self.cache.snapshot(self.plans, self._work(), dict(self.refused))
        if self.settled:
            snap = dataclasses.replace(snap, settled=frozenset(k for k in self.settled if k in snap.groups))
        self._cycled_at = (self.cache.version, self.plans.version)
        self._snapshot_version = self.cache.version
        self._cycling = True
        return snap

    def cycle(self) -> None:
        """One whole cycle inline (tests, and ``ensure_fresh``); the loop runs :meth:`cycle_off_loop`."""
        t0 = time.perf_counter()
        snap = self._prepare()
        self._apply(snap, schedule(snap, self.conf), t0)

    async def cycle_off_loop(self) -> None:
        """The cycle's pure part in a worker thread, so filters, webhooks and informers keep running
        meanwhile (numpy releases the GIL for most of it); its decisions are applied back here, minus
        any a newer event made stale (see :meth:`_apply`)."""
        t0 = time.perf_counter()
        snap = self._prepare()
        result = await asyncio.to_thread(schedule, snap, self.conf)
        self._apply(snap, result, t0)

    def _stale_groups(self, snap: Snapshot, placements: Mapping[PodUID, str]) -> set[GroupKey]:
        """Groups whose placements must not be applied: one of their pods changed or went since the
        snapshot, a node they use changed or went, or a node would be over capacity with what happened
        meanwhile (pods bound by others, other reservations). Dropped whole, so a gang stays whole; the
        next cycle plans them again."""
        stale: set[GroupKey] = set()
        by_node: dict[str, list[PodUID]] = {}
        for uid, node in placements.items():
            key = pod_group_key(snap.pods[uid])
            if self.cache.pods.get(uid) is not snap.pods[uid] or uid in self.plans:
                stale.add(key)
            by_node.setdefault(node, []).append(uid)
        for node, uids in by_node.items():
            current = self.cache.nodes.get(node)
            if current is None or current is not snap.nodes[snap.node_pos[node]]:
                stale.update(pod_group_key(snap.pods[u]) for u in uids)
                continue
            need: dict[str, int] = {}
            for u in uids:
                for k, v in snap.pods[u].requests.items():
                    need[k] = need.get(k, 0) + v
            used = self.cache.node_usage.by_node.get(node, {})
            reserved = self.plans.reserved.by_node.get(node, {})
            if any(
                used.get(k, 0) + reserved.get(k, 0) + v > current.allocatable.get(k, 0)
                for k, v in need.items()
            ):
                stale.update(pod_group_key(snap.pods[u]) for u in uids)
        return stale

    def _apply(self, snap: Snapshot, result: CycleResult, t0: float) -> None:
        # Did anything happen while the pure part ran? Then some decisions may be stale, and what happened
        # still needs a cycle of its own: the versions of the snapshot stay recorded, so the loop runs again.
        external = self._cycled_at != (self.cache.version, self.plans.version)
        stale = self._stale_groups(snap, result.placements) if external else set()
        planned = 0
        for uid, node in result.placements.items():
            pod = snap.pods[uid]
            if pod_group_key(pod) in stale:
                continue
            planned += 1
            self.plans.add(uid, node, pod.requests, self.cache.pod_queue(pod))
            if (uid in self.rejected or pod.gated) and self.touched.get(uid) != node:
                self.touched[uid] = node
                self._spawn(self._touch(pod, node))
        for key in result.admitted:
            self.cache.set_group_phase(key, GroupPhase.INQUEUE)
        # Settled groups were not looked at: their reasons stand as the earlier cycle gave them.
        reasons = {k: self.reasons[k] for k in snap.settled if k in self.reasons}
        reasons.update(result.unschedulable)
        self.reasons = reasons
        self.settled = {
            k
            for k, u in reasons.items()
            if u.reason == NOT_ENOUGH_RESOURCES and k not in stale and self.cache.has_unplanned(k, self.plans)
        }
        # Groups still holding pods without a plan are looked at again next cycle; the rest only
        # when one of their pods changes (see _work).
        self.backlog = {k for k in snap.groups if self.cache.has_unplanned(k, self.plans)} | stale
        self.stats["stale_groups"] += len(stale)
        if external:
            self._wake.set()
        else:  # only our own changes since the snapshot: nothing new to look at
            self._cycled_at = (self.cache.version, self.plans.version)
        self.stats["cycles"] += 1
        self.stats["cycle_seconds"] += time.perf_counter() - t0
        self._cycling = False
        self._cycle_done.set()
        self._cycle_done = asyncio.Event()
        if planned or result.unschedulable:
            log.info(
                "cycle",
                extra={
                    "planned": planned,
                    "admitted": len(result.admitted),
                    "unschedulable": len(result.unschedulable),
                    "stale": len(stale),
                    "ms": round((time.perf_counter() - t0) * 1000, 2),
                },
            )

    def _work(self) -> set[GroupKey]:
        """The groups this cycle must look at: the backlog, groups whose pods changed, and PodGroups
        not running yet. Plans of pods that were bound, finished or deleted leave the book here."""
        changed, groups, nodes_changed, broad = self.cache.drain_changes()
        if nodes_changed:
            self.plans.prune(self.cache.plan_is_live)
        if broad or nodes_changed:
            self.settled.clear()  # room, nodes, queues or priorities changed: any group may fit now
            self.backlog.update(self.cache.waiting)
        self.backlog.update(groups)
        self.settled.difference_update(groups)
        for uid in changed:
            node = self.plans.get(uid)
            if node is not None and not self.cache.plan_is_live(uid, node):
                self.plans.discard(uid)
                self.settled.clear()  # a reservation freed its room
            pod = self.cache.pods.get(uid)
            if pod is None or not pod.waiting:
                # Bound, finished or deleted: nothing more to remember about its filtering.
                self.refused.pop(uid, None)
                self.rejected.discard(uid)
                self.touched.pop(uid, None)
            if pod is not None and pod.scheduler_name in self.cache.scheduler_names:
                self.backlog.add(pod_group_key(pod))
                self.settled.discard(pod_group_key(pod))
                if uid in self.unseen and pod.waiting:
                    del self.unseen[uid]
                    self.rejected.add(uid)
        work = {k for k in self.backlog if self.cache.has_unplanned(k, self.plans)}
        return work | self.cache.unfinished_groups()

    def ensure_fresh(self) -> None:
        if self._cycled_at != (self.cache.version, self.plans.version):
            self.cycle()

    async def run(self) -> None:
        """Cycle on every change (debounced) and every ``resync`` seconds. A cycle that raises is logged
        and counted and the loop goes on; it beats only after a cycle that completes, so a cycle that
        always fails turns /healthz unhealthy instead of leaving a process that schedules nothing."""
        while True:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancellation that arrives as
            # the wait completes, which left a zombie process serving a healthy /healthz.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.resync):
                    await self._wake.wait()
            self._wake.clear()
            # The short delay batches what arrives together (a gang's pods), also when a waiting filter
            # woke the loop: a cycle per pod would plan gangs before they are whole.
            await asyncio.sleep(self.debounce)
            try:
                if self._cycled_at != (self.cache.version, self.plans.version):
                    await self.cycle_off_loop()
            except Exception:
                self.stats["cycle_errors"] += 1
                log.exception("scheduling cycle failed")
                self._cycling = False
                self._cycle_done.set()  # waiting filters answer from what is known
                self._cycle_done = asyncio.Event()
                continue
            self.heartbeat()

    # --- background writes -----------------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _touch(self, pod: Pod, node: str) -> None:
        try:
            if pod.gated and self.gates:
                await self.executor.lift_gate(pod.namespace, pod.name)
            await self.executor.touch_planned(pod.namespace, pod.name, node)
            self.stats["touches"] += 1
        except Exception as e:  # retried by a later cycle; meanwhile kube-scheduler's own retry applies
            self.touched.pop(pod.uid, None)
            log.warning("touch failed", extra={"pod": pod.key, "error": str(e)})

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- extender verbs (no I/O but bind) --------------------------------------------------------------
    async def prepare(self, uid: PodUID) -> None:
        """Before a filter answer: wait, briefly, for the watch to show a pod kube-scheduler already has
        (its copy can be a few milliseconds ahead of ours), then, if the pod has no plan yet, plan it: inline
        when few groups wait (bounded work), else by waiting for the scheduling loop's next cycle, so a
        filter never carries a large backlog's cycle.
        Polled rather than signalled for the watch, so a made-up UID costs one short bounded wait and
        leaves nothing behind."""
        if not uid or uid in self.plans:
            return
        loop = asyncio.get_running_loop()
        if not self._known(uid):
            deadline = loop.time() + self.seen_timeout
            while not self._known(uid):
                if loop.time() >= deadline:
                    return
                await asyncio.sleep(0.005)
        pod = self.cache.pods.get(uid)
        if pod is None or not pod.waiting or uid in self.plans:
            return
        if not self._cycling and len(self.cache.waiting) <= self.inline_groups:
            # Little is waiting: a cycle costs about what a hand-off to the worker thread does, and
            # kube-scheduler, which calls filter one pod at a time, gets its answer at once.
            self.ensure_fresh()
            return
        # Wait for a cycle whose snapshot already held the pod (the one under way may predate it).
        target = self.cache.version
        self._wake.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.plan_timeout):
                while self._snapshot_version < target or self._cycling:
                    await self._cycle_done.wait()

    def _known(self, uid: PodUID) -> bool:
        return uid in self.cache.pods or uid in self.cache.unreadable_pods

    def filter(self, raw_pod: Mapping[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        uid = PodUID(str((raw_pod.get("metadata") or {}).get("uid") or ""))
        node = self.plans.get(uid)
        if node is not None and node in node_names:  # the hot path: an O(1) answer from the plan
            return _pinned(node)
        # Everything below reads the pod as pumice's watch shows it, never the request body: a body is
        # not cluster state, and a pod only posted to /filter must not reserve anything.
        pod = self.cache.pods.get(uid)
        if pod is None:
            problem = self.cache.unreadable_pods.get(uid)
            if problem is not None:
                return _refused(node_names, f"pumice cannot read this pod: {problem}")
            self._remember_unseen(uid)
            return _refused(node_names, _UNSEEN_REASON)
        if node is not None and node in node_names:
            return _pinned(node)
        self.rejected.add(pod.uid)
        if node is not None:
            # kube-scheduler's own filters refused the planned node (inter-pod affinity, ports, volumes:
            # what we do not model). Remember it for this pod and plan the gang again elsewhere.
            self.refused[pod.uid] = self.refused.get(pod.uid, frozenset()) | {node}
            self._release(pod.uid)
            reason = f"planned node {node} was rejected by kube-scheduler's filters; re-planning"
        else:
            reason = self.reason_for(pod)
        return _refused(node_names, reason)

    def _remember_unseen(self, uid: PodUID) -> None:
        """A pod refused before the watch showed it is touched once it is planned (see _work), like any
        rejected pod. Bounded: made-up UIDs must not grow memory."""
        if uid:
            self.unseen.pop(uid, None)
            self.unseen[uid] = None
            while len(self.unseen) > _MAX_UNSEEN:
                del self.unseen[next(iter(self.unseen))]

    def reason_for(self, pod: Pod) -> str:
        key = pod_group_key(pod)
        if pod.group_name and key not in self.cache.podgroups:
            return f"podgroup {key} does not exist"
        u = self.reasons.get(key)
        return u.message if u is not None else _PENDING_REASON

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]:
        node = self.plans.get(pod.uid)
        return [{"Host": n, "Score": wire.MAX_EXTENDER_PRIORITY if n == node else 0} for n in node_names]

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]:
        """Keep only nodes whose victims leave every running gang at ``minMember`` or more.

        Our own pods never preempt through kube-scheduler: a gang pod without a plan is waiting for its
        whole gang, and evicting for one member would not place the gang."""
        if ours:
            return {}
        snap = self.cache.full_snapshot(self.plans)
        ssn = Session(snap, self.conf.tiers())  # the conf's victim rules (conformance) apply here too
        out: dict[str, wire.MetaVictims] = {}
        for node, mv in victims.items():
            lost: dict[GroupKey, int] = {}
            ok = True
            for v in mv.get("Pods") or []:
                vp = snap.pods.get(PodUID(str(v.get("UID", ""))))
                if vp is None:
                    continue
                if ssn.victim_reject(vp) is not None:
                    ok = False
                    break
                key = snap.group_of(vp.uid)
                if key is not None and key in snap.groups and vp.scheduler_name in self.cache.scheduler_names:
                    lost[key] = lost.get(key, 0) + 1
            for key, n in lost.items():
                counts = MemberCounts.of(snap.pods[u] for u in snap.members.get(key, ()))
                if counts.allocated + counts.succeeded - n < snap.groups[key].min_member:
                    ok = False
            if ok:
                out[node] = mv
        return out

    def bind_refusal(self, args: wire.ExtenderBindingArgs) -> str | None:
        """Why pumice will not bind this pod to this node, or None. A bind is carried out only for a pod
        pumice watches, of one of its scheduler names, to the node it holds a reservation on: whoever can
        reach the extender port must not be able to place arbitrary pods."""
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"pod {args['PodNamespace']}/{args['PodName']}"
        pod = self.cache.pods.get(uid)
        if pod is None or (pod.namespace, pod.name) != (args["PodNamespace"], args["PodName"]):
            return f"{who}: no such pod in pumice's view of the cluster"
        if pod.scheduler_name not in self.cache.scheduler_names:
            return f"{who}: not scheduled by pumice (schedulerName {pod.scheduler_name!r})"
        planned = self.plans.get(uid)
        if planned != node:
            return f"{who}: pumice holds no reservation for it on node {node}" + (
                f" (it is planned on {planned})" if planned else ""
            )
        return None

    async def bind(self, args: wire.ExtenderBindingArgs) -> str:
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"{args['PodNamespace']}/{args['PodName']}"
        pod = self.cache.pods.get(uid)
        if (
            pod is not None
            and pod.node_name == node
            and (pod.namespace, pod.name)
            == (
                args["PodNamespace"],
                args["PodName"],
            )
        ):
            return ""  # already bound there (by us, or seen in the watch): a retried bind
        refusal = self.bind_refusal(args)
        if refusal is not None:
            self.stats["binds_refused"] += 1
            log.warning("bind refused", extra={"pod": who, "node": node, "reason": refusal})
            return refusal
        try:
            await self.executor.bind(args["PodNamespace"], args["PodName"], uid, node)
        except BindError as e:
            self.stats["bind_errors"] += 1
            self._release(uid)
            log.warning("bind failed", extra={"pod": who, "error": str(e)})
            return str(e)
        self.stats["binds"] += 1
        self.plans.discard(uid)
        self.rejected.discard(uid)
        self.touched.pop(uid, None)
        self.cache.assume_bound(uid, node)
        # The decision was logged at INFO by the cycle that planned it; the bind itself is detail.
        log.debug("bound", extra={"pod": who, "node": node})
        return ""

    def _release(self, uid: PodUID) -> None:
        """Drop the plans of ``uid``'s whole group so the gang is planned again from scratch. Membership
        comes from the cache: a fully planned gang is in no recent (work-only) snapshot."""
        self.plans.discard(uid)
        self.settled.clear()  # the released reservations free room
        pod = self.cache.pods.get(uid)
        if pod is not None:
            key = pod_group_key(pod)
            for u in self.cache.members.get(key, ()):
                self.plans.discard(u)
            self.backlog.add(key)
        self._wake.set()
