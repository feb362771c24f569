"""Per-queue figures for the metrics endpoint, computed when Prometheus scrapes, never on the hot path.

For each queue: ``allocated`` (the requests of bound, unfinished pods of pumice's schedulers, per queue of
their group: the snapshot's ``queue_held``, as the scheduler counts usage), ``deserved`` (what the conf's
share plugin, ``proportion`` or ``capacity``, computes when a session opens over every object: what a cycle
would use; absent when the conf has neither), ``capability`` (the spec; only limited resources), the
PodGroups per phase, and ``share``: Volcano's proportion share, the largest ``allocated / deserved`` over
the resources the queue deserves any of (0 when it deserves nothing).

Units: cpu in cores, every other resource in its accounted unit (bytes, counts), so the figures read as
Prometheus base units.

Cost: one full snapshot and one session opening per call (what ``pumice queue list`` costs); the caller
memoises it for the scrape, as the several per-queue families read the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from controllers.state.cache import ClusterCache
from extender.core.model import GroupPhase
from extender.framework.session import Session
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.proportion import ProportionPlugin
from extender.plugins.registry import SchedulerConf


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFigures:
    name: str
    allocated: Mapping[str, float]
    deserved: Mapping[str, float] | None
    capability: Mapping[str, float]
    podgroups: Mapping[str, int]  # by phase; every phase present
    share: float


def _units(amounts: Mapping[str, int]) -> dict[str, float]:
    return {r: (v / 1000 if r == "cpu" else float(v)) for r, v in amounts.items() if r != "pods"}


def _share(allocated: Mapping[str, float], deserved: Mapping[str, float] | None) -> float:
    if not deserved:
        return 0.0
    return max((allocated.get(r, 0.0) / d for r, d in deserved.items() if d > 0), default=0.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    queues: list[QueueFigures]
    allocatable: Mapping[str, float]  # the nodes' allocatable, summed


def queue_figures(cache: ClusterCache, conf: SchedulerConf) -> Figures:
    snap = cache.full_snapshot()
    share_plugins = [
        p for tier in conf.tiers() for p in tier if isinstance(p, ProportionPlugin | CapacityPlugin)
    ]
    deserved: dict[str, dict[str, float]] | None = None
    if share_plugins:
        plugin = share_plugins[0]
        Session(snap, [[plugin]])  # opening the session opens the plugin: what a cycle starts with
        deserved = {q: _units(snap.index.to_map(v)) for q, v in plugin.deserved.items()}
    phases: dict[str, dict[str, int]] = {}
    for pg in snap.groups.values():
        counts = phases.setdefault(pg.queue, {p.value: 0 for p in GroupPhase})
        counts[pg.phase.value] += 1
    out = []
    for name, q in sorted(snap.queues.items()):
        allocated = _units(snap.index.to_map(snap.queue_held[name])) if name in snap.queue_held else {}
        d = None if deserved is None else deserved.get(name, {})
        out.append(
            QueueFigures(
                name=name,
                allocated=allocated,
                deserved=d,
                capability=_units(q.capability),
                podgroups=phases.get(name, {p.value: 0 for p in GroupPhase}),
                share=_share(allocated, d),
            )
        )
    return Figures(queues=out, allocatable=_units(snap.index.to_map(snap.alloc.sum(axis=0))))


class Memo:
    """The last result of ``compute`` for ``ttl`` seconds: one computation per scrape, however many
    families read it."""

    def __init__(self, compute: Callable[[], Figures], ttl: float = 1.0) -> None:
        self._compute = compute
        self._ttl = ttl
        self._at = -1e18
        self._value = Figures(queues=[], allocatable={})

    def __call__(self) -> Figures:
        now = time.monotonic()
        if now - self._at > self._ttl:
            self._value = self._compute()
            self._at = now
        return self._value
