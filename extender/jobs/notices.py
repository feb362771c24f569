"""What a vcjob tells its user: why it waits (in ``status.state``) and which transitions become Events.

Pure: statuses in, text out; the job controller writes what these return.

- :func:`waiting_state`: while a job is Pending and its PodGroup carries a standing ``Unschedulable``
  condition (the scheduler's reason why the gang cannot start), the job's ``status.state`` says so, with
  reason ``PodGroupPending`` (the name Volcano's job controller gives the Event it records for a pending
  PodGroup) and the condition's own reason and message. ``kubectl describe vcjob``, ``kubectl get vcjob -o
  yaml`` and ``pumice job view`` then say why the job waits without anyone looking up the PodGroup. Once
  the condition is gone (the group is admitted, or runs) that text is cleared again.
- :func:`transition_event`: one Event per change of the job's phase, or of why it waits, naming what made
  it happen (the lifecycle policy's event and action, a Command, ``maxRetry``), as the state's reason and
  message already say. Unchanged states give none, so a reconcile that only refreshes counters records
  nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from extender.core.status import UNSCHEDULABLE

PODGROUP_PENDING: Final = "PodGroupPending"

# Phases a user wants flagged: the job lost its pods or will not finish as asked.
_WARNING_PHASES: Final = frozenset(
    {"Aborting", "Aborted", "Restarting", "Failed", "Terminating", "Terminated"}
)
# A PodGroup in these phases waits for nothing, whatever conditions it still carries.
_NOT_WAITING: Final = frozenset({"Running", "Completed", "Failed", "Succeeded"})
_NUMBER: Final = re.compile(r"\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """An Event to record on the job."""

    type: str  # "Normal" or "Warning"
    reason: str
    note: str


def same_reason(a: str, b: str) -> bool:
    """Whether two reason messages differ only in their figures (``idle cpu 7.6`` vs ``idle cpu 5.2``).

    Figures move with every pod that starts or ends; an Event per such change would be an Event per
    scheduling cycle. What is short, or which rule blocks, is the change worth an Event; the condition
    and the job's state always carry the current figures.
    """
    return _NUMBER.sub("#", a) == _NUMBER.sub("#", b)


def blocking_condition(podgroup: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """The PodGroup's standing ``Unschedulable`` condition as (reason, message), or None."""
    if podgroup is None:
        return None
    status = podgroup.get("status")
    if not isinstance(status, Mapping) or status.get("phase") in _NOT_WAITING:
        return None
    for c in status.get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == UNSCHEDULABLE and str(c.get("status")) == "True":
            return str(c.get("reason") or UNSCHEDULABLE), str(c.get("message") or "").strip()
    return None


def waiting_state(phase: str, podgroup: Mapping[str, Any] | None, text: tuple[str, str]) -> tuple[str, str]:
    """The (reason, message) of a job's ``status.state``: ``text`` unless the job is Pending on its
    PodGroup's blocking condition; text from an earlier such condition is cleared once it is gone."""
    blocked = blocking_condition(podgroup) if phase == "Pending" else None
    if blocked is not None:
        reason, message = blocked
        return PODGROUP_PENDING, f"{reason}: {message}" if message else reason
    if text[0] == PODGROUP_PENDING:
        return "", ""
    return text


def transition_event(before: Mapping[str, Any], after: Mapping[str, Any]) -> Notice | None:
    """The Event for a job's ``status.state`` going from ``before`` to ``after`` (None: nothing to tell)."""
    old_phase, new_phase = str(before.get("phase") or ""), str(after.get("phase") or "")
    reason, message = str(after.get("reason") or ""), str(after.get("message") or "")
    # A new job entering Pending is no news; only why it waits might be (below).
    if new_phase and new_phase != old_phase and (old_phase or new_phase != "Pending"):
        why = f": {message}" if message else ""
        note = f"{old_phase or 'created'} → {new_phase}{why}"
        kind = "Warning" if new_phase in _WARNING_PHASES else "Normal"
        return Notice(type=kind, reason=reason or new_phase, note=note)
    if reason == PODGROUP_PENDING and not (
        before.get("reason") == reason and same_reason(str(before.get("message") or ""), message)
    ):
        return Notice(type="Warning", reason=PODGROUP_PENDING, note=message)
    return None
