"""Leader election's decision, pure: given the Lease record, when this replica last saw it change, the
local clock, its identity and the settings, whether to acquire, renew, stand by or step down.

The rules are client-go's (``tryAcquireOrRenew``), which kube-scheduler and kube-controller-manager follow,
with its flags' meanings:

- a Lease nobody holds (none yet, or released: an empty holder) is taken at once;
- a Lease held by another replica is taken only once ``leaseDurationSeconds`` have passed since this replica
  last *saw the record change*, on its own monotonic clock: the holder's timestamps are never compared with
  ours, so clocks that disagree on the time of day cannot make two leaders;
- the holder renews every ``retry_period``; it leads only while ``now < last successful renew +
  renew_deadline`` (:func:`leads`), measured from when it *sent* that renew, which is before the API server
  stored it and so before any other replica saw it. Since ``renew_deadline < lease_duration``, the old
  leader has stopped before another may start, whatever the network did to its requests; the difference is
  the margin for a write already on its way when the deadline passed;
- a holder past its deadline steps down, whatever the record says: its term is over (what it held in
  memory may be stale) and a new one begins with an acquisition like anybody's.

Every write goes with the resourceVersion read, so two replicas racing for one record cannot both win: the
loser's update is refused (409) and it reads again.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

from controllers.leader.record import LeaseRecord


class Action(enum.Enum):
    ACQUIRE = "acquire"  # write ourselves as the holder: a new term
    RENEW = "renew"  # we hold it and lead: write a new renewTime
    HOLD = "hold"  # we hold it and lead, and the next renewal is not due yet: write nothing
    STAND_BY = "stand-by"  # another replica holds a live lease
    STEP_DOWN = "step-down"  # we led, and must not any more (deposed, or our renewals are past the deadline)


@dataclass(frozen=True, slots=True, kw_only=True)
class Timing:
    """kube-scheduler's ``--leader-elect-lease-duration``, ``-renew-deadline`` and ``-retry-period``, in
    seconds."""

    lease_duration: float = 10.0
    renew_deadline: float = 7.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        # client-go's own checks (leaderelection.NewLeaderElector), with its jitter factor of 1.2.
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("the lease duration must be greater than the renew deadline")
        if not self.renew_deadline > 1.2 * self.retry_period:
            raise ValueError("the renew deadline must be greater than 1.2 x the retry period")
        if self.retry_period <= 0:
            raise ValueError("the retry period must be positive")

    @property
    def lease_seconds(self) -> int:
        """``leaseDurationSeconds`` as written (whole seconds, rounded up: never shorter than asked)."""
        return max(1, math.ceil(self.lease_duration))


@dataclass(frozen=True, slots=True, kw_only=True)
class Observed:
    """The record as this replica last read it, and the local (monotonic) time it last changed."""

    record: LeaseRecord | None  # None: there is no Lease object
    changed_at: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    action: Action
    wait: float  # seconds until the next look, at most (a watch event may come first)


def observe(previous: Observed | None, record: LeaseRecord | None, now: float) -> Observed:
    """What a read tells: the time of the last change moves only when the record differs from the one
    seen before (client-go compares the whole record too)."""
    if previous is not None and previous.record == record:
        return previous
    return Observed(record=record, changed_at=now)


def leads(last_renew: float | None, now: float, timing: Timing) -> bool:
    """The fence: a replica may act as the leader only before its last successful renew (its local send
    time) plus the renew deadline."""
    return last_renew is not None and now < last_renew + timing.renew_deadline


def expires_at(seen: Observed, timing: Timing) -> float:
    """When a Lease held by another replica may be taken, on the local clock."""
    duration = seen.record.lease_duration if seen.record is not None else timing.lease_seconds
    return seen.changed_at + duration


def decide(
    seen: Observed, *, identity: str, now: float, last_renew: float | None, timing: Timing
) -> Decision:
    """``last_renew``: when this replica sent its last successful write of the Lease as its holder (None
    when it does not lead)."""
    record = seen.record
    if last_renew is not None:
        # Leading (or just past the deadline): only a live record naming us lets the term go on. A
        # released or deleted Lease is another replica's to take at once, so it ends our term too.
        if leads(last_renew, now, timing) and record is not None and record.holder == identity:
            # Renew once per retry period, as client-go does. The loop also wakes on every event of the
            # Lease's watch, our own renewals included: renewing on those would write the Lease as fast
            # as the API server answers (measured: tens of writes a second) and keep the last renewal
            # within milliseconds of any crash, so a standby would always wait the whole lease duration.
            due = last_renew + timing.retry_period
            if now < due:
                return Decision(action=Action.HOLD, wait=due - now)
            return Decision(action=Action.RENEW, wait=timing.retry_period)
        return Decision(action=Action.STEP_DOWN, wait=0.0)
    if record is None or not record.holder or record.holder == identity:
        # Free, or still naming us after our term ended (a new term, taken like any free lease: the
        # write goes with the version read, so it fails if another replica took it meanwhile).
        return Decision(action=Action.ACQUIRE, wait=timing.retry_period)
    until = expires_at(seen, timing) - now
    if until <= 0:
        return Decision(action=Action.ACQUIRE, wait=timing.retry_period)
    return Decision(action=Action.STAND_BY, wait=min(timing.retry_period, until))


def next_record(
    action: Action, current: LeaseRecord | None, *, identity: str, wall: str, url: str, timing: Timing
) -> LeaseRecord:
    """The record to write for ``action`` (ACQUIRE or RENEW) at wall-clock time ``wall``: a new holder
    counts a transition and sets ``acquireTime``; a renewal keeps both."""
    if action is Action.RENEW and current is not None:
        return replace(current, renew_time=wall, lease_duration=timing.lease_seconds, leader_url=url)
    transitions = current.transitions if current is not None else 0
    if current is not None and current.holder != identity:
        transitions += 1
    return LeaseRecord(
        holder=identity,
        lease_duration=timing.lease_seconds,
        acquire_time=wall,
        renew_time=wall,
        transitions=transitions,
        leader_url=url,
    )


def released(current: LeaseRecord, *, wall: str) -> LeaseRecord:
    """What a leader writes when it lets go (client-go's ReleaseOnCancel): no holder, a one-second
    duration, the transitions count kept, so a standby takes it at once."""
    return LeaseRecord(
        holder="", lease_duration=1, acquire_time=wall, renew_time=wall, transitions=current.transitions
    )
