"""The ``StartEstimate`` condition on a waiting PodGroup: a forecast as users see it, written and read back.

The status writer keeps it beside the ``Unschedulable`` condition while a group waits (and drops it once
the group runs); ``pumice job why``, ``pumice job list -o wide`` and ``pumice queue pending`` read it
back with :func:`read`. Both directions live here, so the text and its reading cannot drift apart.

- ``reason``: ``Estimated``, ``StartUnknown`` or ``WillNotStart`` (``status`` ``True``, ``Unknown``,
  ``False``); a group the scheduler starts now reads ``Estimated`` with its start at the computation;
- ``message``: ``position 2 in queue team-a (5 in the cluster); start about 2026-01-02T10:00:00Z
  (between 2026-01-02T09:40:00Z and 2026-01-02T10:30:00Z)``, or ``...; start unknown: <why>``, or
  ``will not start: <why>``;
- ``lastTransitionTime``: when the estimate shown was computed.

Writes are bounded (:func:`settle`): a newer forecast replaces the condition only when it says something
new to the user: another outlook, a position that moved by more than a tenth (any move among the first
ten), a start that moved by more than a tenth of the wait left (and at least a minute), or a condition
older than ``refresh`` seconds. Pure: the time is passed in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from extender.core.timestamps import epoch, rfc3339
from extender.forecast.model import GroupForecast, Outlook

TYPE: Final = "StartEstimate"
ESTIMATED: Final = "Estimated"
UNKNOWN: Final = "StartUnknown"
NEVER: Final = "WillNotStart"
_REASONS: Final = {
    Outlook.RUNNING: (ESTIMATED, "True"),
    Outlook.ESTIMATED: (ESTIMATED, "True"),
    Outlook.UNKNOWN: (UNKNOWN, "Unknown"),
    Outlook.NEVER: (NEVER, "False"),
}
REFRESH: Final = 1800.0

_POSITION = re.compile(r"position (\d+) in queue (\S+) \((\d+) in the cluster\)")
_STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)"
_START = re.compile(rf"start about {_STAMP}(?: \(between {_STAMP} and {_STAMP}\))?")


def message(f: GroupForecast, now: float) -> str:
    parts = []
    if f.position is not None:
        p = f.position
        parts.append(f"position {p.in_queue} in queue {p.queue} ({p.in_cluster} in the cluster)")
    if f.outlook == Outlook.NEVER:
        parts.append(f"will not start: {f.reason}" if f.reason else "will not start")
    elif f.outlook == Outlook.UNKNOWN or f.start is None:
        parts.append(f"start unknown: {f.reason}" if f.reason else "start unknown")
    else:
        start = max(f.start, now)
        text = f"start about {rfc3339(start)}"
        low, high = max(f.earliest or start, now), max(f.latest or start, now)
        if rfc3339(low) != rfc3339(high):
            text += f" (between {rfc3339(low)} and {rfc3339(high)})"
        parts.append(text)
    return "; ".join(parts)


def condition(f: GroupForecast, now: float) -> dict[str, Any]:
    """The condition for forecast ``f`` computed at ``now``."""
    reason, status = _REASONS[f.outlook]
    return {
        "type": TYPE,
        "status": status,
        "reason": reason,
        "message": message(f, now),
        "lastTransitionTime": rfc3339(now),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """A ``StartEstimate`` condition read back. Times are epoch seconds (None: not said)."""

    reason: str
    in_queue: int | None
    in_cluster: int | None
    queue: str
    start: float | None
    earliest: float | None
    latest: float | None
    computed_at: float | None
    message: str


def find(conditions: object) -> Mapping[str, Any] | None:
    """The ``StartEstimate`` condition among a PodGroup's ``status.conditions``, if any."""
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == TYPE:
            return c
    return None


def read(c: Mapping[str, Any]) -> Shown:
    text = str(c.get("message") or "")
    pos = _POSITION.search(text)
    start = _START.search(text)

    def when(i: int) -> float | None:
        return epoch(start.group(i)) or None if start is not None and start.group(i) else None

    computed = epoch(str(c.get("lastTransitionTime") or ""))
    return Shown(
        reason=str(c.get("reason") or ""),
        in_queue=int(pos.group(1)) if pos else None,
        in_cluster=int(pos.group(3)) if pos else None,
        queue=pos.group(2) if pos else "",
        start=when(1),
        earliest=when(2) or when(1),
        latest=when(3) or when(1),
        computed_at=computed or None,
        message=text,
    )


def _moved(old: int | None, new: int | None) -> bool:
    if old is None or new is None:
        return old != new
    if min(old, new) <= 10:
        return old != new
    return abs(old - new) > 0.1 * old


def settle(
    existing: Mapping[str, Any] | None, new: dict[str, Any], now: float, *, refresh: float = REFRESH
) -> dict[str, Any]:
    """``existing`` (as a plain dict) when ``new`` tells the user nothing new, else ``new``."""
    if existing is None:
        return new
    old, fresh = read(existing), read(new)
    if (
        old.reason != fresh.reason
        or old.queue != fresh.queue
        or _moved(old.in_queue, fresh.in_queue)
        or _moved(old.in_cluster, fresh.in_cluster)
        or (old.computed_at or 0.0) < now - refresh
        or (old.start is None) != (fresh.start is None)
        or existing.get("status") != new.get("status")
    ):
        return new
    if old.start is not None and fresh.start is not None:
        left = max(fresh.start - now, 0.0)
        if abs(fresh.start - old.start) > max(60.0, 0.1 * left):
            return new
    if old.start is None and old.message != fresh.message and old.reason != ESTIMATED:
        return new  # why it cannot say changed
    return dict(existing)


def with_estimate(
    desired: dict[str, Any],
    current: Mapping[str, Any],
    f: GroupForecast | None,
    computed_at: float,
    now: float,
) -> dict[str, Any]:
    """A PodGroup's ``desired`` status (from :func:`extender.core.status.podgroup_status`) with its
    ``StartEstimate`` condition: the forecast's ``f`` (computed at ``computed_at``) while the group waits,
    the standing one kept when it tells nothing new (:func:`settle`) or when the forecast has no word on
    the group yet; none once the group runs."""
    conditions = [c for c in desired.get("conditions") or [] if c.get("type") != TYPE]
    existing = find(current.get("conditions"))
    if desired.get("phase") in ("Pending", "Inqueue"):
        if f is not None and computed_at:
            conditions.append(settle(existing, condition(f, computed_at), now))
        elif existing is not None:
            conditions.append(dict(existing))
    return {**desired, "conditions": conditions}
