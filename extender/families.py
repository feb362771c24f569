"""The metric families ``pumice serve`` exports beside the hot-path ones: counters and gauges read at scrape
time from the objects that keep them (the scheduler's stats, the controllers', the informers', admission's),
and the per-queue gauges computed from the cache once per scrape. Part of the composition root
(:mod:`extender.wiring` calls :func:`register_families` with what it built); nothing else imports it.

The per-queue figures, computed when Prometheus scrapes, never on the hot path. For each queue:
``allocated`` and ``deserved`` as :func:`extender.plugins.queue_shares.queue_shares` computes them through
the conf's share plugin over a full snapshot of the cache (``deserved`` absent when the conf has neither
``proportion`` nor ``capacity``), ``capability`` (the spec; only limited resources), the PodGroups per
phase, and ``share``: Volcano's proportion share, the largest ``allocated / deserved`` over the resources
the queue deserves any of (0 when it deserves nothing). Units: cpu in cores, every other resource in its
accounted unit (bytes, counts), so the figures read as Prometheus base units. Cost: one full snapshot and
one session opening per scrape (what ``pumice queue list`` costs): :class:`Memo` keeps the result for the
several families that read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from admission.server import AdmissionMetrics
from controllers.events import EventRecorder
from controllers.kube.informer import Informer
from controllers.leader.leadership import Leadership
from controllers.reconcilers.cronjobs import CronJobController
from controllers.reconcilers.flows import FlowController
from controllers.reconcilers.jobs import JobController
from controllers.reconcilers.status import StatusWriter
from controllers.scheduling.scheduler import Scheduler
from controllers.scheduling.shared import SchedulingState
from controllers.state.cache import ClusterCache
from extender.core.model import GroupPhase
from extender.plugins.queue_shares import queue_shares
from extender.plugins.registry import SchedulerConf
from extender.server.metrics import Metrics, Sample, one


def register_families(
    m: Metrics,
    *,
    leadership: Leadership,
    scheduler: Scheduler,
    status: StatusWriter,
    events: EventRecorder,
    informers: Sequence[Informer],
    cache: ClusterCache,
    jobs: JobController,
    flows: FlowController,
    cronjobs: CronJobController,
    admission: AdmissionMetrics,
) -> None:
    """The families read at scrape time from the objects that keep them (see extender.server.metrics)."""
    m.scrape(
        "pumice_leader",
        "gauge",
        "1 while this replica leads (plans, binds, reconciles), 0 while it stands by.",
        lambda: one(1.0 if leadership.leading else 0.0),
    )
    m.scrape(
        "pumice_binds_unreserved_total",
        "counter",
        "Pods of pumice's schedulers seen bound while this replica led and held no reservation for them "
        "(a bind on a stale answer, or someone else's). Should stay 0.",
        lambda: one(scheduler.shared.unreserved_binds()),
    )
    m.scrape(
        "pumice_leader_transitions_total",
        "counter",
        "Changes of the leader-election Lease's holder this replica saw (to or from itself included).",
        lambda: one(leadership.transitions),
    )
    shared = scheduler.shared
    s = shared.stats
    for stat, name, help_text in (
        ("cycles", "pumice_scheduling_cycles_total", "Scheduling cycles run."),
        ("cycle_seconds", "pumice_scheduling_cycle_seconds_total", "Time in cycles, seconds."),
        ("plans", "pumice_plans_total", "Pods given a node by a scheduling cycle."),
        ("binds", "pumice_extender_binds_total", "Binds carried out through the extender bind verb."),
        ("bind_errors", "pumice_bind_errors_total", "Binds through the extender bind verb that failed."),
        (
            "binds_refused",
            "pumice_binds_refused_total",
            "Bind requests refused: no reservation of pumice's for that pod on that node.",
        ),
        (
            "stale_groups",
            "pumice_stale_groups_total",
            "Groups whose placements a cycle dropped because an event made them stale.",
        ),
        ("touches", "pumice_touches_total", "Pods touched after a plan."),
        ("cycle_errors", "pumice_cycle_errors_total", "Scheduling cycles that raised."),
        (
            "eviction_errors",
            "pumice_eviction_errors_total",
            "Evictions the API refused (a PodDisruptionBudget) or that failed.",
        ),
    ):
        m.scrape(name, "counter", help_text, _attr(s, stat))
    m.scrape(
        "pumice_evictions_total",
        "counter",
        "Pods evicted by preempt or reclaim, by reason.",
        lambda: [((r,), v) for r, v in sorted(s.eviction_reasons.items())],
        ["reason"],
    )
    m.scrape(
        "pumice_unreadable_objects_total",
        "counter",
        "Objects pumice could not read (skipped and reported).",
        lambda: one(cache.unreadable_total),
    )
    m.scrape(
        "pumice_informer_errors_total",
        "counter",
        "Informer errors by informer and kind (handler: one object's; list: an unreadable response; "
        "connection: a list or watch that failed and was retried: a cut stream, 429, 5xx, a timeout).",
        lambda: [
            ((i.name, k), v)
            for i in informers
            for k, v in (
                ("handler", i.handler_errors),
                ("list", i.list_errors),
                ("connection", i.connection_errors),
            )
        ],
        ["informer", "kind"],
    )
    m.scrape(
        "pumice_status_errors_total",
        "counter",
        "Status passes that failed.",
        lambda: one(status.errors),
    )
    m.scrape(
        "pumice_events_total",
        "counter",
        "Kubernetes Events written, and dropped by the rate limit.",
        lambda: [(("written",), events.written), (("dropped",), events.dropped)],
        ["result"],
    )
    m.scrape(
        "pumice_planned_pods",
        "gauge",
        "Pods holding a plan.",
        lambda: one(shared.ledger.plan_count()),
    )
    m.scrape(
        "pumice_waiting_groups",
        "gauge",
        "Groups of pumice's with pods waiting for a node.",
        lambda: one(shared.pending.waiting_groups()),
    )
    m.scrape(
        "pumice_unschedulable_podgroups",
        "gauge",
        "Groups waiting, by reason.",
        lambda: _count_by(u.reason for u in shared.reasons.values()),
        ["reason"],
    )
    m.scrape("pumice_status_writes_total", "counter", "Status patches.", lambda: one(status.writes))
    m.scrape(
        "pumice_informer_events_total",
        "counter",
        "Watch events by informer.",
        lambda: [((i.name,), i.events) for i in informers],
        ["informer"],
    )
    js = jobs.stats
    for stat, help_text in (
        ("reconciles", "Job reconciles."),
        ("conflicts", "Job reconciles retried on a stale read (HTTP 409)."),
        ("errors", "Job reconciles that failed and were retried."),
        ("invalid", "Job syncs that found the job invalid (reported on the job)."),
        ("pods_created", "Pods created for jobs."),
        ("pods_deleted", "Pods deleted for jobs."),
    ):
        m.scrape(f"pumice_job_{stat}_total", "counter", help_text, _stat(js, stat))
    for prefix, stats in (("jobflow", flows.stats), ("cronjob", cronjobs.stats)):
        for stat in ("reconciles", "conflicts", "errors", "jobs_created", "jobs_deleted"):
            what = stat.replace("_", " ")
            m.scrape(f"pumice_{prefix}_{stat}_total", "counter", f"{prefix} {what}.", _stat(stats, stat))
    for stat in ("probes", "failed"):
        m.scrape(
            f"pumice_jobflow_probe_{stat}_total",
            "counter",
            f"JobFlow HTTP/TCP probes ({stat}).",
            _stat(flows.probes.stats, stat),
        )
    adm = admission
    for name, counter in (
        ("requests", adm.requests),
        ("denials", adm.denied),
        ("patches", adm.patched),
        ("malformed", adm.malformed),
        ("unavailable", adm.unavailable),
        ("failures", adm.failed),
    ):
        m.scrape(
            f"pumice_admission_{name}_total",
            "counter",
            f"Admission {name} by webhook path.",
            _by_path(counter),
            ["path"],
        )
    _queue_families(m, cache, shared)


def _queue_families(m: Metrics, cache: ClusterCache, shared: SchedulingState) -> None:
    """Per-queue gauges, computed from the cache once per scrape (see :func:`queue_figures`)."""
    figures = Memo(lambda: queue_figures(cache, shared.conf))

    def per_resource(pick: Callable[[Any], Mapping[str, float] | None]) -> Callable[[], list[Sample]]:
        return lambda: [
            ((q.name, r), v) for q in figures().queues for r, v in sorted((pick(q) or {}).items())
        ]

    unit = " (cpu in cores, memory in bytes, others in their unit)"
    m.scrape(
        "pumice_queue_allocated",
        "gauge",
        "Requests of the bound, unfinished pods of each queue" + unit + ".",
        per_resource(lambda q: q.allocated),
        ["queue", "resource"],
    )
    m.scrape(
        "pumice_queue_deserved",
        "gauge",
        "What each queue deserves by the conf's share plugin (proportion or capacity)" + unit + ".",
        per_resource(lambda q: q.deserved),
        ["queue", "resource"],
    )
    m.scrape(
        "pumice_queue_capability",
        "gauge",
        "Each queue's spec.capability, for the resources it limits" + unit + ".",
        per_resource(lambda q: q.capability),
        ["queue", "resource"],
    )
    m.scrape(
        "pumice_queue_share",
        "gauge",
        "Each queue's share: the largest allocated/deserved over its resources (Volcano's proportion).",
        lambda: [((q.name,), q.share) for q in figures().queues],
        ["queue"],
    )
    m.scrape(
        "pumice_queue_podgroups",
        "gauge",
        "PodGroups of each queue by phase (Pending, Inqueue, Running, ...).",
        lambda: [((q.name, p), n) for q in figures().queues for p, n in sorted(q.podgroups.items())],
        ["queue", "phase"],
    )
    m.scrape(
        "pumice_cluster_allocatable",
        "gauge",
        "The nodes' allocatable, summed" + unit + ".",
        lambda: [((r,), v) for r, v in sorted(figures().allocatable.items())],
        ["resource"],
    )


def _attr(obj: object, name: str) -> Callable[[], list[Sample]]:
    return lambda: [((), float(getattr(obj, name)))]


def _stat(stats: Mapping[str, int], key: str) -> Callable[[], list[Sample]]:
    return lambda: [((), float(stats[key]))]


def _by_path(counter: Mapping[str, int]) -> Callable[[], list[Sample]]:
    return lambda: [((k,), float(v)) for k, v in sorted(counter.items())]


def _count_by(items: Any) -> list[Sample]:
    out: dict[str, float] = {}
    for it in items:
        out[str(it)] = out.get(str(it), 0) + 1
    return [((k,), v) for k, v in sorted(out.items())]


# -- the per-queue figures --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFigures:
    name: str
    allocated: Mapping[str, float]
    deserved: Mapping[str, float] | None
    capability: Mapping[str, float]
    podgroups: Mapping[str, int]  # by phase; every phase present
    share: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    queues: list[QueueFigures]
    allocatable: Mapping[str, float]  # the nodes' allocatable, summed


def _units(amounts: Mapping[str, int]) -> dict[str, float]:
    return {r: (v / 1000 if r == "cpu" else float(v)) for r, v in amounts.items() if r != "pods"}


def _share(allocated: Mapping[str, float], deserved: Mapping[str, float] | None) -> float:
    if not deserved:
        return 0.0
    return max((allocated.get(r, 0.0) / d for r, d in deserved.items() if d > 0), default=0.0)


def queue_figures(cache: ClusterCache, conf: SchedulerConf) -> Figures:
    snap = cache.full_snapshot()
    shares = queue_shares(snap, conf)
    phases: dict[str, dict[str, int]] = {}
    for pg in snap.groups.values():
        counts = phases.setdefault(pg.queue, {p.value: 0 for p in GroupPhase})
        counts[pg.phase.value] += 1
    out = []
    for name, q in sorted(snap.queues.items()):
        allocated = _units(shares.allocated.get(name, {}))
        d = None if shares.deserved is None else _units(shares.deserved.get(name, {}))
        out.append(
            QueueFigures(
                name=name,
                allocated=allocated,
                deserved=d,
                capability=_units(q.capability),
                podgroups=phases.get(name, {p.value: 0 for p in GroupPhase}),
                share=_share(allocated, d),
            )
        )
    return Figures(queues=out, allocatable=_units(shares.total))


class Memo:
    """The last result of ``compute`` for ``ttl`` seconds: one computation per scrape, however many
    families read it."""

    def __init__(self, compute: Callable[[], Figures], ttl: float = 1.0) -> None:
        self._compute = compute
        self._ttl = ttl
        self._at = -1e18
        self._value = Figures(queues=[], allocatable={})

    def __call__(self) -> Figures:
        now = time.monotonic()
        if now - self._at > self._ttl:
            self._value = self._compute()
            self._at = now
        return self._value
