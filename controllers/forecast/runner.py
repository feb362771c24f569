"""The forecast beside the scheduler: :class:`Forecaster` runs it off the scheduling path, bounded.

At most every ``interval`` seconds, and only when something it depends on changed since the last one
(the cache, the plans, the learned runtimes, the conf), it takes its input on the event loop
(:func:`~controllers.forecast.inputs.forecast_input`, a pass over the cache's objects) and runs
:func:`~controllers.simulate.forecast.forecast` off the event loop, never inside a cycle or a verb: the
simulated cluster is its own, the live cache only lent its frozen objects. Where it runs is handed in
(``run``): a worker thread (:func:`in_thread`), or a worker process that uses another core and leaves
the GIL to the event loop (:class:`~controllers.forecast.worker.ForecastProcess`, ``pumice serve``'s
default). The latest forecast is kept
(``latest``) for the status writer, the HTTP endpoint and the metrics; a forecast that fails is logged
and counted, and the last good one stays.

A forecast is a whole simulation (seconds of CPU at 1 000 nodes x 1 000 pending jobs, see
docs/src/forecast.md); in a thread it shares the interpreter with the scheduling cycle, so the wait before
the next one also grows with what the last one cost: at least ``COST_RATIO`` times its CPU seconds, so
that the forecast takes at most a twentieth of a core however large the cluster, and scheduling keeps the
rest (kept for the worker process too: its core is the machine's, not only ours).

Every replica forecasts (each serves the endpoint); only the one that writes statuses shows it on
PodGroups.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from controllers.forecast.inputs import forecast_input
from controllers.scheduling.shared import SchedulingState
from controllers.simulate.forecast import ForecastInput, ForecastSettings, forecast
from controllers.state.cache import ClusterCache
from extender.forecast.model import EMPTY, Forecast
from extender.forecast.runtimes import RuntimeBook
from extender.plugins.registry import SchedulerConf

log = logging.getLogger(__name__)

# The wait before the next forecast is at least this many times the last one's CPU seconds.
COST_RATIO = 20.0

# Where a forecast runs: given its input, the conf and the settings, the forecast, awaited.
ForecastRun = Callable[[ForecastInput, SchedulerConf, ForecastSettings], Awaitable[Forecast]]


async def in_thread(inp: ForecastInput, conf: SchedulerConf, settings: ForecastSettings) -> Forecast:
    """A forecast in a worker thread of this process (``pumice serve --forecast-in thread``)."""
    return await asyncio.to_thread(forecast, inp, conf, settings)


class Forecaster:
    def __init__(
        self,
        cache: ClusterCache,
        shared: SchedulingState,
        book: RuntimeBook,
        *,
        interval: float,
        settings: ForecastSettings = ForecastSettings(),  # noqa: B008  # frozen
        clock: Callable[[], float] = time.time,
        heartbeat: Callable[[], None] = lambda: None,
        run: ForecastRun = in_thread,
    ) -> None:
        self.cache = cache
        self.shared = shared
        self.book = book
        self.interval = interval
        self.settings = settings
        self.clock = clock
        self.heartbeat = heartbeat
        self.run_forecast = run
        self.latest: Forecast = EMPTY
        self._seen: tuple[int, int, int, int] | None = None
        self.runs = 0
        self.errors = 0
        self.cpu_seconds = 0.0
        self.last_cpu_seconds = 0.0

    def next_wait(self) -> float:
        """Seconds until the next forecast: ``interval``, or longer after a costly one (see above)."""
        return max(self.interval, COST_RATIO * self.last_cpu_seconds)

    def forecast(self) -> Forecast:
        """The latest forecast (EMPTY before the first)."""
        return self.latest

    def _inputs_version(self) -> tuple[int, int, int, int]:
        s = self.shared
        return (s.cache.version, s.ledger.plan_version, self.book.version, id(s.conf))

    async def once(self) -> bool:
        """One forecast if anything changed since the last; whether one was made."""
        if not self.shared.decided:
            return False  # no cycle yet: nothing is settled, phases are not decided
        seen = self._inputs_version()
        if seen == self._seen:
            return False
        inp = forecast_input(self.cache, self.shared, self.book, self.clock())
        try:
            result = await self.run_forecast(inp, self.shared.conf, self.settings)
        except Exception:  # one forecast's problem (or its worker's death): the last good one stays
            self.errors += 1
            log.exception("forecast failed")
            return False
        self._seen = seen
        self.latest = result
        self.runs += 1
        self.cpu_seconds += result.cpu_seconds
        self.last_cpu_seconds = result.cpu_seconds
        log.debug(
            "forecast",
            extra={
                "groups": len(result.groups),
                "steps": result.steps,
                "cpu_ms": round(result.cpu_seconds * 1e3),
            },
        )
        return True

    async def run(self) -> None:
        """Forecast every ``interval`` seconds when something changed (a root task of ``pumice serve``)."""
        while True:
            self.heartbeat()
            await asyncio.sleep(self.next_wait())
            await self.once()
