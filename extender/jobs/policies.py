"""Lifecycle policies: which events the job's pods show now, and which action the policies take for them.

Volcano reacts to pod *updates* (edge-triggered), so an action is lost when its controller restarts between
the event and the action. pumice derives events from the pods as they are (level-triggered): a Failed pod
of the current job version is a ``PodFailed`` event for as long as it exists, and every action that a
policy can take changes the job's phase and removes or replaces that pod before the job is back in a phase
where policies are read. So an action is taken exactly once, and a restart in between only repeats the
observation.

Events are read in Pending and Running only; task policies come before job policies; among several
events the first in a fixed order wins (pods by name, then tasks in spec order), and the next reconcile
sees the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from extender.core.model import PodPhase
from extender.jobs.model import POLICY_ACTIONS, Action, Event, Job, Policy, TaskSpec
from extender.jobs.pods import PodView

DEFAULT_TASK_MAX_RETRY = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    event: str
    action: Action
    task: str
    pod: str = ""
    exit_code: int | None = None

    def describe(self) -> str:
        what = f"pod {self.pod}" if self.pod else f"task {self.task}"
        code = f" (exit code {self.exit_code})" if self.exit_code is not None else ""
        return f"{self.event}: {what}{code}"


def _match(policies: Sequence[Policy], event: str, exit_code: int | None) -> Policy | None:
    for p in policies:
        # A pending pod is normal for a while: PodPending only acts with a timeout.
        named = event in p.events or Event.ANY in p.events
        if named and (event != Event.POD_PENDING or p.timeout_s is not None):
            return p
        if p.exit_code is not None and exit_code is not None and p.exit_code == exit_code:
            return p
    return None


def _policy(job: Job, task: TaskSpec | None, event: str, exit_code: int | None) -> Policy | None:
    found = _match(task.policies, event, exit_code) if task is not None else None
    return found or _match(job.policies, event, exit_code)


def _pod_event(p: PodView) -> tuple[str, float] | None:
    """The event a pod shows and since when (epoch seconds)."""
    if p.phase is PodPhase.FAILED:
        return (Event.POD_EVICTED if p.evicted else Event.POD_FAILED), (p.finished or p.created)
    if p.phase is PodPhase.UNKNOWN:
        return Event.UNKNOWN, p.created
    if p.phase is PodPhase.PENDING:
        return Event.POD_PENDING, p.created
    return None


def current(job: Job, pods: Sequence[PodView]) -> list[PodView]:
    """Pods whose events count: of this job version (older ones are being killed), not on their way out."""
    return [p for p in pods if not p.deleting and p.version >= job.status.version]


def triggered(job: Job, pods: Sequence[PodView], now: float) -> tuple[Trigger | None, float | None]:
    """The first action the policies take now, and when the earliest policy timeout not yet reached
    expires (the reconciler looks again then)."""
    live = sorted(current(job, pods), key=lambda p: p.name)
    wake: float | None = None
    for p in live:
        ev = _pod_event(p)
        if ev is None:
            continue
        event, since = ev
        task = job.task(p.task)
        code = p.exit_code if p.phase is PodPhase.FAILED else None
        policy = _policy(job, task, event, code)
        if policy is None or policy.action not in POLICY_ACTIONS:
            continue
        if policy.timeout_s is not None and now < since + policy.timeout_s:
            due = since + policy.timeout_s
            wake = due if wake is None else min(wake, due)
            continue
        return Trigger(
            event=event, action=Action(policy.action), task=p.task, pod=p.name, exit_code=code
        ), wake
    for t in job.tasks:
        mine = [p for p in live if p.task == t.name]
        events: list[str] = []
        if t.replicas > 0 and sum(p.phase is PodPhase.SUCCEEDED for p in mine) >= t.replicas:
            events.append(Event.TASK_COMPLETED)
        limit = DEFAULT_TASK_MAX_RETRY if t.max_retry in (None, 0) else t.max_retry
        restarts = sum(p.restarts for p in mine if p.alive)
        if limit is not None and limit >= 0 and t.replicas > 0 and restarts >= limit:
            events.append(Event.TASK_FAILED)
        since = max((p.finished or p.created for p in mine), default=now)
        for event in events:
            policy = _policy(job, t, event, None)
            if policy is None or policy.action not in POLICY_ACTIONS:
                continue
            if policy.timeout_s is not None and now < since + policy.timeout_s:
                due = since + policy.timeout_s
                wake = due if wake is None else min(wake, due)
                continue
            return Trigger(event=event, action=Action(policy.action), task=t.name), wake
    return None, wake
