"""The vcjob state machine as tables: every (phase, action) Move of ``decide``, and ``settle`` per phase.

The expected values are written out by hand from Volcano's ``pkg/controllers/job/state/*.go`` and the
deliberate differences listed in :mod:`extender.jobs.state`; nothing here is computed from the module.
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.jobs.model import Action, Job, JobPhase, parse_job
from extender.jobs.state import Counts, Kill, Move, decide, is_finished, settle

P = JobPhase
A = Action

# The Moves, by name.
SYNC = Move(sync=True)
DRAIN = Move(kill=Kill.SOFT)
KILL_TARGET = Move(kill=Kill.TARGET)
RESTART_ALL = Move(kill=Kill.ALL, to=P.RESTARTING, retry=True, bump_version=True)
RESTART_TARGET = Move(kill=Kill.TARGET, to=P.RESTARTING, retry=True)
TO_ABORTING = Move(kill=Kill.SOFT, to=P.ABORTING, bump_version=True)
TO_TERMINATING = Move(kill=Kill.SOFT, to=P.TERMINATING, bump_version=True)
TO_COMPLETING = Move(kill=Kill.SOFT, to=P.COMPLETING, bump_version=True)
RESUME = Move(kill=Kill.ALL, to=P.RESTARTING, bump_version=True)
MAX_RETRY_FAILED = Move(kill=Kill.SOFT, to=P.FAILED, bump_version=True)


# (phase, action, expected Move) with retryCount 0 < maxRetry 3: all 10 phases x all 8 actions.
DECIDE_TABLE: list[Any] = [
    # Pending
    (P.PENDING, A.ABORT_JOB, TO_ABORTING),
    (P.PENDING, A.RESTART_JOB, RESTART_ALL),
    (P.PENDING, A.RESTART_TASK, RESTART_TARGET),
    (P.PENDING, A.RESTART_POD, RESTART_TARGET),
    (P.PENDING, A.TERMINATE_JOB, TO_TERMINATING),
    (P.PENDING, A.COMPLETE_JOB, TO_COMPLETING),
    (P.PENDING, A.RESUME_JOB, SYNC),
    (P.PENDING, A.SYNC_JOB, SYNC),
    # Running
    (P.RUNNING, A.ABORT_JOB, TO_ABORTING),
    (P.RUNNING, A.RESTART_JOB, RESTART_ALL),
    (P.RUNNING, A.RESTART_TASK, RESTART_TARGET),
    (P.RUNNING, A.RESTART_POD, RESTART_TARGET),
    (P.RUNNING, A.TERMINATE_JOB, TO_TERMINATING),
    (P.RUNNING, A.COMPLETE_JOB, TO_COMPLETING),
    (P.RUNNING, A.RESUME_JOB, SYNC),
    (P.RUNNING, A.SYNC_JOB, SYNC),
    # Restarting: the stops act (a listed difference); everything else keeps killing the persisted target.
    (P.RESTARTING, A.ABORT_JOB, TO_ABORTING),
    pytest.param(
        P.RESTARTING,
        A.RESTART_JOB,
        Move(kill=Kill.ALL, to=P.RESTARTING, bump_version=True),
        id="Restarting-RestartJob",
    ),
    (P.RESTARTING, A.RESTART_TASK, KILL_TARGET),
    (P.RESTARTING, A.RESTART_POD, KILL_TARGET),
    (P.RESTARTING, A.TERMINATE_JOB, TO_TERMINATING),
    (P.RESTARTING, A.COMPLETE_JOB, TO_COMPLETING),
    (P.RESTARTING, A.RESUME_JOB, KILL_TARGET),
    (P.RESTARTING, A.SYNC_JOB, KILL_TARGET),
    # Aborting: ResumeJob restarts without counting a retry; the rest drain towards Aborted.
    (P.ABORTING, A.ABORT_JOB, DRAIN),
    (P.ABORTING, A.RESTART_JOB, DRAIN),
    (P.ABORTING, A.RESTART_TASK, DRAIN),
    (P.ABORTING, A.RESTART_POD, DRAIN),
    pytest.param(P.ABORTING, A.TERMINATE_JOB, TO_TERMINATING, id="Aborting-TerminateJob"),
    pytest.param(P.ABORTING, A.COMPLETE_JOB, TO_COMPLETING, id="Aborting-CompleteJob"),
    (P.ABORTING, A.RESUME_JOB, RESUME),
    (P.ABORTING, A.SYNC_JOB, DRAIN),
    # Aborted
    (P.ABORTED, A.ABORT_JOB, DRAIN),
    (P.ABORTED, A.RESTART_JOB, DRAIN),
    (P.ABORTED, A.RESTART_TASK, DRAIN),
    (P.ABORTED, A.RESTART_POD, DRAIN),
    pytest.param(P.ABORTED, A.TERMINATE_JOB, TO_TERMINATING, id="Aborted-TerminateJob"),
    pytest.param(P.ABORTED, A.COMPLETE_JOB, TO_COMPLETING, id="Aborted-CompleteJob"),
    (P.ABORTED, A.RESUME_JOB, RESUME),
    (P.ABORTED, A.SYNC_JOB, DRAIN),
    # Completing: drain, whatever the action.
    (P.COMPLETING, A.ABORT_JOB, DRAIN),
    (P.COMPLETING, A.RESTART_JOB, DRAIN),
    (P.COMPLETING, A.RESTART_TASK, DRAIN),
    (P.COMPLETING, A.RESTART_POD, DRAIN),
    (P.COMPLETING, A.TERMINATE_JOB, DRAIN),
    (P.COMPLETING, A.COMPLETE_JOB, DRAIN),
    (P.COMPLETING, A.RESUME_JOB, DRAIN),
    (P.COMPLETING, A.SYNC_JOB, DRAIN),
    # Completed
    (P.COMPLETED, A.ABORT_JOB, DRAIN),
    (P.COMPLETED, A.RESTART_JOB, DRAIN),
    (P.COMPLETED, A.RESTART_TASK, DRAIN),
    (P.COMPLETED, A.RESTART_POD, DRAIN),
    (P.COMPLETED, A.TERMINATE_JOB, DRAIN),
    (P.COMPLETED, A.COMPLETE_JOB, DRAIN),
    (P.COMPLETED, A.RESUME_JOB, DRAIN),
    (P.COMPLETED, A.SYNC_JOB, DRAIN),
    # Terminating
    (P.TERMINATING, A.ABORT_JOB, DRAIN),
    (P.TERMINATING, A.RESTART_JOB, DRAIN),
    (P.TERMINATING, A.RESTART_TASK, DRAIN),
    (P.TERMINATING, A.RESTART_POD, DRAIN),
    (P.TERMINATING, A.TERMINATE_JOB, DRAIN),
    (P.TERMINATING, A.COMPLETE_JOB, DRAIN),
    (P.TERMINATING, A.RESUME_JOB, DRAIN),
    (P.TERMINATING, A.SYNC_JOB, DRAIN),
    # Terminated
    (P.TERMINATED, A.ABORT_JOB, DRAIN),
    (P.TERMINATED, A.RESTART_JOB, DRAIN),
    (P.TERMINATED, A.RESTART_TASK, DRAIN),
    (P.TERMINATED, A.RESTART_POD, DRAIN),
    (P.TERMINATED, A.TERMINATE_JOB, DRAIN),
    (P.TERMINATED, A.COMPLETE_JOB, DRAIN),
    (P.TERMINATED, A.RESUME_JOB, DRAIN),
    (P.TERMINATED, A.SYNC_JOB, DRAIN),
    # Failed
    (P.FAILED, A.ABORT_JOB, DRAIN),
    (P.FAILED, A.RESTART_JOB, DRAIN),
    (P.FAILED, A.RESTART_TASK, DRAIN),
    (P.FAILED, A.RESTART_POD, DRAIN),
    (P.FAILED, A.TERMINATE_JOB, DRAIN),
    (P.FAILED, A.COMPLETE_JOB, DRAIN),
    (P.FAILED, A.RESUME_JOB, DRAIN),
    (P.FAILED, A.SYNC_JOB, DRAIN),
]


def _key(row: Any) -> tuple[JobPhase, Action]:
    values = row.values if hasattr(row, "values") else row
    return values[0], values[1]


def test_decide_table_covers_every_phase_and_action_exactly_once() -> None:
    keys = [_key(r) for r in DECIDE_TABLE]
    assert len(keys) == 80
    assert set(keys) == {(p, a) for p in JobPhase for a in Action}


@pytest.mark.parametrize(("phase", "action", "expected"), DECIDE_TABLE)
def test_decide(phase: JobPhase, action: Action, expected: Move) -> None:
    assert decide(phase, action, retry_count=0, max_retry=3) == expected


# --- maxRetry -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("phase", "action", "retry_count", "max_retry", "expected"),
    [
        # maxRetry 2: restarts at retryCount 0 and 1, fails at 2.
        (P.RUNNING, A.RESTART_JOB, 0, 2, RESTART_ALL),
        (P.RUNNING, A.RESTART_JOB, 1, 2, RESTART_ALL),
        (P.RUNNING, A.RESTART_JOB, 2, 2, MAX_RETRY_FAILED),
        (P.RUNNING, A.RESTART_JOB, 5, 2, MAX_RETRY_FAILED),
        (P.PENDING, A.RESTART_JOB, 1, 2, RESTART_ALL),
        (P.PENDING, A.RESTART_JOB, 2, 2, MAX_RETRY_FAILED),
        (P.RUNNING, A.RESTART_TASK, 1, 2, RESTART_TARGET),
        (P.RUNNING, A.RESTART_TASK, 2, 2, MAX_RETRY_FAILED),
        (P.PENDING, A.RESTART_POD, 1, 2, RESTART_TARGET),
        (P.PENDING, A.RESTART_POD, 2, 2, MAX_RETRY_FAILED),
        # maxRetry 0: the first restart already fails the job.
        (P.RUNNING, A.RESTART_JOB, 0, 0, MAX_RETRY_FAILED),
        (P.RUNNING, A.RESTART_POD, 0, 0, MAX_RETRY_FAILED),
        (P.PENDING, A.RESTART_TASK, 0, 0, MAX_RETRY_FAILED),
        # Not a restart: the retry count does not matter.
        (P.RUNNING, A.ABORT_JOB, 2, 2, TO_ABORTING),
        (P.RUNNING, A.SYNC_JOB, 9, 2, SYNC),
        (P.ABORTED, A.RESUME_JOB, 2, 2, RESUME),
        # Restarting does not fail on the retry count (the restart that entered it was allowed).
        (P.RESTARTING, A.SYNC_JOB, 2, 2, KILL_TARGET),
    ],
)
def test_decide_max_retry(
    phase: JobPhase, action: Action, retry_count: int, max_retry: int, expected: Move
) -> None:
    assert decide(phase, action, retry_count=retry_count, max_retry=max_retry) == expected


def test_max_retry_two_restarts_exactly_twice() -> None:
    retry, restarts = 0, 0
    while True:
        move = decide(P.RUNNING, A.RESTART_JOB, retry_count=retry, max_retry=2)
        if move.to is not P.RESTARTING:
            break
        restarts += 1
        retry += 1 if move.retry else 0
    assert (restarts, retry, move.to) == (2, 2, P.FAILED)


# --- settle ---------------------------------------------------------------------------------------
def job(
    *tasks: tuple[str, int, int | None],
    min_available: int | None = None,
    min_success: int | None = None,
) -> Job:
    """A job of ``(name, replicas, task minAvailable)`` tasks."""
    spec: dict[str, Any] = {
        "tasks": [
            {"name": n, "replicas": r, **({} if m is None else {"minAvailable": m})} for n, r, m in tasks
        ]
    }
    if min_available is not None:
        spec["minAvailable"] = min_available
    if min_success is not None:
        spec["minSuccess"] = min_success
    return parse_job({"metadata": {"name": "j", "namespace": "ns", "uid": "u"}, "spec": spec})


THREE = job(("w", 3, None))  # minAvailable 3 (every replica)


@pytest.mark.parametrize(
    ("j", "counts", "expected"),
    [
        (THREE, Counts(), P.PENDING),
        (THREE, Counts(pending=3), P.PENDING),
        (THREE, Counts(pending=1, running=2), P.PENDING),
        (THREE, Counts(running=3), P.RUNNING),
        # Finished pods count towards minAvailable, as in Volcano's pending.go.
        (THREE, Counts(running=1, succeeded=1, failed=1), P.RUNNING),
        (THREE, Counts(running=2, unknown=1), P.PENDING),
        (THREE, Counts(running=2, terminating=1), P.PENDING),
        (job(("w", 3, None), min_available=2), Counts(pending=1, running=2), P.RUNNING),
        (job(("w", 3, None), min_available=2), Counts(pending=2, running=1), P.PENDING),
    ],
)
def test_settle_pending(j: Job, counts: Counts, expected: JobPhase) -> None:
    assert settle(j, P.PENDING, counts) == expected


TWO_TASKS = job(("a", 2, 2), ("b", 2, 1))  # minAvailable 3 = sum of the tasks' minimums


@pytest.mark.parametrize(
    ("j", "counts", "expected"),
    [
        (THREE, Counts(running=3), P.RUNNING),
        (THREE, Counts(running=2, succeeded=1), P.RUNNING),
        (THREE, Counts(running=1, failed=2), P.RUNNING),
        # Every pod finished: Completed when at least minAvailable succeeded.
        (THREE, Counts(succeeded=3), P.COMPLETED),
        (THREE, Counts(succeeded=2, failed=1), P.FAILED),
        (THREE, Counts(failed=3), P.FAILED),
        (job(("w", 3, None), min_available=2), Counts(succeeded=2, failed=1), P.COMPLETED),
        (job(("w", 3, None), min_available=2), Counts(succeeded=1, failed=2), P.FAILED),
        # minSuccess: reached completes at once, even with pods still running.
        (job(("w", 3, None), min_success=2), Counts(running=1, succeeded=2), P.COMPLETED),
        (job(("w", 3, None), min_success=2), Counts(running=2, succeeded=1), P.RUNNING),
        # minSuccess not reached when all finished fails, even though succeeded >= minAvailable.
        (job(("w", 3, None), min_available=1, min_success=2), Counts(succeeded=1, failed=2), P.FAILED),
        # Per-task minAvailable (job minAvailable >= sum of task minimums): each task must reach its own.
        (
            TWO_TASKS,
            Counts(succeeded=3, failed=1, task_succeeded=(("a", 1), ("b", 2))),
            P.FAILED,
        ),
        (
            TWO_TASKS,
            Counts(succeeded=3, failed=1, task_succeeded=(("a", 2), ("b", 1))),
            P.COMPLETED,
        ),
        (TWO_TASKS, Counts(succeeded=4, task_succeeded=(("a", 2), ("b", 2))), P.COMPLETED),
        # Elastic (job minAvailable below the task minimums): the per-task check is skipped.
        (
            job(("a", 2, 2), ("b", 2, 1), min_available=1),
            Counts(succeeded=1, failed=3, task_succeeded=(("b", 1),)),
            P.COMPLETED,
        ),
        # More pending than the slack (replicas - minAvailable): back to Pending.
        (THREE, Counts(pending=1, running=2), P.PENDING),
        (job(("w", 3, None), min_available=2), Counts(pending=1, running=2), P.RUNNING),
        (job(("w", 3, None), min_available=2), Counts(pending=2, running=1), P.PENDING),
        # Scaled to zero: keeps the phase whatever the counts.
        (job(("w", 0, None)), Counts(), P.RUNNING),
        (job(("w", 0, None)), Counts(succeeded=2), P.RUNNING),
    ],
)
def test_settle_running(j: Job, counts: Counts, expected: JobPhase) -> None:
    assert settle(j, P.RUNNING, counts) == expected


@pytest.mark.parametrize(
    ("j", "counts", "expected"),
    [
        (THREE, Counts(terminating=3), P.RESTARTING),
        (THREE, Counts(running=2, terminating=1), P.RESTARTING),
        (THREE, Counts(), P.PENDING),
        (THREE, Counts(running=2), P.PENDING),
        (job(("w", 3, None), min_available=2), Counts(running=2, terminating=1), P.PENDING),
        (job(("w", 3, None), min_available=2), Counts(running=1, terminating=2), P.RESTARTING),
    ],
)
def test_settle_restarting(j: Job, counts: Counts, expected: JobPhase) -> None:
    assert settle(j, P.RESTARTING, counts) == expected


@pytest.mark.parametrize(
    ("phase", "drained"),
    [(P.ABORTING, P.ABORTED), (P.COMPLETING, P.COMPLETED), (P.TERMINATING, P.TERMINATED)],
)
@pytest.mark.parametrize(
    ("counts", "done"),
    [
        (Counts(), True),
        (Counts(succeeded=2, failed=1), True),
        # Volcano's drain waits on Terminating, Pending and Running only.
        (Counts(unknown=1), True),
        (Counts(pending=1), False),
        (Counts(running=1, succeeded=2), False),
        (Counts(terminating=1, succeeded=2), False),
    ],
)
def test_settle_drains_only_when_nothing_is_alive(
    phase: JobPhase, drained: JobPhase, counts: Counts, done: bool
) -> None:
    assert settle(THREE, phase, counts) == (drained if done else phase)


@pytest.mark.parametrize("phase", [P.ABORTED, P.COMPLETED, P.TERMINATED, P.FAILED])
@pytest.mark.parametrize("counts", [Counts(), Counts(running=3), Counts(succeeded=3), Counts(pending=3)])
def test_settle_keeps_aborted_and_finished_phases(phase: JobPhase, counts: Counts) -> None:
    assert settle(THREE, phase, counts) == phase


@pytest.mark.parametrize(
    ("phase", "finished"),
    [
        (P.PENDING, False),
        (P.ABORTING, False),
        (P.ABORTED, False),
        (P.RUNNING, False),
        (P.RESTARTING, False),
        (P.COMPLETING, False),
        (P.COMPLETED, True),
        (P.TERMINATING, False),
        (P.TERMINATED, True),
        (P.FAILED, True),
    ],
)
def test_is_finished(phase: JobPhase, finished: bool) -> None:
    assert is_finished(phase) is finished


def test_counts_alive_is_pending_running_terminating() -> None:
    assert Counts(pending=1, running=2, succeeded=4, failed=8, unknown=16, terminating=32).alive == 35
