"""The JobFlow state machine and the status it writes: one module, tested as a table.

Status fields are Volcano's (``flow.volcano.sh/v1alpha1`` JobFlowStatus): the flow's jobs listed by phase
(``pendingJobs``, ``runningJobs``, ``completedJobs``, ``failedJobs``, ``terminatedJobs``, and
``unKnowJobs`` for every other phase, spelled as Volcano spells it), ``jobStatusList`` (per job: phase,
start and end, restarts, and ``runningHistories``, one entry per phase the job went through), ``conditions``
(per job: phase, creation, running duration, pod counts per task) and ``state.phase``.

Phases (:func:`next_phase`), evaluated in one step from the jobs' phases:

=============  ==========================================================================================
Failed         a job is Failed, Terminated or Aborted: the flow cannot complete (Volcano: failed or
               terminated job fails the flow). Final: nothing more is created.
Terminating    a job is Terminating or Aborting (on its way to Terminated/Aborted, hence Failed).
Succeed        every entry's job is Completed. Final (jobs deleted after it when jobRetainPolicy=delete).
Running        some job is past Pending (running, completing, restarting or completed).
Pending        otherwise (no job yet, or all Pending).
=============  ==========================================================================================

Differences from Volcano, on purpose: Volcano goes Pending -> Running -> Succeed over two syncs (so a
one-job flow whose job completed before the first sync reports Running once), and never uses
Terminating; here the phase follows from the jobs alone, so a restart recomputes the same phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from extender.core.timestamps import epoch, rfc3339
from extender.flows.model import FlowPhase

Obj = Mapping[str, Any]

FINAL: Final = frozenset({FlowPhase.SUCCEED, FlowPhase.FAILED})
_FAILING: Final = frozenset({"Failed", "Terminated", "Aborted"})
_STOPPING: Final = frozenset({"Terminating", "Aborting"})
_STARTED: Final = frozenset({"Running", "Completing", "Completed", "Restarting"})
# Status list per job phase (Volcano's buckets); other phases go to unKnowJobs.
BUCKETS: Final = {
    "Pending": "pendingJobs",
    "Running": "runningJobs",
    "Completed": "completedJobs",
    "Failed": "failedJobs",
    "Terminated": "terminatedJobs",
}
_OTHER_BUCKETS: Final = ("Completing", "Terminating")  # Volcano counts them but shows them nowhere


def next_phase(current: FlowPhase, job_phases: Mapping[str, str], entries: int) -> FlowPhase:
    """The flow's phase given its jobs' phases (job name -> phase) and its number of entries."""
    if current in FINAL:
        return current
    phases = list(job_phases.values())
    if any(p in _FAILING for p in phases):
        return FlowPhase.FAILED
    if any(p in _STOPPING for p in phases):
        return FlowPhase.TERMINATING
    if entries > 0 and sum(p == "Completed" for p in phases) >= entries:
        return FlowPhase.SUCCEED
    if any(p in _STARTED for p in phases):
        return FlowPhase.RUNNING
    return FlowPhase.PENDING


def _job_phase(job: Obj) -> str:
    st = job.get("status")
    state = st.get("state") if isinstance(st, Mapping) else None
    phase = state.get("phase") if isinstance(state, Mapping) else None
    return phase if isinstance(phase, str) and phase else "Pending"


def job_phase(job: Obj) -> str:
    """A vcjob's ``status.state.phase`` (Pending until the job controller first writes it)."""
    return _job_phase(job)


def _meta(obj: Obj) -> Obj:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _status(obj: Obj) -> Obj:
    s = obj.get("status")
    return s if isinstance(s, Mapping) else {}


def _duration_s(text: object) -> float | None:
    """A Go duration as metav1.Duration writes it (``1h2m3.5s``), in seconds; None when unreadable."""
    if not isinstance(text, str) or not text:
        return None
    total, num = 0.0, ""
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    i = 0
    while i < len(text):
        c = text[i]
        if c.isdigit() or c == ".":
            num += c
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else c
        if unit not in units or not num:
            return None
        try:
            total += float(num) * units[unit]
        except ValueError:
            return None
        num = ""
        i += len(unit)
    return None if num else total


def flow_status(
    *,
    old: Obj,
    jobs: Sequence[Obj],
    entries: int,
    now: float,
    probes: Sequence[Obj] | None = None,
) -> dict[str, Any]:
    """The whole new status of a flow from its previous status and its jobs (sorted by name)."""
    jobs = sorted(jobs, key=lambda j: str(_meta(j).get("name")))
    buckets: dict[str, list[str]] = {b: [] for b in BUCKETS.values()}
    unknown: list[str] = []
    conditions: dict[str, Any] = {}
    phases: dict[str, str] = {}
    for job in jobs:
        name, phase = str(_meta(job).get("name")), _job_phase(job)
        phases[name] = phase
        if phase in BUCKETS:
            buckets[BUCKETS[phase]].append(name)
        elif phase not in _OTHER_BUCKETS:
            unknown.append(name)
        st = _status(job)
        cond: dict[str, Any] = {"phase": phase}
        created = _meta(job).get("creationTimestamp")
        if isinstance(created, str):
            cond["createTime"] = created
        if isinstance(st.get("runningDuration"), str):
            cond["runningDuration"] = st["runningDuration"]
        if isinstance(st.get("taskStatusCount"), Mapping):
            cond["taskStatusCount"] = st["taskStatusCount"]
        conditions[name] = cond

    old_list = old.get("jobStatusList")
    previous = {
        str(e.get("name")): e
        for e in (old_list if isinstance(old_list, list) else ())
        if isinstance(e, Mapping)
    }
    status_list: list[dict[str, Any]] = []
    for job in jobs:
        name = str(_meta(job).get("name"))
        status_list.append(_job_entry(job, phases[name], previous.get(name), now))
    # Jobs gone since (deleted by the retain policy, or by hand) keep their last entry: the flow's record.
    seen = {e["name"] for e in status_list}
    status_list.extend(dict(e) for n, e in sorted(previous.items()) if n not in seen)

    old_state = old.get("state")
    raw = old_state.get("phase") if isinstance(old_state, Mapping) else None
    try:
        current = FlowPhase(raw) if isinstance(raw, str) and raw else FlowPhase.PENDING
    except ValueError:
        current = FlowPhase.PENDING
    status: dict[str, Any] = {
        **buckets,
        "unKnowJobs": unknown,
        "jobStatusList": status_list,
        "conditions": conditions,
        "state": {"phase": next_phase(current, phases, entries).value},
    }
    if probes:
        status["probeStatusList"] = list(probes)
    # Volcano omits empty lists (omitempty): so do we, so an unchanged flow compares equal.
    return {k: v for k, v in status.items() if v not in ([], {})}


def _job_entry(job: Obj, phase: str, prev: Obj | None, now: float) -> dict[str, Any]:
    meta, st = _meta(job), _status(job)
    created = meta.get("creationTimestamp") if isinstance(meta.get("creationTimestamp"), str) else None
    hist_raw = prev.get("runningHistories") if prev is not None else None
    history = [dict(h) for h in hist_raw if isinstance(h, Mapping)] if isinstance(hist_raw, list) else []
    if not history or history[-1].get("state") != phase:
        stamp = rfc3339(now)
        if history:
            history[-1]["endTimestamp"] = stamp
        history.append({"startTimestamp": stamp, "state": phase})
    entry: dict[str, Any] = {"name": str(meta.get("name")), "state": phase, "runningHistories": history}
    if created:
        entry["startTimestamp"] = created
        run = _duration_s(st.get("runningDuration"))
        if run is not None and phase in ("Completed", "Failed", "Terminated", "Aborted"):
            entry["endTimestamp"] = rfc3339(epoch(created) + run)
    retries = st.get("retryCount")
    if isinstance(retries, int) and not isinstance(retries, bool) and retries > 0:
        entry["restartCount"] = retries
    return entry
