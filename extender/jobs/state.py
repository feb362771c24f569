"""The vcjob state machine: every phase transition of a Volcano Job, in one place.

A step has two halves, as in Volcano's job controller. :func:`decide` maps (phase, action) to a :class:`Move`:
which pods to kill, the phase entered at once, whether the retry count and job version go up, and whether
missing pods are created. :func:`settle` then looks at the pod counts (killed pods already counted as
terminating) and says which phase the job is in now.

Where pumice differs from Volcano, on purpose:

- ``maxRetry`` means restarts. A restart (RestartJob/RestartTask/RestartPod) when ``retryCount`` already
  equals ``maxRetry`` fails the job instead, so ``maxRetry: 2`` restarts exactly twice. Volcano increments
  first and fails on reaching the limit, which restarts only ``maxRetry - 1`` times.
- ResumeJob does not count as a retry: suspending a job is not a failure.
- AbortJob, TerminateJob and CompleteJob also act on a Restarting job, and TerminateJob and CompleteJob
  on an Aborting or Aborted one (to end a suspended job for good); Volcano would drop them there.
- A finished job keeps killing pods that are still alive, so it never leaves running pods behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from extender.jobs.model import FINISHED_PHASES, Action, Job, JobPhase


class Kill(StrEnum):
    NONE = "none"
    # Keep Succeeded and Failed pods (their logs and exit codes), kill the rest.
    SOFT = "soft"
    ALL = "all"
    # The restart target persisted with the transition (a task or a pod).
    TARGET = "target"


@dataclass(frozen=True, slots=True, kw_only=True)
class Move:
    kill: Kill = Kill.NONE
    to: JobPhase | None = None
    retry: bool = False
    bump_version: bool = False
    sync: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Counts:
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    unknown: int = 0
    terminating: int = 0
    # Succeeded pods per task.
    task_succeeded: tuple[tuple[str, int], ...] = ()

    @property
    def alive(self) -> int:
        return self.pending + self.running + self.terminating


_RESTARTS = frozenset({Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD})
_STOPS = {
    Action.ABORT_JOB: JobPhase.ABORTING,
    Action.COMPLETE_JOB: JobPhase.COMPLETING,
    Action.TERMINATE_JOB: JobPhase.TERMINATING,
}
_DRAINING = {
    JobPhase.ABORTING: JobPhase.ABORTED,
    JobPhase.COMPLETING: JobPhase.COMPLETED,
    JobPhase.TERMINATING: JobPhase.TERMINATED,
}


def _restart(action: Action, retry_count: int, max_retry: int) -> Move:
    if retry_count >= max_retry:
        return Move(kill=Kill.SOFT, to=JobPhase.FAILED, bump_version=True)
    if action is Action.RESTART_JOB:
        return Move(kill=Kill.ALL, to=JobPhase.RESTARTING, retry=True, bump_version=True)
    return Move(kill=Kill.TARGET, to=JobPhase.RESTARTING, retry=True)


def decide(phase: JobPhase, action: Action, *, retry_count: int, max_retry: int) -> Move:
    """What ``action`` does to a job in ``phase``."""
    if phase in (JobPhase.PENDING, JobPhase.RUNNING):
        if action in _RESTARTS:
            return _restart(action, retry_count, max_retry)
        if action in _STOPS:
            return Move(kill=Kill.SOFT, to=_STOPS[action], bump_version=True)
        return Move(sync=True)  # SyncJob, and ResumeJob on a job that is not suspended
    if phase is JobPhase.RESTARTING:
        if action in _STOPS:
            return Move(kill=Kill.SOFT, to=_STOPS[action], bump_version=True)
        if action is Action.RESTART_JOB:
            # Widen a task or pod restart in progress to the whole job (not another retry).
            return Move(kill=Kill.ALL, to=JobPhase.RESTARTING, bump_version=True)
        return Move(kill=Kill.TARGET)
    if phase in (JobPhase.ABORTING, JobPhase.ABORTED):
        if action is Action.RESUME_JOB:
            # Every pod goes, the kept Succeeded/Failed ones too: new pods reuse their names.
            return Move(kill=Kill.ALL, to=JobPhase.RESTARTING, bump_version=True)
        if action in (Action.TERMINATE_JOB, Action.COMPLETE_JOB):
            return Move(kill=Kill.SOFT, to=_STOPS[action], bump_version=True)
        return Move(kill=Kill.SOFT)
    # Completing, Terminating and the finished phases: drain, whatever the action.
    return Move(kill=Kill.SOFT)


def settle(job: Job, phase: JobPhase, c: Counts) -> JobPhase:
    """The phase after this step's kills and creations, from the pod counts."""
    if phase is JobPhase.PENDING:
        return JobPhase.RUNNING if job.min_available <= c.running + c.succeeded + c.failed else phase
    if phase is JobPhase.RUNNING:
        return _settle_running(job, c)
    if phase is JobPhase.RESTARTING:
        return JobPhase.PENDING if job.replicas - c.terminating >= job.min_available else phase
    if phase in _DRAINING:
        return _DRAINING[phase] if c.alive == 0 else phase
    return phase  # Aborted and the finished phases stay


def _settle_running(job: Job, c: Counts) -> JobPhase:
    replicas = job.replicas
    if replicas == 0:
        return JobPhase.RUNNING  # scaled to zero: keep the phase
    if job.min_success is not None and c.succeeded >= job.min_success:
        return JobPhase.COMPLETED
    if c.succeeded + c.failed == replicas:
        if job.min_available >= sum(t.min_needed for t in job.tasks):
            succeeded = dict(c.task_succeeded)
            for t in job.tasks:
                if t.min_available is not None and succeeded.get(t.name, 0) < t.min_available:
                    return JobPhase.FAILED
        if job.min_success is not None:
            return JobPhase.FAILED  # fewer than minSuccess succeeded (checked above)
        return JobPhase.COMPLETED if c.succeeded >= job.min_available else JobPhase.FAILED
    if c.pending > replicas - job.min_available:
        return JobPhase.PENDING
    return JobPhase.RUNNING


def is_finished(phase: JobPhase) -> bool:
    return phase in FINISHED_PHASES
