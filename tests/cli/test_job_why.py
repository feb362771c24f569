"""``pumice job why``: whether a Job runs, or why it waits, from what pumice and kube-scheduler wrote.

Pure tables first (objects in, the explanation out), then the lookup (Job, else PodGroup, else pod)
against the fake API server.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from controllers.cli import explain
from tests.cli.conftest import Cli, FakeApiServer, parse

NOW = datetime(2024, 5, 1, 10, 5, 0, tzinfo=UTC)  # 5 minutes after the fake server's creation time
CREATED = "2024-05-01T10:00:00Z"
BATCH = "/apis/batch.volcano.sh/v1alpha1"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"
CORE = "/api/v1"
NS = "team-a"


# -- builders --------------------------------------------------------------------------------------


def vcjob(name: str, phase: str | None = "Pending", uid: str = "u1") -> dict[str, Any]:
    status: dict[str, Any] = {"state": {"phase": phase}} if phase else {}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "uid": uid, "creationTimestamp": CREATED},
        "spec": {"minAvailable": 2, "queue": "q1", "tasks": [{"name": "worker", "replicas": 3}]},
        "status": status,
    }


def condition(reason: str, message: str, since: str = "2024-05-01T10:02:00Z") -> dict[str, Any]:
    return {
        "type": "Unschedulable",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    }


def podgroup(
    name: str,
    phase: str = "Pending",
    *,
    owner: str | None = "u1",
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"pg-{name}", "creationTimestamp": CREATED}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "uid": owner}]
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": {"minMember": 2, "queue": "q1", "minResources": {"cpu": "4"}},
        "status": {"phase": phase, "conditions": conditions or []},
    }


def pod(
    name: str,
    *,
    group: str | None = None,
    job: str | None = None,
    node: str | None = None,
    phase: str | None = None,
    gates: tuple[str, ...] = (),
    planned: str | None = None,
    scheduled: tuple[str, str] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"uid-{name}", "creationTimestamp": CREATED}
    ann: dict[str, str] = {}
    if group:
        ann["scheduling.k8s.io/group-name"] = group
    if planned:
        ann["pumice.dev/planned-node"] = planned
    meta["annotations"] = ann
    if job:
        meta["labels"] = {"volcano.sh/job-name": job}
    if deleting:
        meta["deletionTimestamp"] = "2024-05-01T10:04:00Z"
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{"name": "c"}]}
    if node:
        spec["nodeName"] = node
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    status: dict[str, Any] = {"phase": phase or ("Running" if node else "Pending")}
    if scheduled:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": scheduled[0], "message": scheduled[1]}
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def subject(
    *, job: dict[str, Any] | None = None, pg: dict[str, Any] | None = None, pods: list[Any] | None = None
) -> explain.Subject:
    obj = job or pg
    assert obj is not None
    return explain.Subject(
        kind="Job" if job else "PodGroup",
        namespace=NS,
        name=obj["metadata"]["name"],
        obj=obj,
        group_name=pg["metadata"]["name"] if pg else "",
        podgroup=pg,
        pods=pods or [],
    )


# -- pure: each pod's reason -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "reason"),
    [
        pytest.param(pod("x", deleting=True, gates=("pumice.dev/gang",)), "being deleted", id="deleting"),
        pytest.param(
            pod("x", gates=("pumice.dev/gang", "other.io/wait")),
            "held by the scheduling gate pumice.dev/gang until pumice has planned its whole gang",
            id="gang-gate",
        ),
        pytest.param(
            pod("x", gates=("other.io/wait",)),
            "held by scheduling gate other.io/wait (not pumice's)",
            id="gate",
        ),
        pytest.param(
            pod("x", scheduled=("Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")),
            "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.",
            id="kube-scheduler",
        ),
        pytest.param(
            pod("x", planned="n2", scheduled=("Unschedulable", "0/3 nodes are available.")),
            "Unschedulable: 0/3 nodes are available. (planned on node n2)",
            id="kube-scheduler-and-plan",
        ),
        pytest.param(
            pod("x", planned="n2"), "planned on node n2; waiting for kube-scheduler to bind it", id="planned"
        ),
        pytest.param(pod("x"), "not tried by a scheduler yet", id="untried"),
    ],
)
def test_pod_reason(p: dict[str, Any], reason: str) -> None:
    assert explain.pod_reason(p) == reason


def test_only_pods_without_a_node_wait() -> None:
    assert explain.waits_for_node(pod("a"))
    assert not explain.waits_for_node(pod("b", node="n1", phase="Pending"))  # bound, starting
    assert not explain.waits_for_node(pod("c", phase="Failed"))


# -- pure: the explanation -------------------------------------------------------------------------


REASONS = [
    ("NotEnoughResources", "gang 1/2 placeable: node n2: cpu 9/8", "no room for the whole gang"),
    ("NotEnoughTasks", "task worker: 1/2 pods, waiting for 1 more", "fewer pods exist than the gang needs"),
    ("QueueUnavailable", "queue q1 is Closed", "its queue cannot take jobs (closed, missing"),
    ("NotEnqueued", "queue q1: cpu 9/8 over capability", "its queue cannot admit the gang's minResources"),
    ("WaitingForVictims", "waiting for 2 pods to leave: team-b/x-0, team-b/x-1", "pumice is evicting pods"),
]


@pytest.mark.parametrize(("reason", "message", "meaning"), REASONS, ids=[r[0] for r in REASONS])
def test_each_reason_kind(reason: str, message: str, meaning: str) -> None:
    pg = podgroup("train-u1", conditions=[condition(reason, message)])
    text = explain.explain(
        subject(job=vcjob("train"), pg=pg, pods=[pod("train-worker-0", group="train-u1")]), NOW
    )
    lines = text.splitlines()
    assert lines[0] == f"Job team-a/train is waiting: {reason}."
    assert f"Reason:         {reason} (for 3m)" in lines
    assert f"Message:        {message}" in lines
    assert any(line.startswith(f"Meaning:        {meaning}") for line in lines)


def test_explain_pending_job() -> None:
    pg = podgroup(
        "train-u1", conditions=[condition("NotEnoughResources", "gang 1/2 placeable: node n2: cpu 9/8")]
    )
    pods = [
        pod("train-worker-0", group="train-u1", node="n1"),
        pod("train-worker-1", group="train-u1", gates=("pumice.dev/gang",)),
        pod("train-worker-2", group="train-u1", scheduled=("Unschedulable", "0/2 nodes are available.")),
    ]
    assert explain.explain(subject(job=vcjob("train"), pg=pg, pods=pods), NOW) == (
        "Job team-a/train is waiting: NotEnoughResources.\n"
        "PodGroup:       train-u1 (phase Pending)\n"
        "Queue:          q1\n"
        "Min Member:     2\n"
        "Min Resources:  cpu=4\n"
        "Reason:         NotEnoughResources (for 3m)\n"
        "Message:        gang 1/2 placeable: node n2: cpu 9/8\n"
        "Meaning:        no room for the whole gang (minMember pods) on the nodes or within its queue's "
        "share right now; it starts when pods finish or nodes join\n"
        "Pods:           3: 2 Pending, 1 Running\n"
        "Pods waiting for a node:\n"
        "  POD             REASON\n"
        "  train-worker-1  held by the scheduling gate pumice.dev/gang until pumice has planned its "
        "whole gang\n"
        "  train-worker-2  Unschedulable: 0/2 nodes are available.\n"
    )


def test_explain_running_job_says_so_and_still_lists_waiting_extras() -> None:
    # The group ran once: an old Unschedulable condition is history, not a reason.
    pg = podgroup("train-u1", "Running", conditions=[condition("NotEnoughResources", "old")])
    pods = [
        pod("train-worker-0", group="train-u1", node="n1"),
        pod("train-worker-1", group="train-u1", node="n2"),
        pod("train-worker-2", group="train-u1", planned="n1"),
    ]
    text = explain.explain(subject(job=vcjob("train", "Running"), pg=pg, pods=pods), NOW)
    assert text.splitlines()[0] == "Job team-a/train is running."
    assert "Reason:" not in text and "Meaning:" not in text
    assert "Pods:           3: 1 Pending, 2 Running\n" in text
    assert "  train-worker-2  planned on node n1; waiting for kube-scheduler to bind it\n" in text


@pytest.mark.parametrize(
    ("job", "pg", "headline"),
    [
        pytest.param(
            vcjob("train", "Completed"),
            podgroup("train-u1", "Completed"),
            "Job team-a/train is not waiting: it is Completed.",
            id="finished",
        ),
        pytest.param(
            vcjob("train", "Restarting"),
            podgroup("train-u1"),
            "Job team-a/train is Restarting.",
            id="restarting",
        ),
        pytest.param(
            vcjob("train", None),
            None,
            "Job team-a/train is waiting: its PodGroup does not exist yet (the job controller creates it).",
            id="no-podgroup",
        ),
        pytest.param(
            vcjob("train"),
            podgroup("train-u1", "Inqueue"),
            "Job team-a/train is waiting: admitted by its queue, its pods are being placed.",
            id="inqueue",
        ),
        pytest.param(
            vcjob("train"),
            podgroup("train-u1"),
            "Job team-a/train is waiting: no reason recorded yet "
            "(the scheduler has not tried it, or it is not pumice's).",
            id="untried",
        ),
    ],
)
def test_headlines(job: dict[str, Any], pg: dict[str, Any] | None, headline: str) -> None:
    assert explain.explain(subject(job=job, pg=pg), NOW).splitlines()[0] == headline


def test_waiting_condition_needs_an_unschedulable_condition_that_stands() -> None:
    standing = condition("NotEnqueued", "m")
    assert explain.waiting_condition(podgroup("g", conditions=[standing])) == standing
    assert explain.waiting_condition(podgroup("g", conditions=[{**standing, "status": "False"}])) is None
    assert explain.waiting_condition(podgroup("g", "Running", conditions=[standing])) is None
    assert explain.waiting_condition(None) is None


def test_pick_podgroup_by_owner_then_by_volcanos_names() -> None:
    job = vcjob("train", uid="u7")
    owned = podgroup("whatever", owner="u7")
    new_name = podgroup("train-u7", owner=None)
    old_name = podgroup("train", owner=None)
    other = podgroup("train-u1", owner="u1")
    assert explain._pick_podgroup([other, old_name, new_name, owned], job) is owned
    assert explain._pick_podgroup([other, old_name, new_name], job) is new_name
    assert explain._pick_podgroup([other, old_name], job) is old_name
    assert explain._pick_podgroup([other], job) is None


# -- against the fake API server -------------------------------------------------------------------


def seed_pending_job(fake: FakeApiServer) -> None:
    fake.put(BATCH, "jobs", vcjob("train"))
    fake.put(
        SCHED,
        "podgroups",
        podgroup(
            "train-u1", conditions=[condition("NotEnoughTasks", "task worker: 1/2 pods, waiting for 1 more")]
        ),
    )
    fake.put(CORE, "pods", pod("train-worker-0", group="train-u1", job="train", node="n1"))
    fake.put(CORE, "pods", pod("train-worker-1", group="train-u1", job="train"))
    # The same job name, re-created: the old job's leftover pod names the old group.
    fake.put(CORE, "pods", pod("train-worker-9", group="train-u0", job="train"))
    fake.put(CORE, "pods", pod("other-0", group="other-u2", job="other"))


async def test_why_pending_job(cli: Cli, fake_api: FakeApiServer) -> None:
    seed_pending_job(fake_api)
    result = await cli("job", "why", "train")
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0] == "Job team-a/train is waiting: NotEnoughTasks."
    assert "PodGroup:       train-u1 (phase Pending)" in lines
    assert "Message:        task worker: 1/2 pods, waiting for 1 more" in lines
    assert "Pods:           2: 1 Pending, 1 Running" in lines
    assert lines[-2:] == ["  POD             REASON", "  train-worker-1  not tried by a scheduler yet"]
    pods_query = next(r.query for r in fake_api.calls("GET") if r.path == f"{CORE}/namespaces/{NS}/pods")
    assert pods_query["labelSelector"] == "volcano.sh/job-name=train"


async def test_why_running_job(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("train", "Running"))
    fake_api.put(SCHED, "podgroups", podgroup("train-u1", "Running"))
    fake_api.put(CORE, "pods", pod("train-worker-0", group="train-u1", job="train", node="n1"))
    result = await cli("job", "why", "-N", "train", "-n", NS)
    assert result.code == 0
    assert result.out.splitlines()[0] == "Job team-a/train is running."
    assert "waiting" not in result.out


async def test_why_a_podgroup_without_a_job(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(
        SCHED,
        "podgroups",
        podgroup("pg1", owner=None, conditions=[condition("QueueUnavailable", "queue q1 is Closed")]),
    )
    fake_api.put(CORE, "pods", pod("w0", group="pg1"))
    result = await cli("job", "why", "pg1")
    assert result.code == 0
    assert result.out.splitlines()[0] == "PodGroup team-a/pg1 is waiting: QueueUnavailable."
    assert "  w0   not tried by a scheduler yet\n" in result.out


async def test_why_a_pod_explains_its_group(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(
        SCHED,
        "podgroups",
        podgroup("pg1", owner=None, conditions=[condition("NotEnqueued", "queue q1: cpu 9/8")]),
    )
    fake_api.put(CORE, "pods", pod("w0", group="pg1", gates=("pumice.dev/gang",)))
    fake_api.put(CORE, "pods", pod("w1", group="pg1", gates=("pumice.dev/gang",)))
    result = await cli("job", "why", "w1")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "Pod team-a/w1 is waiting: NotEnqueued."
    assert "Message:        queue q1: cpu 9/8" in lines
    assert [line.split()[0] for line in lines[-2:]] == ["w0", "w1"]


async def test_why_a_plain_pod(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(CORE, "pods", pod("solo", scheduled=("Unschedulable", "0/1 nodes are available.")))
    result = await cli("job", "why", "solo")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0] == "Pod team-a/solo is waiting: Unschedulable: 0/1 nodes are available."
    assert re.fullmatch(
        r"PodGroup: +<none>: pumice schedules a pod without one as a group of its own", lines[1]
    )
    assert lines[-1] == "  solo  Unschedulable: 0/1 nodes are available."


async def test_why_a_pod_whose_group_is_missing(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(CORE, "pods", pod("w0", group="gone"))
    result = await cli("job", "why", "w0")
    lines = result.out.splitlines()
    assert lines[0] == "Pod team-a/w0 is waiting: its PodGroup gone does not exist."
    assert re.fullmatch(r"PodGroup: +gone \(not found\)", lines[1])


async def test_why_unknown_name(cli: Cli, fake_api: FakeApiServer) -> None:
    result = await cli("job", "why", "ghost", "-n", "ns9")
    assert (result.code, result.out) == (1, "")
    assert result.err == 'pumice: no Job, PodGroup or Pod named "ghost" in namespace ns9\n'
    assert [r.path for r in fake_api.requests] == [
        f"{BATCH}/namespaces/ns9/jobs/ghost",
        f"{SCHED}/namespaces/ns9/podgroups/ghost",
        f"{CORE}/namespaces/ns9/pods/ghost",
    ]


async def test_why_reports_other_api_errors(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.deny[("GET", f"{BATCH}/namespaces/{NS}/jobs/train")] = "jobs is forbidden"
    result = await cli("job", "why", "train")
    assert (result.code, result.err) == (1, "pumice: jobs is forbidden\n")


def test_why_needs_a_name() -> None:
    with pytest.raises(SystemExit) as exc:
        parse("job", "why")
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        parse("job", "why", "a", "-N", "b")
    assert exc.value.code == 2


async def test_view_shows_the_waiting_reason(cli: Cli, fake_api: FakeApiServer) -> None:
    seed_pending_job(fake_api)
    result = await cli("job", "view", "--name", "train")
    assert result.code == 0
    assert "  Waiting:        NotEnoughTasks: task worker: 1/2 pods, waiting for 1 more\n" in result.out
    fake_api.put(BATCH, "jobs", vcjob("calm", "Running", uid="u5"))
    calm = await cli("job", "view", "--name", "calm")
    assert calm.code == 0 and "Waiting:" not in calm.out


async def test_view_without_podgroup_access_still_describes(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("train"))
    fake_api.deny[("GET", f"{SCHED}/namespaces/{NS}/podgroups")] = "podgroups is forbidden"
    result = await cli("job", "view", "--name", "train")
    assert result.code == 0 and result.out.startswith("Name:") and "Waiting:" not in result.out


def test_a_group_with_sub_groups_says_which_sub_group_waits() -> None:
    """The scheduler's reason names the sub-group that could not be placed (see
    extender.framework.subgroup_allocate); ``why`` shows it with the group's sub-group rules in a line."""
    message = (
        "gang 2/4 placeable; subGroupPolicy t0: 1 of minSubGroups 2 sub-groups whole; sub-group "
        "t0[volcano.sh/partition-id=1]: network topology hard, highestTierAllowed 1: no tier-1 HyperNode "
        "has room for 2 pods of cpu 4"
    )
    pg = podgroup("train-u1", conditions=[condition("NotEnoughResources", message)])
    pg["spec"]["subGroupPolicy"] = [
        {
            "name": "t0",
            "subGroupSize": 2,
            "minSubGroups": 2,
            "matchLabelKeys": ["volcano.sh/partition-id"],
            "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
        }
    ]
    text = explain.explain(
        subject(job=vcjob("train"), pg=pg, pods=[pod("train-t0-0", group="train-u1")]), NOW
    )
    assert "Sub-groups:     t0: 2 pods each by volcano.sh/partition-id, 2 needed, hard tier 1\n" in text
    assert f"Message:        {message}\n" in text
