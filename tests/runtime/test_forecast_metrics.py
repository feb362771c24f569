"""The forecast's metric families: waiting PodGroups by queue and estimated-wait bucket, and its cost."""

from __future__ import annotations

from typing import cast

from controllers.forecast.runner import Forecaster
from extender.core.model import GroupKey
from extender.forecast.model import Forecast, GroupForecast, Outlook
from extender.forecast.runtimes import RuntimeBook
from extender.forecast_families import register_forecast_families
from extender.server.metrics import Metrics

T = 1_800_000_000.0


class Latest:
    def __init__(self, f: Forecast) -> None:
        self.latest = f
        self.runs, self.errors, self.cpu_seconds = 3, 1, 0.75
        self.book = RuntimeBook()

    def forecast(self) -> Forecast:
        return self.latest


def g(name: str, queue: str, outlook: Outlook, start: float | None) -> GroupForecast:
    return GroupForecast(key=GroupKey(f"ns/{name}"), queue=queue, outlook=outlook, start=start)


def test_pending_by_queue_and_wait() -> None:
    f = Forecast(
        computed_at=T,
        groups={
            x.key: x
            for x in (
                g("a", "q1", Outlook.ESTIMATED, T + 300),
                g("b", "q1", Outlook.ESTIMATED, T + 400),
                g("c", "q1", Outlook.UNKNOWN, None),
                g("d", "q2", Outlook.NEVER, None),
                g("e", "q2", Outlook.RUNNING, T),
            )
        },
        steps=4,
        cpu_seconds=0.25,
    )
    m = Metrics(version="test")
    register_forecast_families(m, cast(Forecaster, Latest(f)), lambda: T)
    text = m.render()
    lines = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("pumice_forecast")
    }
    assert lines['pumice_forecast_pending_podgroups{estimated_wait="under 10m",queue="q1"}'] == 2
    assert lines['pumice_forecast_pending_podgroups{estimated_wait="unknown",queue="q1"}'] == 1
    assert lines['pumice_forecast_pending_podgroups{estimated_wait="never",queue="q2"}'] == 1
    assert lines['pumice_forecast_pending_podgroups{estimated_wait="now",queue="q2"}'] == 1
    assert lines['pumice_forecast_pending_podgroups{estimated_wait="longer",queue="q2"}'] == 0
    assert lines["pumice_forecast_runs_total"] == 3 and lines["pumice_forecast_errors_total"] == 1
    assert lines["pumice_forecast_last_cpu_seconds"] == 0.25 and lines["pumice_forecast_last_steps"] == 4
    assert lines["pumice_forecast_timestamp_seconds"] == T
