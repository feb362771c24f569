"""Every bad input gets a denial naming the field, on CREATE and UPDATE, for every kind; one row per denial.

Requests go through :func:`admission.dispatch.admit` with the row of the path, so these rows also prove
that the operation reaches the rule (a row listing only CREATE would let an UPDATE through unchecked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from admission.dispatch import admit
from admission.review import AdmissionRequest
from admission.webhooks import webhook_for
from extender.api.limits import Limits
from extender.core.model import Queue, QueueState
from tests.admission.builders import Raw, judged, lookup, pod_obj, podgroup_obj, queue_obj
from tests.admission.test_jobs_validate import job_obj, task
from tests.fuzz.strategies import nested

CLUSTER = lookup(Queue(name="q1"), Queue(name="shut", state=QueueState.CLOSED))
MAX_CPU = "4611686018427387904m"
DEEP = (
    "nested more than 64 levels deep, the most pumice accepts (Kubernetes objects nest about 20); "
    "flatten this value"
)
RAISE = "or raise the limit with pumice serve --max-job-replicas N"
GROUPS = {
    "/queues/validate": ("scheduling.volcano.sh", "queues"),
    "/podgroups/validate": ("scheduling.volcano.sh", "podgroups"),
    "/jobs/validate": ("batch.volcano.sh", "jobs"),
    "/commands/validate": ("bus.volcano.sh", "commands"),
    "/pods/validate": ("", "pods"),
}


def command_obj(target: Any = None, action: Any = "AbortJob") -> Raw:
    if target is None:
        target = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j1"}
    return {"metadata": {"name": "c", "namespace": "ns"}, "target": target, "action": action}


def with_requests(obj: Raw, **quantities: Any) -> Raw:
    obj["spec"]["containers"][0]["resources"] = {"requests": quantities}
    return obj


@dataclass(frozen=True)
class Row:
    id: str
    path: str
    new: Raw
    old: Raw | None = None
    want: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)


def answer(row: Row) -> dict[str, Any]:
    w = webhook_for(row.path)
    assert w is not None
    group, resource = GROUPS[row.path]
    req = AdmissionRequest(
        uid="u",
        operation="CREATE" if row.old is None else "UPDATE",
        group=group,
        version="v1",
        resource=resource,
        sub_resource="",
        kind="",
        namespace="ns",
        name="",
        object=row.new,
        old_object=row.old,
        dry_run=False,
    )
    response: dict[str, Any] = dict(admit(w, req, CLUSTER, row.limits)["response"])
    return response


ROWS = [
    # --- queues
    Row(
        "queue capability out of range",
        "/queues/validate",
        queue_obj(capability={"cpu": "1e400"}),
        want=[f"spec.capability[cpu]: 1e400 is out of range; pumice accepts at most {MAX_CPU}"],
    ),
    Row(
        "queue update with NaN",
        "/queues/validate",
        queue_obj(deserved={"memory": "NaN"}),
        old=queue_obj(),
        want=["spec.deserved[memory]: 'NaN' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    Row(
        "queue update with a negative quantity",
        "/queues/validate",
        queue_obj(capability={"memory": "-1"}),
        old=queue_obj(),
        want=["spec.capability[memory]: must not be negative, got -1"],
    ),
    Row(
        "queue update with a list for a quantity",
        "/queues/validate",
        queue_obj(capability={"cpu": ["1"]}),
        old=queue_obj(),
        want=["spec.capability[cpu]: must be a quantity such as 500m, 2 or 4Gi, got a list"],
    ),
    Row(
        "queue nested too deep",
        "/queues/validate",
        queue_obj(spec={"extra": nested(70)}),
        want=[f"spec.extra[0].a[0].a[0].a[0].a...: {DEEP}"],
    ),
    Row(
        "queue too large",
        "/queues/validate",
        queue_obj(spec={"blob": "x" * 300}),
        want=[
            "object: 405 bytes as JSON, more than the 400 bytes pumice accepts (etcd's default request "
            "limit); the largest part is spec (311 bytes)"
        ],
        limits=Limits(max_object_bytes=400),
    ),
    Row(
        "queue spec a string",
        "/queues/validate",
        {"metadata": {"name": "q1"}, "spec": "x"},
        old=queue_obj(),
        want=["spec: must be an object"],
    ),
    # --- podgroups
    Row(
        "podgroup update to cpu 1e400",
        "/podgroups/validate",
        podgroup_obj(queue="q1", minResources={"cpu": "1e400"}),
        old=podgroup_obj(queue="q1", minResources={"cpu": "1"}),
        want=[f"spec.minResources[cpu]: 1e400 is out of range; pumice accepts at most {MAX_CPU}"],
    ),
    Row(
        "podgroup update with abc and -1",
        "/podgroups/validate",
        podgroup_obj(queue="q1", minResources={"memory": "abc", "nvidia.com/gpu": "-1"}),
        old=podgroup_obj(queue="q1"),
        want=[
            "spec.minResources[memory]: 'abc' is not a quantity (examples: 500m, 2, 4Gi)",
            "spec.minResources[nvidia.com/gpu]: must not be negative, got -1",
        ],
    ),
    Row(
        "podgroup update beyond int32",
        "/podgroups/validate",
        podgroup_obj(queue="q1", minMember=2**31, minTaskMember={"w": [1]}),
        old=podgroup_obj(queue="q1"),
        want=[
            "spec.minMember: must be at most 2147483647, got 2147483648",
            "spec.minTaskMember[w]: must be an integer >= 0, got a list",
        ],
    ),
    Row(
        "podgroup update with both topology tiers",
        "/podgroups/validate",
        podgroup_obj(queue="q1", networkTopology={"highestTierAllowed": 1, "highestTierName": "r"}),
        old=podgroup_obj(queue="q1"),
        want=["spec.networkTopology: set either highestTierAllowed or highestTierName, not both"],
    ),
    Row(
        "podgroup update in a queue closed since is fine",
        "/podgroups/validate",
        podgroup_obj(queue="shut", minMember=3),
        old=podgroup_obj(queue="shut", minMember=2),
    ),
    Row(
        "podgroup spec a list",
        "/podgroups/validate",
        {"metadata": {"name": "pg"}, "spec": []},
        old=podgroup_obj(),
        want=["spec: must be an object"],
    ),
    # --- jobs
    Row(
        "job update over the replica limit",
        "/jobs/validate",
        job_obj(tasks=[task("master", 1), task("worker", 10_001)]),
        old=job_obj(),
        want=[
            "spec.tasks[1].replicas: 10001 is more than the 10000 replicas pumice accepts per task; "
            f"lower it, {RAISE}"
        ],
    ),
    Row(
        "job create over the job's replica limit",
        "/jobs/validate",
        job_obj(tasks=[task("master", 6), task("worker", 5)]),
        want=[
            "spec.tasks: the replicas of all tasks sum to 11, more than the 10 pumice accepts per job; "
            f"lower them, {RAISE}"
        ],
        limits=Limits(max_replicas=10),
    ),
    Row(
        "job create with cpu 1e400",
        "/jobs/validate",
        job_obj(
            tasks=[task(containers=[{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1e400"}}}])]
        ),
        want=[
            "spec.tasks[0].template.spec.containers[0].resources.limits[cpu]: 1e400 is out of range; "
            f"pumice accepts at most {MAX_CPU}"
        ],
    ),
    Row(
        "job update with spec a string",
        "/jobs/validate",
        {"metadata": {"name": "j1"}, "spec": "x"},
        old=job_obj(),
        want=["spec: must be an object"],
    ),
    Row(
        "job update checks the whole new object",
        "/jobs/validate",
        job_obj(
            tasks=[task("master", 1), task("worker", 2)], policies=[{"event": "Nope", "action": "AbortJob"}]
        ),
        old=job_obj(
            tasks=[task("master", 1), task("worker", 2)], policies=[{"event": "Nope", "action": "AbortJob"}]
        ),
        want=[
            "spec.policies[0].event: unknown event 'Nope'; valid events are *, PodFailed, PodEvicted, "
            "PodPending, Unknown, TaskCompleted, TaskFailed"
        ],
    ),
    Row(
        "job nested too deep",
        "/jobs/validate",
        job_obj(tasks=[task(pod={"affinity": nested(80)})]),
        old=job_obj(),
        want=[f"spec.tasks[0].template.spec.affinity[0].a[0].a...: {DEEP}"],
    ),
    Row(
        "job update repairing a stored job beyond the limits",
        "/jobs/validate",
        job_obj(),
        old=job_obj(tasks=[task("master", 1, pod={"affinity": nested(80)}), task("worker", 2)]),
    ),
    # --- commands
    Row(
        "command target.kind a list",
        "/commands/validate",
        command_obj({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": [], "name": "j1"}),
        want=["target.kind: must be Job or Queue, got a list"],
    ),
    Row(
        "command update with target a string",
        "/commands/validate",
        command_obj("x"),
        old=command_obj(),
        want=["target: required; the Job or Queue to act on (apiVersion, kind, name, uid)"],
    ),
    Row(
        "command action an object",
        "/commands/validate",
        command_obj(action={"a": 1}),
        want=[
            "action: must be one of AbortJob, CompleteJob, RestartJob, ResumeJob, TerminateJob for a Job "
            "target, got an object"
        ],
    ),
    Row(
        "command nested too deep",
        "/commands/validate",
        command_obj(action=nested(65)),
        want=[f"action.a[0].a[0].a[0].a[0].a...: {DEEP}"],
    ),
    # --- pods
    Row(
        "our pod with cpu 1e400",
        "/pods/validate",
        with_requests(pod_obj(), cpu="1e400", memory="NaN"),
        want=[
            "spec.containers[0].resources.requests[cpu]: 1e400 is out of range; pumice accepts at most "
            + MAX_CPU,
            "spec.containers[0].resources.requests[memory]: 'NaN' is not a quantity (examples: 500m, 2, 4Gi)",
        ],
    ),
    Row(
        "another scheduler's pod is not read",
        "/pods/validate",
        with_requests(pod_obj(scheduler="x"), cpu="1e400"),
    ),
    Row(
        "our pod updated with a bad budget",
        "/pods/validate",
        pod_obj(annotations={"volcano.sh/jdb-min-available": "0"}),
        old=pod_obj(),
        want=["metadata.annotations[volcano.sh/jdb-min-available]: must be a positive integer, got '0'"],
    ),
    Row(
        "our pod with a problem it already had can still be updated (the gate removed)",
        "/pods/validate",
        pod_obj(annotations={"volcano.sh/jdb-min-available": "0"}),
        old=pod_obj(annotations={"volcano.sh/jdb-min-available": "0"}, schedulingGates=[{"name": "g"}]),
    ),
    Row(
        "our pod nested too deep",
        "/pods/validate",
        pod_obj(affinity=nested(70)),
        want=[f"spec.affinity[0].a[0].a[0].a[0].a...: {DEEP}"],
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_denial(row: Row) -> None:
    response = answer(row)
    if not row.want:
        assert response == {"uid": "u", "allowed": True}
        return
    assert response["allowed"] is False
    assert response["status"] == {"code": 400, "message": "; ".join(row.want)}


VALIDATORS = [judged(f"/{kind}/validate") for kind in ("queues", "podgroups", "jobs", "commands", "pods")]


@pytest.mark.parametrize("validate", VALIDATORS, ids=["queues", "podgroups", "jobs", "commands", "pods"])
def test_depth_100000_is_denied_not_a_recursion_error(validate: Any) -> None:
    obj = pod_obj(affinity=nested(100_000))
    for old in (None, pod_obj()):
        (error,) = validate(obj, old, CLUSTER, Limits())
        assert error.field.startswith("spec.affinity[0].a[0]")
        assert error.message == DEEP
    # A stored object as deep is no trouble either (pods let an update keep a problem it already had).
    validate(obj, obj, CLUSTER, Limits())


def test_an_unencodable_object_is_denied() -> None:
    (error,) = judged("/queues/validate")(queue_obj(spec={"x": 2**70}), None, CLUSTER, Limits())
    assert str(error) == "object: cannot be encoded as JSON"


def test_the_size_limit_is_measured_after_the_depth_limit() -> None:
    too_deep_and_big = queue_obj(spec={"x": nested(70), "blob": "x" * 1000})
    (error,) = judged("/queues/validate")(too_deep_and_big, None, CLUSTER, Limits(max_object_bytes=100))
    assert error.message == DEEP
