"""Queue shares: what each queue deserves and holds, as the conf's own share plugin computes them.

The one computation behind every place that shows shares: the metrics endpoint (``pumice_queue_*``, see
:mod:`extender.families`), ``pumice queue list`` and ``pumice simulate`` (both through
:mod:`controllers.shares_view`) and the simulator's time series (:mod:`controllers.simulate.metrics`).

``deserved`` is not worked out here: a :class:`~extender.framework.session.Session` is opened over the
snapshot with the conf's share plugin alone (``proportion``, or ``capacity`` with its ``enableHierarchy``),
built through the plugin registry as a cycle builds it, and what the plugin computed when the session
opened is read back. So every caller shows what a scheduling cycle over the same objects would use, and a
change to the plugins changes them all alike. A conf with neither plugin deserves nothing: ``deserved`` (and
``real_capability``, the most the plugin lets a queue hold) is None. ``inqueue`` is what the session
counts as promised to each queue's admitted (Inqueue) groups, as every cycle counts it. ``allocated`` is
the snapshot's ``queue_held`` (the requests of bound, unfinished pods of pumice's schedulers, per queue of
their group), as the scheduler counts a queue's usage and the status writer writes it
(:func:`extender.core.status.queue_allocated`).

:func:`queue_usage` adds, per queue, what its waiting pods request (``pending``) and what its Running
pods request (``running``): plain sums over the snapshot, for the metrics only (the CLI and the
simulator do not pay for them).

Pure: a snapshot and a conf in, integers out (milli-cpu, bytes, counts, keyed by resource; zero amounts
left out). Cost: one session opening, what a cycle starts with; callers that show figures often memoise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from extender.core.model import PodPhase, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import Snapshot
from extender.core.status import queue_allocated
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.proportion import ProportionPlugin
from extender.plugins.registry import SchedulerConf, load_conf

PROPORTION: Final = ProportionPlugin.name
CAPACITY: Final = CapacityPlugin.name
SHARE_PLUGINS: Final = (PROPORTION, CAPACITY)

SharePlugin = ProportionPlugin | CapacityPlugin
# The plugins' "no limit" (far above any real amount): left out of real_capability.
_UNLIMITED: Final = np.iinfo(np.int64).max // 4


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueShares:
    """Every queue's figures over one snapshot. Amounts are accounted integers keyed by resource."""

    plugin: str | None  # the share plugin that computed ``deserved``; None when the conf has none
    deserved: Mapping[str, Mapping[str, int]] | None  # by queue; None without a share plugin
    allocated: Mapping[str, Mapping[str, int]]  # by queue; only queues that hold something
    total: Mapping[str, int]  # the nodes' allocatable, summed
    resources: tuple[str, ...]  # every resource the snapshot accounts, in its column order
    # Promised to admitted (Inqueue) groups, by queue; only queues owed something.
    inqueue: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # The most each queue may hold by the share plugin (limited resources only); None without one.
    real_capability: Mapping[str, Mapping[str, int]] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueUsage:
    """What each queue's pods request, by state; accounted integers keyed by resource, the pods slot
    left out, only queues with such pods."""

    pending: Mapping[str, Mapping[str, int]]  # pods waiting for a node (unbound, unfinished)
    running: Mapping[str, Mapping[str, int]]  # pods in phase Running


def share_plugin(conf: SchedulerConf) -> SharePlugin | None:
    """The conf's share plugin as a cycle builds it: the first ``proportion`` or ``capacity`` of its tiers
    (with the arguments and switches the conf gives it), or None."""
    return next((p for tier in conf.tiers() for p in tier if isinstance(p, SharePlugin)), None)


def share_conf(name: str, *, hierarchy: bool = False) -> SchedulerConf:
    """A conf whose only plugin is the share plugin ``name`` (``hierarchy``: capacity's
    ``enableHierarchy: true``), for callers that name the plugin rather than hold a conf (the CLI's
    ``--plugin``). ConfigError for a name no plugin has, ValueError for one that is not a share plugin."""
    entry: dict[str, Any] = {"name": name}
    if hierarchy:
        entry["enableHierarchy"] = True
    # Loaded first: a name no plugin has fails as in any conf (ConfigError), then one that is no share plugin.
    conf = load_conf(json.dumps({"actions": "enqueue, allocate", "tiers": [{"plugins": [entry]}]}))
    if name not in SHARE_PLUGINS:
        raise ValueError(f"{name} is not a share plugin; choose one of {', '.join(SHARE_PLUGINS)}")
    return conf


def queue_shares(snapshot: Snapshot, conf: SchedulerConf) -> QueueShares:
    """Deserved and allocated per queue over ``snapshot``, through ``conf``'s share plugin."""
    plugin = share_plugin(conf)
    deserved: dict[str, dict[str, int]] | None = None
    real: dict[str, dict[str, int]] | None = None
    # Opening the session opens the plugin: what a cycle starts with.
    ssn = Session(snapshot, build_hooks([] if plugin is None else [[plugin]]))
    if plugin is not None:
        deserved = {q: snapshot.index.to_map(v) for q, v in plugin.deserved.items()}
        real = {q: _limited(snapshot, v) for q, v in plugin.real_capability.items()}
    return QueueShares(
        inqueue={q: _counted(snapshot, v) for q, v in ssn.queue_inqueue.items() if v.any()},
        real_capability=real,
        plugin=None if plugin is None else plugin.name,
        deserved=deserved,
        allocated={q: queue_allocated(snapshot, q) for q in snapshot.queue_held},
        total=snapshot.index.to_map(snapshot.alloc.sum(axis=0)),
        resources=tuple(snapshot.index.names),
    )


def queue_usage(snapshot: Snapshot) -> QueueUsage:
    """Per queue of their group, the requests of waiting pods and of Running pods (see QueueUsage)."""
    waiting: dict[str, list[PodUID]] = {}
    running: dict[str, list[PodUID]] = {}
    for key, uids in snapshot.members.items():
        queue = snapshot.groups[key].queue
        for uid in uids:
            pod = snapshot.pods[uid]
            if pod.waiting:
                waiting.setdefault(queue, []).append(uid)
            elif pod.phase == PodPhase.RUNNING and pod.node_name:
                running.setdefault(queue, []).append(uid)
    return QueueUsage(
        pending={q: _counted(snapshot, snapshot.request_sum(us)) for q, us in waiting.items()},
        running={q: _counted(snapshot, snapshot.request_sum(us)) for q, us in running.items()},
    )


def _counted(snapshot: Snapshot, v: Vector) -> dict[str, int]:
    """A vector as amounts by resource: zero amounts and the pods slot left out."""
    out = {r: a for r, a in snapshot.index.to_map(v).items() if a}
    out.pop("pods", None)
    return out


def _limited(snapshot: Snapshot, v: Vector) -> dict[str, int]:
    """A capability vector by resource: only the limited ones (the pods slot left out)."""
    out = {r: int(a) for r, a in zip(snapshot.index.names, v.tolist(), strict=True) if a < _UNLIMITED}
    out.pop("pods", None)
    return out
