"""How ``pumice simulate TRACE --forecast`` prints the forecast's accuracy: a table per run (conf) for
people, and a ``forecast`` key in each run of the trace document for machines.

The document's ``forecast``: ``runtimeNoise``, ``jobs`` (submitted), ``waited`` (estimated at submission
and started later), ``unknown``, ``willNotStart``, ``errorP50``/``errorP90`` (seconds),
``fractionP50``/``fractionP90`` (of the actual wait), ``acceptance`` and ``acceptanceAllJobs`` (medians
of the error over the larger of the wait and ten minutes), ``forecasts``, ``cpuMeanSeconds``,
``cpuMaxSeconds``, and ``estimates`` (``job``, ``queue``, ``submit``, ``outlook``, ``estimated``,
``actual``: virtual seconds, null when not known; ``startedAtOnce``: it had started when estimated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from controllers.simulate.forecast_trace import Accuracy
from controllers.tables import human_duration, render_table


def _seconds(v: float | None) -> str:
    return "-" if v is None else human_duration(v)


def _fraction(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def accuracy_table(runs: Sequence[tuple[str, Accuracy]]) -> str:
    headers = [
        "CONF", "NOISE", "JOBS", "WAITED", "ERROR P50", "ERROR P90", "OF WAIT P50", "OF WAIT P90",
        "ACCEPTANCE", "ALL JOBS", "UNKNOWN", "NEVER", "CPU MEAN", "CPU MAX",
    ]  # fmt: skip
    rows = [
        [
            label,
            f"±{100 * a.noise:.0f}%",
            str(a.jobs),
            str(a.waited),
            _seconds(a.error_p50),
            _seconds(a.error_p90),
            _fraction(a.fraction_p50),
            _fraction(a.fraction_p90),
            _fraction(a.acceptance),
            _fraction(a.acceptance_all),
            str(a.unknown),
            str(a.never),
            f"{1000 * a.cpu_mean:.0f}ms",
            f"{1000 * a.cpu_max:.0f}ms",
        ]
        for label, a in runs
    ]
    return (
        "\nForecast accuracy (estimated start at submission vs actual start; ACCEPTANCE: median error over "
        "max(wait, 10m), jobs that waited)\n" + render_table(headers, rows)
    )


def accuracy_document(a: Accuracy) -> dict[str, Any]:
    return {
        "runtimeNoise": a.noise,
        "jobs": a.jobs,
        "waited": a.waited,
        "unknown": a.unknown,
        "willNotStart": a.never,
        "errorP50": a.error_p50,
        "errorP90": a.error_p90,
        "fractionP50": a.fraction_p50,
        "fractionP90": a.fraction_p90,
        "acceptance": a.acceptance,
        "acceptanceAllJobs": a.acceptance_all,
        "forecasts": a.forecasts,
        "cpuMeanSeconds": a.cpu_mean,
        "cpuMaxSeconds": a.cpu_max,
        "estimates": [
            {
                "job": e.job,
                "queue": e.queue,
                "submit": e.submit,
                "outlook": e.outlook,
                "estimated": e.estimated,
                "actual": e.actual,
                "startedAtOnce": e.at_once,
            }
            for e in a.estimates
        ],
    }
