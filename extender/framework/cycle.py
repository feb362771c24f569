"""One scheduling cycle as a pure function: ``run_cycle(snapshot, conf, now) -> CycleResult``.

The server's loop runs it in a worker thread over an immutable snapshot, the simulator runs it in a
loop of its own, tests run it directly: the same decisions from the same inputs. ``now`` is the cycle's
clock (seconds since the epoch), the only time a rule may look at.

The conf's plugins are built afresh for every cycle (``CycleConf.tiers``: a plugin keeps per-cycle state
from ``open`` on), and their hook tables (:class:`~extender.framework.hooks.Hooks`) with them.

Given a ``clock`` (a monotonic one, ``time.perf_counter``), the cycle also times its parts into
``CycleResult.timings`` for the metrics: opening the session, each action, each plugin's open and close.
Nothing decides by those times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from extender.core.model import GroupKey, GroupPhase
from extender.core.snapshot import Snapshot
from extender.framework.hooks import Hooks
from extender.framework.plugin import Plugin
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES
from extender.framework.result import CycleResult, CycleTimings
from extender.framework.session import Session

# Outcomes that stand until something changes that could alter them (room freed, a queue or node
# changed, the group itself changed): a cache may leave such groups out of later snapshots.
_STANDING = frozenset({NOT_ENOUGH_RESOURCES, NOT_ADMITTED})

# The actions and plugins under which an admitted group whose waiting pods all hold plans weighs on a cycle
# only through the totals an Aside carries (its queue's demand and promise, the plans in the ledger's
# matrices): they read other groups only as those totals, or only groups with pods to place. Not here:
# preempt and reclaim (a placed group's running pods are victims, ordered by its share), nodegroup (it
# counts the pods on nodes by the snapshot's groups), resource-strategy-fit (node_fit: see below).
_PLACED_ACTIONS = frozenset({"enqueue", "allocate", "backfill"})
_PLACED_PLUGINS = frozenset(
    {
        "priority",
        "gang",
        "conformance",
        "overcommit",
        "drf",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
        "sla",
        "capacity",
        "resourcequota",
        "task-topology",
        "network-topology-aware",
        "numa-aware",
        "deviceshare",
    }
)


class CycleConf(Protocol):
    """A loaded conf (``extender.plugins.registry.SchedulerConf``): actions in order, fresh tiers, and
    fresh plugins in their hook tables."""

    @property
    def actions(self) -> Sequence[Callable[[Session], None]]: ...

    @property
    def action_names(self) -> Sequence[str]: ...

    def tiers(self) -> Sequence[Sequence[Plugin]]: ...

    def hooks(self) -> Hooks: ...


def run_cycle(
    snapshot: Snapshot, conf: CycleConf, now: float, *, clock: Callable[[], float] | None = None
) -> CycleResult:
    """Every configured action, in order, against ``snapshot``; with, for each group left waiting for a
    reason that stands, what it weighs on its queue while a cache leaves it out (``CycleResult.aside``).
    ``clock``: time the cycle's parts into ``CycleResult.timings`` (see the module docstring)."""
    if clock is None:
        ssn = Session(snapshot, conf.hooks(), now=now)
        for act in conf.actions:
            act(ssn)
        for plugin in ssn.plugins:
            plugin.close(ssn)
    else:
        ssn = _timed(snapshot, conf, now, clock)
    held = None if ssn.reservation is None else ssn.reservation.group
    if ssn.hooks.node_fit:
        # A plugin predicate on free capacity (resource-strategy-fit's proportional) can let a pod in
        # when others are placed (a GPU pod lowers the cpu kept for idle GPUs), not only when room is
        # freed: no refusal stands, every waiting group is looked at each cycle (as Volcano does).
        return ssn.result
    # A group holding a reservation is looked at every cycle: its reservation lasts only as long as the
    # cycles that keep it. (All at once: a full cluster leaves thousands of groups waiting.)
    standing = [
        key
        for key, why in ssn.result.unschedulable.items()
        if why.reason in _STANDING and key in snapshot.groups and key != held
    ]
    ssn.result.aside.update(ssn.promises.asides(standing))
    if leaves_placed_out(conf, ssn):
        ssn.result.placed = ssn.promises.asides([k for k in placed(ssn) if k != held])
    return ssn.result


def leaves_placed_out(conf: CycleConf, ssn: Session) -> bool:
    """Whether ``conf`` lets a cache leave placed groups out (see ``_PLACED_PLUGINS``)."""
    return placed_safe(conf.action_names, [p.name for p in ssn.plugins])


def placed_safe(actions: Sequence[str], plugins: Sequence[str]) -> bool:
    """Whether these actions and plugins read the groups a cache leaves out only as the totals an Aside
    carries (see ``_PLACED_PLUGINS``)."""
    return set(actions) <= _PLACED_ACTIONS and all(name in _PLACED_PLUGINS for name in plugins)


def placed(ssn: Session) -> list[GroupKey]:
    """The PodGroups of the snapshot that are admitted, Inqueue as the cycle ends, and whose every waiting
    pod holds a plan: no action has anything to do for them until one of their pods or the PodGroup
    changes. A group with a pod that asks GPU cards or NUMA cpus is not among them (deviceshare and
    numa-aware read planned pods by the snapshot's), nor one without pods (a job's pods come after its
    admission: allocate tells it when its queue goes)."""
    snap = ssn.snapshot
    out: list[GroupKey] = []
    for key, g in snap.groups.items():
        if g.implicit or key in ssn.result.unschedulable:
            continue
        if not (g.phase == GroupPhase.INQUEUE or key in ssn.result.admitted):
            continue
        members = snap.members.get(key, ())
        if not members:
            continue
        pods = [snap.pods[u] for u in members]
        if any(
            p.gpu is not None or p.numa is not None or (p.waiting and p.uid not in ssn.plans) for p in pods
        ):
            continue
        out.append(key)
    return out


def _timed(snapshot: Snapshot, conf: CycleConf, now: float, clock: Callable[[], float]) -> Session:
    """The actions and the plugins' close of :func:`run_cycle`, each timed with ``clock``."""
    started = clock()
    ssn = Session(snapshot, conf.hooks(), now=now, clock=clock)
    timings = CycleTimings(open_session=clock() - started)
    timings.plugins.extend((name, "OnSessionOpen", s) for name, s in ssn.open_seconds)
    for name, act in zip(conf.action_names, conf.actions, strict=True):
        started = clock()
        act(ssn)
        timings.actions.append((name, clock() - started))
    for plugin in ssn.plugins:
        started = clock()
        plugin.close(ssn)
        timings.plugins.append((plugin.name, "OnSessionClose", clock() - started))
    ssn.result.timings = timings
    return ssn
