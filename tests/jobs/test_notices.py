"""What a vcjob tells its user: its PodGroup's blocking reason in ``status.state``, and the Events of its
transitions (``extender.jobs.notices``, through ``reconcile`` where the state is written)."""

from __future__ import annotations

from typing import Any

import pytest

from extender.jobs.model import parse_job
from extender.jobs.notices import PODGROUP_PENDING, Notice, same_reason, transition_event, waiting_state
from extender.jobs.reconcile import World, podgroup_spec, reconcile
from tests.jobs.test_reconcile import T0, job_json, task

OVER = (
    "cluster over-committed: minResources cpu 9 > idle cpu 7.6 (cpu: allocatable 8 × overcommit 1.2 − used 2)"
)


def blocked(phase: str = "Pending", message: str = OVER) -> dict[str, Any]:
    cond = {"type": "Unschedulable", "status": "True", "reason": "NotEnqueued", "message": message}
    return {"phase": phase, "conditions": [cond]}


def state_after(raw: dict[str, Any], pg_status: dict[str, Any] | None) -> dict[str, Any]:
    job = parse_job(raw)
    pg = None if pg_status is None else {"spec": podgroup_spec(job), "status": pg_status}
    plan = reconcile(World(job=job, pods=[], podgroup=pg, now=T0))
    assert plan.status is not None
    state: dict[str, Any] = plan.status["state"]
    return state


def test_a_pending_job_carries_its_podgroups_blocking_condition() -> None:
    raw = job_json(task("w", 2))
    raw["status"] = {"state": {"phase": "Pending"}}
    state = state_after(raw, blocked())
    assert (state["phase"], state["reason"], state["message"]) == (
        "Pending",
        PODGROUP_PENDING,
        f"NotEnqueued: {OVER}",
    )


def test_the_reason_is_cleared_once_the_group_is_admitted() -> None:
    raw = job_json(task("w", 2))
    raw["status"] = {
        "state": {"phase": "Pending", "reason": PODGROUP_PENDING, "message": f"NotEnqueued: {OVER}"}
    }
    state = state_after(raw, {"phase": "Inqueue", "conditions": []})
    assert "reason" not in state and "message" not in state


@pytest.mark.parametrize(
    ("phase", "pg", "text", "expected"),  # pg: the PodGroup's status
    [
        ("Pending", blocked(), ("", ""), (PODGROUP_PENDING, f"NotEnqueued: {OVER}")),
        # An admitted group that no node fits still blocks the job.
        ("Pending", blocked("Inqueue", "gang 1/2"), ("", ""), (PODGROUP_PENDING, "NotEnqueued: gang 1/2")),
        # A running group waits for nothing, whatever condition it still carries.
        ("Pending", blocked("Running"), ("Pending", "1 pods pending"), ("Pending", "1 pods pending")),
        # Only a Pending job says why it waits; a Running one keeps its own reason.
        ("Running", blocked(), ("Running", "2 pods running"), ("Running", "2 pods running")),
        ("Pending", None, ("Command", "ResumeJob by Command c"), ("Command", "ResumeJob by Command c")),
        ("Pending", {"phase": "Pending", "conditions": []}, (PODGROUP_PENDING, "x"), ("", "")),
        (
            "Pending",
            {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "False", "reason": "R"}]},
            ("", ""),
            ("", ""),
        ),
    ],
)
def test_waiting_state(phase: str, pg: Any, text: tuple[str, str], expected: tuple[str, str]) -> None:
    podgroup = None if pg is None else {"status": pg}
    assert waiting_state(phase, podgroup, text) == expected


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # A new job entering Pending is no news.
        ({}, {"phase": "Pending"}, None),
        ({"phase": "Pending"}, {"phase": "Pending", "reason": "Pending", "message": "2 pods pending"}, None),
        (
            {"phase": "Running"},
            {
                "phase": "Restarting",
                "reason": "PodFailed",
                "message": "PodFailed: pod tr-w-0 (exit code 3) → RestartJob",
            },
            Notice(
                type="Warning",
                reason="PodFailed",
                note="Running → Restarting: PodFailed: pod tr-w-0 (exit code 3) → RestartJob",
            ),
        ),
        (
            {"phase": "Running"},
            {
                "phase": "Completing",
                "reason": "TaskCompleted",
                "message": "TaskCompleted: task w → CompleteJob",
            },
            Notice(
                type="Normal",
                reason="TaskCompleted",
                note="Running → Completing: TaskCompleted: task w → CompleteJob",
            ),
        ),
        (
            {"phase": "Running"},
            {"phase": "Aborting", "reason": "Command", "message": "AbortJob by Command c1"},
            Notice(type="Warning", reason="Command", note="Running → Aborting: AbortJob by Command c1"),
        ),
        (
            {"phase": "Pending"},
            {"phase": "Pending", "reason": PODGROUP_PENDING, "message": "NotEnqueued: queue q: cpu 9/8"},
            Notice(type="Warning", reason=PODGROUP_PENDING, note="NotEnqueued: queue q: cpu 9/8"),
        ),
        # The same block with other figures: no new Event (the state still shows the new figures).
        (
            {"phase": "Pending", "reason": PODGROUP_PENDING, "message": "NotEnqueued: queue q: cpu 9/8"},
            {"phase": "Pending", "reason": PODGROUP_PENDING, "message": "NotEnqueued: queue q: cpu 9.5/8"},
            None,
        ),
        (
            {"phase": "Pending", "reason": PODGROUP_PENDING, "message": "NotEnqueued: queue q: cpu 9/8"},
            {"phase": "Pending", "reason": PODGROUP_PENDING, "message": "NotEnoughResources: gang 1/2"},
            Notice(type="Warning", reason=PODGROUP_PENDING, note="NotEnoughResources: gang 1/2"),
        ),
        (
            {"phase": "Pending", "reason": PODGROUP_PENDING},
            {"phase": "Running", "reason": "Running", "message": "2 pods running"},
            Notice(type="Normal", reason="Running", note="Pending → Running: 2 pods running"),
        ),
    ],
)
def test_transition_event(before: dict[str, Any], after: dict[str, Any], expected: Notice | None) -> None:
    assert transition_event(before, after) == expected


def test_same_reason_ignores_only_figures() -> None:
    assert same_reason("idle cpu 7.6 × overcommit 1.2", "idle cpu 5 × overcommit 1.5")
    assert not same_reason("idle cpu 7.6", "idle memory 7.6")
