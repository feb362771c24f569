"""Desired status of PodGroups and Queues, computed from the snapshot (pure; writers diff and patch).

PodGroup status mirrors Volcano: ``phase`` (see :mod:`extender.core.gang`), ``running``, ``succeeded``,
``failed`` and ``conditions`` — ``Unschedulable`` with a reason a user can act on while the gang waits,
``Scheduled`` once it is whole. Queue status: ``state`` (kept as set by users/commands, ``Open`` when
unset), ``allocated`` (requests of its bound or planned, unfinished pods) and PodGroup counts by phase.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from extender.core.gang import MemberCounts, is_admitted, next_phase
from extender.core.model import GroupPhase, PodGroup
from extender.core.resources import format_resource_list
from extender.core.snapshot import Snapshot

UNSCHEDULABLE = "Unschedulable"
SCHEDULED = "Scheduled"


def _condition(
    existing: list[Mapping[str, Any]], ctype: str, reason: str, message: str, now: str
) -> list[dict[str, Any]]:
    """The single current condition, keeping its transition time when nothing about it changed."""
    for c in existing:
        if c.get("type") == ctype and c.get("reason") == reason and c.get("message") == message:
            return [dict(c)]
    return [
        {"type": ctype, "status": "True", "reason": reason, "message": message, "lastTransitionTime": now}
    ]


def podgroup_status(
    snap: Snapshot,
    group: PodGroup,
    existing: Mapping[str, Any],
    unschedulable: tuple[str, str] | None,
    now: str,
) -> dict[str, Any]:
    pods = [snap.pods[u] for u in snap.members.get(group.key, ())]
    counts = MemberCounts.of(pods, set(snap.plans))
    phase = next_phase(
        group.phase, admitted=is_admitted(group.phase), counts=counts, min_member=group.min_member
    )
    conds = list(existing.get("conditions") or [])
    if phase in (GroupPhase.RUNNING, GroupPhase.COMPLETED):
        conditions = _condition(conds, SCHEDULED, "tasks in gang are ready to be scheduled", "", now)
    elif unschedulable is not None:
        conditions = _condition(conds, UNSCHEDULABLE, unschedulable[0], unschedulable[1], now)
    else:
        conditions = (
            [c for c in conds if c.get("type") != UNSCHEDULABLE] if phase == GroupPhase.INQUEUE else conds
        )
    status: dict[str, Any] = {"phase": phase.value, "running": counts.running}
    status["succeeded"] = counts.succeeded
    status["failed"] = counts.failed
    status["conditions"] = conditions
    return status


def queue_allocated(snap: Snapshot, name: str) -> dict[str, int]:
    """What queue ``name`` holds: the requests of its bound (or planned), unfinished pods, by resource;
    the one ``allocated`` the status, the metrics and the CLI show (see extender.plugins.queue_shares)."""
    held = snap.queue_held.get(name)
    allocated = snap.index.to_map(held) if held is not None else {}
    allocated.pop("pods", None)  # a slot count, not a resource users budget
    return allocated


def phase_counts(groups: Iterable[PodGroup]) -> dict[str, dict[GroupPhase, int]]:
    """PodGroups (not the implicit groups of plain pods) by queue and phase."""
    out: dict[str, dict[GroupPhase, int]] = {}
    for g in groups:
        if not g.implicit:
            by_phase = out.setdefault(g.queue, dict.fromkeys(GroupPhase, 0))
            by_phase[g.phase] += 1
    return out


def queue_status(
    snap: Snapshot,
    name: str,
    existing: Mapping[str, Any],
    counts: Mapping[str, Mapping[GroupPhase, int]] | None = None,
) -> dict[str, Any]:
    """``counts``: :func:`phase_counts` of every PodGroup, when ``snap`` does not hold them all (a status
    pass over the groups that changed)."""
    by_phase = dict.fromkeys(GroupPhase, 0)
    if counts is None:
        for g in snap.groups.values():
            if g.queue == name and not g.implicit:
                by_phase[g.phase] += 1
    else:
        by_phase.update(counts.get(name, {}))
    allocated = queue_allocated(snap, name)
    state = existing.get("state") or "Open"
    if state == "Closing" and not any(allocated.values()) and not by_phase[GroupPhase.RUNNING]:
        state = "Closed"  # no new work was taken; the last of what ran is gone
    return {
        "state": state,
        "allocated": format_resource_list(allocated),
        "pending": by_phase[GroupPhase.PENDING],
        "inqueue": by_phase[GroupPhase.INQUEUE],
        "running": by_phase[GroupPhase.RUNNING],
        "unknown": by_phase[GroupPhase.UNKNOWN],
        "completed": by_phase[GroupPhase.COMPLETED],
    }


def differs(desired: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """True when a field we own differs (zero counts equal absent ones: the API server drops them)."""
    for k, v in desired.items():
        cur = current.get(k)
        if v in (0, "", [], {}) and cur in (None, 0, "", [], {}):
            continue
        if cur != v:
            return True
    return False
