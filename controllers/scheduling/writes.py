"""The writes a cycle's decisions lead to, carried out in the background through the :class:`Executor`.

A touch (the planned node annotated on a pod kube-scheduler holds as unschedulable, moving it back into its
active queue, with the gang gate lifted first for a gated pod), a plugin's decision annotations, an eviction
(the DisruptionTarget condition, then the Eviction API), and the Events that tell of them. Each write is a
task owned here (:meth:`Writes.close` ends them) and never blocks the cycle that asked for it.

Invariants:
- what is in flight is noted in the shared state before its task starts (``touched``, ``annotations``,
  ``evicted``), so the next cycle does not ask again;
- a write that fails gives up what it served: a failed gate lift or annotation write drops the gang's plans
  (:meth:`~controllers.scheduling.shared.SchedulingState.release`), and a refused eviction drops the
  reservations waiting for that victim, so a later cycle plans them again. A failed touch of an ungated pod
  drops nothing: kube-scheduler's own retry finds the plan.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any, Protocol

from controllers.events import Ref
from controllers.kube import paths
from controllers.scheduling.executor import Executor
from controllers.scheduling.shared import SchedulingState
from extender.core.model import GroupKey, Pod
from extender.core.timestamps import rfc3339
from extender.framework.result import Eviction

log = logging.getLogger(__name__)


class Recorder(Protocol):
    """Where the Events go (:class:`controllers.events.EventRecorder`, or a test's list)."""

    def record(self, ref: Ref, *, type_: str, reason: str, note: str, action: str) -> None: ...


class Writes:
    def __init__(
        self,
        shared: SchedulingState,
        executor: Executor,
        *,
        gates: bool = False,
        events: Recorder | None = None,
    ) -> None:
        self.shared = shared
        self.executor = executor
        # The API server supports scheduling gates (k8s >= 1.27): a gated pod's gate is lifted when touched.
        self.gates = gates
        self.events = events
        self._tasks: set[asyncio.Task[None]] = set()

    # --- what the loop asks for ------------------------------------------------------------------------
    def touch(self, pod: Pod, node: str) -> None:
        """Move a pod planned on ``node`` back into kube-scheduler's active queue (lifting its gate)."""
        self.shared.touched[pod.uid] = node
        self.shared.touch_times[pod.uid] = self.shared.clock()
        self._spawn(self._touch(pod, node))

    def annotate(self, pod: Pod, annotations: dict[str, str]) -> None:
        """Write a plugin's decision on a planned pod; the filter holds the pod back until it is written."""
        self.shared.annotations[pod.uid] = annotations
        self._spawn(self._annotate(pod, annotations))

    def evict(self, pod: Pod, why: Eviction) -> None:
        self.shared.evicted[pod.uid] = why
        self._spawn(self._evict(pod, why))

    def gang_planned(self, key: GroupKey, placed: list[str]) -> None:
        """An Event on a PodGroup whose whole gang got nodes in this cycle (kube-scheduler binds next)."""
        group = self.shared.cache.group(key)
        if self.events is None or group is None or group.implicit:
            return
        ref = Ref(
            api_version=paths.PODGROUPS.api_version,
            kind="PodGroup",
            name=group.name,
            namespace=group.namespace,
            uid=group.uid,
        )
        # A "+" marks a placement that waits for evicted pods to leave its node (pipelined).
        waiting = sum(p.endswith("+") for p in placed)
        nodes = sorted({p.rstrip("+") for p in placed})
        where = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
        note = f"{len(placed)} pods planned (minMember {group.min_member}) on {where}"
        if waiting:
            note += f"; {waiting} of them once evicted pods have left"
        self.events.record(ref, type_="Normal", reason="GangPlanned", note=note, action="Schedule")

    async def close(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # --- the writes themselves -------------------------------------------------------------------------
    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _touch(self, pod: Pod, node: str) -> None:
        try:
            if pod.gated and self.gates:
                await self.executor.lift_gate(pod.namespace, pod.name)
            await self.executor.touch_planned(pod.namespace, pod.name, node)
            self.shared.stats.touches += 1
        except Exception as e:
            self.shared.touched.pop(pod.uid, None)
            log.warning("touch failed", extra={"pod": pod.key, "error": str(e)})
            if pod.gated and self.gates:
                # No later cycle touches a pod that keeps its plan, and a gated pod never reaches
                # kube-scheduler: drop the gang's plans, so the next cycle plans and lifts again.
                self.shared.release(pod.uid)
            # (an ungated pod: kube-scheduler's own retry finds the plan)

    async def _annotate(self, pod: Pod, annotations: dict[str, str]) -> None:
        """The update also moves the pod out of kube-scheduler's unschedulable queue, where the filter's
        "not yet" put it. A failure drops the gang's plans: the next cycle plans (and writes) again."""
        try:
            await self.executor.annotate(pod.namespace, pod.name, annotations)
        except Exception as e:
            log.warning("writing the pod's decision failed", extra={"pod": pod.key, "error": str(e)})
            if self.shared.annotations.get(pod.uid) is annotations:
                self.shared.release(pod.uid)
            return
        if self.shared.annotations.get(pod.uid) is annotations:
            del self.shared.annotations[pod.uid]

    async def _evict(self, pod: Pod, why: Eviction) -> None:
        """Mark the victim and evict it; if the API refuses (a PodDisruptionBudget), the reservations
        waiting for it are given up and planned again."""
        note = f"{why.reason}: {why.message}"
        stats = self.shared.stats
        try:
            await self.executor.mark_disrupted(
                pod.namespace, pod.name, why.reason, why.message, rfc3339(time.time())
            )
            refused = await self.executor.evict(pod.namespace, pod.name, str(pod.uid))
        except Exception as e:  # a network error: the next cycle decides again
            refused = repr(e)
        if refused is None:
            stats.evictions += 1
            stats.eviction_reasons[why.reason] = stats.eviction_reasons.get(why.reason, 0) + 1
            log.info("evicted", extra={"pod": pod.key, "reason": why.reason, "by": why.by})
            self._record(pod, "Normal", why.reason, note)
            return
        stats.eviction_errors += 1
        self.shared.evicted.pop(pod.uid, None)
        log.warning("eviction refused", extra={"pod": pod.key, "by": why.by, "error": refused})
        self._record(pod, "Warning", "EvictionRefused", f"not evicted for {why.by}: {refused}")
        for waiter in self.shared.ledger.stay(pod.uid):
            self.shared.release(waiter)

    def _record(self, pod: Pod, type_: str, reason: str, note: str) -> None:
        if self.events is not None:
            ref = Ref(api_version="v1", kind="Pod", name=pod.name, namespace=pod.namespace, uid=str(pod.uid))
            self.events.record(ref, type_=type_, reason=reason, note=note, action="Preempt")
