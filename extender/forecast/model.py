"""What a forecast says of each waiting group, and the wait buckets the metrics count by.

A group's outlook is one of:

- ``Running``: it runs already, or the scheduler starts it now (its ``start`` is the forecast's time);
- ``Estimated``: it starts at ``start`` (epoch seconds) if the running jobs end when expected and no job
  that arrives later goes first; ``earliest`` to ``latest`` is the range the spread of the runtimes it
  waits on gives;
- ``Unknown``: it waits on the room of a running job whose runtime nobody knows (no
  ``pumice.dev/expected-runtime`` and no finished job to learn from); ``reason`` says so;
- ``WillNotStart``: even with every running job gone it would not start under the current cluster (bigger
  than any node, over its queue's capability, a closed queue); ``reason`` is the scheduler's own.

Pure data; times are epoch seconds, passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from extender.core.model import GroupKey


class Outlook(StrEnum):
    RUNNING = "Running"
    ESTIMATED = "Estimated"
    UNKNOWN = "Unknown"
    NEVER = "WillNotStart"


@dataclass(frozen=True, slots=True, kw_only=True)
class Position:
    """A waiting group's place in the order the scheduler considers groups (1 is next): in its queue and
    in the cluster, and the groups right ahead of it in its queue, in line order (the last is next before
    it; at most a few are named, ``in_queue - 1`` are ahead)."""

    queue: str
    in_queue: int
    in_cluster: int
    ahead: tuple[GroupKey, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupForecast:
    key: GroupKey
    queue: str
    outlook: Outlook
    start: float | None = None
    earliest: float | None = None
    latest: float | None = None
    reason: str = ""
    position: Position | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Forecast:
    """The forecast of every group that waited for a node at ``computed_at`` (epoch seconds); ``steps``:
    the simulated times the scheduler ran at; ``cpu_seconds``: what computing it cost."""

    computed_at: float
    groups: Mapping[GroupKey, GroupForecast]
    steps: int = 0
    cpu_seconds: float = 0.0

    def ordered(self) -> list[GroupForecast]:
        """Every group (each waited when the forecast was computed) in cluster position order, those
        without a position (their queue takes no turn) last."""
        return sorted(self.groups.values(), key=_order)


def _order(f: GroupForecast) -> tuple[bool, int, str]:
    return (f.position is None, f.position.in_cluster if f.position else 0, f.key)


EMPTY: Final = Forecast(computed_at=0.0, groups={})

# Upper bounds (seconds) of the estimated-wait buckets; a wait above the last is "longer".
WAIT_BOUNDS: Final = ((60.0, "1m"), (600.0, "10m"), (3600.0, "1h"), (6 * 3600.0, "6h"), (86400.0, "1d"))
WAIT_LABELS: Final = ("now", *(f"under {label}" for _, label in WAIT_BOUNDS), "longer", "unknown", "never")


def wait_bucket(f: GroupForecast, now: float) -> str:
    """The bucket of ``f``'s estimated wait from ``now``: one of :data:`WAIT_LABELS`."""
    if f.outlook == Outlook.UNKNOWN or (f.outlook == Outlook.ESTIMATED and f.start is None):
        return "unknown"
    if f.outlook == Outlook.NEVER:
        return "never"
    wait = max(0.0, (f.start or now) - now)
    if f.outlook == Outlook.RUNNING or wait <= 0:
        return "now"
    for bound, label in WAIT_BOUNDS:
        if wait <= bound:
            return f"under {label}"
    return "longer"
