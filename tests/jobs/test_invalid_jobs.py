"""A job with problems is reported, not acted on: only its status changes, its pods and PodGroup stay.

The simulated cluster of ``test_reconcile`` runs the controller's loop with ``World.problems`` set from
``job_problems``, as the controller does, so a job can be broken and fixed between steps.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.api.limits import Limits
from extender.jobs.model import JobPhase, parse_job, placeholder_job
from extender.jobs.reconcile import (
    INVALID_SPEC,
    MAX_PROBLEM_EVENTS,
    CommandView,
    World,
    reconcile,
)
from extender.jobs.rules import job_problems
from extender.jobs.status import MAX_MESSAGE, problem_message
from tests.jobs.test_reconcile import NAME, T0, Sim, job_json, task

Obj = dict[str, Any]
LIMITS = Limits(max_replicas=5)
TOO_MANY = (
    "spec.tasks[0].replicas: 6 is more than the 5 replicas pumice accepts per task; lower it, or raise the "
    "limit with pumice serve --max-job-replicas N"
)


class CheckedSim(Sim):
    """The controller's view: every reconcile gets the job's problems."""

    def world(self) -> World:
        w = super().world()
        return World(
            job=w.job,
            pods=w.pods,
            podgroup=w.podgroup,
            commands=w.commands,
            now=w.now,
            gang_admission=w.gang_admission,
            problems=job_problems(self.raw, LIMITS),
        )


def assert_hands_off(sim: CheckedSim, plan: Any) -> None:
    assert plan.create_pods == [] and plan.delete_pods == [] and plan.objects == []
    assert plan.podgroup_create is None and plan.podgroup_patch is None
    assert plan.delete_commands == [] and plan.delete_job is False


def test_a_new_invalid_job_stays_pending_with_the_problems_in_status_and_events() -> None:
    sim = CheckedSim(job_json(task("w", 6), policies=[{"event": "PodFailed", "action": "Explode"}]))
    plan = sim.step()
    assert_hands_off(sim, plan)
    problems = [
        TOO_MANY,
        "spec.policies[0].action: unknown action 'Explode'; valid actions are AbortJob, CompleteJob, "
        "RestartJob, RestartPod, RestartTask, ResumeJob, TerminateJob",
    ]
    assert plan.events == problems
    assert plan.status is not None
    assert plan.status["state"] == {
        "phase": "Pending",
        "reason": INVALID_SPEC,
        "message": "; ".join(problems),
        "lastTransitionTime": "2023-11-14T22:13:21Z",
    }
    assert plan.status["conditions"] == [{"status": "Pending", "lastTransitionTime": "2023-11-14T22:13:21Z"}]
    # Level-triggered: the same problems again write nothing new (the events repeat; the controller's
    # event recorder aggregates them).
    again = sim.step()
    assert again.status is None
    assert again.events == problems


def test_a_running_job_broken_by_an_update_keeps_its_pods_until_fixed() -> None:
    sim = CheckedSim(job_json(task("w", 2), minAvailable=2))
    sim.start()
    pods_before = copy.deepcopy(sim.pods)
    podgroup_before = copy.deepcopy(sim.podgroup)
    sim.raw["spec"]["tasks"][0]["replicas"] = 6
    plan = sim.step()
    assert_hands_off(sim, plan)
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Running"
    assert plan.status["state"]["reason"] == INVALID_SPEC
    assert plan.status["state"]["message"] == TOO_MANY
    assert (plan.status["running"], plan.status["pending"]) == (2, 0)
    assert sim.pods == pods_before and sim.podgroup == podgroup_before
    assert sim.phase == "Running"

    # Fixed: the reconcile carries on from where it was and the InvalidSpec reason goes.
    sim.raw["spec"]["tasks"][0]["replicas"] = 3
    plan = sim.step()
    assert [p["metadata"]["name"] for p in plan.create_pods] == [f"{NAME}-w-2"]
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Running"
    assert "reason" not in plan.status["state"] and "message" not in plan.status["state"]


def test_commands_wait_while_the_job_is_invalid() -> None:
    sim = CheckedSim(job_json(task("w", 6)), consume_commands=True)
    sim.commands = [CommandView(name="abort", uid="c1", action="AbortJob")]
    plan = sim.step()
    assert_hands_off(sim, plan)
    assert [c.name for c in sim.commands] == ["abort"]
    sim.raw["spec"]["tasks"][0]["replicas"] = 1
    plan = sim.step()
    assert plan.delete_commands == ["abort"]
    assert sim.phase == "Aborting"


def test_many_problems_are_bounded_in_the_message_and_the_events() -> None:
    problems = [f"spec.tasks[{i}].name: a problem described at some length, number {i}" for i in range(200)]
    job = parse_job(job_json(task("w", 1)))
    plan = reconcile(World(job=job, pods=[], now=T0, problems=problems))
    assert plan.status is not None
    message = plan.status["state"]["message"]
    assert len(message) <= MAX_MESSAGE
    assert message.startswith(problems[0] + "; " + problems[1])
    assert message.endswith(" more")
    assert len(plan.events) == MAX_PROBLEM_EVENTS + 1
    assert plan.events[:MAX_PROBLEM_EVENTS] == problems[:MAX_PROBLEM_EVENTS]
    assert plan.events[-1] == "... and 180 more problems of the job's spec"


@pytest.mark.parametrize(
    ("problems", "limit", "want"),
    [
        ([], 40, ""),
        (["a: one"], 40, "a: one"),
        (["a: one", "b: two"], 40, "a: one; b: two"),
        (["a: " + "x" * 20, "b: " + "y" * 20, "c: z"], 40, "a: xxxxxxxxxxxxxxxxxxxx; ... and 2 more"),
        (["a: " + "x" * 60], 40, "a: " + "x" * 34 + "..."),
        (["a: " + "x" * 60, "b: two"], 40, "a: " + "x" * 21 + "... (and 1 more)"),
    ],
)
def test_problem_message(problems: list[str], limit: int, want: str) -> None:
    got = problem_message(problems, limit)
    assert got == want
    assert len(got) <= limit


def test_a_job_parse_job_refuses_is_reported_on_its_placeholder() -> None:
    raw = job_json(task("w", 1))
    raw["spec"]["tasks"][0]["dependsOn"] = "w"
    raw["status"] = {"state": {"phase": "Running"}, "version": 2}
    problems = job_problems(raw, LIMITS)
    assert problems == [
        "spec.tasks[0].dependsOn: must be an object with name (a list of tasks) and iteration"
    ]
    with pytest.raises(ValueError, match="dependsOn: expected an object"):
        parse_job(raw)
    job = placeholder_job(raw)
    assert job is not None
    assert (job.namespace, job.name, job.uid, job.tasks) == ("ml", "tr", "uid-1", ())
    assert job.status.phase is JobPhase.RUNNING and job.status.version == 2
    plan = reconcile(World(job=job, pods=[], now=T0, problems=problems))
    assert plan.create_pods == [] and plan.podgroup_create is None
    assert plan.status is not None
    assert plan.status["state"]["phase"] == "Running"
    assert plan.status["state"]["message"] == problems[0]
    assert plan.status["version"] == 2


@pytest.mark.parametrize(
    "raw",
    [None, [], {"metadata": []}, {"metadata": {"name": ""}}, {"metadata": {"name": 5}}],
    ids=["null", "list", "metadata a list", "empty name", "name a number"],
)
def test_no_placeholder_without_a_name(raw: object) -> None:
    assert placeholder_job(raw) is None


def test_placeholder_of_a_job_with_an_unreadable_status() -> None:
    job = placeholder_job({"metadata": {"name": "j", "namespace": 3}, "status": {"state": "x"}})
    assert job is not None
    assert (job.namespace, job.name, job.status.phase) == ("default", "j", JobPhase.PENDING)
