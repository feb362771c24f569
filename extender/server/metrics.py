"""A small Prometheus text-format registry: counters and latency histograms for the hot paths.

Hand-written rather than prometheus_client because the extender's hot path only needs an integer add
and a bisect per observation, and we want no process-global registry (settings are passed down).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...] = _BUCKETS
    counts: dict[str, list[int]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)

    def observe(self, label: str, seconds: float) -> None:
        c = self.counts.get(label)
        if c is None:
            c = self.counts[label] = [0] * (len(self.buckets) + 1)
            self.sums[label] = 0.0
        c[bisect.bisect_left(self.buckets, seconds)] += 1
        self.sums[label] += seconds

    def render(self, label_name: str) -> Iterable[str]:
        yield f"# HELP {self.name} {self.help}"
        yield f"# TYPE {self.name} histogram"
        for label, counts in sorted(self.counts.items()):
            acc = 0
            for bound, n in zip((*self.buckets, float("inf")), counts, strict=True):
                acc += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                yield f'{self.name}_bucket{{{label_name}="{label}",le="{le}"}} {acc}'
            yield f'{self.name}_sum{{{label_name}="{label}"}} {self.sums[label]}'
            yield f'{self.name}_count{{{label_name}="{label}"}} {acc}'


@dataclass
class Registry:
    """Gauges and counters are read through callables at scrape time (no double bookkeeping)."""

    histograms: list[tuple[Histogram, str]] = field(default_factory=list)
    values: list[tuple[str, str, str, Callable[[], dict[str, float]]]] = field(default_factory=list)

    def histogram(self, name: str, help: str, label_name: str) -> Histogram:
        h = Histogram(name, help)
        self.histograms.append((h, label_name))
        return h

    def add(self, name: str, kind: str, help: str, read: Callable[[], dict[str, float]]) -> None:
        """``read`` returns ``{label_text: value}``; ``label_text`` like ``verb="filter"`` or ``""``."""
        self.values.append((name, kind, help, read))

    def render(self) -> str:
        lines: list[str] = []
        for h, label_name in self.histograms:
            lines.extend(h.render(label_name))
        for name, kind, help, read in self.values:
            lines.append(f"# HELP {name} {help}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, v in sorted(read().items()):
                lines.append(f"{name}{{{labels}}} {v}" if labels else f"{name} {v}")
        return "\n".join(lines) + "\n"
