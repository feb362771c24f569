"""How good the forecast is: trace mode records, at each job's submission, the start pumice would have
shown for it, and compares it with the start the job then had (``pumice simulate TRACE --forecast``).

At every event time where jobs were submitted, once the cluster has settled, :class:`ForecastTraceRun`
runs the forecast pumice serves (:func:`~controllers.simulate.forecast.forecast`) on the simulated
cluster's state, with the durations the trace declares as the jobs' expected runtimes
(``pumice.dev/expected-runtime``), and keeps each new job's estimate. Jobs submitted later are not known
to it: as in a live cluster, a job that arrives later and goes first is part of the error.

``--runtime-noise F``: each job then runs its declared duration times a factor drawn uniformly from
``1-F`` to ``1+F`` (seeded), while the forecast is still told the declared one, as when users guess.

The figures (:class:`Accuracy`) are over the jobs that had to wait: those that had not started when their
estimate was taken and got an estimate and later a start. What happened decides, not the estimate: a job the
forecast expected to start at once (its outlook ``Running``: the room of a job past its expected runtime
counts as free now) but that started later waited, and its error counts. Per job, the absolute error of the
estimated start, in seconds and as a fraction of the job's actual wait; medians and 90th percentiles of both;
and the acceptance figure, the median of the error over the larger of the wait and ten minutes (a tenth of it
is the larger of 10 % of the wait and 60 s), also over every job (those started at once count with no error).
Jobs whose estimate was ``Unknown`` or ``WillNotStart`` are counted apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from controllers.simulate.cluster import EPOCH
from controllers.simulate.engine import JobState, TraceRun
from controllers.simulate.forecast import ForecastInput, ForecastSettings, forecast
from controllers.simulate.trace import Trace
from extender.core.model import GroupKey
from extender.forecast.model import Outlook
from extender.forecast.runtimes import Runtime
from extender.plugins.registry import SchedulerConf

FLOOR = 600.0  # the wait below which the acceptance figure's error is taken over ten minutes


def noisy(trace: Trace, noise: float, seed: int = 26) -> Trace:
    """``trace`` with each job's duration times a factor drawn uniformly from 1-noise to 1+noise (a job
    that never ends stays so)."""
    if noise <= 0:
        return trace
    rng = np.random.default_rng(seed)
    jobs = tuple(
        dataclasses.replace(j, duration=j.duration * float(rng.uniform(1 - noise, 1 + noise)))
        if j.duration is not None
        else j
        for j in trace.jobs
    )
    return dataclasses.replace(trace, jobs=jobs)


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate:
    """What was shown for a job at its submission, and what happened (virtual seconds)."""

    job: str
    queue: str
    submit: float
    outlook: str
    estimated: float | None  # the start shown (None: Unknown, WillNotStart)
    actual: float | None  # its first start (None: it never started)
    at_once: bool = False  # it had started when its estimate was taken: nothing was estimated


@dataclass(frozen=True, slots=True, kw_only=True)
class Accuracy:
    """The figures over the jobs that had to wait (not started at once at their submission, with an
    estimate and a start), and the acceptance figure over every job with an estimate and a start."""

    noise: float
    jobs: int  # jobs submitted while the run went on
    waited: int  # of them, not started at submission, with a start estimated then and a start
    unknown: int
    never: int
    error_p50: float | None  # seconds
    error_p90: float | None
    fraction_p50: float | None  # of the actual wait
    fraction_p90: float | None
    acceptance: float | None  # median of error / max(wait, FLOOR), jobs that waited
    acceptance_all: float | None  # the same over every job with an estimate and a start
    forecasts: int
    cpu_mean: float
    cpu_max: float
    estimates: tuple[Estimate, ...]


class ForecastTraceRun(TraceRun):
    """A trace run that forecasts each job's start at its submission (see the module docstring)."""

    def __init__(
        self,
        trace: Trace,
        conf: SchedulerConf,
        *,
        noise: float = 0.0,
        settings: ForecastSettings = ForecastSettings(),  # noqa: B008  # frozen
        resume: bool = False,
        until: float | None = None,
        progress: Callable[[float], None] = lambda _t: None,
    ) -> None:
        super().__init__(trace, conf, resume=resume, until=until, progress=self._after)
        self._outer = progress
        self.conf = conf
        self.noise = noise
        self.settings = settings
        # What each job's pods declare (the trace's duration unless it says otherwise, never the noisy one).
        self.declared = {k: js.spec.expected_runtime for k, js in self.jobs.items()}
        self._new: list[GroupKey] = []
        self.shown: dict[GroupKey, tuple[str, float | None]] = {}
        self.at_once: set[GroupKey] = set()  # started by the time their estimate was taken
        self.cpu: list[float] = []

    def _submit(self, js: JobState) -> None:
        super()._submit(js)
        self._new.append(js.key)

    def _after(self, t: float) -> None:
        if self._new:
            self._forecast()
            self._new = []
        self._outer(t)

    def _forecast(self) -> None:
        runtimes: dict[GroupKey, Runtime] = {}
        started: dict[GroupKey, float] = {}
        for key, js in self.jobs.items():
            if js.end is not None:
                continue
            declared = self.declared[key]
            if declared is not None:  # a job that never ends has no runtime to tell: unknown
                runtimes[key] = Runtime.declared(declared)
            if js.started is not None:
                started[key] = EPOCH + js.started
        cluster = self.cluster
        inp = ForecastInput(
            models=cluster.cache.models(),
            now=cluster.now,
            runtimes=runtimes,
            started=started,
            aside=cluster.state.pending.settled_asides(),
            settled=cluster.state.pending.settled(),
        )
        f = forecast(inp, self.conf, self.settings)
        self.cpu.append(f.cpu_seconds)
        for key in self._new:
            js = self.jobs[key]
            if js.started is not None:
                self.shown[key] = (Outlook.RUNNING.value, js.started)
                self.at_once.add(key)
                continue
            g = f.groups.get(key)
            if g is None:
                self.shown[key] = (Outlook.UNKNOWN.value, None)
            elif g.start is None or g.outlook in (Outlook.UNKNOWN, Outlook.NEVER):
                self.shown[key] = (g.outlook.value, None)
            else:
                self.shown[key] = (g.outlook.value, g.start - EPOCH)

    def accuracy(self) -> Accuracy:
        rows = []
        for key, js in self.jobs.items():
            if key not in self.shown:
                continue  # not submitted before the run stopped
            outlook, at = self.shown[key]
            rows.append(
                Estimate(
                    job=f"{js.spec.namespace}/{js.spec.name}",
                    queue=js.spec.queue,
                    submit=js.spec.submit,
                    outlook=outlook,
                    estimated=at,
                    actual=js.first_start,
                    at_once=key in self.at_once,
                )
            )
        return summarize(rows, noise=self.noise, cpu=self.cpu)


def summarize(rows: Sequence[Estimate], *, noise: float, cpu: Sequence[float]) -> Accuracy:
    errors, fractions, accepted, accepted_all = [], [], [], []
    for r in rows:
        if r.estimated is None or r.actual is None:
            continue
        error = abs(r.estimated - r.actual)
        wait = r.actual - r.submit
        accepted_all.append(error / max(wait, FLOOR))
        if r.at_once:
            continue  # started at once: nothing was estimated
        errors.append(error)
        if wait > 0:
            fractions.append(error / wait)
        accepted.append(error / max(wait, FLOOR))

    def pct(values: list[float], q: float) -> float | None:
        return float(np.percentile(values, q)) if values else None

    return Accuracy(
        noise=noise,
        jobs=len(rows),
        waited=len(errors),
        unknown=sum(r.outlook == Outlook.UNKNOWN.value for r in rows),
        never=sum(r.outlook == Outlook.NEVER.value for r in rows),
        error_p50=pct(errors, 50),
        error_p90=pct(errors, 90),
        fraction_p50=pct(fractions, 50),
        fraction_p90=pct(fractions, 90),
        acceptance=pct(accepted, 50),
        acceptance_all=pct(accepted_all, 50),
        forecasts=len(cpu),
        cpu_mean=float(np.mean(cpu)) if cpu else 0.0,
        cpu_max=max(cpu, default=0.0),
        estimates=tuple(rows),
    )
