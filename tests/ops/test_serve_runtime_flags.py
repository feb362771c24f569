"""``pumice serve --switch-interval`` and ``--forecast-in``: parsed with their defaults and bounds, the
switch interval set once by ``serve`` at start-up (never on import), the forecast run where asked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

import pytest

from controllers.forecast.runner import in_thread
from controllers.forecast.worker import ForecastProcess
from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender import serve
from extender.plugins.registry import load_conf
from extender.process.settings import SWITCH_INTERVAL, ServeSettings
from extender.serve_args import add_serve_parser, serve_settings
from extender.wiring import Process


def settings(*argv: str) -> ServeSettings:
    parser = argparse.ArgumentParser(prog="pumice")
    add_serve_parser(parser.add_subparsers(dest="command"))
    return serve_settings(parser.parse_args(["serve", *argv]), parser)


@pytest.fixture
def switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


def test_defaults_and_bounds() -> None:
    s = settings()
    assert s.switch_interval == SWITCH_INTERVAL == 0.005 and s.scheduling.forecast_in == "process"
    s = settings("--switch-interval=0.0005", "--forecast-in=thread")
    assert s.switch_interval == 0.0005 and s.scheduling.forecast_in == "thread"
    for bad in ("0", "-1", "2"):
        with pytest.raises(SystemExit):
            settings(f"--switch-interval={bad}")
    with pytest.raises(SystemExit):
        settings("--forecast-in=fork")


def test_serve_sets_the_switch_interval_at_start(switch_interval: None) -> None:
    sys.setswitchinterval(0.004)
    # Set before anything else can fail.
    s = settings("--switch-interval=0.0007", "--kubeconfig=/nonexistent/kubeconfig")
    assert serve.run(s) == 2  # no kubeconfig: a start-up problem
    assert sys.getswitchinterval() == pytest.approx(0.0007)


async def test_the_forecast_runs_where_asked() -> None:
    client = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(settings(), load_conf(), client)
        assert isinstance(proc.forecast_worker, ForecastProcess)
        assert proc.forecaster.run_forecast is proc.forecast_worker
        proc = Process(settings("--forecast-in=thread"), load_conf(), client)
        assert proc.forecast_worker is None and proc.forecaster.run_forecast is in_thread
    finally:
        await client.close()
