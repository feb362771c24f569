"""PodGroup phases: the one place that decides them (Volcano's gang semantics).

``Pending`` (not admitted) → ``Inqueue`` (admitted by enqueue: its minResources fit its queue and the
cluster) → ``Running`` (at least ``minMember`` pods bound or finished successfully) → ``Completed`` (every
allocated pod succeeded). A group that was Running and lost members so that fewer than ``minMember``
remain allocated, while some still run, is ``Unknown``: the gang is broken and a user or the job
controller must act.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from extender.core.model import GroupPhase, Pod, PodPhase


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberCounts:
    """How a group's pods stand. ``allocated`` is bound (Pending on a node, or Running)."""

    running: int = 0
    succeeded: int = 0
    failed: int = 0
    allocated: int = 0
    waiting: int = 0
    planned: int = 0

    @staticmethod
    def of(pods: Iterable[Pod], planned: frozenset[str] | set[str] = frozenset()) -> MemberCounts:
        running = succeeded = failed = allocated = waiting = n_planned = 0
        for p in pods:
            if p.phase == PodPhase.SUCCEEDED:
                succeeded += 1
            elif p.phase == PodPhase.FAILED:
                failed += 1
            elif p.node_name:
                allocated += 1
                running += p.phase == PodPhase.RUNNING
            elif not p.deleting:
                waiting += 1
                n_planned += p.uid in planned
        return MemberCounts(
            running=running,
            succeeded=succeeded,
            failed=failed,
            allocated=allocated,
            waiting=waiting,
            planned=n_planned,
        )


def next_phase(current: GroupPhase, *, admitted: bool, counts: MemberCounts, min_member: int) -> GroupPhase:
    """The phase a group should show, from where it is and how its pods stand."""
    ready = counts.allocated + counts.succeeded
    if ready >= max(min_member, 1):
        if counts.allocated == 0 and counts.succeeded > 0:
            return GroupPhase.COMPLETED
        return GroupPhase.RUNNING
    if current in (GroupPhase.RUNNING, GroupPhase.UNKNOWN) and counts.running > 0:
        return GroupPhase.UNKNOWN
    if current == GroupPhase.COMPLETED:
        return GroupPhase.COMPLETED
    if admitted or current != GroupPhase.PENDING:
        return GroupPhase.INQUEUE
    return GroupPhase.PENDING


def is_admitted(phase: GroupPhase) -> bool:
    return phase != GroupPhase.PENDING
