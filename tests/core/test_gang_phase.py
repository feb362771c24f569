"""PodGroup phase transitions (extender.core.gang), as a table: every row of the state machine."""

from __future__ import annotations

import pytest

from extender.core.gang import MemberCounts, is_admitted, next_phase
from extender.core.model import GroupPhase
from extender.core.parse import parse_pod
from tests.core.builders import pod

P, Q, R, U, C = (
    GroupPhase.PENDING,
    GroupPhase.INQUEUE,
    GroupPhase.RUNNING,
    GroupPhase.UNKNOWN,
    GroupPhase.COMPLETED,
)


def counts(
    allocated: int = 0, running: int | None = None, succeeded: int = 0, failed: int = 0
) -> MemberCounts:
    """``running`` defaults to every allocated pod running."""
    return MemberCounts(
        allocated=allocated,
        running=allocated if running is None else running,
        succeeded=succeeded,
        failed=failed,
    )


# (id, current, admitted, counts, minMember, expected)
TABLE = [
    # Pending: waits for enqueue.
    ("pending-not-admitted", P, False, counts(), 2, P),
    ("pending-admitted", P, True, counts(), 2, Q),
    ("pending-partly-bound-not-admitted", P, False, counts(1), 2, P),
    ("pending-already-whole", P, False, counts(2), 2, R),
    ("pending-whole-and-done", P, False, counts(succeeded=2), 2, C),
    # Inqueue: admitted, waiting for the gang.
    ("inqueue-empty", Q, False, counts(), 2, Q),
    ("inqueue-partly-bound", Q, False, counts(1, running=0), 2, Q),
    ("inqueue-partly-running", Q, False, counts(1), 2, Q),
    ("inqueue-gang-bound-not-running", Q, False, counts(2, running=0), 2, R),
    ("inqueue-gang-running", Q, False, counts(2), 2, R),
    ("inqueue-more-than-min", Q, False, counts(3), 2, R),
    ("inqueue-min-zero-counts-as-one", Q, False, counts(), 0, Q),
    ("inqueue-min-zero-one-pod", Q, False, counts(1), 0, R),
    ("inqueue-failed-do-not-count", Q, False, counts(1, failed=1), 2, Q),
    # Running: the gang holds.
    ("running-whole", R, True, counts(2), 2, R),
    ("running-mix-running-succeeded", R, True, counts(1, succeeded=1), 2, R),
    ("running-all-succeeded", R, True, counts(succeeded=2), 2, C),
    ("running-elastic-extras-done", R, True, counts(2, succeeded=3), 2, R),
    ("running-lost-member-still-running", R, True, counts(1), 2, U),
    ("running-lost-member-bound-not-running", R, True, counts(1, running=0), 2, Q),
    ("running-all-failed", R, True, counts(failed=2), 2, Q),
    ("running-all-gone", R, True, counts(), 2, Q),
    # Unknown: a broken gang.
    ("unknown-still-broken", U, True, counts(1), 2, U),
    ("unknown-restored", U, True, counts(2), 2, R),
    ("unknown-nothing-runs", U, True, counts(), 2, Q),
    ("unknown-finished", U, True, counts(succeeded=2), 2, C),
    # Completed: terminal unless new pods make it whole again.
    ("completed-stays", C, True, counts(succeeded=2), 2, C),
    ("completed-pods-cleaned-up", C, True, counts(), 2, C),
    ("completed-rerun", C, True, counts(2), 2, R),
]


@pytest.mark.parametrize(
    ("current", "admitted", "member_counts", "min_member", "expected"),
    [row[1:] for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_next_phase(
    current: GroupPhase, admitted: bool, member_counts: MemberCounts, min_member: int, expected: GroupPhase
) -> None:
    assert next_phase(current, admitted=admitted, counts=member_counts, min_member=min_member) == expected


@pytest.mark.parametrize(
    ("phase", "admitted"), [(P, False), (Q, True), (R, True), (U, True), (C, True)], ids=lambda v: str(v)
)
def test_is_admitted(phase: GroupPhase, admitted: bool) -> None:
    assert is_admitted(phase) is admitted


def test_member_counts_of_pods() -> None:
    pods = [
        parse_pod(pod("running", node="n0", phase="Running")),
        parse_pod(pod("bound", node="n0", phase="Pending")),
        parse_pod(pod("done", node="n0", phase="Succeeded")),
        parse_pod(pod("failed", node="n0", phase="Failed")),
        parse_pod(pod("waiting")),
        parse_pod(pod("planned")),
        parse_pod(pod("going", deleting=True)),
    ]
    c = MemberCounts.of(pods, planned={"planned", "running"})
    assert c == MemberCounts(running=1, succeeded=1, failed=1, allocated=2, waiting=2, planned=1)
