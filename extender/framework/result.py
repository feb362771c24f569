"""What a cycle decides, as data: the :class:`CycleResult` the actions fill and the reasons in it.

The session owns one CycleResult a cycle; actions and :class:`~extender.framework.statement.Statement`
write to it, plugins may add to it in ``close`` (Volcano's OnSessionClose), and the caller carries it out
(binds, evictions, PodGroup conditions). Placements and evictions enter it only when a statement commits,
so a gang that could not be placed whole leaves nothing in it but its reason (Volcano's statement idea).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.core.model import GroupKey, PodUID
from extender.core.snapshot import Aside


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """Why a group is not (fully) placed: a CamelCase condition ``reason`` and a ``message`` for humans."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Eviction:
    """A decision to evict a running pod: ``Preempted`` (by a higher-priority job of its queue) or
    ``Reclaimed`` (by a queue below its deserved share), ``by`` the group that takes its place."""

    reason: str
    message: str
    by: GroupKey


@dataclass(slots=True)
class CycleTimings:
    """How long the parts of one cycle took, in seconds, when the cycle was given a clock (Volcano's
    open-session, per-action and per-plugin latencies). Measured, never read by a rule."""

    open_session: float = 0.0
    actions: list[tuple[str, float]] = field(default_factory=list)
    # (plugin, "OnSessionOpen" | "OnSessionClose", seconds), as Volcano labels its plugin latency.
    plugins: list[tuple[str, str, float]] = field(default_factory=list)


@dataclass(slots=True)
class CycleResult:
    """One cycle's decisions: plans, admissions, reasons, evictions (see the fields)."""

    placements: dict[PodUID, str] = field(default_factory=dict)
    admitted: set[GroupKey] = field(default_factory=set)
    unschedulable: dict[GroupKey, Unschedulable] = field(default_factory=dict)
    # Groups that got their whole gang planned in this cycle.
    ready: set[GroupKey] = field(default_factory=set)
    # Groups left waiting for a reason that stands, with what they weigh while a cache leaves them out.
    aside: dict[GroupKey, Aside] = field(default_factory=dict)
    # Admitted groups with every waiting pod planned (nothing to place until they change), with what they
    # weigh while a cache leaves them out (see extender.framework.cycle.placed).
    placed: dict[GroupKey, Aside] = field(default_factory=dict)
    # Running pods to evict, and the placements that must wait for pods to leave their node first
    # (Volcano's Pipelined): placement uid -> the pods it waits for.
    evictions: dict[PodUID, Eviction] = field(default_factory=dict)
    pipelined: dict[PodUID, frozenset[PodUID]] = field(default_factory=dict)
    # When a cycle should run again though nothing changes (a rule waits for time to pass), or None.
    retry_at: float | None = None
    # Annotations to write on placed pods before they bind (numa-aware's topology decision), by uid.
    annotations: dict[PodUID, dict[str, str]] = field(default_factory=dict)
    # How long the cycle's parts took, when run_cycle was given a clock (metrics only).
    timings: CycleTimings | None = None
    # Allocate's turns in order: the group and how many placements the cycle held as its turn ended (a
    # queue dropped as overused: each of its groups, at that moment). What a caller that left groups out
    # needs to bound the room each of them would have found (controllers.simulate.forecast_prefix).
    turns: list[tuple[GroupKey, int]] = field(default_factory=list)
