"""The scheduling room wired: :func:`build_scheduler` builds the parts, :class:`Scheduler` holds them.

- :class:`~controllers.scheduling.shared.SchedulingState`: what the parts share (the state room's cache,
  ledger and pending set; the filter memory; the cycles' reasons; the counters);
- :class:`~controllers.scheduling.writes.Writes`: touches, gate lifts, annotations and evictions, in the
  background, through the :class:`~controllers.scheduling.executor.Executor` port;
- :class:`~controllers.scheduling.loop.Loop`: debounced cycles in a worker thread, their decisions applied;
- :class:`~controllers.scheduling.verbs.Verbs`: filter, prioritize, preempt and bind, answered from the
  ledger (the extender server's ``Backend``).

Each part gets what it needs at construction, and nothing is set on a part after it is built. The simulator
wires the same parts around its own writes and timers (``controllers/simulate/cluster.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from controllers.scheduling.executor import Executor
from controllers.scheduling.loop import CycleReport, Loop
from controllers.scheduling.shared import LoopSettings, SchedulingState
from controllers.scheduling.verbs import Verbs
from controllers.scheduling.writes import Recorder, Writes
from controllers.state.cluster import ClusterState
from extender.core.model import GroupKey
from extender.plugins.registry import SchedulerConf


@dataclass(frozen=True, slots=True, kw_only=True)
class Scheduler:
    shared: SchedulingState
    writes: Writes
    loop: Loop
    verbs: Verbs

    async def run(self) -> None:
        """The loop, until cancelled (a root task of ``pumice serve``)."""
        await self.loop.run()

    async def close(self) -> None:
        """End the writes still under way (at shutdown; a restart loses nothing: cycles decide again)."""
        await self.writes.close()


def build_scheduler(
    cluster: ClusterState,
    conf: SchedulerConf,
    executor: Executor,
    *,
    settings: LoopSettings = LoopSettings(),  # noqa: B008  # frozen: one shared default is safe
    gates: bool = False,
    ready: Callable[[], bool] = lambda: True,
    heartbeat: Callable[[], None] = lambda: None,
    admitted: Callable[[GroupKey], None] = lambda _key: None,
    events: Recorder | None = None,
    clock: Callable[[], float] = time.time,
    on_cycle: Callable[[CycleReport], None] = lambda _report: None,
) -> Scheduler:
    """``gates``: the API server has scheduling gates (k8s >= 1.27); ``ready``: the informers have
    synced; ``heartbeat``: beaten after every completed loop pass; ``admitted``: told when a cycle admits a
    group (before its status write); ``clock``: epoch seconds; ``on_cycle``: told each applied cycle."""
    shared = SchedulingState(cluster, conf, settings=settings, clock=clock)
    writes = Writes(shared, executor, gates=gates, events=events)
    loop = Loop(shared, writes, heartbeat=heartbeat, admitted=admitted, on_cycle=on_cycle)
    return Scheduler(
        shared=shared, writes=writes, loop=loop, verbs=Verbs(shared, loop, executor, ready=ready)
    )
