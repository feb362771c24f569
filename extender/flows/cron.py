"""Volcano's CronJob (``batch.volcano.sh/v1alpha1`` ``cronjobs``): a vcjob on a schedule, pure.

Semantics are Kubernetes' CronJob controller's (``pkg/controller/cronjob``), which Volcano's cronjob
controller follows:

- The schedule is standard cron (five fields, or ``@hourly``-style macros), read with croniter, evaluated
  in ``spec.timeZone`` (an IANA name, zoneinfo) or UTC when unset (Kubernetes uses the controller's own
  zone; pumice's images run in UTC, and a fixed default keeps the result independent of the host).
  ``TZ=``/``CRON_TZ=`` prefixes are refused: ``timeZone`` says it.
- Missed runs: the most recent schedule time not after ``now`` and after ``status.lastScheduleTime`` (else
  the creation time) is the one run started: however many were missed (a pumice restart, a long outage), at
  most one catch-up run. With ``startingDeadlineSeconds`` a time older than ``now - deadline`` is never
  started. More than 100 missed times gives a warning, as Kubernetes does.
- ``concurrencyPolicy``: ``Allow`` starts regardless; ``Forbid`` does not start a run while a job is active
  (the time stays due: it starts when the active job finishes, if still within the deadline, as in
  Kubernetes); ``Replace`` deletes the active jobs and starts the new one.
- ``suspend``: no new runs; history and the active list are still maintained.
- History: finished jobs beyond ``successfulJobsHistoryLimit`` (Completed) / ``failedJobsHistoryLimit``
  (Failed) are deleted, oldest first. Terminated/Aborted jobs are finished, as Volcano counts them.
- A run's job is named ``<cronjob>-<scheduled minute since the epoch>`` and annotated with the scheduled time
  (``volcano.sh/cronjob-scheduled-timestamp``), so creating it twice (a crash between the create and the
  status write) is refused by the API server (409), never duplicated; ``status.active`` and
  ``lastScheduleTime`` record it.

DST as robfig/cron (which Kubernetes uses) handles it: a wall time that does not exist on a spring-forward
day is skipped that day (croniter alone would move it to the end of the gap; :meth:`Schedule.next_after`
refuses such times); a wall time that occurs twice on a fall-back day runs at both instants.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterError, croniter

from extender.core.errors import InvalidObject
from extender.core.fields import object_field as _map
from extender.core.timestamps import epoch, rfc3339
from extender.flows.model import JOB_API_VERSION
from extender.flows.state import job_phase

Obj = Mapping[str, Any]

CRONJOB_KIND: Final = "CronJob"
SCHEDULED_TIMESTAMP: Final = "volcano.sh/cronjob-scheduled-timestamp"
DEFAULT_SUCCESSFUL_LIMIT: Final = 3
DEFAULT_FAILED_LIMIT: Final = 1
TOO_MANY_MISSED: Final = 100
FINISHED: Final = frozenset({"Completed", "Failed", "Terminated", "Aborted"})
# Wake a little after the next time, so the clock has passed it (Kubernetes' nextScheduleDelta).
WAKE_DELTA: Final = 0.1


class Concurrency(StrEnum):
    ALLOW = "Allow"
    FORBID = "Forbid"
    REPLACE = "Replace"


@dataclass(frozen=True, slots=True)
class Schedule:
    """A parsed cron expression in a time zone."""

    expr: str
    zone: ZoneInfo

    def _wall_time_ok(self, t: datetime) -> bool:
        """Whether ``t``'s wall-clock hour and minute are in the expression. croniter moves a time that a
        spring-forward gap skips to the end of the gap (02:30 -> 03:00); robfig/cron, which Kubernetes
        uses, has no such time that day. Refusing the moved time gives robfig's answer."""
        minutes, hours = croniter.expand(self.expr)[0][:2]
        return ("*" in minutes or t.minute in minutes) and ("*" in hours or t.hour in hours)

    def next_after(self, t: float) -> float:
        """The first schedule time strictly after ``t`` (epoch seconds)."""
        it = croniter(self.expr, datetime.fromtimestamp(t, self.zone))
        for _ in range(_DST_SKIPS):
            nxt = it.get_next(datetime)
            if self._wall_time_ok(nxt):
                return float(nxt.timestamp())
        return float(nxt.timestamp())

    def last_at_or_before(self, t: float) -> float:
        """The latest schedule time at or before ``t``."""
        it = croniter(self.expr, datetime.fromtimestamp(math.floor(t) + 1, self.zone))
        for _ in range(_DST_SKIPS):
            prev = it.get_prev(datetime)
            if self._wall_time_ok(prev):
                return float(prev.timestamp())
        return float(prev.timestamp())


# Gap-moved times skipped in a row at most (one per DST change; a bound, not a tuning knob).
_DST_SKIPS: Final = 8


def parse_schedule(expr: object, time_zone: object = None) -> Schedule:
    """Raises :class:`InvalidObject` naming ``spec.schedule`` or ``spec.timeZone``."""
    if not isinstance(expr, str) or not expr.strip():
        raise InvalidObject("spec.schedule: required, a cron expression such as '*/5 * * * *'")
    if "TZ=" in expr:
        raise InvalidObject("spec.schedule: TZ= and CRON_TZ= are not supported; set spec.timeZone instead")
    zone = ZoneInfo("UTC")
    if time_zone is not None:
        if not isinstance(time_zone, str) or not time_zone:
            raise InvalidObject("spec.timeZone: expected an IANA time zone name such as 'Europe/Berlin'")
        try:
            zone = ZoneInfo(time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidObject(f"spec.timeZone: unknown time zone {time_zone!r}") from None
    fields = expr.split()
    if not expr.startswith("@") and len(fields) != 5:
        raise InvalidObject(f"spec.schedule: {expr!r}: expected 5 fields (minute hour day month weekday)")
    if expr.startswith("@") and expr.strip() not in _MACROS:
        raise InvalidObject(f"spec.schedule: {expr!r}: unknown macro (one of {', '.join(sorted(_MACROS))})")
    try:
        if not croniter.is_valid(expr):
            raise InvalidObject(f"spec.schedule: {expr!r} is not a valid cron expression")
        sched = Schedule(expr.strip(), zone)
        sched.next_after(0.0)
    except (CroniterError, CroniterBadCronError, CroniterBadDateError, ValueError, KeyError):
        raise InvalidObject(f"spec.schedule: {expr!r} is not a valid cron expression") from None
    return sched


_MACROS: Final = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})


@dataclass(frozen=True, slots=True, kw_only=True)
class CronJob:
    namespace: str
    name: str
    uid: str
    created: float
    schedule: Schedule
    concurrency: Concurrency = Concurrency.ALLOW
    deadline_s: int | None = None
    suspend: bool = False
    successful_limit: int = DEFAULT_SUCCESSFUL_LIMIT
    failed_limit: int = DEFAULT_FAILED_LIMIT
    template: Obj = field(default_factory=dict)  # spec.jobTemplate: {metadata, spec}
    status: Obj = field(default_factory=dict)
    deleting: bool = False


def _opt_int(spec: Obj, key: str, default: int | None) -> int | None:
    v = spec.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidObject(f"spec.{key}: expected an integer >= 0")
    return v


def parse_cronjob(obj: Obj) -> CronJob:
    """Raises :class:`InvalidObject` naming the field, and nothing else."""
    if not isinstance(obj, Mapping):
        raise InvalidObject("CronJob: expected an object")
    meta = _map(obj, "metadata", "metadata")
    spec = _map(obj, "spec", "spec")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidObject("metadata.name: required")
    sched = parse_schedule(spec.get("schedule"), spec.get("timeZone"))
    raw_policy = spec.get("concurrencyPolicy") or Concurrency.ALLOW.value
    try:
        policy = Concurrency(raw_policy)
    except ValueError:
        raise InvalidObject(
            f"spec.concurrencyPolicy: {raw_policy!r} is not one of Allow, Forbid, Replace"
        ) from None
    suspend = spec.get("suspend")
    if suspend is not None and not isinstance(suspend, bool):
        raise InvalidObject("spec.suspend: expected true or false")
    template = _map(spec, "jobTemplate", "spec")
    if not isinstance(template.get("spec"), Mapping):
        raise InvalidObject("spec.jobTemplate.spec: required, a vcjob spec")
    _map(template, "metadata", "spec.jobTemplate")
    status = obj.get("status")
    ns = meta.get("namespace")
    uid = meta.get("uid")
    created = meta.get("creationTimestamp")
    return CronJob(
        namespace=ns if isinstance(ns, str) and ns else "default",
        name=name,
        uid=uid if isinstance(uid, str) else "",
        created=epoch(created) if isinstance(created, str) else 0.0,
        schedule=sched,
        concurrency=policy,
        deadline_s=_opt_int(spec, "startingDeadlineSeconds", None),
        suspend=bool(suspend),
        successful_limit=_opt_int(spec, "successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_LIMIT) or 0,
        failed_limit=_opt_int(spec, "failedJobsHistoryLimit", DEFAULT_FAILED_LIMIT) or 0,
        template=template,
        status=status if isinstance(status, Mapping) else {},
        deleting=bool(meta.get("deletionTimestamp")),
    )


@dataclass(frozen=True, slots=True)
class Missed:
    """The run to start now (None: none due) and how many schedule times were missed since the last."""

    time: float | None
    missed: int


def due_time(cj: CronJob, now: float, *, with_deadline: bool = True) -> Missed:
    """Kubernetes' ``mostRecentScheduleTime``: the latest schedule time in (earliest, now], where earliest
    is the last schedule time (else the creation time), raised to ``now - startingDeadlineSeconds``."""
    earliest = _last_schedule(cj) or cj.created
    if with_deadline and cj.deadline_s is not None:
        earliest = max(earliest, now - cj.deadline_s)
    first = cj.schedule.next_after(earliest)
    if first > now:
        return Missed(None, 0)
    latest = cj.schedule.last_at_or_before(now)
    second = cj.schedule.next_after(first)
    period = max(second - first, 1.0)
    return Missed(latest, int((now - first) // period) + 1)


def _last_schedule(cj: CronJob) -> float | None:
    raw = cj.status.get("lastScheduleTime")
    return epoch(raw) or None if isinstance(raw, str) else None


def job_name(cj: CronJob, scheduled: float) -> str:
    return f"{cj.name}-{int(scheduled // 60)}"


def build_job(cj: CronJob, scheduled: float) -> dict[str, Any]:
    meta = cj.template.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    labels = dict(meta.get("labels") or {}) if isinstance(meta.get("labels"), Mapping) else {}
    annotations = dict(meta.get("annotations") or {}) if isinstance(meta.get("annotations"), Mapping) else {}
    annotations[SCHEDULED_TIMESTAMP] = datetime.fromtimestamp(scheduled, cj.schedule.zone).isoformat()
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "metadata": {
            "name": job_name(cj, scheduled),
            "namespace": cj.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": JOB_API_VERSION,
                    "kind": CRONJOB_KIND,
                    "name": cj.name,
                    "uid": cj.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": dict(cj.template["spec"]),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class CronWorld:
    cronjob: CronJob
    jobs: Sequence[Obj]  # the vcjobs this CronJob controls (owner reference with its UID)
    now: float


@dataclass(slots=True)
class CronPlan:
    create_job: dict[str, Any] | None = None
    delete_jobs: list[str] = field(default_factory=list)
    status: dict[str, Any] | None = None
    requeue_after: float | None = None
    events: list[tuple[str, str, str]] = field(default_factory=list)


def _meta(o: Obj) -> Obj:
    m = o.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _finish_time(job: Obj) -> float:
    st = job.get("status")
    state = st.get("state") if isinstance(st, Mapping) else None
    t = state.get("lastTransitionTime") if isinstance(state, Mapping) else None
    return epoch(t) if isinstance(t, str) else 0.0


def _ref(job: Obj) -> dict[str, Any]:
    m = _meta(job)
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "namespace": m.get("namespace"),
        "name": m.get("name"),
        "uid": m.get("uid"),
    }


def reconcile(w: CronWorld) -> CronPlan:
    cj, now, plan = w.cronjob, w.now, CronPlan()
    if cj.deleting:
        return plan
    status: dict[str, Any] = dict(cj.status)
    jobs = sorted(
        w.jobs, key=lambda j: (epoch(str(_meta(j).get("creationTimestamp") or "")), str(_meta(j).get("name")))
    )
    by_name = {str(_meta(j).get("name")): j for j in jobs}

    # The active list: exactly the controlled jobs that have not finished (a job deleted by hand leaves it).
    active = [_ref(j) for j in jobs if job_phase(j) not in FINISHED and not _meta(j).get("deletionTimestamp")]
    ok_times = [_finish_time(j) for j in jobs if job_phase(j) == "Completed" and _finish_time(j)]
    if ok_times:
        last_ok = max(ok_times)
        if last_ok > (epoch(str(status.get("lastSuccessfulTime") or "")) or 0.0):
            status["lastSuccessfulTime"] = rfc3339(last_ok)

    # History limits, oldest first.
    for phase, limit in (("Completed", cj.successful_limit), ("Failed", cj.failed_limit)):
        done = [j for j in jobs if job_phase(j) == phase and not _meta(j).get("deletionTimestamp")]
        for j in done[: max(len(done) - limit, 0)]:
            plan.delete_jobs.append(str(_meta(j).get("name")))

    def finish() -> CronPlan:
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
        if status != dict(cj.status):
            plan.status = status
        return plan

    if cj.suspend:
        return finish()

    due = due_time(cj, now)
    wake = _next_wake(cj, now)
    plan.requeue_after = wake
    if due.missed > TOO_MANY_MISSED:
        plan.events.append(
            (
                "Warning",
                "TooManyMissedTimes",
                "too many missed start times; set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
        )
    if due.time is None:
        return finish()
    name = job_name(cj, due.time)
    if name in by_name or _last_schedule(cj) == due.time:
        return finish()  # this time is already handled
    if cj.concurrency is Concurrency.FORBID and active:
        plan.events.append(
            ("Normal", "JobAlreadyActive", "not starting a job: another is still active (Forbid)")
        )
        return finish()
    if cj.concurrency is Concurrency.REPLACE and active:
        for ref in active:
            plan.delete_jobs.append(str(ref["name"]))
            plan.events.append(("Normal", "SuccessfulDelete", f"deleted active job {ref['name']} (Replace)"))
        active.clear()
    job = build_job(cj, due.time)
    plan.create_job = job
    plan.events.append(("Normal", "SuccessfulCreate", f"created job {name}"))
    active.append({"apiVersion": JOB_API_VERSION, "kind": "Job", "namespace": cj.namespace, "name": name})
    status["lastScheduleTime"] = rfc3339(due.time)
    return finish()


def _next_wake(cj: CronJob, now: float) -> float:
    """Seconds until the next schedule time (Kubernetes' nextScheduleTimeDuration)."""
    try:
        nxt = cj.schedule.next_after(now)
    except (CroniterError, ValueError):
        return 60.0
    return max(nxt - now, 0.0) + WAKE_DELTA


def next_runs(schedule: Schedule, after: float, n: int) -> list[float]:
    out, t = [], after
    for _ in range(n):
        t = schedule.next_after(t)
        out.append(t)
    return out
