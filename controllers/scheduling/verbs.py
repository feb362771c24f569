"""The extender verbs kube-scheduler calls: :class:`Verbs` is the ``Backend`` of ``extender/server/app.py``.

``filter`` and ``prioritize`` answer from the ledger the loop keeps (pod → planned node) in O(1) per pod;
``preempt`` checks kube-scheduler's proposed victims against pumice's victim rules on one snapshot; ``bind``
binds only what pumice itself reserved, through the :class:`~controllers.scheduling.executor.Executor`.

Invariants:
- ``filter`` never runs a cycle: it reads the ledger and the shared memory. Planning a pod that has none is
  :meth:`Verbs.prepare`'s, before the filter answer: one inline cycle when at most ``inline_groups``
  groups wait (bounded work), else a bounded wait for the loop's next cycle; never a large backlog's cycle
  on the request path. A pod whose gang is still being created first waits, bounded, for the rest;
- nothing a request body says is cluster state: a pod is read from pumice's own watch, by UID; a pod the
  watch has not shown reserves nothing;
- a refusal kube-scheduler's own filters make of a planned node drops the whole gang's plans, and that
  node is remembered for the pod until the node changes;
- the only I/O is ``bind`` (and the decision annotations a bind must carry first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from controllers.scheduling.executor import BindError, Executor
from controllers.scheduling.loop import Loop
from controllers.scheduling.shared import SchedulingState
from extender.api import wire
from extender.core.model import Pod, PodUID
from extender.core.snapshot import pod_group_key
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.framework.victims import refuse_victims

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


class Verbs:
    def __init__(
        self,
        shared: SchedulingState,
        loop: Loop,
        executor: Executor,
        *,
        ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.shared = shared
        # Asked for an inline cycle by prepare (when little waits) and for nothing else.
        self._loop = loop
        self.executor = executor
        # Readiness comes from the informers; the server answers "not synced" until it holds.
        self._ready = ready

    @property
    def ready(self) -> bool:
        return self._ready()

    @property
    def scheduler_names(self) -> frozenset[str]:
        return self.shared.cache.scheduler_names

    async def prepare(self, uid: PodUID) -> None:
        """Before a filter answer: wait, briefly, for the watch to show a pod kube-scheduler already has
        (its copy can be a few milliseconds ahead of ours), then, if the pod has no plan yet, plan it: inline
        when few groups wait (bounded work), else by waiting for the scheduling loop's next cycle, so a
        filter never carries a large backlog's cycle.
        Polled rather than signalled for the watch, so a made-up UID costs one short bounded wait and
        leaves nothing behind."""
        s = self.shared
        if not uid or s.ledger.planned_node(uid) is not None:
            return
        loop = asyncio.get_running_loop()
        if not s.cache.knows(uid):
            deadline = loop.time() + s.settings.seen_timeout
            while not s.cache.knows(uid):
                if loop.time() >= deadline:
                    return
                await asyncio.sleep(0.005)
        pod = s.cache.pod(uid)
        if pod is None or not pod.waiting or s.ledger.planned_node(uid) is not None:
            return
        await self._rest_of_gang(pod)
        if s.ledger.planned_node(uid) is not None:
            return
        if not s.progress.cycling and s.pending.waiting_groups() <= s.settings.inline_groups:
            # Little is waiting: a cycle costs about what a hand-off to the worker thread does, and
            # kube-scheduler, which calls filter one pod at a time, gets its answer at once.
            self._loop.ensure_fresh()
            return
        # Wait for a cycle whose snapshot already held the pod (the one under way may predate it).
        target = s.cache.version
        s.pending.wakeup.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(s.settings.plan_timeout):
                await s.progress.past(target)

    async def _rest_of_gang(self, pod: Pod) -> None:
        """While ``pod``'s gang is still being created (fewer pods than ``minMember``, and one joined
        within ``gang_idle`` seconds), wait for the rest, at most ``gang_wait`` seconds: kube-scheduler
        takes a gang's pods as they come, and a refusal costs it a failed attempt, a status write and an
        Event, and us a touch later. A gang that stopped growing (a job still short of pods) is answered
        at once."""
        s = self.shared
        key = pod_group_key(pod)
        group = s.cache.group(key)
        if group is None:
            return
        deadline = time.monotonic() + s.settings.gang_wait
        while len(s.cache.members(key)) < group.min_member and s.ledger.planned_node(pod.uid) is None:
            joined = s.pending.joined_at(key)
            now = time.monotonic()
            if joined is None or now - joined > s.settings.gang_idle or now >= deadline:
                return
            await asyncio.sleep(0.01)
            group = s.cache.group(key)
            if group is None:
                return

    def filter(self, raw_pod: Mapping[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        s = self.shared
        uid = PodUID(str((raw_pod.get("metadata") or {}).get("uid") or ""))
        node = s.ledger.planned_node(uid)
        waiting = s.ledger.waiting_for(uid)
        if node is not None and not waiting and node in node_names and uid not in s.annotations:
            return _pinned(node)  # the hot path: an O(1) answer
        if node is not None and uid in s.annotations:
            # Not before the plugin's decision is on the pod; writing it moves the pod back in line.
            return _refused(node_names, f"planned on node {node}: writing the placement decision on the pod")
        if waiting:
            # The room is held; kube-scheduler retries once the victims' deletion shows.
            return _refused(node_names, f"waiting for {len(waiting)} pods to leave node {node}")
        # Everything below reads the pod as pumice's watch shows it, never the request body: a body is
        # not cluster state, and a pod only posted to /filter must not reserve anything.
        pod = s.cache.pod(uid)
        if pod is None:
            problem = s.cache.unreadable_pod(uid)
            if problem is not None:
                return _refused(node_names, f"pumice cannot read this pod: {problem}")
            self._remember_unseen(uid)
            return _refused(node_names, _UNSEEN_REASON)
        s.rejected.add(pod.uid)
        if node is not None:
            # kube-scheduler's own filters refused the planned node (inter-pod affinity, ports, volumes:
            # what we do not model). Remember it for this pod and plan the gang again elsewhere.
            s.refused[pod.uid] = s.refused.get(pod.uid, frozenset()) | {node}
            s.release(pod.uid)
            reason = f"planned node {node} was rejected by kube-scheduler's filters; re-planning"
        else:
            reason = self.reason_for(pod)
        return _refused(node_names, reason)

    def _remember_unseen(self, uid: PodUID) -> None:
        """A pod refused before the watch showed it is touched once it is planned (see Loop._work), like
        any rejected pod. Bounded: made-up UIDs must not grow memory."""
        unseen = self.shared.unseen
        if uid:
            unseen.pop(uid, None)
            unseen[uid] = None
            while len(unseen) > _MAX_UNSEEN:
                del unseen[next(iter(unseen))]

    def reason_for(self, pod: Pod) -> str:
        key = pod_group_key(pod)
        if pod.group_name and self.shared.cache.group(key) is None:
            return f"podgroup {key} does not exist"
        u = self.shared.reasons.get(key)
        return u.message if u is not None else _PENDING_REASON

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]:
        node = self.shared.ledger.planned_node(pod.uid)
        return [{"Host": n, "Score": wire.MAX_EXTENDER_PRIORITY if n == node else 0} for n in node_names]

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]:
        """Keep only the nodes whose victims pumice accepts (:func:`refuse_victims`: gangs stay at
        ``minMember``, no plugin vetoes a victim).

        Our own pods never preempt through kube-scheduler: a gang pod without a plan is waiting for its
        whole gang, and evicting for one member would not place the gang."""
        if ours:
            return {}
        s = self.shared
        # The cycle's clock too: a victim veto may depend on time (cdp's cooldown).
        ssn = Session(s.cache.full_snapshot(), build_hooks(s.conf.tiers()), now=s.clock())
        proposed = {
            n: [PodUID(str(v.get("UID", ""))) for v in mv.get("Pods") or []] for n, mv in victims.items()
        }
        refused = refuse_victims(ssn, proposed)
        for node, why in refused.items():
            log.debug("victims refused", extra={"pod": pod.key, "node": node, "reason": why})
        return {n: mv for n, mv in victims.items() if n not in refused}

    def bind_refusal(self, args: wire.ExtenderBindingArgs) -> str | None:
        """Why pumice will not bind this pod to this node, or None. A bind is carried out only for a pod
        pumice watches, of one of its scheduler names, to the node it holds a reservation on: whoever can
        reach the extender port must not be able to place arbitrary pods."""
        s = self.shared
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"pod {args['PodNamespace']}/{args['PodName']}"
        pod = s.cache.pod(uid)
        if pod is None or (pod.namespace, pod.name) != (args["PodNamespace"], args["PodName"]):
            return f"{who}: no such pod in pumice's view of the cluster"
        if pod.scheduler_name not in s.cache.scheduler_names:
            return f"{who}: not scheduled by pumice (schedulerName {pod.scheduler_name!r})"
        planned = s.ledger.planned_node(uid)
        if s.ledger.waiting_for(uid):
            return f"{who}: its node {planned} still holds the pods it waits for"
        if planned != node:
            return f"{who}: pumice holds no reservation for it on node {node}" + (
                f" (it is planned on {planned})" if planned else ""
            )
        return None

    async def bind(self, args: wire.ExtenderBindingArgs) -> str:
        s = self.shared
        uid, node = PodUID(args["PodUID"]), args["Node"]
        who = f"{args['PodNamespace']}/{args['PodName']}"
        pod = s.cache.pod(uid)
        if (
            pod is not None
            and pod.node_name == node
            and (pod.namespace, pod.name) == (args["PodNamespace"], args["PodName"])
        ):
            return ""  # already bound there (by us, or seen in the watch): a retried bind
        refusal = self.bind_refusal(args)
        if refusal is not None:
            s.stats.binds_refused += 1
            log.warning("bind refused", extra={"pod": who, "node": node, "reason": refusal})
            return refusal
        try:
            if uid in s.annotations:
                await self.executor.annotate(args["PodNamespace"], args["PodName"], s.annotations[uid])
            await self.executor.bind(args["PodNamespace"], args["PodName"], uid, node)
        except BindError as e:
            s.stats.bind_errors += 1
            s.release(uid)
            log.warning("bind failed", extra={"pod": who, "error": str(e)})
            return str(e)
        s.stats.binds += 1
        s.rejected.discard(uid)
        s.touched.pop(uid, None)
        s.annotations.pop(uid, None)
        s.cache.assume_bound(uid, node)
        # The decision was logged at INFO by the cycle that planned it; the bind itself is detail.
        log.debug("bound", extra={"pod": who, "node": node})
        return ""
