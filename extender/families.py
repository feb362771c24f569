"""The metric families ``pumice serve`` exports beside the hot-path ones: counters and gauges read at scrape
time from the objects that keep them (the scheduler's stats, the controllers', the informers', admission's),
the per-queue gauges computed from the cache once per scrape (:mod:`extender.queue_families`), and the
scrape-time families of the loop's and the watch's observers (:mod:`extender.observers`). Part of the
composition root (:mod:`extender.wiring` calls :func:`register_families` with what it built); nothing else
imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
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
from controllers.state.cache import ClusterCache
from extender.observers import Observers
from extender.queue_families import register_queue_families
from extender.server.metrics import Metrics, Sample, one


def register_families(
    m: Metrics,
    *,
    leadership: Leadership,
    certificates: Callable[[], Iterable[tuple[str, float]]],
    scheduler: Scheduler,
    status: StatusWriter,
    events: EventRecorder,
    informers: Sequence[Informer],
    cache: ClusterCache,
    jobs: JobController,
    flows: FlowController,
    cronjobs: CronJobController,
    admission: AdmissionMetrics,
    observers: Observers,
) -> None:
    """The families read at scrape time from the objects that keep them (see extender.server.metrics)."""
    m.scrape(
        "pumice_certificate_expiry_timestamp_seconds",
        "gauge",
        "When each certificate pumice serves or presents expires (epoch seconds), by certificate (ca, "
        "webhook, extender, kube-scheduler-client).",
        lambda: [((name,), when) for name, when in certificates()],
        ("certificate",),
    )
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
    figures = register_queue_families(m, cache, lambda: shared.conf, lambda: tuple(shared.reasons))
    observers.register(lambda: s.cycle_errors, figures)


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
