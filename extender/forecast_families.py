"""The forecast's metric families, read at scrape time from the latest forecast. Part of the composition
root (:mod:`extender.wiring` calls :func:`register_forecast_families`); nothing else imports it.

- ``pumice_forecast_pending_podgroups{queue,estimated_wait}``: waiting PodGroups by queue and by the
  bucket of their estimated wait (``now``, ``under 1m`` ... ``under 1d``, ``longer``, ``unknown``,
  ``never``; every bucket of a queue with waiting groups is present, zeros included), as of the latest
  forecast;
- ``pumice_forecast_runs_total``, ``pumice_forecast_errors_total``: forecasts made, and failed;
- ``pumice_forecast_worker_crashes_total``: forecast worker processes that died (each replaced at the
  next forecast; absent with ``--forecast-in thread``);
- ``pumice_forecast_cpu_seconds_total``: CPU spent forecasting (the worker's);
  ``pumice_forecast_last_cpu_seconds`` and ``pumice_forecast_last_steps``: the latest forecast's CPU and
  scheduler steps; ``pumice_forecast_timestamp_seconds``: when it was computed;
- ``pumice_forecast_learned_runtime_keys``: job names, namespaces and queues with learned runtimes.
"""

from __future__ import annotations

from collections.abc import Callable

from controllers.forecast.runner import Forecaster
from controllers.forecast.worker import ForecastProcess
from extender.forecast.model import WAIT_LABELS, wait_bucket
from extender.server.metrics import Kind, Metrics, Sample, one


def register_forecast_families(
    m: Metrics, forecaster: Forecaster, clock: Callable[[], float], worker: ForecastProcess | None = None
) -> None:
    def pending() -> list[Sample]:
        f = forecaster.forecast()
        now = clock()
        counts: dict[tuple[str, str], int] = {}
        for g in f.groups.values():
            key = (g.queue, wait_bucket(g, now))
            counts[key] = counts.get(key, 0) + 1
        queues = sorted({q for q, _ in counts})
        return [((q, b), float(counts.get((q, b), 0))) for q in queues for b in WAIT_LABELS]

    m.scrape(
        "pumice_forecast_pending_podgroups",
        "gauge",
        "Waiting PodGroups by queue and by the bucket of their estimated wait, as of the latest forecast.",
        pending,
        ("queue", "estimated_wait"),
    )
    families: tuple[tuple[str, Kind, str, Callable[[], float]], ...] = (
        ("pumice_forecast_runs_total", "counter", "Forecasts made.", lambda: forecaster.runs),
        ("pumice_forecast_errors_total", "counter", "Forecasts that failed.", lambda: forecaster.errors),
        (
            "pumice_forecast_cpu_seconds_total",
            "counter",
            "CPU seconds spent forecasting (the worker's).",
            lambda: forecaster.cpu_seconds,
        ),
        (
            "pumice_forecast_last_cpu_seconds",
            "gauge",
            "CPU seconds the latest forecast took.",
            lambda: forecaster.forecast().cpu_seconds,
        ),
        (
            "pumice_forecast_last_steps",
            "gauge",
            "Simulated times the scheduler ran at in the latest forecast.",
            lambda: forecaster.forecast().steps,
        ),
        (
            "pumice_forecast_timestamp_seconds",
            "gauge",
            "When the latest forecast was computed (seconds since the epoch; 0: none yet).",
            lambda: forecaster.forecast().computed_at,
        ),
        (
            "pumice_forecast_learned_runtime_keys",
            "gauge",
            "Job names, namespaces and queues with runtimes learned from finished jobs.",
            lambda: len(forecaster.book),
        ),
    )
    if worker is not None:
        families += (
            (
                "pumice_forecast_worker_crashes_total",
                "counter",
                "Forecast worker processes that died before answering (each replaced at the next forecast).",
                lambda: worker.crashes,
            ),
        )
    for name, kind, help_text, read in families:
        m.scrape(name, kind, help_text, _value(read))


def _value(read: Callable[[], float]) -> Callable[[], list[Sample]]:
    return lambda: list(one(float(read())))
