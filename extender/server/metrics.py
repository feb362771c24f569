"""pumice's Prometheus metrics, on prometheus_client, in one :class:`Metrics` object per process.

No global state: every instrument lives in the :class:`~prometheus_client.CollectorRegistry` of the
:class:`Metrics` the composition root builds and passes down (prometheus_client's default registry is
never touched, so two processes in one test run, or two test apps, do not collide).

Two kinds of metric, by where the number comes from:

- **observed on the hot path**: histograms (cycle, extender verb, admission, wait times) and the counters
  only an event can count. An observation is a lock and a bisect; the handlers get the bound ``observe``
  callables, never this module.
- **read at scrape time** (:meth:`Metrics.scrape`): counters pumice already keeps as plain integers
  (scheduler, informers, jobs, admission) and every gauge, per queue included, are read from the owning
  object when Prometheus scrapes, so nothing is counted twice and nothing costs the hot path.

Names follow Prometheus' conventions (base units, ``_seconds``, ``_total``) and Kueue's where they have one
(``build_info``; per-queue gauges with a ``queue`` label). Beside them, the composition root registers the
same facts again under **Volcano's own names, labels and units** (``volcano_queue_allocated_milli_cpu
{queue_name}``, histograms in milliseconds, counters whose names do not end in ``_total``: exported as
``untyped`` so the name is exactly Volcano's), so a Volcano user's dashboards and alerts keep working (see
:mod:`extender.volcano_families`). The process's own figures (CPU, memory, open files; the Python runtime
and its garbage collector) come from prometheus_client's collectors, on this registry too.

Adding a metric elsewhere in the process: ``metrics.counter(name, help, labels)`` (an event-counted
counter), ``metrics.histogram(name, help, labels, buckets)`` (observed where its event happens) or
``metrics.scrape(...)`` (a value read when scraped); each raises on a duplicate name.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client import Histogram as _PromHistogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    UnknownMetricFamily,
)
from prometheus_client.registry import Collector

# Extender verbs answer in well under a millisecond on the hot path; a whole-cycle filter takes tens.
VERB_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
CYCLE_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
ADMISSION_BUCKETS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0)
# Waiting for room is a second in an idle cluster, hours in a busy one, days for a job too big for its queue.
_HOUR: Final = 3600.0
WAIT_BUCKETS: Final = (
    *(1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0),
    *(_HOUR, 2 * _HOUR, 6 * _HOUR, 12 * _HOUR, 24 * _HOUR, 48 * _HOUR, 96 * _HOUR, 168 * _HOUR),
)

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

# "untyped": a counter whose name must stay as given (prometheus_client adds "_total" to a counter's).
Kind = Literal["counter", "gauge", "untyped"]
# One sample read at scrape time: its label values, in the family's label order, and its value.
Sample = tuple[Sequence[str], float]


@dataclass(frozen=True, slots=True)
class _Family:
    name: str
    kind: Kind
    help: str
    labels: tuple[str, ...]
    read: Callable[[], Iterable[Sample]]


class _ScrapeCollector(Collector):
    """Families whose samples are read from their owners when Prometheus scrapes."""

    def __init__(self) -> None:
        self.families: list[_Family] = []

    def describe(self) -> Iterable[Metric]:
        return [self._family(f) for f in self.families]

    def collect(self) -> Iterable[Metric]:
        for f in self.families:
            family = self._family(f)
            for values, value in f.read():
                family.add_metric(list(values), float(value))
            yield family

    @staticmethod
    def _family(f: _Family) -> GaugeMetricFamily | CounterMetricFamily | UnknownMetricFamily:
        if f.kind == "counter":
            return CounterMetricFamily(f.name, f.help, labels=f.labels)
        if f.kind == "untyped":
            return UnknownMetricFamily(f.name, f.help, labels=f.labels)
        return GaugeMetricFamily(f.name, f.help, labels=f.labels)


class Histogram:
    """A histogram with one label, observed as ``observe(label_value, seconds)`` (what the extender app
    and benchmarks call). Without ``registry`` it gets a private one: tests and benchmarks that only need
    somewhere to observe into."""

    def __init__(
        self,
        name: str,
        help: str,
        label: str = "verb",
        *,
        buckets: Sequence[float] = VERB_BUCKETS,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self._h = _PromHistogram(name, help, [label], buckets=buckets, registry=self.registry)

    def observe(self, label: str, seconds: float) -> None:
        self._h.labels(label).observe(seconds)


class Metrics:
    """Every instrument of one pumice process. Built once by the composition root."""

    def __init__(self, *, version: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._scraped = _ScrapeCollector()
        build = Gauge(
            "pumice_build_info",
            "pumice's version and the Python that runs it; always 1.",
            ["version", "python_version"],
            registry=r,
        )
        build.labels(version, platform.python_version()).set(1)
        self.extender = Histogram(
            "pumice_extender_request_seconds", "Extender verb latency, seconds.", "verb", registry=r
        )
        self.cycle_seconds = _PromHistogram(
            "pumice_scheduling_cycle_duration_seconds",
            "Scheduling cycle duration (snapshot, the pure cycle, applying its decisions), seconds.",
            buckets=CYCLE_BUCKETS,
            registry=r,
        )
        self._admission = _PromHistogram(
            "pumice_admission_duration_seconds",
            "Admission review handling time by resource kind and operation, seconds.",
            ["resource", "operation"],
            buckets=ADMISSION_BUCKETS,
            registry=r,
        )
        self.job_wait = _PromHistogram(
            "pumice_job_wait_seconds",
            "vcjob wait from creation to its first Running phase (observed from the watch), by queue, "
            "seconds.",
            ["queue"],
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.podgroup_wait = _PromHistogram(
            "pumice_podgroup_wait_seconds",
            "PodGroup wait from creation (Pending) to its first Running phase (observed from the watch), "
            "by queue, seconds.",
            ["queue"],
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.binds = Counter(
            "pumice_binds_total",
            "Pods of pumice's schedulers seen bound to a node in the watch (whoever bound them).",
            registry=r,
        )
        self._instruments: list[MetricWrapperBase] = [
            build,
            self.extender._h,
            self.cycle_seconds,
            self._admission,
            self.job_wait,
            self.podgroup_wait,
            self.binds,
        ]
        r.register(self._scraped)
        # The process (CPU seconds, resident memory, open files, start time), the interpreter and its
        # garbage collector: process_*, python_info, python_gc_*.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)  # registers itself only where the interpreter keeps gc statistics

    # --- hot-path observers, handed to the parts that observe ---------------------------------------
    def observe_admission(self, resource: str, operation: str, seconds: float) -> None:
        self._admission.labels(resource, operation).observe(seconds)

    def observe_cycle(self, seconds: float) -> None:
        self.cycle_seconds.observe(seconds)

    # --- adding metrics -------------------------------------------------------------------------------
    def counter(self, name: str, help: str, labels: Sequence[str] = ()) -> Counter:
        """A counter incremented where its event happens (``.inc()``, or ``.labels(...).inc()``)."""
        if name in self.names() or name.removesuffix("_total") + "_total" in self.names():
            raise ValueError(f"metric {name} is registered twice")
        counter = Counter(name, help, list(labels), registry=self.registry)
        self._instruments.append(counter)
        return counter

    def histogram(
        self, name: str, help: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> _PromHistogram:
        """A histogram observed where its event happens (``.observe(v)``, or ``.labels(...).observe(v)``)."""
        if name in self.names():
            raise ValueError(f"metric {name} is registered twice")
        histogram = _PromHistogram(name, help, list(labels), buckets=buckets, registry=self.registry)
        self._instruments.append(histogram)
        return histogram

    def scrape(
        self,
        name: str,
        kind: Kind,
        help: str,
        read: Callable[[], Iterable[Sample]],
        labels: Sequence[str] = (),
    ) -> None:
        """A family whose samples ``read`` returns when Prometheus scrapes."""
        if name in self.names():
            raise ValueError(f"metric {name} is registered twice")
        self._scraped.families.append(_Family(name, kind, help, tuple(labels), read))

    def names(self) -> set[str]:
        """Every family name this registry exports (counters under their ``_total`` name)."""
        out = {f.name for f in self._scraped.families}
        for instrument in self._instruments:
            for metric in instrument.describe():
                out.add(metric.name + "_total" if metric.type == "counter" else metric.name)
        return out

    def render(self) -> str:
        """The Prometheus text exposition of every family."""
        return generate_latest(self.registry).decode()


def exponential_range(low: float, high: float, count: int) -> tuple[float, ...]:
    """``count`` bucket bounds from ``low`` to ``high``, each the last times one factor (as Prometheus'
    Go client's ExponentialBucketsRange, so histograms named as Volcano's have Volcano's buckets)."""
    factor = (high / low) ** (1.0 / (count - 1))
    # Six significant digits: the bounds read as numbers in the exposition (99.99999999999989 would not).
    return tuple(float(f"{low * factor**i:.6g}") for i in range(count))


def one(value: float) -> Iterator[Sample]:
    """A family of a single unlabelled sample."""
    yield ((), value)
