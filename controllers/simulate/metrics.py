"""What a trace run measures, integrated over virtual time.

- per job: wait (submission to the first time its gang was whole), run (its last start to its end),
  restarts and evicted pods;
- per queue: wait-time percentiles, its mean share of the cluster and its mean ``deserved`` share (from
  the conf's own share plugin, ``proportion`` or ``capacity``, opened on the cluster as it stands:
  :func:`extender.plugins.queue_shares.queue_shares`, what the metrics and ``pumice queue list`` show);
- the cluster: the **allocation rate** (requested over allocatable, per resource) and the
  **fragmentation rate**: of the free amount of the *key resource* (GPUs when any node has them, else
  CPU), the part on nodes that cannot fit the smallest pending pod. Both are time-weighted means between
  the first submission and the last event;
- with GPU cards (``gpus`` pools) and leaf labels (``topology``): card-level GPU allocation and
  fragmentation, and where gangs ran (:mod:`controllers.simulate.gpumetrics`). The key resource stays
  ``nvidia.com/gpu`` or CPU: shared cards have no single one (memory pods ask ``volcano.sh/gpu-memory``,
  whole-card pods ``volcano.sh/gpu-number``), so their figures are the card-level ones.

Shares are of the key resource. Series are kept per event and thinned to at most ``POINTS`` for output.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from controllers.simulate.arrivals import ArrivalFigures, Arrivals
from controllers.simulate.cluster import SimCluster
from controllers.simulate.gpumetrics import GangPlaces, GpuCards, GpuFigures, TopologyFigures
from controllers.simulate.trace import Trace
from extender.core.gpus import GPU_MEMORY, GPU_NUMBER
from extender.core.model import GroupKey
from extender.core.resources import parse_resource_list
from extender.plugins.queue_shares import queue_shares, share_plugin

if TYPE_CHECKING:
    from controllers.simulate.engine import JobState, Placement

Rank = tuple[int, list[tuple[str, int]]]

POINTS = 400
DESERVED_SAMPLES = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class JobResult:
    name: str
    queue: str
    submit: float
    start: float | None  # None: never started
    end: float | None  # None: did not finish
    wait: float | None  # to its first start
    queued: float  # waiting over every attempt (a preempted job waits again)
    run: float | None
    restarts: int
    evicted: int
    dropped: bool = False  # it could not start when it arrived (the openb replay's rule)
    placements: tuple[Placement, ...] = ()  # where its pods went, at every start
    reason: str = ""  # why it waits at the end (the scheduler's reason), "" when it does not
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueResult:
    name: str
    jobs: int
    finished: int
    wait_mean: float | None
    wait_p50: float | None
    wait_p95: float | None
    wait_max: float | None
    share_mean: float
    deserved_mean: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceResult:
    key_resource: str
    makespan: float  # virtual seconds from the first submission to the last event
    jobs: tuple[JobResult, ...]
    queues: tuple[QueueResult, ...]
    allocation: dict[str, float]  # resource -> time-weighted mean allocation rate
    fragmentation: float
    cycles: int
    evictions: int
    series: dict[str, Any] = field(default_factory=dict)  # time, allocation, fragmentation, queues
    gpu: GpuFigures | None = None  # with GPU cards
    topology: TopologyFigures | None = None  # with leaf labels
    arrivals: ArrivalFigures | None = None  # with the trace's pod shapes (the openb replay)


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def _first(ranked: tuple[Rank, dict[str, int]]) -> Rank:
    return ranked[0]


def _thin(n: int) -> list[int]:
    if n <= POINTS:
        return list(range(n))
    return sorted({int(i) for i in np.linspace(0, n - 1, POINTS)})


class Recorder:
    def __init__(self, cluster: SimCluster, trace: Trace) -> None:
        self.cluster = cluster
        self.trace = trace
        gpu = any("nvidia.com/gpu" in p.allocatable for p in trace.pools)
        self.key = "nvidia.com/gpu" if gpu else "cpu"
        self.gpus = GpuCards(cluster.nodes.values()) if trace.has_gpus else None
        if self.gpus is not None:
            cluster.pod_watchers.append(self.gpus.changed)
        self.arrivals = (
            Arrivals(self.gpus, trace.shapes, trace.model_label)
            if self.gpus is not None and trace.shapes
            else None
        )
        self.gpu_peak = 0.0
        self.places = GangPlaces(cluster.nodes.values()) if trace.has_topology else None
        self.resources = sorted(
            {r for p in trace.pools for r in parse_resource_list(p.allocatable)} - {"pods"}
        )
        totals: dict[str, int] = {}
        for p in trace.pools:
            for k, v in parse_resource_list(p.allocatable).items():
                totals[k] = totals.get(k, 0) + v * p.count
        self.total = totals
        self.queues = [q["metadata"]["name"] for q in trace.queues]
        self.waiting: set[GroupKey] = set()
        # The smallest key-resource request of each waiting job's pods (fragmentation's yardstick), after
        # its rank among requests (worked out once per job: every event compares the waiting jobs' ranks).
        self._smallest: dict[GroupKey, tuple[Rank, dict[str, int]]] = {}
        self.first = trace.jobs[0].submit if trace.jobs else 0.0
        # (a job that never ends counts from its submission)
        span = max((j.submit if j.duration is None else j.end for j in trace.jobs), default=1.0) - self.first
        self._deserved_every = max(span / DESERVED_SAMPLES, 1.0)
        self._deserved_at = -np.inf
        self._last_t: float | None = None
        self._now: dict[str, float] = {}
        self._area: dict[str, float] = {}
        self.times: list[float] = []
        self.series: dict[str, list[float | None]] = {}
        self.deserved: dict[str, float] = {}
        self._deserved_area: dict[str, float] = {}
        self._deserved_since: float | None = None

    # --- job events -----------------------------------------------------------------------------------
    def submitted(self, js: JobState) -> None:
        self.waiting.add(js.key)
        reqs = [parse_resource_list(t.requests) for t in js.spec.tasks]
        smallest = min(reqs, key=self._rank)
        self._smallest[js.key] = (self._rank(smallest), smallest)
        if self.arrivals is not None:
            self.arrivals.arrived(
                [
                    (r.get(GPU_NUMBER, 0), r.get(GPU_MEMORY, 0))
                    for t, r in zip(js.spec.tasks, reqs, strict=True)
                    for _ in range(t.replicas)
                ]
            )

    def started(self, js: JobState) -> None:
        self.waiting.discard(js.key)
        if self.places is not None:
            pods = (self.cluster.cache.pod(u) for u in js.pods.values())
            self.places.started(p.node_name for p in pods if p is not None and p.node_name)

    def finished(self, js: JobState) -> None:
        self.waiting.discard(js.key)
        self._smallest.pop(js.key, None)

    def dropped(self, js: JobState) -> None:
        self.finished(js)
        if self.arrivals is not None:
            self.arrivals.dropped += sum(t.replicas for t in js.spec.tasks)

    def _rank(self, request: dict[str, int]) -> Rank:
        """Requests ordered by their key resource, then by their amounts (the smallest is the yardstick)."""
        return (request.get(self.key, 0), sorted(request.items()))

    # --- sampling ------------------------------------------------------------------------------------
    def _fragmentation(self) -> float:
        smallest = [self._smallest[k] for k in self.waiting if k in self._smallest]
        if not smallest:
            return 0.0
        # (Equal ranks are equal requests: the first smallest rank's request is the one.)
        need = min(smallest, key=_first)[1]
        table = self.cluster.cache.node_table()
        free = (
            table.alloc - self.cluster.ledger.held_matrix(table) - self.cluster.ledger.planned_matrix(table)
        )
        names = table.index.names
        col = {n: i for i, n in enumerate(names)}
        if self.key not in col:
            return 0.0
        fits = np.ones(len(free), dtype=bool)
        for r, v in need.items():
            fits &= free[:, col[r]] >= v if r in col else v <= 0
        key_free = np.maximum(free[:, col[self.key]], 0)
        total = int(key_free.sum())
        return float(key_free[~fits].sum()) / total if total else 0.0

    def _deserved(self, t: float) -> None:
        if t - self._deserved_at < self._deserved_every:
            return
        self._deserved_at = t
        conf = self.cluster.scheduler.shared.conf
        if not self.total.get(self.key) or share_plugin(conf) is None or self.trace.drop_unplaced:
            return  # (a replay that drops what does not fit has one queue: it deserves what it asks)
        shares = queue_shares(self.cluster.cache.full_snapshot(), conf)
        if shares.deserved is None or self.key not in shares.resources:
            return
        self.deserved = {
            q: float(d.get(self.key, 0)) / self.total[self.key]
            for q, d in shares.deserved.items()
            if q in self.queues
        }

    def sample(self, t: float) -> None:
        """The state right after the cycles of an event at ``t``: what holds until the next event."""
        usage = self.cluster.ledger.queue_usage()
        now: dict[str, float] = {}
        for r in self.resources:
            used = sum(u.get(r, 0) for u in usage.values())
            now[f"allocation:{r}"] = used / self.total[r] if self.total.get(r) else 0.0
        key_total = self.total.get(self.key, 0)
        for q in self.queues:
            now[f"share:{q}"] = usage.get(q, {}).get(self.key, 0) / key_total if key_total else 0.0
        now["fragmentation"] = self._fragmentation()
        if self.gpus is not None:
            gpu = self.gpus.state()
            if self.arrivals is not None:
                self.arrivals.sample(gpu)
            now["gpu:allocation"] = gpu.allocation
            now["gpu:fragmentation"] = gpu.fragmentation
            now["gpu:stranded-asks"] = gpu.stranded_asks
            self.gpu_peak = max(self.gpu_peak, gpu.allocation)
        self._deserved(t)
        for q, v in self.deserved.items():
            now[f"deserved:{q}"] = v
        self._now = now
        self.times.append(t)
        for k, v in now.items():
            series = self.series.get(k)
            if series is None:
                # A series that starts late (deserved shares) is padded so every series lines up with
                # times (built only then: a padding list made per sample cost as much as the events so far).
                series = self.series[k] = [None] * (len(self.times) - 1)
            series.append(v)

    def advance(self, t: float) -> None:
        """Time moves to ``t``: what held since the last event counts for the time it held."""
        if self._last_t is not None and t > self._last_t:
            dt = t - self._last_t
            for k, v in self._now.items():
                self._area[k] = self._area.get(k, 0.0) + v * dt
        if self._last_t is None or t > self._last_t:
            self._last_t = t

    # --- the result ----------------------------------------------------------------------------------
    def result(self, jobs: Iterable[JobState]) -> TraceResult:
        span = (self._last_t - self.first) if self._last_t is not None else 0.0
        end = self._last_t if self._last_t is not None else self.first

        def mean(k: str) -> float:
            return self._area.get(k, 0.0) / span if span > 0 else self._now.get(k, 0.0)

        reasons = self.cluster.scheduler.shared.reasons
        rows = []
        for js in jobs:
            waiting = js.started is None and js.end is None and not js.dropped
            why = reasons.get(js.key) if waiting else None
            rows.append(
                JobResult(
                    name=f"{js.spec.namespace}/{js.spec.name}",
                    queue=js.spec.queue,
                    submit=js.spec.submit,
                    start=js.first_start,
                    end=js.end,
                    wait=None if js.first_start is None else js.first_start - js.spec.submit,
                    queued=js.waited + (end - js.queued_since if waiting else 0.0),
                    run=None if js.end is None or js.started is None else js.end - js.started,
                    restarts=js.restarts,
                    evicted=js.evicted,
                    dropped=js.dropped,
                    placements=tuple(js.placements),
                    reason=why.reason if why is not None else "",
                    message=why.message if why is not None else "",
                )
            )
        queues = []
        for q in self.queues:
            mine = [r for r in rows if r.queue == q]
            waits = [r.wait for r in mine if r.wait is not None]
            queues.append(
                QueueResult(
                    name=q,
                    jobs=len(mine),
                    finished=sum(r.end is not None for r in mine),
                    wait_mean=float(np.mean(waits)) if waits else None,
                    wait_p50=_pct(waits, 50),
                    wait_p95=_pct(waits, 95),
                    wait_max=max(waits, default=None),
                    share_mean=mean(f"share:{q}"),
                    deserved_mean=mean(f"deserved:{q}") if f"deserved:{q}" in self._area else None,
                )
            )
        keep = _thin(len(self.times))
        series: dict[str, Any] = {"time": [self.times[i] for i in keep]}
        for k, values in self.series.items():
            series[k] = [values[i] for i in keep]
        return TraceResult(
            key_resource=self.key,
            makespan=span,
            jobs=tuple(rows),
            queues=tuple(queues),
            allocation={r: mean(f"allocation:{r}") for r in self.resources},
            fragmentation=mean("fragmentation"),
            cycles=self.cluster.cycles,
            evictions=len(self.cluster.evictions),
            series=series,
            gpu=None
            if self.gpus is None
            else GpuFigures(
                cards=self.gpus.cards,
                memory=self.gpus.memory,
                allocation_mean=mean("gpu:allocation"),
                allocation_peak=self.gpu_peak,
                allocation_end=self._now.get("gpu:allocation", 0.0),
                fragmentation_mean=mean("gpu:fragmentation"),
                fragmentation_end=self._now.get("gpu:fragmentation", 0.0),
                stranded_asks_mean=mean("gpu:stranded-asks"),
                stranded_asks_end=self._now.get("gpu:stranded-asks", 0.0),
            ),
            topology=None if self.places is None else self.places.figures(),
            arrivals=None if self.arrivals is None else self.arrivals.figures(),
        )
