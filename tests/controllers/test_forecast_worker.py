"""The forecast in a worker process: the same forecast as in a thread, from another process; a worker that
dies fails one forecast and is replaced at the next; one that raises stays; cancelled or closed, it ends."""

from __future__ import annotations

import asyncio
import os
import pickle
import time
from typing import Any, cast

import pytest

from controllers.forecast.inputs import forecast_input
from controllers.forecast.runner import Forecaster, in_thread
from controllers.forecast.worker import ForecastFailed, ForecastProcess, WorkerCrashed, dumps
from controllers.scheduling.scheduler import build_scheduler
from controllers.simulate.forecast import ForecastInput, ForecastSettings
from extender.core.model import GroupKey
from extender.forecast.model import Outlook
from extender.forecast.runtimes import RuntimeBook
from extender.plugins.registry import load_conf
from tests.controllers.test_forecaster import scenario, state_with
from tests.controllers.test_scheduler import RecordingExecutor

NOW = 1704069000.0


class _Exits:
    """Unpickled in the worker, it ends the worker there and then (a crash while it works)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (os._exit, (3,))


class _Sleeps:
    """Unpickled in the worker, it keeps the worker busy for a minute."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (time.sleep, (60,))


def forecaster(run: Any) -> Forecaster:
    state = state_with(*scenario())
    s = build_scheduler(state, load_conf(), RecordingExecutor())
    s.loop.cycle()
    s.shared.decided += 1
    return Forecaster(state.cache, s.shared, RuntimeBook(), interval=1.0, clock=lambda: NOW, run=run)


@pytest.fixture
def worker() -> Any:
    w = ForecastProcess()
    yield w
    w.close()


async def test_a_worker_process_forecasts_what_a_thread_does(worker: ForecastProcess) -> None:
    in_process, threaded = forecaster(worker), forecaster(in_thread)
    assert await in_process.once() and await threaded.once()
    assert worker.pid is not None and worker.pid != os.getpid() and worker.started == 1
    # At a lower CPU priority than this process (nice +10): the serving process gets the CPU first.
    assert _nice(worker.pid) == _nice(os.getpid()) + 10
    a, b = in_process.forecast(), threaded.forecast()
    assert a.groups == b.groups and a.steps == b.steps and a.computed_at == b.computed_at
    g = a.groups[GroupKey("default/wait")]
    assert (g.outlook, g.start) == (Outlook.ESTIMATED, NOW + 600)


def test_the_input_is_shipped_as_pickle_would_ship_it() -> None:
    f = forecaster(in_thread)
    inp = forecast_input(f.cache, f.shared, f.book, NOW)
    job = (inp, load_conf(), ForecastSettings(max_steps=7))
    getters: dict[type, Any] = {}
    shipped = dumps(job, getters)
    assert shipped == pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)  # the same stream, only faster
    back = pickle.loads(shipped)
    assert (back[0], back[2]) == (inp, job[2]) and dumps(job, getters) == shipped
    pod = inp.models.pods[0]
    assert getters[type(pod)] is not None and getters[type(pod.phase)] is None  # an enum: as pickle does


async def test_a_worker_that_dies_is_replaced_and_the_forecast_retried(worker: ForecastProcess) -> None:
    f = forecaster(worker)
    assert await f.once()
    first = worker.pid
    assert first is not None
    settings, conf = ForecastSettings(), load_conf()
    # Dies while it works: that forecast fails, nothing else does.
    with pytest.raises(WorkerCrashed):
        await worker(cast(ForecastInput, _Exits()), conf, settings)
    assert worker.crashes == 1 and worker.pid is None
    # Killed while idle: the forecaster's next forecast fails, counted; the last good one stays.
    f.book.version += 1  # something changed: a forecast is due
    assert await f.once()
    second = worker.pid
    assert second is not None and second != first and worker.started == 2
    os.kill(second, 9)
    f.book.version += 1
    assert not await f.once()
    assert f.errors == 1 and f.runs == 2 and worker.crashes == 2 and f.forecast().groups
    # The next turn retries (nothing was marked seen) in a new worker.
    assert await f.once()
    assert f.runs == 3 and worker.started == 3 and worker.pid not in (first, second)


async def test_a_forecast_that_raises_leaves_the_worker(worker: ForecastProcess) -> None:
    settings, conf = ForecastSettings(), load_conf()
    with pytest.raises(ForecastFailed, match="AttributeError"):
        await worker(cast(ForecastInput, None), conf, settings)
    pid = worker.pid
    assert pid is not None and worker.crashes == 0
    assert await forecaster(worker).once()
    assert worker.pid == pid and worker.started == 1


async def test_cancelled_mid_forecast_or_closed_the_worker_ends(worker: ForecastProcess) -> None:
    call = asyncio.create_task(worker(cast(ForecastInput, _Sleeps()), load_conf(), ForecastSettings()))
    for _ in range(200):  # until the worker is up and busy
        await asyncio.sleep(0.05)
        if worker.pid is not None:
            break
    pid = worker.pid
    assert pid is not None
    await asyncio.sleep(0.5)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert worker.pid is None and not _alive(pid)
    assert await forecaster(worker).once()  # a new one for the next forecast
    pid = worker.pid
    assert pid is not None
    worker.close()
    assert not _alive(pid)
    with pytest.raises(WorkerCrashed):
        await worker(cast(ForecastInput, None), load_conf(), ForecastSettings())


def _nice(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().split(")")[-1].split()[16])  # field 19 of proc(5)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
