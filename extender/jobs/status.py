"""The status a vcjob reconcile writes (Volcano's JobStatus): the state with its reason and message, pod
counts per phase and per task, the retry count and version, the controller's own ``controlledResources``,
and a bounded list of conditions.

Invariants: :func:`job_status` answers None when the stored status already says everything a write would
(so a steady job costs no write; ``runningDuration``, which moves with the clock, is not compared); a
phase change appends one condition and stamps ``lastTransitionTime``, keeping at most
:data:`MAX_CONDITIONS`; a message listing a job's problems is at most :data:`MAX_MESSAGE` characters
(:func:`problem_message`), since kubectl and vcctl show it in one line. Pure: ``now`` is an argument.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from extender.core.model import PodPhase
from extender.core.timestamps import epoch, rfc3339
from extender.jobs.model import Job, JobPhase
from extender.jobs.pods import PodView
from extender.jobs.state import Counts

Obj = dict[str, Any]

MAX_CONDITIONS: Final = 10
# status.state.message is shown in one line by kubectl and vcctl; the full list goes to the events.
MAX_MESSAGE: Final = 1024


def go_duration(seconds: float) -> str:
    """A Go ``time.Duration`` string, as metav1.Duration serialises (``1h2m3.5s``)."""
    seconds = max(seconds, 0.0)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    s_text = f"{s:.3f}".rstrip("0").rstrip(".") + "s"
    if h:
        return f"{int(h)}h{int(m)}m{s_text}"
    if m:
        return f"{int(m)}m{s_text}"
    return s_text


def problem_message(problems: Sequence[str], limit: int = MAX_MESSAGE) -> str:
    """``problems`` joined with "; ", at most ``limit`` characters: whole problems while they fit, then
    how many more there are."""
    text = "; ".join(problems)
    if len(text) <= limit:
        return text
    out, taken = "", 0
    for p in problems:
        candidate = f"{out}; {p}" if out else p
        if len(candidate) + len(f"; ... and {len(problems) - taken - 1} more") > limit:
            break
        out, taken = candidate, taken + 1
    if not out:
        # Not even the first problem fits beside the count: cut it.
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return problems[0][: limit - len(more) - 3] + "..." + more
    return f"{out}; ... and {len(problems) - taken} more"


def count_pods(pods: Sequence[PodView], killed: set[str], created: Sequence[PodView]) -> Counts:
    n = dict.fromkeys(PodPhase, 0)
    terminating = 0
    task_succeeded: dict[str, int] = {}
    for p in pods:
        if p.deleting or p.name in killed:
            terminating += 1
            continue
        n[p.phase] += 1
        if p.phase is PodPhase.SUCCEEDED:
            task_succeeded[p.task] = task_succeeded.get(p.task, 0) + 1
    n[PodPhase.PENDING] += len(created)
    return Counts(
        pending=n[PodPhase.PENDING],
        running=n[PodPhase.RUNNING],
        succeeded=n[PodPhase.SUCCEEDED],
        failed=n[PodPhase.FAILED],
        unknown=n[PodPhase.UNKNOWN],
        terminating=terminating,
        task_succeeded=tuple(sorted(task_succeeded.items())),
    )


def settled_reason(phase: JobPhase, c: Counts) -> tuple[str, str]:
    if phase is JobPhase.COMPLETED:
        return "Completed", f"{c.succeeded} pods succeeded"
    if phase is JobPhase.FAILED:
        return "Failed", f"{c.failed} pods failed, {c.succeeded} succeeded"
    if phase is JobPhase.RUNNING:
        return "Running", f"{c.running} pods running"
    if phase is JobPhase.PENDING:
        return "Pending", f"{c.pending} pods pending"
    return "", ""


def _task_counts(pods: Sequence[PodView], killed: set[str]) -> dict[str, Obj]:
    out: dict[str, dict[str, int]] = {}
    for p in pods:
        if p.deleting or p.name in killed:
            continue
        phases = out.setdefault(p.task, {})
        phases[p.phase.value] = phases.get(p.phase.value, 0) + 1
    return {t: {"phase": dict(sorted(ph.items()))} for t, ph in sorted(out.items())}


def job_status(
    job: Job,
    phase: JobPhase,
    text: tuple[str, str],
    c: Counts,
    controlled: Mapping[str, str],
    *,
    pods: Sequence[PodView],
    killed: set[str],
    now: float,
) -> Obj | None:
    """The status to write for ``job`` in ``phase`` with ``text`` (reason, message), or None when the
    stored status already says all of it (``runningDuration`` aside, see :data:`_COMPARED`)."""
    old = job.status
    changed = phase != old.phase or not old.raw.get("state")
    conditions = list(old.raw.get("conditions") or [])
    if changed:
        conditions = [*conditions, {"status": phase.value, "lastTransitionTime": rfc3339(now)}][
            -MAX_CONDITIONS:
        ]
    state: Obj = {
        "phase": phase.value,
        "reason": text[0],
        "message": text[1],
        "lastTransitionTime": rfc3339(now)
        if changed or not old.last_transition_time
        else old.last_transition_time,
    }
    status: Obj = {
        "state": {k: v for k, v in state.items() if v},
        "minAvailable": job.min_available,
        "pending": c.pending,
        "running": c.running,
        "succeeded": c.succeeded,
        "failed": c.failed,
        "terminating": c.terminating,
        "unknown": c.unknown,
        "version": job.status.version,
        "retryCount": job.status.retry_count,
        "taskStatusCount": _task_counts(pods, killed),
        "controlledResources": dict(sorted(controlled.items())),
        "conditions": conditions,
    }
    if not status["controlledResources"]:
        del status["controlledResources"]
    if _comparable(status) == _comparable(old.raw):
        return None
    start = epoch(job.created)
    if start:
        status["runningDuration"] = go_duration(now - start)
    return status


# The status fields a reconcile compares to decide whether to write, with what an absent field reads as.
# runningDuration is not among them: it moves with the clock and would make every reconcile a write.
_COMPARED: Final[Mapping[str, object]] = {
    "state": None,
    "minAvailable": None,
    **dict.fromkeys(
        ("pending", "running", "succeeded", "failed", "terminating", "unknown", "version", "retryCount"), 0
    ),
    "taskStatusCount": {},
    "controlledResources": {},
    "conditions": [],
}


def _comparable(status: Mapping[str, Any]) -> Obj:
    return {k: status.get(k) or empty for k, empty in _COMPARED.items()}
