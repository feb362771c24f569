"""Leader election's decision as a table (controllers.leader.decide): the Lease record, when this replica
saw it change, the clock, the identity and its last renewal, against acquire / renew / stand by / step down;
and the records it writes."""

from __future__ import annotations

import pytest

from controllers.leader.decide import (
    Action,
    Observed,
    Timing,
    decide,
    expires_at,
    leads,
    next_record,
    observe,
    released,
)
from controllers.leader.record import LeaseRecord, lease_object, read_lease

T = Timing(lease_duration=10.0, renew_deadline=7.0, retry_period=2.0)
ME, OTHER = "host-a_1", "host-b_2"


def held(holder: str, duration: int = 10, transitions: int = 3) -> LeaseRecord:
    return LeaseRecord(holder=holder, lease_duration=duration, renew_time="t", transitions=transitions)


# (what, record, changed_at, now, last_renew, action)
CASES = [
    ("no lease yet: create it", None, 0.0, 100.0, None, Action.ACQUIRE),
    ("released (no holder): take it at once", held(""), 99.9, 100.0, None, Action.ACQUIRE),
    ("another holder, seen changing 3 s ago: stand by", held(OTHER), 97.0, 100.0, None, Action.STAND_BY),
    ("another holder, just before expiry", held(OTHER), 90.01, 100.0, None, Action.STAND_BY),
    (
        "another holder, not seen changing for the lease duration",
        held(OTHER),
        90.0,
        100.0,
        None,
        Action.ACQUIRE,
    ),
    (
        "the record's own duration counts, not ours",
        held(OTHER, duration=30),
        80.0,
        100.0,
        None,
        Action.STAND_BY,
    ),
    ("ours and leading: renew", held(ME), 95.0, 100.0, 96.0, Action.RENEW),
    ("ours, leading, renewals late but within the deadline", held(ME), 90.0, 100.0, 93.5, Action.RENEW),
    (
        "ours and leading, renewed less than a retry period ago: hold",
        held(ME),
        99.5,
        100.0,
        99.5,
        Action.HOLD,
    ),
    ("ours, but past the renew deadline: step down", held(ME), 90.0, 100.0, 93.0, Action.STEP_DOWN),
    ("leading, and another holder took it: step down", held(OTHER), 99.0, 100.0, 99.0, Action.STEP_DOWN),
    (
        "leading, and the lease was released by someone: step down",
        held(""),
        99.0,
        100.0,
        99.0,
        Action.STEP_DOWN,
    ),
    ("leading, and the lease was deleted: step down", None, 99.0, 100.0, 99.0, Action.STEP_DOWN),
    (
        "ours after stepping down: a new term, taken as any free lease",
        held(ME),
        99.0,
        100.0,
        None,
        Action.ACQUIRE,
    ),
]


@pytest.mark.parametrize(
    ("what", "record", "changed_at", "now", "last_renew", "action"), CASES, ids=[c[0] for c in CASES]
)
def test_decide(
    what: str,
    record: LeaseRecord | None,
    changed_at: float,
    now: float,
    last_renew: float | None,
    action: Action,
) -> None:
    seen = Observed(record=record, changed_at=changed_at)
    assert decide(seen, identity=ME, now=now, last_renew=last_renew, timing=T).action is action


def test_a_standby_looks_again_at_expiry_or_after_the_retry_period() -> None:
    near = decide(
        Observed(record=held(OTHER), changed_at=91.0), identity=ME, now=100.0, last_renew=None, timing=T
    )
    assert near.action is Action.STAND_BY and near.wait == pytest.approx(1.0)
    far = decide(
        Observed(record=held(OTHER), changed_at=99.0), identity=ME, now=100.0, last_renew=None, timing=T
    )
    assert far.wait == T.retry_period


def test_a_leader_renews_once_per_retry_period_whatever_wakes_it() -> None:
    # Woken by the watch event of its own renewal, 0.05 s after it: nothing to write until it is due.
    early = decide(
        Observed(record=held(ME), changed_at=100.05), identity=ME, now=100.05, last_renew=100.0, timing=T
    )
    assert early.action is Action.HOLD and early.wait == pytest.approx(T.retry_period - 0.05)
    due = decide(
        Observed(record=held(ME), changed_at=100.05), identity=ME, now=102.0, last_renew=100.0, timing=T
    )
    assert due.action is Action.RENEW


def test_the_time_of_the_last_change_moves_only_when_the_record_changes() -> None:
    first = observe(None, held(OTHER), 10.0)
    assert first.changed_at == 10.0
    assert observe(first, held(OTHER), 15.0) is first  # the same record: expiry still counts from 10
    renewed = observe(
        first, LeaseRecord(holder=OTHER, lease_duration=10, renew_time="t2", transitions=3), 16.0
    )
    assert renewed.changed_at == 16.0
    assert expires_at(renewed, T) == 26.0


def test_the_fence_holds_until_the_renew_deadline_and_not_a_moment_longer() -> None:
    assert leads(100.0, 106.99, T)
    assert not leads(100.0, 107.0, T)
    assert not leads(None, 0.0, T)


def test_a_renew_deadline_shorter_than_the_lease_is_the_safety_margin() -> None:
    """A standby takes over no earlier than the lease duration after it saw the last renewal, which is after
    the leader sent it: the leader has stopped (deadline) by then, with the difference as margin."""
    sent = 100.0
    seen_by_standby = sent + 0.05
    takeover = expires_at(Observed(record=held(OTHER), changed_at=seen_by_standby), T)
    assert not leads(sent, takeover, T)
    assert takeover - (sent + T.renew_deadline) >= T.lease_duration - T.renew_deadline


@pytest.mark.parametrize(
    ("lease", "deadline", "retry", "message"),
    [
        (7.0, 7.0, 2.0, "lease duration must be greater"),
        (10.0, 2.0, 2.0, "renew deadline must be greater"),
        (10.0, 7.0, 0.0, "renew deadline must be greater|retry period must be positive"),
    ],
)
def test_timing_is_checked_as_client_go_checks_it(
    lease: float, deadline: float, retry: float, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Timing(lease_duration=lease, renew_deadline=deadline, retry_period=retry)


def test_records_written() -> None:
    current = LeaseRecord(holder=OTHER, lease_duration=15, acquire_time="a0", renew_time="r0", transitions=4)
    taken = next_record(Action.ACQUIRE, current, identity=ME, wall="w1", url="http://10.0.0.1:8888", timing=T)
    assert taken == LeaseRecord(
        holder=ME,
        lease_duration=10,
        acquire_time="w1",
        renew_time="w1",
        transitions=5,
        leader_url="http://10.0.0.1:8888",
    )
    renewed = next_record(Action.RENEW, taken, identity=ME, wall="w2", url="http://10.0.0.1:8888", timing=T)
    assert (renewed.acquire_time, renewed.renew_time, renewed.transitions) == ("w1", "w2", 5)
    first = next_record(Action.ACQUIRE, None, identity=ME, wall="w0", url="", timing=T)
    assert first.transitions == 0
    free = released(renewed, wall="w3")
    assert (free.holder, free.lease_duration, free.transitions, free.leader_url) == ("", 1, 5, "")
    # A fractional lease duration is written rounded up: never shorter than asked.
    assert Timing(lease_duration=4.2, renew_deadline=3.0, retry_period=1.0).lease_seconds == 5


def test_the_lease_object_round_trips_and_keeps_foreign_metadata() -> None:
    record = LeaseRecord(
        holder=ME,
        lease_duration=10,
        acquire_time="a",
        renew_time="r",
        transitions=2,
        leader_url="https://p:8888",
    )
    base = {
        "metadata": {
            "labels": {"x": "y"},
            "annotations": {"other": "kept"},
            "managedFields": [{}],
            "uid": "u",
        }
    }
    obj = lease_object("pumice", "ns", record, resource_version="41", base=base)
    assert obj["metadata"]["resourceVersion"] == "41"
    assert obj["metadata"]["labels"] == {"x": "y"} and "managedFields" not in obj["metadata"]
    assert obj["metadata"]["annotations"] == {"other": "kept", "pumice.dev/extender-url": "https://p:8888"}
    assert read_lease(obj) == record
    gone = lease_object("pumice", "ns", released(record, wall="w"), resource_version="42", base=obj)
    assert "pumice.dev/extender-url" not in gone["metadata"]["annotations"]
    # What client-go writes when it lets go reads as free; an empty spec too.
    assert read_lease({"spec": {"holderIdentity": "", "leaseDurationSeconds": 1}}).holder == ""
    assert read_lease({}) == LeaseRecord(holder="", lease_duration=1)
