"""``reconcile`` driven through whole lifecycles.

A small simulated cluster holds the raw job, its pods (the API server's JSON, read with ``view_pod``), the
PodGroup and the Commands. Each step feeds the plan back: its status replaces the job's status (re-parsed
with ``parse_job``), created pods appear Pending, deleted pods get a deletionTimestamp until ``gone()``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.core.parse import parse_pod, parse_podgroup
from extender.core.subgroups import sub_group_of
from extender.core.timestamps import rfc3339
from extender.jobs.model import Job, parse_job
from extender.jobs.pods import view_pod
from extender.jobs.reconcile import (
    LAST_COMMAND,
    RESTART_TARGET,
    CommandView,
    Plan,
    World,
    podgroup_spec,
    reconcile,
)

Obj = dict[str, Any]

NS, NAME, UID = "ml", "tr", "uid-1"
PG = f"{NAME}-{UID}"
T0 = 1_700_000_000.0
OWNER = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": NAME,
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def task(name: str, replicas: int, cpu: str = "1", **extra: Any) -> Obj:
    return {
        "name": name,
        "replicas": replicas,
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [{"name": "main", "image": "img", "resources": {"requests": {"cpu": cpu}}}],
                "restartPolicy": "Never",
            },
        },
        **extra,
    }


def job_json(*tasks: Obj, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": NAME, "namespace": NS, "uid": UID, "creationTimestamp": rfc3339(T0)},
        "spec": {"queue": "q1", "tasks": list(tasks), **spec},
    }


def with_status(raw: Obj, plan: Plan) -> Obj:
    """The job after the controller wrote ``plan.status`` (the whole status, as its merge patch does)."""
    out = copy.deepcopy(raw)
    if plan.status is not None:
        out["status"] = copy.deepcopy(plan.status)
    parse_job(out)  # still readable
    return out


def pod_json(
    name: str,
    task_name: str,
    index: int,
    phase: str = "Running",
    *,
    version: int = 0,
    exit_code: int | None = None,
    restarts: int = 0,
    ready: bool = True,
    deleting: bool = False,
) -> Obj:
    """A pod as the API server returns it."""
    state: Obj = {"running": {"startedAt": rfc3339(T0)}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "finishedAt": rfc3339(T0 + 1)}}
    meta: Obj = {
        "name": name,
        "namespace": NS,
        "uid": f"uid-{name}",
        "creationTimestamp": rfc3339(T0),
        "annotations": {
            "volcano.sh/task-spec": task_name,
            "volcano.sh/task-index": str(index),
            "volcano.sh/job-version": str(version),
        },
    }
    if deleting:
        meta["deletionTimestamp"] = rfc3339(T0 + 2)
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "containerStatuses": [
                {
                    "name": "main",
                    "state": state,
                    "restartCount": restarts,
                    "ready": ready and phase == "Running",
                }
            ],
        },
    }


class Sim:
    """The job's little world; ``step()`` reconciles once and performs the plan."""

    def __init__(self, raw: Obj, *, gang: bool = True, consume_commands: bool = True) -> None:
        self.raw = raw
        self.pods: dict[str, Obj] = {}
        self.podgroup: Obj | None = None
        self.commands: list[CommandView] = []
        self.now = T0
        self.gang = gang
        self.consume_commands = consume_commands

    @property
    def job(self) -> Job:
        return parse_job(self.raw)

    @property
    def status(self) -> Obj:
        return dict(self.raw.get("status") or {})

    @property
    def phase(self) -> str:
        return str(self.status["state"]["phase"])

    def world(self) -> World:
        return World(
            job=self.job,
            pods=[view_pod(p) for p in self.pods.values()],
            podgroup=self.podgroup,
            commands=list(self.commands),
            now=self.now,
            gang_admission=self.gang,
        )

    def step(self, advance: float = 1.0) -> Plan:
        self.now += advance
        plan = reconcile(self.world())
        self.raw = with_status(self.raw, plan)
        if plan.podgroup_create is not None:
            self.podgroup = {**copy.deepcopy(plan.podgroup_create), "status": {"phase": "Pending"}}
        if plan.podgroup_patch is not None:
            assert self.podgroup is not None
            for k, v in plan.podgroup_patch["spec"].items():
                if v is None:
                    self.podgroup["spec"].pop(k, None)
                else:
                    self.podgroup["spec"][k] = v
        for name in plan.delete_pods:
            self.pods[name]["metadata"]["deletionTimestamp"] = rfc3339(self.now)
        for p in plan.create_pods:
            p = copy.deepcopy(p)
            name = p["metadata"]["name"]
            assert name not in self.pods, f"{name} created twice"
            p["metadata"]["uid"] = f"uid-{name}-{self.now}"
            p["metadata"]["creationTimestamp"] = rfc3339(self.now)
            p["status"] = {"phase": "Pending"}
            self.pods[name] = p
        if self.consume_commands:
            self.commands = [c for c in self.commands if c.name not in plan.delete_commands]
        return plan

    def admit(self) -> None:
        assert self.podgroup is not None
        self.podgroup["status"] = {"phase": "Inqueue"}

    def set(self, name: str, phase: str, *, exit_code: int | None = None, ready: bool = True) -> None:
        meta = self.pods[name]["metadata"]
        ann = meta["annotations"]
        fresh = pod_json(
            name,
            ann["volcano.sh/task-spec"],
            int(ann["volcano.sh/task-index"]),
            phase,
            version=int(ann["volcano.sh/job-version"]),
            exit_code=exit_code,
            ready=ready,
        )
        self.pods[name]["status"] = fresh["status"]

    def run_all(self) -> None:
        for name, p in self.pods.items():
            if p["status"]["phase"] == "Pending" and "deletionTimestamp" not in p["metadata"]:
                self.set(name, "Running")

    def gone(self) -> None:
        self.pods = {n: p for n, p in self.pods.items() if "deletionTimestamp" not in p["metadata"]}

    def versions(self) -> dict[str, str]:
        return {
            n: p["metadata"]["annotations"]["volcano.sh/job-version"] for n, p in sorted(self.pods.items())
        }

    def start(self) -> Plan:
        """Create, admit, create the pods and run them: the job ends Running."""
        self.step()
        self.admit()
        self.step()
        self.run_all()
        plan = self.step()
        assert self.phase == "Running"
        return plan


def names(plan_pods: list[Obj]) -> list[str]:
    return [p["metadata"]["name"] for p in plan_pods]


# --- creation -------------------------------------------------------------------------------------
def test_create_podgroup_then_pods_once_inqueue() -> None:
    sim = Sim(job_json(task("w", 2), maxRetry=2))
    plan = sim.step()
    assert plan.podgroup_create == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": PG,
            "namespace": NS,
            "labels": {"volcano.sh/job-name": NAME, "volcano.sh/job-namespace": NS},
            "annotations": {},
            "ownerReferences": [OWNER],
        },
        "spec": {"minMember": 2, "queue": "q1", "minTaskMember": {"w": 2}, "minResources": {"cpu": "2"}},
    }
    assert plan.create_pods == []
    assert sim.phase == "Pending"
    assert sim.status["minAvailable"] == 2

    # The PodGroup exists but is not admitted: nothing to do, and nothing to write.
    plan = sim.step()
    assert (plan.podgroup_create, plan.podgroup_patch, plan.create_pods, plan.status) == (
        None,
        None,
        [],
        None,
    )

    sim.admit()
    plan = sim.step()
    assert names(plan.create_pods) == ["tr-w-0", "tr-w-1"]
    assert sim.status["pending"] == 2
    pod = plan.create_pods[1]
    assert pod["metadata"] == {
        "name": "tr-w-1",
        "namespace": NS,
        "labels": {
            "app": "w",
            "volcano.sh/task-index": "1",
            "volcano.sh/job-name": NAME,
            "volcano.sh/task-spec": "w",
            "volcano.sh/job-namespace": NS,
            "volcano.sh/queue-name": "q1",
        },
        "annotations": {
            "volcano.sh/task-index": "1",
            "volcano.sh/task-spec": "w",
            "scheduling.k8s.io/group-name": PG,
            "volcano.sh/job-name": NAME,
            "volcano.sh/queue-name": "q1",
            "volcano.sh/job-version": "0",
            "volcano.sh/job-retry-count": "0",
            "volcano.sh/template-uid": "tr-w",
        },
        "ownerReferences": [OWNER],
    }
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}

    sim.run_all()
    sim.step()
    assert sim.status["state"]["phase"] == "Running"
    assert sim.status["state"]["reason"] == "Running"
    assert sim.status["running"] == 2
    assert sim.status["taskStatusCount"] == {"w": {"phase": {"Running": 2}}}
    assert [c["status"] for c in sim.status["conditions"]] == ["Pending", "Running"]


def test_one_pod_running_is_not_enough_for_the_gang() -> None:
    sim = Sim(job_json(task("w", 2)))
    sim.step()
    sim.admit()
    sim.step()
    sim.set("tr-w-0", "Running")
    sim.step()
    assert sim.phase == "Pending"
    sim.set("tr-w-1", "Running")
    sim.step()
    assert sim.phase == "Running"


def test_identical_status_is_not_written_again() -> None:
    sim = Sim(job_json(task("w", 2)))
    sim.start()
    plan = sim.step(advance=30)
    assert plan.status is None
    assert (plan.create_pods, plan.delete_pods, plan.podgroup_patch, plan.podgroup_create) == (
        [],
        [],
        None,
        None,
    )


def test_gang_admission_off_creates_pods_without_a_podgroup_phase() -> None:
    sim = Sim(job_json(task("w", 2)), gang=False)
    plan = sim.step()
    assert plan.podgroup_create is not None
    assert names(plan.create_pods) == ["tr-w-0", "tr-w-1"]
    # A PodGroup without any status does not hold pods back either.
    sim = Sim(job_json(task("w", 1)), gang=False)
    sim.podgroup = {"metadata": {"name": PG}, "spec": podgroup_spec(sim.job)}
    assert names(sim.step().create_pods) == ["tr-w-0"]


def test_gang_admission_on_waits_for_a_podgroup_without_status() -> None:
    sim = Sim(job_json(task("w", 1)))
    sim.podgroup = {"metadata": {"name": PG}, "spec": podgroup_spec(sim.job)}
    assert sim.step().create_pods == []


def test_invalid_plugins_create_nothing_and_say_why() -> None:
    sim = Sim(job_json(task("w", 1), plugins={"bogus": []}))
    sim.step()
    sim.admit()
    plan = sim.step()
    assert plan.create_pods == []
    assert sim.status["state"]["reason"] == "InvalidPlugins"
    assert "bogus" in sim.status["state"]["message"]


# --- RestartJob up to maxRetry --------------------------------------------------------------------
def test_pod_failed_restart_job_until_max_retry_exceeded() -> None:
    sim = Sim(job_json(task("w", 2), maxRetry=2, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    sim.start()
    for attempt in (1, 2):
        sim.set("tr-w-1", "Failed", exit_code=1)
        plan = sim.step()
        assert sim.phase == "Restarting"
        assert sorted(plan.delete_pods) == ["tr-w-0", "tr-w-1"]
        assert plan.create_pods == []
        st = sim.status
        assert (st["retryCount"], st["version"]) == (attempt, attempt)
        assert st["controlledResources"] == {RESTART_TARGET: "job"}
        assert st["state"]["reason"] == "PodFailed"
        assert st["state"]["message"] == "PodFailed: pod tr-w-1 (exit code 1) → RestartJob"
        assert st["terminating"] == 2

        # Still terminating: nothing new to kill, nothing created, no phase change.
        plan = sim.step()
        assert (plan.delete_pods, plan.create_pods, sim.phase) == ([], [], "Restarting")

        sim.gone()
        plan = sim.step()
        assert sim.phase == "Pending"
        assert "controlledResources" not in sim.status
        assert plan.create_pods == []

        plan = sim.step()
        assert names(plan.create_pods) == ["tr-w-0", "tr-w-1"]
        assert sim.versions() == {"tr-w-0": str(attempt), "tr-w-1": str(attempt)}
        ann = plan.create_pods[0]["metadata"]["annotations"]
        assert ann["volcano.sh/job-retry-count"] == str(attempt)
        sim.run_all()
        sim.step()
        assert sim.phase == "Running"

    sim.set("tr-w-0", "Failed", exit_code=7)
    plan = sim.step()
    assert sim.phase == "Failed"
    st = sim.status
    assert st["state"]["reason"] == "MaxRetryExceeded"
    assert st["state"]["message"] == (
        "PodFailed: pod tr-w-0 (exit code 7) → RestartJob; maxRetry 2 reached, not restarting"
    )
    assert (st["retryCount"], st["version"]) == (2, 3)
    # The failed pod is kept for its logs; the running one goes.
    assert plan.delete_pods == ["tr-w-1"]
    assert plan.podgroup_patch is None and plan.podgroup_create is None
    assert [c["status"] for c in st["conditions"]] == [
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Restarting",
        "Pending",
        "Running",
        "Failed",
    ]


def test_max_retry_zero_fails_at_the_first_restart() -> None:
    sim = Sim(job_json(task("w", 2), maxRetry=0, policies=[{"event": "PodFailed", "action": "RestartJob"}]))
    sim.start()
    sim.set("tr-w-0", "Failed", exit_code=1)
    plan = sim.step()
    assert (sim.phase, sim.status["state"]["reason"], sim.status["retryCount"]) == (
        "Failed",
        "MaxRetryExceeded",
        0,
    )
    assert plan.delete_pods == ["tr-w-1"]


# --- RestartTask / RestartPod kill only their target ----------------------------------------------
def test_restart_task_kills_only_that_task() -> None:
    worker = task("worker", 2, policies=[{"event": "PodFailed", "action": "RestartTask"}])
    sim = Sim(job_json(task("ps", 1), worker))
    sim.start()
    sim.set("tr-worker-1", "Failed", exit_code=1)
    plan = sim.step()
    assert sim.phase == "Restarting"
    assert sorted(plan.delete_pods) == ["tr-worker-0", "tr-worker-1"]
    st = sim.status
    assert st["controlledResources"] == {RESTART_TARGET: "task/worker"}
    assert (st["retryCount"], st["version"]) == (1, 0)

    sim.gone()
    sim.step()
    assert sim.phase == "Pending"
    plan = sim.step()
    assert names(plan.create_pods) == ["tr-worker-0", "tr-worker-1"]
    assert "deletionTimestamp" not in sim.pods["tr-ps-0"]["metadata"]
    assert sim.versions() == {"tr-ps-0": "0", "tr-worker-0": "0", "tr-worker-1": "0"}


def test_restart_pod_kills_only_that_pod() -> None:
    sim = Sim(job_json(task("w", 3), policies=[{"event": "PodFailed", "action": "RestartPod"}]))
    sim.start()
    sim.set("tr-w-2", "Failed", exit_code=1)
    plan = sim.step()
    assert plan.delete_pods == ["tr-w-2"]
    assert sim.phase == "Restarting"
    assert sim.status["controlledResources"] == {RESTART_TARGET: "pod/tr-w-2"}
    # While it terminates, a sync does not touch the other pods.
    plan = sim.step()
    assert (plan.delete_pods, sim.phase) == ([], "Restarting")
    sim.gone()
    sim.step()
    plan = sim.step()
    assert names(plan.create_pods) == ["tr-w-2"]
    assert sim.status["retryCount"] == 1


# --- Commands -------------------------------------------------------------------------------------
def test_command_is_executed_once() -> None:
    sim = Sim(job_json(task("w", 2)), consume_commands=False)
    sim.start()
    sim.commands = [CommandView(name="stop", uid="cmd-1", action="AbortJob", created=T0)]
    plan = sim.step()
    assert sim.phase == "Aborting"
    assert plan.delete_commands == ["stop"]
    assert sorted(plan.delete_pods) == ["tr-w-0", "tr-w-1"]
    st = sim.status
    assert st["controlledResources"] == {LAST_COMMAND: "cmd-1"}
    assert (st["state"]["reason"], st["state"]["message"]) == ("Command", "AbortJob by Command stop")
    assert st["version"] == 1

    # The Command's deletion did not happen (a crash, a slow watch): it is only deleted now.
    sim.gone()
    sim.commands = [CommandView(name="stop", uid="cmd-1", action="AbortJob", created=T0)]
    plan = sim.step()
    assert plan.delete_commands == ["stop"]
    assert sim.phase == "Aborted"
    assert sim.status["version"] == 1
    assert sim.status["controlledResources"] == {LAST_COMMAND: "cmd-1"}


def test_recorded_command_is_not_re_executed_after_resume() -> None:
    sim = Sim(job_json(task("w", 1)), consume_commands=False)
    sim.start()
    resume = CommandView(name="go", uid="cmd-2", action="ResumeJob", created=T0)
    sim.commands = [resume]
    sim.step()
    assert sim.status["controlledResources"] == {LAST_COMMAND: "cmd-2"}
    sim.raw["status"]["state"]["phase"] = "Aborted"  # aborted since, by other means
    plan = sim.step()
    assert plan.delete_commands == ["go"]
    assert sim.phase == "Aborted"


def test_invalid_command_action_is_dropped() -> None:
    sim = Sim(job_json(task("w", 2)))
    sim.start()
    before = copy.deepcopy(sim.status)
    sim.commands = [CommandView(name="bad", uid="cmd-3", action="RestartTask", created=T0)]
    plan = sim.step()
    assert plan.delete_commands == ["bad"]
    assert plan.events == ["Command bad: 'RestartTask' is not an action for a Job; dropped"]
    assert plan.status is None
    assert sim.status == before


def test_commands_in_creation_order_one_per_reconcile() -> None:
    sim = Sim(job_json(task("w", 1)))
    sim.start()
    sim.commands = [
        CommandView(name="b-later", uid="u-b", action="TerminateJob", created=T0 + 5),
        CommandView(name="a-first", uid="u-a", action="AbortJob", created=T0 + 1),
    ]
    plan = sim.step()
    assert plan.delete_commands == ["a-first"]
    assert sim.phase == "Aborting"


# --- Abort / Resume -------------------------------------------------------------------------------
def test_abort_then_resume() -> None:
    sim = Sim(job_json(task("w", 3, minAvailable=1)))
    sim.start()
    sim.set("tr-w-0", "Succeeded", exit_code=0)
    sim.set("tr-w-1", "Failed", exit_code=2)
    sim.step()
    assert sim.phase == "Running"

    sim.commands = [CommandView(name="suspend", uid="c-1", action="AbortJob", created=T0)]
    plan = sim.step()
    assert sim.phase == "Aborting"
    assert plan.delete_pods == ["tr-w-2"]  # Succeeded and Failed pods are kept
    sim.step()
    assert sim.phase == "Aborting"
    sim.gone()
    plan = sim.step()
    assert sim.phase == "Aborted"
    assert sim.status["state"]["reason"] == "Command"
    assert sorted(sim.pods) == ["tr-w-0", "tr-w-1"]
    assert plan.delete_pods == [] and plan.create_pods == []
    # Aborted is quiet.
    assert sim.step(advance=60).status is None

    sim.commands = [CommandView(name="resume", uid="c-2", action="ResumeJob", created=T0 + 10)]
    plan = sim.step()
    assert sim.phase == "Restarting"
    assert sorted(plan.delete_pods) == ["tr-w-0", "tr-w-1"]
    st = sim.status
    assert (st["retryCount"], st["version"]) == (0, 2)
    assert st["controlledResources"] == {LAST_COMMAND: "c-2", RESTART_TARGET: "job"}
    sim.gone()
    sim.step()
    assert sim.phase == "Pending"
    assert sim.status["controlledResources"] == {LAST_COMMAND: "c-2"}
    plan = sim.step()
    assert names(plan.create_pods) == ["tr-w-0", "tr-w-1", "tr-w-2"]
    assert set(sim.versions().values()) == {"2"}
    assert sim.status["retryCount"] == 0


# --- TaskCompleted -> CompleteJob -----------------------------------------------------------------
def test_task_completed_completes_the_job() -> None:
    chief = task("chief", 1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    sim = Sim(job_json(chief, task("worker", 2)))
    sim.start()
    sim.set("tr-chief-0", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sim.phase == "Completing"
    assert sorted(plan.delete_pods) == ["tr-worker-0", "tr-worker-1"]
    assert sim.status["state"]["reason"] == "TaskCompleted"
    assert sim.status["state"]["message"] == "TaskCompleted: task chief → CompleteJob"
    sim.step()
    assert sim.phase == "Completing"
    sim.gone()
    plan = sim.step()
    assert sim.phase == "Completed"
    assert sim.status["state"]["reason"] == "TaskCompleted"  # the drain keeps the reason it started with
    assert sorted(sim.pods) == ["tr-chief-0"]
    assert plan.podgroup_patch is None


def test_all_pods_succeeded_completes_without_a_policy() -> None:
    sim = Sim(job_json(task("w", 2)))
    sim.start()
    sim.set("tr-w-0", "Succeeded", exit_code=0)
    sim.set("tr-w-1", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sim.phase == "Completed"
    assert (sim.status["state"]["reason"], sim.status["state"]["message"]) == (
        "Completed",
        "2 pods succeeded",
    )
    assert plan.delete_pods == []


# --- dependsOn ------------------------------------------------------------------------------------
def test_depends_on_all_holds_pods_back_until_running_and_ready() -> None:
    worker = task("worker", 2, dependsOn={"name": ["master"]})
    sim = Sim(job_json(task("master", 1), worker))
    plan = sim.step()
    assert plan.podgroup_create is not None
    assert plan.podgroup_create["spec"]["minMember"] == 1  # dependent tasks are not in the gang
    assert plan.podgroup_create["spec"]["minTaskMember"] == {"master": 1}
    sim.admit()
    assert names(sim.step().create_pods) == ["tr-master-0"]
    assert sim.step().create_pods == []  # master Pending
    sim.set("tr-master-0", "Running", ready=False)
    assert sim.step().create_pods == []
    sim.set("tr-master-0", "Running", ready=True)
    assert names(sim.step().create_pods) == ["tr-worker-0", "tr-worker-1"]


def test_depends_on_a_succeeded_task() -> None:
    sim = Sim(job_json(task("prep", 1), task("train", 1, dependsOn={"name": ["prep"]})))
    sim.step()
    sim.admit()
    sim.step()
    sim.set("tr-prep-0", "Succeeded", exit_code=0)
    assert names(sim.step().create_pods) == ["tr-train-0"]


@pytest.mark.parametrize(("iteration", "created"), [("any", ["tr-c-0"]), ("all", [])])
def test_depends_on_iteration(iteration: str, created: list[str]) -> None:
    c = task("c", 1, dependsOn={"name": ["a", "b"], "iteration": iteration})
    sim = Sim(job_json(task("a", 1), task("b", 1), c))
    sim.step()
    sim.admit()
    assert names(sim.step().create_pods) == ["tr-a-0", "tr-b-0"]
    sim.set("tr-a-0", "Running")
    assert names(sim.step().create_pods) == created
    sim.set("tr-b-0", "Running")
    assert names(sim.step().create_pods) == ([] if created else ["tr-c-0"])


# --- scaling --------------------------------------------------------------------------------------
def _rescale(sim: Sim, replicas: int) -> None:
    sim.raw["spec"]["tasks"][0]["replicas"] = replicas


def test_scale_down_deletes_extra_indices_and_patches_the_podgroup() -> None:
    sim = Sim(job_json(task("w", 5)))
    sim.start()
    _rescale(sim, 2)
    plan = sim.step()
    assert set(plan.delete_pods) == {"tr-w-2", "tr-w-3", "tr-w-4"}
    assert plan.podgroup_patch == {
        "spec": {"minMember": 2, "minTaskMember": {"w": 2}, "minResources": {"cpu": "2"}}
    }
    assert plan.create_pods == []
    assert sim.phase == "Running"
    assert (sim.status["running"], sim.status["terminating"], sim.status["minAvailable"]) == (2, 3, 2)


def test_scale_up_creates_new_indices() -> None:
    sim = Sim(job_json(task("w", 2)))
    sim.start()
    _rescale(sim, 4)
    plan = sim.step()
    assert names(plan.create_pods) == ["tr-w-2", "tr-w-3"]
    assert plan.podgroup_patch == {
        "spec": {"minMember": 4, "minTaskMember": {"w": 4}, "minResources": {"cpu": "4"}}
    }
    assert plan.delete_pods == []


def test_pods_of_a_removed_task_are_deleted() -> None:
    sim = Sim(job_json(task("a", 1), task("b", 1)))
    sim.start()
    del sim.raw["spec"]["tasks"][1]
    plan = sim.step()
    assert plan.delete_pods == ["tr-b-0"]


def test_elastic_job_leaves_out_min_task_member() -> None:
    sim = Sim(job_json(task("w", 4), minAvailable=2))
    plan = sim.step()
    assert plan.podgroup_create is not None
    assert plan.podgroup_create["spec"] == {"minMember": 2, "queue": "q1", "minResources": {"cpu": "2"}}
    # An existing PodGroup that still has per-task minimums loses them.
    sim.podgroup = {
        "spec": {"minMember": 2, "queue": "q1", "minTaskMember": {"w": 4}, "minResources": {"cpu": "2"}}
    }
    assert sim.step().podgroup_patch == {"spec": {"minTaskMember": None}}


# --- finished jobs --------------------------------------------------------------------------------
@pytest.mark.parametrize("phase", ["Completed", "Failed", "Terminated"])
def test_finished_job_kills_alive_pods(phase: str) -> None:
    raw = job_json(task("w", 3))
    raw["status"] = {"state": {"phase": phase, "lastTransitionTime": rfc3339(T0)}}
    pods = [
        view_pod(pod_json("tr-w-0", "w", 0, "Succeeded", exit_code=0)),
        view_pod(pod_json("tr-w-1", "w", 1, "Running")),
        view_pod(pod_json("tr-w-2", "w", 2, "Failed", exit_code=1)),
    ]
    plan = reconcile(World(job=parse_job(raw), pods=pods, podgroup=None, now=T0 + 10))
    assert plan.delete_pods == ["tr-w-1"]
    assert plan.create_pods == []
    assert plan.podgroup_create is None
    assert plan.status is not None and plan.status["state"]["phase"] == phase


def test_deleting_job_is_left_alone() -> None:
    raw = job_json(task("w", 1))
    raw["metadata"]["deletionTimestamp"] = rfc3339(T0)
    plan = reconcile(World(job=parse_job(raw), pods=[view_pod(pod_json("tr-w-0", "w", 0))], now=T0))
    assert plan == Plan()


# --- ttlSecondsAfterFinished ----------------------------------------------------------------------
def test_ttl_after_finished() -> None:
    sim = Sim(job_json(task("w", 1), ttlSecondsAfterFinished=100))
    sim.start()
    sim.set("tr-w-0", "Succeeded", exit_code=0)
    plan = sim.step()
    assert sim.phase == "Completed"
    done = sim.now
    assert (plan.requeue_after, plan.delete_job) == (100, False)
    plan = sim.step(advance=60)
    assert plan.status is None
    assert (plan.requeue_after, plan.delete_job) == (40, False)
    sim.now = done + 99
    plan = sim.step()
    assert (plan.requeue_after, plan.delete_job) == (None, True)


def test_no_ttl_no_requeue_and_no_delete() -> None:
    sim = Sim(job_json(task("w", 1)))
    sim.start()
    sim.set("tr-w-0", "Succeeded", exit_code=0)
    plan = sim.step()
    assert (plan.requeue_after, plan.delete_job) == (None, False)


# --- hand-built pods ------------------------------------------------------------------------------
def test_pods_of_an_older_version_are_replaced() -> None:
    raw = job_json(task("w", 2))
    raw["status"] = {"state": {"phase": "Pending"}, "version": 1}
    pods = [view_pod(pod_json("tr-w-0", "w", 0, version=0)), view_pod(pod_json("tr-w-1", "w", 1, version=1))]
    pg = {"spec": podgroup_spec(parse_job(raw)), "status": {"phase": "Inqueue"}}
    plan = reconcile(World(job=parse_job(raw), pods=pods, podgroup=pg, now=T0))
    assert plan.delete_pods == ["tr-w-0"]
    assert plan.create_pods == []  # its name is still taken until it is gone


def test_pod_pending_timeout_requeues_at_the_timeout() -> None:
    raw = job_json(task("w", 1), policies=[{"event": "PodPending", "action": "RestartJob", "timeout": "2m"}])
    raw["status"] = {"state": {"phase": "Pending"}}
    pods = [view_pod(pod_json("tr-w-0", "w", 0, "Pending"))]
    pg = {"spec": podgroup_spec(parse_job(raw)), "status": {"phase": "Inqueue"}}
    plan = reconcile(World(job=parse_job(raw), pods=pods, podgroup=pg, now=T0 + 20))
    assert plan.requeue_after == 100
    assert plan.delete_pods == []
    plan = reconcile(World(job=parse_job(raw), pods=pods, podgroup=pg, now=T0 + 120))
    assert plan.delete_pods == ["tr-w-0"]
    assert plan.status is not None and plan.status["state"]["phase"] == "Restarting"


# --- podgroup_spec --------------------------------------------------------------------------------
def _resources_job(**spec: Any) -> Job:
    a = task("a", 2)
    a["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    b = task("b", 3)
    b["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}
    return parse_job(job_json(a, b, **spec))


@pytest.mark.parametrize(
    ("min_available", "resources"),
    [
        (1, {"cpu": "1", "memory": "1Gi"}),
        (3, {"cpu": "4", "memory": "2Gi", "nvidia.com/gpu": "1"}),
        (None, {"cpu": "8", "memory": "2Gi", "nvidia.com/gpu": "3"}),
    ],
)
def test_podgroup_min_resources_sum_the_first_min_available_pods(
    min_available: int | None, resources: dict[str, str]
) -> None:
    spec = {} if min_available is None else {"minAvailable": min_available}
    got = podgroup_spec(_resources_job(**spec))
    assert got["minResources"] == resources
    assert got["minMember"] == (5 if min_available is None else min_available)


def test_podgroup_spec_priority_class() -> None:
    got = podgroup_spec(_resources_job(priorityClassName="high"))
    assert got["priorityClassName"] == "high"
    assert got["minTaskMember"] == {"a": 2, "b": 3}


def test_podgroup_min_resources_take_each_tasks_min_available_first() -> None:
    a = task("a", 3, cpu="1", minAvailable=1)
    b = task("b", 2, cpu="4", minAvailable=2)
    got = podgroup_spec(parse_job(job_json(a, b)))  # minAvailable 3 = 1 + 2
    assert got["minTaskMember"] == {"a": 1, "b": 2}
    assert got["minResources"] == {"cpu": "9"}  # 1 x a + 2 x b, not 3 x a


def test_partition_policy_becomes_the_podgroups_sub_group_policy() -> None:
    """Volcano's setPgSubGroupPolicy and createJobPod (pkg/controllers/job): a task's partitionPolicy is a
    subGroupPolicy entry named after the task, over its pods by their partition label, and each pod is
    labelled with its partition (index // partitionSize); minTaskMember is minPartitions * partitionSize
    when the task sets no minAvailable (getMinTaskMember). The scheduler reads the pods back into those
    partitions."""
    nt = {"mode": "hard", "highestTierAllowed": 1}
    parts = {"totalPartitions": 2, "partitionSize": 2, "minPartitions": 1, "networkTopology": nt}
    sim = Sim(job_json(task("t0", 4, partitionPolicy=parts), task("ps", 1), minAvailable=3))
    sim.start()
    assert sim.podgroup is not None
    spec = sim.podgroup["spec"]
    assert spec["subGroupPolicy"] == [
        {
            "name": "t0",
            "subGroupSize": 2,
            "minSubGroups": 1,
            "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "t0"}},
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": nt,
        }
    ]
    assert spec["minTaskMember"] == {"t0": 2, "ps": 1}
    labels = {n: p["metadata"]["labels"].get("volcano.sh/partition-id") for n, p in sim.pods.items()}
    assert labels == {"tr-t0-0": "0", "tr-t0-1": "0", "tr-t0-2": "1", "tr-t0-3": "1", "tr-ps-0": None}
    g = parse_podgroup({"metadata": {"name": PG, "namespace": NS}, "spec": spec})
    groups = {n: sub_group_of(g, parse_pod(p)) for n, p in sim.pods.items()}
    assert groups == {
        "tr-t0-0": (0, ("0",)),
        "tr-t0-1": (0, ("0",)),
        "tr-t0-2": (0, ("1",)),
        "tr-t0-3": (0, ("1",)),
        "tr-ps-0": None,
    }


def test_a_partition_policy_removed_from_the_job_is_removed_from_its_podgroup() -> None:
    """Volcano's updatePgSubGroupPolicy: the PodGroup follows the job's tasks."""
    parts = {"totalPartitions": 2, "partitionSize": 1}
    sim = Sim(job_json(task("w", 2, partitionPolicy=parts)))
    sim.start()
    assert sim.podgroup is not None and "subGroupPolicy" in sim.podgroup["spec"]
    del sim.raw["spec"]["tasks"][0]["partitionPolicy"]
    plan = sim.step()
    assert plan.podgroup_patch == {"spec": {"subGroupPolicy": None}}
