"""CronJob: next-run computation (time zones, DST), missed runs, concurrency policies, history limits.

Expected times are written out by hand (the wall clock in the zone and its UTC offset that day)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.errors import InvalidObject
from extender.core.timestamps import epoch, rfc3339
from extender.flows.cron import CronWorld, due_time, next_runs, parse_cronjob, parse_schedule, reconcile
from tests.flows.builders import job


def t(text: str) -> float:
    return epoch(text)


NEXT_TABLE = [
    # (schedule, zone, after (UTC), the next three runs (UTC))
    (
        "*/15 * * * *",
        None,
        "2026-05-01T10:07:00Z",
        ["2026-05-01T10:15:00Z", "2026-05-01T10:30:00Z", "2026-05-01T10:45:00Z"],
    ),
    (
        "0 9 * * 1-5",
        "Europe/Berlin",
        "2026-05-01T12:00:00Z",  # Friday; CEST = UTC+2
        ["2026-05-04T07:00:00Z", "2026-05-05T07:00:00Z", "2026-05-06T07:00:00Z"],
    ),
    (
        "0 9 * * *",
        "Asia/Kolkata",
        "2026-05-01T00:00:00Z",  # UTC+5:30, no DST
        ["2026-05-01T03:30:00Z", "2026-05-02T03:30:00Z", "2026-05-03T03:30:00Z"],
    ),
    (
        "@daily",
        "America/New_York",
        "2026-01-10T12:00:00Z",
        ["2026-01-11T05:00:00Z", "2026-01-12T05:00:00Z", "2026-01-13T05:00:00Z"],
    ),
    # Spring forward in New York, 2026-03-08 02:00 EST -> 03:00 EDT: 02:30 does not exist that day and is
    # skipped, as robfig/cron (Kubernetes) does; the days around it keep 02:30 local (07:30Z EST, 06:30Z EDT).
    (
        "30 2 * * *",
        "America/New_York",
        "2026-03-07T00:00:00Z",
        ["2026-03-07T07:30:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"],
    ),
    # Every 15 minutes of hours 1-3 across the gap: 01:45 EST, then 03:00 EDT (no 02:xx that day).
    (
        "*/15 1-3 * * *",
        "America/New_York",
        "2026-03-08T06:40:00Z",
        ["2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z"],
    ),
    # Fall back, 2026-11-01 02:00 EDT -> 01:00 EST: 01:30 happens twice and runs twice.
    (
        "30 1 * * *",
        "America/New_York",
        "2026-11-01T00:00:00Z",
        ["2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"],
    ),
    # Hourly across the spring-forward gap: 01:00 EST then 03:00 EDT, an hour of UTC apart.
    (
        "0 * * * *",
        "America/New_York",
        "2026-03-08T05:30:00Z",
        ["2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z"],
    ),
    # Berlin's spring forward (2026-03-29 02:00 CET -> 03:00 CEST).
    (
        "0 12 * * *",
        "Europe/Berlin",
        "2026-03-28T00:00:00Z",
        ["2026-03-28T11:00:00Z", "2026-03-29T10:00:00Z", "2026-03-30T10:00:00Z"],
    ),
]


@pytest.mark.parametrize(("expr", "zone", "after", "want"), NEXT_TABLE)
def test_next_runs(expr: str, zone: str | None, after: str, want: list[str]) -> None:
    assert [rfc3339(x) for x in next_runs(parse_schedule(expr, zone), t(after), 3)] == want


@pytest.mark.parametrize(
    ("expr", "zone", "message"),
    [
        ("", None, "spec.schedule: required"),
        ("* * * *", None, "expected 5 fields"),
        ("61 * * * *", None, "not a valid cron expression"),
        ("TZ=UTC * * * * *", None, "set spec.timeZone"),
        ("@sometimes", None, "unknown macro"),
        ("* * * * *", "Mars/Olympus", "spec.timeZone: unknown time zone"),
        ("* * * * *", 5, "spec.timeZone: expected an IANA"),
    ],
)
def test_bad_schedules(expr: str, zone: Any, message: str) -> None:
    with pytest.raises(InvalidObject, match=message):
        parse_schedule(expr, zone)


def cron(**spec: Any) -> dict[str, Any]:
    status = spec.pop("status", None)
    obj: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {
            "name": "cj",
            "namespace": "default",
            "uid": "cj-uid",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"tasks": []}}, **spec},
    }
    if status:
        obj["status"] = status
    return obj


def cjob(name: str, phase: str | None, created: str, finished: str | None = None) -> dict[str, Any]:
    return job(name, phase, created=created, owner="cj-uid", kind="CronJob", finished=finished)


def plan_for(obj: dict[str, Any], jobs: list[dict[str, Any]], now: str) -> Any:
    return reconcile(CronWorld(cronjob=parse_cronjob(obj), jobs=jobs, now=t(now)))


def test_first_run_after_creation() -> None:
    p = plan_for(cron(), [], "2026-01-01T00:00:30Z")
    assert p.create_job is None and p.requeue_after == pytest.approx(30.1)
    p = plan_for(cron(), [], "2026-01-01T00:01:05Z")
    assert p.create_job["metadata"]["name"] == f"cj-{int(t('2026-01-01T00:01:00Z') // 60)}"
    assert p.create_job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert (
        p.create_job["metadata"]["annotations"]["volcano.sh/cronjob-scheduled-timestamp"]
        == "2026-01-01T00:01:00+00:00"
    )
    assert p.status["lastScheduleTime"] == "2026-01-01T00:01:00Z"


def test_at_most_one_catch_up_run_after_an_outage() -> None:
    obj = cron(status={"lastScheduleTime": "2026-01-01T00:01:00Z"})
    p = plan_for(obj, [], "2026-01-01T03:00:20Z")  # 179 times missed
    assert p.create_job["metadata"]["name"] == f"cj-{int(t('2026-01-01T03:00:00Z') // 60)}"
    assert [e[1] for e in p.events].count("TooManyMissedTimes") == 1
    assert p.status["lastScheduleTime"] == "2026-01-01T03:00:00Z"


def test_starting_deadline_skips_a_late_run() -> None:
    obj = cron(
        schedule="0 * * * *", startingDeadlineSeconds=30, status={"lastScheduleTime": "2026-01-01T00:00:00Z"}
    )
    assert plan_for(obj, [], "2026-01-01T01:00:40Z").create_job is None
    assert plan_for(obj, [], "2026-01-01T01:00:20Z").create_job is not None


def test_restart_does_not_duplicate() -> None:
    # The job was created, then pumice died before the status write: the job of that time exists.
    name = f"cj-{int(t('2026-01-01T00:01:00Z') // 60)}"
    p = plan_for(cron(), [cjob(name, "Running", "2026-01-01T00:01:01Z")], "2026-01-01T00:01:30Z")
    assert p.create_job is None
    assert [a["name"] for a in p.status["active"]] == [name]


def test_forbid_waits_for_the_active_job() -> None:
    obj = cron(concurrencyPolicy="Forbid", status={"lastScheduleTime": "2026-01-01T00:01:00Z"})
    running = cjob("cj-1", "Running", "2026-01-01T00:01:01Z")
    p = plan_for(obj, [running], "2026-01-01T00:02:05Z")
    assert p.create_job is None and p.events[0][1] == "JobAlreadyActive"
    allow = plan_for(
        cron(status={"lastScheduleTime": "2026-01-01T00:01:00Z"}), [running], "2026-01-01T00:02:05Z"
    )
    assert allow.create_job is not None and len(allow.status["active"]) == 2


def test_replace_deletes_the_active_job() -> None:
    obj = cron(concurrencyPolicy="Replace", status={"lastScheduleTime": "2026-01-01T00:01:00Z"})
    p = plan_for(obj, [cjob("cj-1", "Running", "2026-01-01T00:01:01Z")], "2026-01-01T00:02:05Z")
    assert p.delete_jobs == ["cj-1"] and p.create_job is not None
    assert [a["name"] for a in p.status["active"]] == [p.create_job["metadata"]["name"]]


def test_suspend_starts_nothing() -> None:
    p = plan_for(cron(suspend=True), [], "2026-01-01T00:05:00Z")
    assert p.create_job is None and p.requeue_after is None


def test_history_limits_delete_the_oldest() -> None:
    jobs = [
        cjob(f"ok-{i}", "Completed", f"2026-01-01T00:0{i}:00Z", finished=f"2026-01-01T00:0{i}:30Z")
        for i in range(5)
    ]
    jobs += [cjob(f"bad-{i}", "Failed", f"2026-01-01T00:0{i}:10Z") for i in range(3)]
    obj = cron(successfulJobsHistoryLimit=2, failedJobsHistoryLimit=1, suspend=True)
    p = plan_for(obj, jobs, "2026-01-01T00:09:00Z")
    assert p.delete_jobs == ["ok-0", "ok-1", "ok-2", "bad-0", "bad-1"]
    assert p.status["lastSuccessfulTime"] == "2026-01-01T00:04:30Z" and "active" not in p.status


def test_due_time_without_deadline() -> None:
    cj = parse_cronjob(cron(schedule="0 0 * * *"))
    assert due_time(cj, t("2026-01-05T10:00:00Z")).time == t("2026-01-05T00:00:00Z")
    assert due_time(cj, t("2026-01-05T10:00:00Z")).missed == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"concurrencyPolicy": "Sometimes"}, "spec.concurrencyPolicy"),
        ({"suspend": "yes"}, "spec.suspend"),
        ({"successfulJobsHistoryLimit": -1}, "spec.successfulJobsHistoryLimit"),
        ({"jobTemplate": {}}, "spec.jobTemplate.spec"),
    ],
)
def test_bad_cronjobs_name_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidObject, match=message):
        parse_cronjob(cron(**spec))


def test_latest_time_skips_the_spring_forward_gap() -> None:
    sched = parse_schedule("30 2 * * *", "America/New_York")
    # 03:10 EDT on 2026-03-08: that day has no 02:30, the latest run is the day before's (07:30Z).
    assert rfc3339(sched.last_at_or_before(t("2026-03-08T07:10:00Z"))) == "2026-03-07T07:30:00Z"
    assert rfc3339(sched.last_at_or_before(t("2026-03-09T06:30:00Z"))) == "2026-03-09T06:30:00Z"
