"""sla: a job that has waited past its service-level agreement goes first and is admitted.

A job's SLA is a waiting time: its PodGroup's ``volcano.sh/sla-waiting-time`` annotation (else the plain
``sla-waiting-time`` one, as Volcano reads them; one that does not read as a positive Go duration is
skipped), else this plugin's ``sla-waiting-time`` argument. A job with neither has no SLA. It is past its
SLA once the cycle's clock reaches its PodGroup's creation time plus its waiting time.

- job order: jobs past their SLA first, the earliest deadline (the most overdue) first; every other job is
  equal here, left to the plugins after this one;
- admission: a job past its SLA is admitted whatever the plugins of later tiers say (Volcano's Permit
  vote); a rejection in its own tier or an earlier one still stands. The enqueue action is to ask
  :meth:`past_sla` for this; until the session has such a permit vote, an overdue job only goes first.

Deliberate differences from Volcano:

- Volcano orders every job that has an SLA, due or not, before every job without one, so a far-off
  deadline (or an annotation any user may write) jumps the queue; here only jobs already past their SLA,
  the ones the SLA promises something to, move ahead.
- A bad ``sla-waiting-time`` argument (not a duration, zero, negative) fails loading the conf; Volcano logs
  it and runs without a default SLA.
- A group whose creation time is unknown is never past its SLA (Volcano's zero time is always past it).
- Volcano also lets an overdue job be pipelined (``JobPipelinedFn``); pumice has no such vote.

Enable with::

    - name: sla
      arguments:
        sla-waiting-time: 1h30m   # optional: the SLA of jobs without their own annotation
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from extender.core.durations import parse_duration
from extender.core.errors import ConfigError
from extender.core.model import PodGroup
from extender.core.timestamps import epoch
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin
from extender.framework.session import Session

WAITING_TIME: Final = "sla-waiting-time"
ARGUMENTS: Final = ArgumentTable({WAITING_TIME: (str, "")})


@dataclass(frozen=True, slots=True, kw_only=True)
class SlaArgs:
    # Seconds a job without its own annotation may wait; None: such jobs have no SLA.
    waiting_time: float | None = None

    @classmethod
    def parse(cls, arguments: Mapping[str, Any]) -> SlaArgs:
        raw = ARGUMENTS.parse(SlaPlugin.name, arguments)[WAITING_TIME]
        if WAITING_TIME not in arguments:
            return cls()
        try:
            seconds = parse_duration(raw)
        except ValueError as e:
            raise ConfigError(
                f"plugin sla: argument {WAITING_TIME}={arguments[WAITING_TIME]!r} must be a Go duration "
                f"such as 30m or 1h2m3s ({e})"
            ) from None
        if seconds <= 0:
            raise ConfigError(f"plugin sla: argument {WAITING_TIME}={raw!r} must be longer than 0")
        return cls(waiting_time=seconds)


class SlaPlugin(Plugin):
    name = "sla"
    argument_table = ARGUMENTS
    # Deadlines against the cycle's clock, which the session fixes before ``open``.
    static_job_order = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.args = SlaArgs.parse(arguments)

    def deadline(self, group: PodGroup) -> float | None:
        """When ``group``'s SLA runs out (seconds since the epoch), or None if it has none."""
        waiting = group.sla_waiting_time if group.sla_waiting_time is not None else self.args.waiting_time
        if waiting is None:
            return None
        created = epoch(group.created)
        if created <= 0:
            return None  # unknown creation time: how long it has waited cannot be told
        return created + waiting

    def past_sla(self, ssn: Session, group: PodGroup) -> bool:
        """Whether ``group`` has waited its SLA out by this cycle's clock (it must then be admitted)."""
        due = self.deadline(group)
        return due is not None and ssn.now >= due

    def open(self, ssn: Session) -> None:
        # A group refused admission is left out of later cycles until something changes; its deadline
        # passing is such a change, which no watch event reports: ask for a cycle then.
        for key, g in ssn.snapshot.groups.items():
            if key not in ssn.admitted and (due := self.deadline(g)) is not None:
                ssn.retry_at(due)

    def enqueue_permit(self, ssn: Session, group: PodGroup) -> bool:
        return self.past_sla(ssn, group)

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[int, float]:
        due = self.deadline(group)
        if due is not None and ssn.now >= due:
            return (0, due)
        return (1, 0.0)
