"""What the scheduling loop and the watch report, observed into the metrics, under pumice's names and
Volcano's. Part of the composition root (:mod:`extender.wiring` builds one :class:`Observers` and hands
its methods to the loop and to :class:`~controllers.watch_metrics.WatchMetrics`); nothing else imports it.

From each applied cycle (:class:`~controllers.scheduling.loop.CycleReport`): the cycle's time
(``pumice_scheduling_cycle_duration_seconds``, and in milliseconds ``volcano_e2e_scheduling_latency_
milliseconds``), its parts when the cycle timed them (``volcano_open_session_duration_milliseconds``,
``volcano_action_scheduling_latency_milliseconds{action}``, ``volcano_plugin_scheduling_latency_
milliseconds{plugin,OnSession}``), Volcano's attempt counts (``volcano_schedule_attempts_total{result}``:
pods given a node, pods of groups left waiting, cycles that raised) and its preemption figures: per cycle,
each group that made preempt or reclaim evict counts as one eviction transaction of that action (and, for
preempt, one preemption attempt: pumice does not count attempts that found no victims), and the victims
preempt chose are ``volcano_pod_preemption_victims``.

From the watch (:class:`~controllers.watch_metrics.Seen`): waits per queue (``pumice_job_wait_seconds``,
``pumice_podgroup_wait_seconds``; a PodGroup's also as Volcano's per-job ``volcano_e2e_job_scheduling_
duration{job_name,queue,job_namespace}`` gauge and ``volcano_e2e_job_scheduling_latency_milliseconds``
histogram: pumice measures to the group's Running phase, Volcano to its last task being assumed), binds
(``pumice_binds_total``, and a pod's creation-to-bind time as ``volcano_task_scheduling_latency_
milliseconds{stage="Bound"}``), and vcjobs that end (``volcano_job_completed_phase_count`` and
``volcano_job_failed_phase_count{job_name,queue_name}``). Per-object figures are dropped when the object
is deleted, as Volcano drops them. Memory: one entry per PodGroup that ran and per vcjob that ended,
until deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final

from controllers.scheduling.loop import CycleReport
from controllers.watch_metrics import Seen
from extender.queue_figures import Memo
from extender.server.metrics import Metrics, Sample, exponential_range, one

_PREEMPTED: Final = "Preempted"
_ACTION_OF: Final = {"Preempted": "preempt", "Reclaimed": "reclaim"}
_ENDS: Final = {"Completed": "completed", "Failed": "failed"}


def _ms(seconds: float) -> float:
    return seconds * 1000.0


class Observers:
    """The histograms and counters the loop and the watch feed, and the state their gauges read."""

    def __init__(self, m: Metrics) -> None:
        self._m = m
        self._e2e = m.histogram(
            "volcano_e2e_scheduling_latency_milliseconds",
            "Duration of one scheduling cycle (snapshot, actions, applying them), milliseconds "
            "(pumice: pumice_scheduling_cycle_duration_seconds).",
            buckets=exponential_range(1, 5000, 20),
        )
        self._open = m.histogram(
            "volcano_open_session_duration_milliseconds",
            "Duration of opening a cycle's session (every plugin's open), milliseconds.",
            buckets=exponential_range(1, 5000, 20),
        )
        self._action = m.histogram(
            "volcano_action_scheduling_latency_milliseconds",
            "Duration of each action of a cycle, milliseconds.",
            ["action"],
            buckets=exponential_range(1, 2000, 20),
        )
        self._plugin = m.histogram(
            "volcano_plugin_scheduling_latency_milliseconds",
            "Duration of each plugin's session open and close, milliseconds.",
            ["plugin", "OnSession"],
            buckets=exponential_range(0.1, 100, 15),
        )
        self._job_latency = m.histogram(
            "volcano_e2e_job_scheduling_latency_milliseconds",
            "PodGroup wait from creation to Running, milliseconds (pumice: pumice_podgroup_wait_seconds).",
            buckets=exponential_range(100, 120000, 30),
        )
        self._task = m.histogram(
            "volcano_task_scheduling_latency_milliseconds",
            "Pod latency from creation to a scheduling stage (Bound: seen bound in the watch), milliseconds.",
            ["stage"],
            buckets=exponential_range(50, 60000, 30),
        )
        # Read at scrape time (see register).
        self.scheduled = 0
        self.unschedulable = 0
        self.victims = 0
        self.preemption_attempts = 0
        self.transactions = dict.fromkeys(_ACTION_OF.values(), 0)
        self._durations: dict[tuple[str, str], tuple[str, float]] = {}  # (ns, podgroup) -> (queue, ms)
        self._ends: dict[tuple[str, str], tuple[str, str]] = {}  # (ns, job) -> (queue, end)

    # --- the loop ----------------------------------------------------------------------------------
    def cycle(self, report: CycleReport) -> None:
        self._m.observe_cycle(report.seconds)
        self._e2e.observe(_ms(report.seconds))
        result, snap = report.result, report.snapshot
        if result.timings is not None:
            self._open.observe(_ms(result.timings.open_session))
            for action, seconds in result.timings.actions:
                self._action.labels(action).observe(_ms(seconds))
            for plugin, stage, seconds in result.timings.plugins:
                self._plugin.labels(plugin, stage).observe(_ms(seconds))
        self.scheduled += report.planned
        for key in result.unschedulable:
            self.unschedulable += sum(
                1
                for uid in snap.members.get(key, ())
                if snap.pods[uid].waiting and uid not in result.placements and uid not in snap.plans
            )
        takers: dict[str, set[object]] = {}
        victims = 0
        for eviction in result.evictions.values():
            takers.setdefault(eviction.reason, set()).add(eviction.by)
            victims += eviction.reason == _PREEMPTED
        for reason, groups in takers.items():
            if reason in _ACTION_OF:
                self.transactions[_ACTION_OF[reason]] += len(groups)
        self.preemption_attempts += len(takers.get(_PREEMPTED, ()))
        self.victims = victims

    # --- the watch ---------------------------------------------------------------------------------
    def bound(self, seconds: float) -> None:
        self._m.binds.inc()
        self._task.labels("Bound").observe(_ms(seconds))

    def waited(self, seen: Seen) -> None:
        if seen.kind == "job":
            self._m.job_wait.labels(seen.queue).observe(seen.seconds)
            return
        self._m.podgroup_wait.labels(seen.queue).observe(seen.seconds)
        self._job_latency.observe(_ms(seen.seconds))
        self._durations[(seen.namespace, seen.name)] = (seen.queue, _ms(seen.seconds))

    def finished(self, seen: Seen) -> None:
        if seen.phase in _ENDS:
            self._ends[(seen.namespace, seen.name)] = (seen.queue, _ENDS[seen.phase])

    def gone(self, seen: Seen) -> None:
        (self._ends if seen.kind == "job" else self._durations).pop((seen.namespace, seen.name), None)

    # --- scrape-time families ----------------------------------------------------------------------
    def register(self, cycle_errors: Callable[[], int], figures: Memo) -> None:
        """The families read when scraped: ``cycle_errors`` counts cycles that raised; ``figures`` (the
        per-queue computation) gives the waiting groups' unready pods."""
        m = self._m
        m.scrape(
            "volcano_schedule_attempts_total",
            "counter",
            "Scheduling attempts by result: scheduled (pods given a node by a cycle), unschedulable (pods of "
            "groups a cycle left waiting), error (cycles that raised).",
            lambda: [
                (("scheduled",), self.scheduled),
                (("unschedulable",), self.unschedulable),
                (("error",), cycle_errors()),
            ],
            ["result"],
        )
        m.scrape(
            "volcano_pod_preemption_victims",
            "gauge",
            "Pods the last cycle chose as preemption victims.",
            lambda: one(self.victims),
        )
        m.scrape(
            "volcano_total_preemption_attempts",
            "untyped",
            "Groups for which preempt evicted pods, since start (a counter under Volcano's name).",
            lambda: one(self.preemption_attempts),
        )
        m.scrape(
            "volcano_eviction_transactions_total",
            "counter",
            "Groups for which a cycle's preempt or reclaim evicted pods, by action.",
            lambda: [((a,), n) for a, n in sorted(self.transactions.items())],
            ["action"],
        )
        m.scrape(
            "volcano_e2e_job_scheduling_duration",
            "gauge",
            "Per PodGroup (job_name), its wait from creation to Running, milliseconds; kept until deleted.",
            lambda: [((name, q, ns), ms) for (ns, name), (q, ms) in sorted(self._durations.items())],
            ["job_name", "queue", "job_namespace"],
        )
        for end in _ENDS.values():
            m.scrape(
                f"volcano_job_{end}_phase_count",
                "untyped",
                f"vcjobs seen reaching {end.capitalize()}, by job and queue (a counter, Volcano's name).",
                self._ended(end),
                ["job_name", "queue_name"],
            )
        m.scrape(
            "volcano_unschedule_task_count",
            "gauge",
            "Per waiting PodGroup (job_id: its name), its pods with neither a node nor a plan.",
            lambda: [((name,), n) for (_ns, name), n in sorted(figures().unready.items())],
            ["job_id"],
        )
        m.scrape(
            "volcano_unschedule_job_count",
            "gauge",
            "PodGroups waiting with a reason (pumice: pumice_unschedulable_podgroups, by reason).",
            lambda: one(len(figures().unready)),
        )

    def _ended(self, end: str) -> Callable[[], Iterable[Sample]]:
        def read() -> Iterable[Sample]:
            counts: dict[tuple[str, str], int] = {}
            for (_ns, name), (queue, e) in self._ends.items():
                if e == end:
                    counts[(name, queue)] = counts.get((name, queue), 0) + 1
            return [(k, n) for k, n in sorted(counts.items())]

        return read
