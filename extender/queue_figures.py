"""The per-queue figures the metrics export, computed from the cache when Prometheus scrapes, never on the
hot path. Part of the composition root (read by :mod:`extender.queue_families`); nothing else imports it.

For each queue, as accounted integers (milli-cpu, bytes, counts) keyed by resource, the pods slot left out:

- ``allocated`` and ``deserved`` as :func:`extender.plugins.queue_shares.queue_shares` computes them through
  the conf's share plugin over a full snapshot of the cache (``deserved`` None when the conf has neither
  ``proportion`` nor ``capacity``), and from the same computation ``real_capability`` (the most the plugin
  lets the queue hold: Volcano's realCapability) and ``inqueue`` (what the queue's admitted, Inqueue groups
  are promised, as a cycle counts it);
- ``pending`` and ``running`` (the requests of its waiting pods, of its Running pods:
  :func:`~extender.plugins.queue_shares.queue_usage`) and ``request`` (allocated + pending: what the queue
  asks for, Volcano's request);
- the spec: ``capability`` (only the resources it limits), ``guarantee``, ``weight``, ``state``;
- the PodGroups per phase, ``share`` (Volcano's proportion share: the largest ``allocated / deserved`` over
  the resources the queue deserves any of, 0 when it deserves nothing) and ``overused`` (Volcano's: every
  resource it deserves is held in full, so it takes no turn).

Beside the queues: the nodes' allocatable summed, the GPU cards' figures (:mod:`extender.gpu_figures`,
over the same snapshot), and per waiting group (the loop's reasons) how many of
its pods have no node nor plan (Volcano's unschedulable task count). Cost: one full snapshot and one session
opening per scrape (what ``pumice queue list`` costs); :class:`Memo` keeps the result for the families
that read it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from controllers.state.cache import ClusterCache
from extender.core.model import GroupKey, GroupPhase
from extender.gpu_figures import GpuFigures, gpu_figures
from extender.plugins.queue_shares import queue_shares, queue_usage
from extender.plugins.registry import SchedulerConf

Amounts = Mapping[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFigures:
    name: str
    allocated: Amounts
    deserved: Amounts | None
    real_capability: Amounts | None
    capability: Amounts
    guarantee: Amounts
    pending: Amounts
    running: Amounts
    inqueue: Amounts
    request: Amounts
    weight: int
    state: str
    podgroups: Mapping[str, int]  # by phase; every phase present
    share: float
    overused: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    queues: list[QueueFigures]
    allocatable: Amounts  # the nodes' allocatable, summed
    # Per waiting group (namespace, name): its pods without a node or a plan.
    unready: Mapping[tuple[str, str], int]
    gpus: GpuFigures


EMPTY = Figures(queues=[], allocatable={}, unready={}, gpus=GpuFigures())


def _spec(amounts: Amounts) -> dict[str, int]:
    return {r: v for r, v in amounts.items() if r != "pods"}


def _share(allocated: Amounts, deserved: Amounts | None) -> float:
    if not deserved:
        return 0.0
    return max((allocated.get(r, 0) / d for r, d in deserved.items() if d > 0), default=0.0)


def _overused(allocated: Amounts, deserved: Amounts | None) -> bool:
    # Volcano's proportion: deserved <= allocated in every resource (one that deserves nothing is overused).
    return deserved is not None and all(d <= allocated.get(r, 0) for r, d in deserved.items())


def _sum(a: Amounts, b: Amounts) -> dict[str, int]:
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, 0) + v
    return out


def queue_figures(cache: ClusterCache, conf: SchedulerConf, waiting: Collection[GroupKey] = ()) -> Figures:
    """Every queue's figures over a full snapshot of ``cache``; ``waiting``: the groups the loop holds a
    reason for (their unready pods are counted)."""
    snap = cache.full_snapshot()
    shares = queue_shares(snap, conf)
    usage = queue_usage(snap)
    phases: dict[str, dict[str, int]] = {}
    for pg in snap.groups.values():
        counts = phases.setdefault(pg.queue, {p.value: 0 for p in GroupPhase})
        counts[pg.phase.value] += 1
    out = []
    for name, q in sorted(snap.queues.items()):
        allocated = shares.allocated.get(name, {})
        deserved = None if shares.deserved is None else shares.deserved.get(name, {})
        pending = usage.pending.get(name, {})
        out.append(
            QueueFigures(
                name=name,
                allocated=allocated,
                deserved=deserved,
                real_capability=None
                if shares.real_capability is None
                else shares.real_capability.get(name, {}),
                capability=_spec(q.capability),
                guarantee=_spec(q.guarantee),
                pending=pending,
                running=usage.running.get(name, {}),
                inqueue=shares.inqueue.get(name, {}),
                request=_sum(allocated, pending),
                weight=q.weight,
                state=q.state.value,
                podgroups=phases.get(name, {p.value: 0 for p in GroupPhase}),
                share=_share(allocated, deserved),
                overused=_overused(allocated, deserved),
            )
        )
    unready = {}
    for key in waiting:
        group = snap.groups.get(key)
        if group is None:
            continue
        pods = (snap.pods[u] for u in snap.members.get(key, ()))
        unready[(group.namespace, group.name)] = sum(1 for p in pods if p.waiting and p.uid not in snap.plans)
    total = {r: v for r, v in shares.total.items() if r != "pods"}
    return Figures(queues=out, allocatable=total, unready=unready, gpus=gpu_figures(snap))


class Memo:
    """The last result of ``compute`` for ``ttl`` seconds: one computation per scrape, however many
    families read it."""

    def __init__(self, compute: Callable[[], Figures], ttl: float = 1.0) -> None:
        self._compute = compute
        self._ttl = ttl
        self._at = -1e18
        self._value = EMPTY

    def __call__(self) -> Figures:
        now = time.monotonic()
        if now - self._at > self._ttl:
            self._value = self._compute()
            self._at = now
        return self._value
