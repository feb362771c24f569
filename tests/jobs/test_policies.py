"""Lifecycle policies: the events pods show now (level-triggered), and the action the policies take."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.timestamps import rfc3339
from extender.jobs.model import Action, Job, parse_job
from extender.jobs.pods import PodView, view_pod
from extender.jobs.policies import Trigger, triggered

T0 = 1_700_000_000.0


def make_job(
    tasks: list[dict[str, Any]] | None = None,
    policies: list[dict[str, Any]] | None = None,
    version: int = 0,
) -> Job:
    return parse_job(
        {
            "metadata": {"name": "j", "namespace": "ns", "uid": "u"},
            "spec": {
                "tasks": tasks if tasks is not None else [{"name": "w", "replicas": 2}],
                "policies": policies or [],
            },
            "status": {"state": {"phase": "Running"}, "version": version},
        }
    )


def pod(
    name: str,
    phase: str = "Running",
    *,
    task: str = "w",
    version: int = 0,
    exit_code: int | None = None,
    finished_at: float | None = None,
    restarts: int = 0,
    init_restarts: int = 0,
    reason: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
    created: float = T0,
    deleting: bool = False,
    ready: bool = True,
    containers: list[dict[str, Any]] | None = None,
) -> PodView:
    """A pod of job ``j`` as the API server returns it, read by ``view_pod``."""
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        term: dict[str, Any] = {"exitCode": exit_code}
        if finished_at is not None:
            term["finishedAt"] = rfc3339(finished_at)
        state = {"terminated": term}
    status: dict[str, Any] = {
        "phase": phase,
        "containerStatuses": containers
        if containers is not None
        else [{"name": "main", "state": state, "restartCount": restarts, "ready": ready}],
    }
    if init_restarts:
        status["initContainerStatuses"] = [{"name": "init", "restartCount": init_restarts}]
    if reason is not None:
        status["reason"] = reason
    if conditions is not None:
        status["conditions"] = conditions
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "creationTimestamp": rfc3339(created),
        "annotations": {
            "volcano.sh/task-spec": task,
            "volcano.sh/task-index": name.rsplit("-", 1)[-1],
            "volcano.sh/job-version": str(version),
        },
    }
    if deleting:
        meta["deletionTimestamp"] = rfc3339(created + 1)
    return view_pod({"metadata": meta, "status": status})


def fire(job: Job, pods: list[PodView], now: float = T0 + 1000) -> Trigger | None:
    trigger, _ = triggered(job, pods, now)
    return trigger


# --- view_pod -------------------------------------------------------------------------------------
def test_view_pod_reads_the_api_servers_json() -> None:
    p = pod("j-w-1", "Failed", version=2, exit_code=137, finished_at=T0 + 5, restarts=2, init_restarts=1)
    assert p == PodView(
        name="j-w-1",
        uid="uid-j-w-1",
        task="w",
        index=1,
        version=2,
        phase=p.phase,
        created=T0,
        exit_code=137,
        restarts=3,
        ready=True,
        finished=T0 + 5,
    )
    assert p.phase == "Failed"
    assert not p.alive


# --- PodFailed and exit codes ---------------------------------------------------------------------
def test_pod_failed_event_policy() -> None:
    job = make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    got = fire(job, [pod("j-w-0"), pod("j-w-1", "Failed", exit_code=1)])
    assert got == Trigger(event="PodFailed", action=Action.RESTART_JOB, task="w", pod="j-w-1", exit_code=1)
    assert got.describe() == "PodFailed: pod j-w-1 (exit code 1)"


@pytest.mark.parametrize(
    ("code", "expected"),
    [(3, Action.RESTART_JOB), (4, Action.RESTART_POD), (1, Action.ABORT_JOB)],
)
def test_policy_by_exit_code(code: int, expected: Action) -> None:
    job = make_job(
        policies=[
            {"exitCode": 3, "action": "RestartJob"},
            {"exitCode": 4, "action": "RestartPod"},
            {"event": "PodFailed", "action": "AbortJob"},
        ]
    )
    got = fire(job, [pod("j-w-0", "Failed", exit_code=code)])
    assert got == Trigger(event="PodFailed", action=expected, task="w", pod="j-w-0", exit_code=code)


def test_event_policy_before_exit_code_policy_wins() -> None:
    # Policies are read in order, each by its event first, then its exit code (Volcano's applyPolicies).
    job = make_job(
        policies=[{"event": "PodFailed", "action": "AbortJob"}, {"exitCode": 3, "action": "RestartJob"}]
    )
    got = fire(job, [pod("j-w-0", "Failed", exit_code=3)])
    assert got is not None and got.action is Action.ABORT_JOB


def test_exit_code_policy_ignores_running_and_succeeded_pods() -> None:
    job = make_job(policies=[{"exitCode": 3, "action": "RestartJob"}])
    pods = [pod("j-w-0", "Succeeded", exit_code=3), pod("j-w-1", "Running")]
    assert fire(job, pods) is None


def test_exit_code_of_the_first_terminated_container() -> None:
    sidecar = {"name": "side", "state": {"running": {}}, "ready": True}
    main = {"name": "main", "state": {"terminated": {"exitCode": 5}}, "ready": False}
    p = pod("j-w-0", "Failed", containers=[sidecar, main])
    assert p.exit_code == 5
    job = make_job(policies=[{"exitCode": 5, "action": "TerminateJob"}])
    assert fire(job, [p]) == Trigger(
        event="PodFailed", action=Action.TERMINATE_JOB, task="w", pod="j-w-0", exit_code=5
    )


def test_no_matching_policy_no_trigger() -> None:
    job = make_job(policies=[{"exitCode": 3, "action": "RestartJob"}])
    assert triggered(job, [pod("j-w-0", "Failed", exit_code=1)], T0) == (None, None)


# --- PodEvicted and Unknown -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "evicted",
    [
        {"reason": "Evicted"},
        {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]},
    ],
)
def test_pod_evicted(evicted: dict[str, Any]) -> None:
    job = make_job(
        policies=[
            {"event": "PodFailed", "action": "AbortJob"},
            {"event": "PodEvicted", "action": "RestartJob"},
        ]
    )
    p = pod("j-w-0", "Failed", **evicted)
    assert p.evicted
    assert fire(job, [p]) == Trigger(event="PodEvicted", action=Action.RESTART_JOB, task="w", pod="j-w-0")


def test_disruption_target_false_is_a_plain_failure() -> None:
    job = make_job(
        policies=[
            {"event": "PodEvicted", "action": "RestartJob"},
            {"event": "PodFailed", "action": "AbortJob"},
        ]
    )
    p = pod("j-w-0", "Failed", conditions=[{"type": "DisruptionTarget", "status": "False"}])
    assert not p.evicted
    got = fire(job, [p])
    assert got is not None and (got.event, got.action) == ("PodFailed", Action.ABORT_JOB)


def test_pod_evicted_policy_does_not_match_a_plain_failure() -> None:
    job = make_job(policies=[{"event": "PodEvicted", "action": "RestartJob"}])
    assert fire(job, [pod("j-w-0", "Failed", exit_code=1)]) is None


def test_unknown_pod() -> None:
    job = make_job(policies=[{"events": ["PodFailed", "Unknown"], "action": "RestartPod"}])
    assert fire(job, [pod("j-w-0", "Unknown")]) == Trigger(
        event="Unknown", action=Action.RESTART_POD, task="w", pod="j-w-0"
    )


# --- PodPending needs a timeout -------------------------------------------------------------------
def test_pod_pending_without_timeout_never_fires() -> None:
    job = make_job(policies=[{"event": "PodPending", "action": "RestartPod"}])
    assert triggered(job, [pod("j-w-0", "Pending")], T0 + 10_000) == (None, None)


def test_pod_pending_with_timeout_waits_then_fires() -> None:
    job = make_job(policies=[{"event": "PodPending", "action": "RestartPod", "timeout": "5m"}])
    pods = [pod("j-w-0", "Pending", created=T0), pod("j-w-1", "Running")]
    assert triggered(job, pods, T0 + 100) == (None, T0 + 300)
    assert triggered(job, pods, T0 + 300) == (
        Trigger(event="PodPending", action=Action.RESTART_POD, task="w", pod="j-w-0"),
        None,
    )


def test_earliest_timeout_is_the_wake_time() -> None:
    job = make_job(policies=[{"event": "PodPending", "action": "RestartPod", "timeout": "1m"}])
    pods = [pod("j-w-0", "Pending", created=T0 + 30), pod("j-w-1", "Pending", created=T0)]
    assert triggered(job, pods, T0 + 10) == (None, T0 + 60)


def test_failed_pod_timeout_counts_from_finished_at() -> None:
    job = make_job(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "30s"}])
    pods = [pod("j-w-0", "Failed", exit_code=1, finished_at=T0 + 100, created=T0)]
    assert triggered(job, pods, T0 + 110) == (None, T0 + 130)
    trigger, wake = triggered(job, pods, T0 + 130)
    assert trigger is not None and trigger.action is Action.RESTART_JOB and wake is None


# --- "*" ------------------------------------------------------------------------------------------
def test_any_event_matches_failed_evicted_unknown() -> None:
    job = make_job(policies=[{"event": "*", "action": "AbortJob"}])
    for p, event in [
        (pod("j-w-0", "Failed", exit_code=2), "PodFailed"),
        (pod("j-w-0", "Failed", reason="Evicted"), "PodEvicted"),
        (pod("j-w-0", "Unknown"), "Unknown"),
    ]:
        got = fire(job, [p])
        assert got is not None and (got.event, got.action) == (event, Action.ABORT_JOB)


def test_any_event_without_timeout_ignores_pending_pods() -> None:
    job = make_job(policies=[{"event": "*", "action": "AbortJob"}])
    assert triggered(job, [pod("j-w-0", "Pending")], T0 + 10_000) == (None, None)


def test_any_event_matches_task_events() -> None:
    job = make_job(policies=[{"event": "*", "action": "CompleteJob"}])
    pods = [pod("j-w-0", "Succeeded", exit_code=0), pod("j-w-1", "Succeeded", exit_code=0)]
    assert fire(job, pods) == Trigger(event="TaskCompleted", action=Action.COMPLETE_JOB, task="w")


# --- task policies before job policies ------------------------------------------------------------
TWO_TASKS = [
    {"name": "ps", "replicas": 1, "policies": [{"event": "PodFailed", "action": "RestartTask"}]},
    {"name": "worker", "replicas": 2, "policies": [{"exitCode": 9, "action": "RestartPod"}]},
]


def test_task_policy_wins_over_job_policy() -> None:
    job = make_job(TWO_TASKS, [{"event": "PodFailed", "action": "AbortJob"}])
    got = fire(job, [pod("j-ps-0", "Failed", task="ps", exit_code=1)])
    assert got == Trigger(event="PodFailed", action=Action.RESTART_TASK, task="ps", pod="j-ps-0", exit_code=1)


def test_job_policy_when_the_task_policy_does_not_match() -> None:
    job = make_job(TWO_TASKS, [{"event": "PodFailed", "action": "AbortJob"}])
    got = fire(job, [pod("j-worker-0", "Failed", task="worker", exit_code=1)])
    assert got is not None and (got.action, got.task) == (Action.ABORT_JOB, "worker")
    got = fire(job, [pod("j-worker-0", "Failed", task="worker", exit_code=9)])
    assert got is not None and (got.action, got.task) == (Action.RESTART_POD, "worker")


# --- TaskCompleted --------------------------------------------------------------------------------
def test_task_completed_when_every_replica_succeeded() -> None:
    tasks = [
        {"name": "a", "replicas": 2, "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]},
        {"name": "b", "replicas": 1},
    ]
    job = make_job(tasks)
    one = [pod("j-a-0", "Succeeded", task="a", exit_code=0), pod("j-a-1", task="a"), pod("j-b-0", task="b")]
    assert fire(job, one) is None
    both = [
        pod("j-a-0", "Succeeded", task="a", exit_code=0),
        pod("j-a-1", "Succeeded", task="a", exit_code=0),
    ]
    got = fire(job, [*both, pod("j-b-0", task="b")])
    assert got == Trigger(event="TaskCompleted", action=Action.COMPLETE_JOB, task="a")
    assert got.describe() == "TaskCompleted: task a"


def test_task_completed_ignores_succeeded_pods_of_an_older_version() -> None:
    job = make_job([{"name": "a", "replicas": 1}], [{"event": "TaskCompleted", "action": "CompleteJob"}], 1)
    assert fire(job, [pod("j-a-0", "Succeeded", task="a", exit_code=0, version=0)]) is None
    got = fire(job, [pod("j-a-0", "Succeeded", task="a", exit_code=0, version=1)])
    assert got is not None and got.event == "TaskCompleted"


# --- TaskFailed -----------------------------------------------------------------------------------
def _task_failed_job(max_retry: int | None) -> Job:
    task: dict[str, Any] = {"name": "w", "replicas": 2}
    if max_retry is not None:
        task["maxRetry"] = max_retry
    return make_job([task], [{"event": "TaskFailed", "action": "RestartTask"}])


@pytest.mark.parametrize(
    ("max_retry", "restarts", "fires"),
    [
        (None, (1, 1), False),
        (None, (1, 2), True),  # default 3
        (0, (2, 1), True),  # 0 means the default, as in Volcano's cache.TaskFailed
        (5, (2, 2), False),
        (5, (3, 2), True),
        (1, (1, 0), True),
        (-1, (50, 50), False),  # unlimited
    ],
)
def test_task_failed_when_restarts_reach_task_max_retry(
    max_retry: int | None, restarts: tuple[int, int], fires: bool
) -> None:
    job = _task_failed_job(max_retry)
    pods = [pod("j-w-0", restarts=restarts[0]), pod("j-w-1", "Pending", restarts=restarts[1])]
    expected = Trigger(event="TaskFailed", action=Action.RESTART_TASK, task="w") if fires else None
    assert fire(job, pods) == expected


def test_task_failed_counts_init_container_restarts() -> None:
    job = _task_failed_job(None)
    got = fire(job, [pod("j-w-0", restarts=1, init_restarts=2)])
    assert got is not None and got.event == "TaskFailed"


def test_task_failed_ignores_finished_and_deleting_pods() -> None:
    job = _task_failed_job(None)
    pods = [
        pod("j-w-0", "Succeeded", exit_code=0, restarts=5),
        pod("j-w-1", restarts=5, deleting=True),
        pod("j-w-2", restarts=2),
    ]
    assert fire(job, pods) is None


# --- what is ignored ------------------------------------------------------------------------------
def test_pods_of_an_older_job_version_are_ignored() -> None:
    job = make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}], version=2)
    assert fire(job, [pod("j-w-0", "Failed", exit_code=1, version=1)]) is None
    got = fire(job, [pod("j-w-0", "Failed", exit_code=1, version=2)])
    assert got is not None and got.action is Action.RESTART_JOB


def test_pods_being_deleted_are_ignored() -> None:
    job = make_job(policies=[{"event": "PodFailed", "action": "RestartJob"}])
    assert fire(job, [pod("j-w-0", "Failed", exit_code=1, deleting=True)]) is None


def test_a_policy_with_an_invalid_action_is_skipped() -> None:
    job = make_job(policies=[{"event": "PodFailed", "action": "SyncJob"}])
    assert fire(job, [pod("j-w-0", "Failed", exit_code=1)]) is None


# --- order ----------------------------------------------------------------------------------------
def test_pods_in_name_order_whatever_the_input_order() -> None:
    job = make_job(
        [{"name": "w", "replicas": 3}],
        [{"event": "PodFailed", "action": "RestartPod"}, {"event": "Unknown", "action": "AbortJob"}],
    )
    pods = [pod("j-w-2", "Failed", exit_code=1), pod("j-w-1", "Unknown"), pod("j-w-0", "Running")]
    expected = Trigger(event="Unknown", action=Action.ABORT_JOB, task="w", pod="j-w-1")
    assert fire(job, pods) == expected
    assert fire(job, list(reversed(pods))) == expected


def test_pod_events_before_task_events_and_tasks_in_spec_order() -> None:
    tasks = [
        {"name": "b", "replicas": 1, "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]},
        {"name": "a", "replicas": 1, "policies": [{"event": "TaskCompleted", "action": "TerminateJob"}]},
    ]
    job = make_job(tasks, [{"event": "PodFailed", "action": "AbortJob"}])
    done = [
        pod("j-b-0", "Succeeded", task="b", exit_code=0),
        pod("j-a-0", "Succeeded", task="a", exit_code=0),
    ]
    assert fire(job, done) == Trigger(event="TaskCompleted", action=Action.COMPLETE_JOB, task="b")
    failed = pod("j-z-0", "Failed", task="z", exit_code=1)  # a pod of no task still shows PodFailed
    got = fire(job, [*done, failed])
    assert got is not None and (got.event, got.pod) == ("PodFailed", "j-z-0")


def test_task_event_policy_timeout_is_honoured() -> None:
    job = make_job(
        [{"name": "a", "replicas": 1}],
        [{"event": "TaskCompleted", "action": "CompleteJob", "timeout": "10m"}],
    )
    done = [pod("j-a-0", "Succeeded", task="a", exit_code=0, finished_at=T0)]
    trigger, wake = triggered(job, done, T0 + 1)
    assert trigger is None
    assert wake == T0 + 600
