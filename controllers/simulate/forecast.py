"""When will each waiting job start: the scheduler run forward on a virtual clock, from a live state.

:func:`forecast` is the one entry point, for ``pumice serve`` (``controllers/forecast``), for trace mode's
accuracy report (:mod:`controllers.simulate.forecast_trace`) and for the benchmark. It takes a copy of the
cluster cache's objects (:class:`~controllers.state.models.ClusterModels`), the conf, when each running
group started and how long each group is expected to run, and returns a
:class:`~extender.forecast.model.Forecast`: each waiting PodGroup's position (the allocate action's own
turns, :mod:`extender.forecast.positions`) and its start.

How: the objects are loaded into a :class:`~controllers.simulate.forecast_cluster.ForecastCluster` (the
simulator's cluster around the real scheduler) and the clock moves from one expected end to the next.
At each step the groups whose time has come end (their pods and PodGroup go), the scheduler cycles until
nothing changes, and the groups whose gang turned whole have started; a group that starts is given its
own expected end. Nothing else arrives: a job submitted later that goes first is the forecast's error.
With exact runtimes and nothing arriving, the forecast is exact (a test holds it to the trace).

Cost: a step is a cycle of the real scheduler, so steps are what is bounded, and a cycle looks only at
the groups that could start in it (:mod:`controllers.simulate.forecast_cluster`: not those short of room,
nor those behind alike groups that take the room first, nor, once the cycle has shown it, those behind the
heads of the lines that the room left at their turn could not hold). Ends that let no waiting group fit
the free room are taken without a cycle; ends closer than ``min_step`` (or ``resolution`` of their distance
from now) share one; and once the ends left outnumber the steps left (``max_steps``),
steps widen to fit. Within a shared step, which groups start is the cycle's decision; when each started
is read from the ends of that step: the first end after which the room freed so far (summed over nodes)
holds every group started before it in the cluster's order and itself, a lower bound of the exact answer
that the per-node fit rarely moves. Widened steps cost accuracy (small jobs no longer slip in between
the ends of one step): ``docs/src/forecast.md`` has the figures.

Ranges: a group's ``earliest``/``latest`` are those of the end that let it start (for a running job, its
start plus its runtime's ``low``/``high``; for a job that starts in the forecast, its own range plus its
runtime's), so the spread of every runtime along the chain of jobs it waits on adds up.

What cannot be said: a group still waiting once every known end has passed is ``Unknown`` if it starts
when the running jobs without an expected runtime end too (the forecast ends them all and cycles once
more), else ``WillNotStart`` with the scheduler's own reason (too big for any node, over its queue's
capability, a closed queue). A forecast that reaches ``horizon`` or ``max_steps`` leaves the rest
``Unknown`` (later than that).
"""

from __future__ import annotations

import dataclasses
import heapq
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import islice

import numpy as np
import numpy.typing as npt

from controllers.simulate.forecast_cluster import ForecastCluster
from controllers.simulate.forecast_standins import with_standins
from controllers.state.models import ClusterModels
from extender.core.model import GroupKey, Pod, PodUID
from extender.core.snapshot import Aside, pod_group_key
from extender.core.timestamps import epoch, rfc3339
from extender.forecast.model import Forecast, GroupForecast, Outlook, Position
from extender.forecast.positions import positions, waiting_groups
from extender.forecast.runtimes import Runtime
from extender.plugins.registry import SchedulerConf


@dataclass(frozen=True, slots=True, kw_only=True)
class ForecastSettings:
    """How finely the clock moves: a step takes every end within ``resolution`` of its distance from now
    (at least ``min_step`` seconds, and wider when the ends left would not fit the ``max_steps`` left);
    the forecast stops ``horizon`` seconds ahead or after ``max_steps``. ``window``: how many groups of
    each queue that could fit a cycle looks at (0: all); ``prefilter`` off looks at every group every
    cycle (see :mod:`controllers.simulate.forecast_cluster`; the tests compare)."""

    resolution: float = 0.0
    min_step: float = 1.0
    horizon: float = 30 * 86400.0
    max_steps: int = 200
    window: int = 0
    prefilter: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ForecastInput:
    """What a forecast starts from, taken at ``now`` (epoch seconds): the cache's objects, the expected
    runtime of every group that has one (running or waiting), when each running group started, and the
    live scheduler's settled groups and what they weigh (``aside``; empty: every group is looked at)."""

    models: ClusterModels
    now: float
    runtimes: Mapping[GroupKey, Runtime] = field(default_factory=dict)
    started: Mapping[GroupKey, float] = field(default_factory=dict)
    aside: Mapping[GroupKey, Aside] = field(default_factory=dict)
    settled: frozenset[GroupKey] = frozenset()


@dataclass(frozen=True, slots=True, order=True)
class _End:
    at: float
    key: GroupKey
    low: float
    high: float


class _Run:
    """One forecast's moving parts: the cluster, the ends to come and what started when."""

    def __init__(self, inp: ForecastInput, conf: SchedulerConf, settings: ForecastSettings) -> None:
        self.inp = inp
        self.settings = settings
        self.now = inp.now
        self.cluster = ForecastCluster(
            conf,
            inp.models,
            now=inp.now,
            aside=inp.aside,
            settled=inp.settled,
            window=settings.window,
            prefilter=settings.prefilter,
        )
        snap = self.cluster.cache.status_snapshot()
        self.positions = positions(snap, conf, inp.now)
        self.cluster.order = {k: p.in_cluster for k, p in self.positions.items()}
        self.waiting = {g.key: g.queue for g in waiting_groups(snap)}
        self.ends: list[_End] = []
        self.unknown: set[GroupKey] = set()  # running (or started) groups with no expected runtime
        self.starts: dict[GroupKey, tuple[float, float, float]] = {}
        self.steps = 0
        # Set once every known end has passed: groups still waiting then are Unknown or WillNotStart.
        self.exhausted = False
        self.unknown_started: set[GroupKey] = set()
        self._binds_seen = 0  # of the cluster's binds (in order), those _newly has looked at
        ours = inp.models.scheduler_names
        by_group: dict[GroupKey, list[Pod]] = {}
        for p in inp.models.pods:
            if p.scheduler_name in ours and p.holds_resources:
                by_group.setdefault(pod_group_key(p), []).append(p)
        for key, pods in by_group.items():
            if key not in self.waiting:
                start = (
                    inp.started.get(key) or max(p.scheduled_at or epoch(p.created) for p in pods) or inp.now
                )
                self._expect(key, start, start, start)

    def _expect(self, key: GroupKey, start: float, low: float, high: float) -> None:
        rt = self.inp.runtimes.get(key)
        if rt is None:
            self.unknown.add(key)
            return
        end = max(start + rt.seconds, self.now)
        self.ends.append(_End(end, key, max(low + rt.low, self.now), max(high + rt.high, end)))

    def _end(self, key: GroupKey) -> npt.NDArray[np.int64]:
        """End group ``key``: its pods and PodGroup go. The room its pods held, by the table's names."""
        names = self.cluster.names()
        freed = np.zeros(len(names), dtype=np.int64)
        for uid in sorted(self.cluster.cache.members(key)):
            pod = self.cluster.cache.pod(uid)
            if pod is not None and pod.holds_resources:
                freed += _vector(pod, names)
            self.cluster.delete_pod(PodUID(uid))
        self.cluster.delete_podgroup(key)
        return freed

    def _newly(self, *, every: bool = False) -> list[GroupKey]:
        """Waiting groups whose gang is whole now, in the cluster's order. Only those with a pod bound
        since the last call can be (a gang turns whole by binds alone), unless ``every``: the forecast's
        first look, where gangs may be whole already."""
        binds = list(islice(self.cluster.bound, self._binds_seen, None))
        self._binds_seen += len(binds)
        if every:
            maybe: Iterable[GroupKey] = self.waiting
        else:
            pods = (self.cluster.cache.pod(u) for u in binds)
            maybe = {pod_group_key(p) for p in pods if p is not None} & self.waiting.keys()
        new = [k for k in maybe if k not in self.starts and self.cluster.started(k)]
        pos = self.positions
        return sorted(new, key=lambda k: (pos[k].in_cluster if k in pos else len(pos) + 1, k))

    def _held(self, key: GroupKey, names: tuple[str, ...]) -> npt.NDArray[np.int64]:
        total = np.zeros(len(names), dtype=np.int64)
        for u in self.cluster.cache.members(key):
            pod = self.cluster.cache.pod(u)
            if pod is not None and pod.holds_resources:
                total += _vector(pod, names)
        return total

    def _started(
        self,
        batch: list[_End],
        before: npt.NDArray[np.int64],
        freed: list[npt.NDArray[np.int64]],
        *,
        every: bool = False,
    ) -> None:
        """Date the groups a step started: each at the first end of ``batch`` after which the room free
        ``before`` it plus what the ends freed holds it and those started before it (see the module
        docstring); the step's time when none does."""
        names = self.cluster.names()
        room = np.cumsum(np.array(freed, dtype=np.int64), axis=0) + before if batch else None
        need = np.zeros(len(names), dtype=np.int64)
        i = 0
        at = self.cluster.now
        for key in self._newly(every=every):
            when = (at, at, at)
            if batch and room is not None:
                need = need + self._held(key, names)
                while i < len(batch) - 1 and (room[i] < need).any():
                    i += 1
                e = batch[i]
                when = (e.at, e.low, e.high)
            self.starts[key] = when
            self._expect(key, *when)

    def _settle(self) -> None:
        """Cycle until nothing changes, and while a cycle that left groups out for the window placed
        something, once more (the groups behind the window get their turn)."""
        cluster = self.cluster
        cluster.settle()
        while cluster.loop.held_back and cluster.step(force=True):
            cluster.settle()

    def _may_start(self) -> bool:
        """Whether a waiting group could fit the free room now (the necessary condition of
        :meth:`ForecastCluster.cannot_fit`); always, when the conf lets victims make room."""
        if not self.cluster.prefilter:
            return True
        return self.cluster.may_fit_any(k for k in self.waiting if k not in self.starts)

    def run(self) -> None:
        s, cluster = self.settings, self.cluster
        self._settle()
        self._started([], np.zeros(0, dtype=np.int64), [], every=True)
        heapq.heapify(self.ends)
        while len(self.starts) < len(self.waiting) and (self.ends or cluster.due is not None):
            if self.steps >= s.max_steps:
                break
            first = self.ends[0].at if self.ends else None
            batch: list[_End] = []
            if cluster.due is not None and (first is None or cluster.due < first):
                at = max(cluster.due, cluster.now)
            else:
                assert first is not None
                # Finer near now, coarser further out, and wider only when the ends to come (those known
                # and one per group still to start) outnumber the steps left.
                left = max(s.max_steps - self.steps, 1)
                coming = len(self.ends) + len(self.waiting) - len(self.starts)
                spread = (max(e.at for e in self.ends) - first) / left if coming > left else 0.0
                last = first + max(s.min_step, s.resolution * (first - self.now), spread)
                while self.ends and self.ends[0].at <= last:
                    batch.append(heapq.heappop(self.ends))
                at = batch[-1].at
            if at > self.now + s.horizon:
                break
            _, free = cluster.free()
            before = free.sum(axis=0)
            freed = [self._end(e.key) for e in batch]
            cluster.now = max(cluster.now, at)
            if batch and not self._may_start():
                continue  # the room freed lets no waiting group in: no cycle needed to know
            self.steps += 1
            self._settle()
            self._started(batch, before, freed)
            heapq.heapify(self.ends)
        if not self.ends and cluster.due is None:
            self._last_chance()

    def _last_chance(self) -> None:
        """Every known end has passed: end the groups nobody knows the end of and cycle once more (no
        group left out), to tell ``Unknown`` from ``WillNotStart``."""
        self.exhausted = True
        if len(self.starts) == len(self.waiting):
            return
        unknown = sorted(self.unknown)
        for key in unknown:
            self._end(key)
        self.cluster.prefilter = False
        self.cluster.state.pending.room_freed()
        self.cluster.settle()
        self.unknown_started = set(self._newly(every=True))

    def result(self, cpu: float) -> Forecast:
        pos = self.positions
        out: dict[GroupKey, GroupForecast] = {}
        reasons = self.cluster.scheduler.shared.reasons
        for key, queue in self.waiting.items():
            p: Position | None = pos.get(key)
            if key in self.starts:
                at, low, high = self.starts[key]
                outlook = Outlook.RUNNING if at <= self.now else Outlook.ESTIMATED
                out[key] = GroupForecast(
                    key=key, queue=queue, outlook=outlook, start=at, earliest=low, latest=high, position=p
                )
            elif key in self.unknown_started:
                out[key] = GroupForecast(
                    key=key, queue=queue, outlook=Outlook.UNKNOWN, reason=self._unknown_reason(), position=p
                )
            elif self.exhausted:
                u = reasons.get(key)
                why = f"{u.reason}: {u.message}" if u is not None and u.message else (u.reason if u else "")
                out[key] = GroupForecast(key=key, queue=queue, outlook=Outlook.NEVER, reason=why, position=p)
            else:
                reason = f"later than {rfc3339(self.cluster.now)}, where the forecast stopped"
                out[key] = GroupForecast(
                    key=key, queue=queue, outlook=Outlook.UNKNOWN, reason=reason, position=p
                )
        return Forecast(computed_at=self.now, groups=out, steps=self.steps, cpu_seconds=cpu)

    def _unknown_reason(self) -> str:
        names = sorted(self.unknown)
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return (
            f"it waits on the room of running jobs with no expected runtime ({shown}); set "
            "pumice.dev/expected-runtime on their pods, or let jobs of theirs finish to learn from"
        )


def _vector(pod: Pod, names: tuple[str, ...]) -> npt.NDArray[np.int64]:
    return np.array([pod.requests.get(n, 0) for n in names], dtype=np.int64)


def forecast(
    inp: ForecastInput, conf: SchedulerConf, settings: ForecastSettings = ForecastSettings()
) -> Forecast:
    """Every waiting PodGroup's position and start (see the module docstring)."""
    cpu = time.thread_time()
    # A vcjob's pods exist once its group is Inqueue: the groups that wait get stand-ins for the run.
    run = _Run(dataclasses.replace(inp, models=with_standins(inp.models)), conf, settings)
    run.run()
    return run.result(time.thread_time() - cpu)
