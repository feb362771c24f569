"""The JobFlow state machine as a table (written out by hand from the rules in extender.flows.state), and
the status it writes: Volcano's buckets, per-job phase history, conditions."""

from __future__ import annotations

import pytest

from extender.core.timestamps import epoch
from extender.flows.model import FlowPhase
from extender.flows.state import flow_status, next_phase
from tests.flows.builders import job

F = FlowPhase

# (current phase, job phases, entries, expected)
TABLE = [
    (F.PENDING, {}, 5, F.PENDING),
    (F.PENDING, {"a": "Pending"}, 5, F.PENDING),
    (F.PENDING, {"a": "Running"}, 5, F.RUNNING),
    (F.PENDING, {"a": "Completed"}, 5, F.RUNNING),
    (F.PENDING, {"a": "Completed"}, 1, F.SUCCEED),  # one step, not Volcano's two
    (F.RUNNING, {"a": "Completed", "b": "Restarting"}, 2, F.RUNNING),
    (F.RUNNING, {"a": "Completed", "b": "Completing"}, 2, F.RUNNING),
    (F.RUNNING, {"a": "Completed", "b": "Completed"}, 2, F.SUCCEED),
    (F.RUNNING, {"a": "Completed", "b": "Failed"}, 2, F.FAILED),
    (F.RUNNING, {"a": "Completed", "b": "Terminated"}, 3, F.FAILED),
    (F.RUNNING, {"a": "Aborted"}, 3, F.FAILED),
    (F.PENDING, {"a": "Failed", "b": "Running"}, 3, F.FAILED),
    (F.RUNNING, {"a": "Terminating"}, 3, F.TERMINATING),
    (F.RUNNING, {"a": "Aborting"}, 3, F.TERMINATING),
    (F.TERMINATING, {"a": "Terminated"}, 3, F.FAILED),
    (F.TERMINATING, {"a": "Running"}, 3, F.RUNNING),
    (F.SUCCEED, {}, 2, F.SUCCEED),  # jobs deleted by the retain policy: still Succeed
    (F.FAILED, {"a": "Running"}, 2, F.FAILED),
    (F.SUCCEED, {"a": "Failed"}, 2, F.SUCCEED),
    (F.PENDING, {}, 0, F.PENDING),
]


@pytest.mark.parametrize(("current", "phases", "entries", "want"), TABLE)
def test_next_phase(current: FlowPhase, phases: dict[str, str], entries: int, want: FlowPhase) -> None:
    assert next_phase(current, phases, entries) is want


T0 = epoch("2026-01-01T00:10:00Z")


def test_status_buckets_and_conditions() -> None:
    jobs = [
        job("f-a", "Completed", running="1m30s", task_counts={"main": {"Succeeded": 1}}),
        job("f-b", "Running"),
        job("f-c", "Pending"),
        job("f-d", "Restarting"),
        job("f-e", "Completing"),
    ]
    st = flow_status(old={}, jobs=jobs, entries=5, now=T0)
    assert st["completedJobs"] == ["f-a"]
    assert st["runningJobs"] == ["f-b"]
    assert st["pendingJobs"] == ["f-c"]
    assert st["unKnowJobs"] == ["f-d"]  # Completing is counted nowhere, as in Volcano
    assert "failedJobs" not in st and "terminatedJobs" not in st
    assert st["state"] == {"phase": "Running"}
    assert st["conditions"]["f-a"] == {
        "phase": "Completed",
        "createTime": "2026-01-01T00:00:00Z",
        "runningDuration": "1m30s",
        "taskStatusCount": {"main": {"phase": {"Succeeded": 1}}},
    }
    a = st["jobStatusList"][0]
    assert a["name"] == "f-a" and a["startTimestamp"] == "2026-01-01T00:00:00Z"
    assert a["endTimestamp"] == "2026-01-01T00:01:30Z"
    assert a["runningHistories"] == [{"startTimestamp": "2026-01-01T00:10:00Z", "state": "Completed"}]


def test_phase_history_appends_on_change_only() -> None:
    st1 = flow_status(old={}, jobs=[job("f-a", "Pending")], entries=1, now=T0)
    assert flow_status(old=st1, jobs=[job("f-a", "Pending")], entries=1, now=T0 + 5) == st1
    st2 = flow_status(old=st1, jobs=[job("f-a", "Running")], entries=1, now=T0 + 10)
    st3 = flow_status(old=st2, jobs=[job("f-a", "Completed")], entries=1, now=T0 + 20)
    hist = st3["jobStatusList"][0]["runningHistories"]
    assert [h["state"] for h in hist] == ["Pending", "Running", "Completed"]
    assert hist[0]["endTimestamp"] == hist[1]["startTimestamp"] == "2026-01-01T00:10:10Z"
    assert "endTimestamp" not in hist[2]
    assert st3["state"] == {"phase": "Succeed"}


def test_deleted_job_keeps_its_record() -> None:
    st1 = flow_status(old={"state": {"phase": "Succeed"}}, jobs=[job("f-a", "Completed")], entries=1, now=T0)
    st2 = flow_status(old=st1, jobs=[], entries=1, now=T0 + 1)
    assert st2["jobStatusList"] == st1["jobStatusList"]
    assert st2["state"] == {"phase": "Succeed"} and "completedJobs" not in st2
