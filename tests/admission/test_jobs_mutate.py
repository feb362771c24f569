"""Volcano Job defaults: one row per default, with the exact JSONPatch, then the defaulted job validates."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from admission import jobs
from admission.base import PatchOp
from admission.lookup import StaticLookup
from admission.review import patch
from extender.core.model import Queue
from tests.admission.builders import Raw, apply_patch, lookup
from tests.admission.test_jobs_validate import job_obj, task

CLUSTER = lookup(Queue(name="q1"))


# A job with everything Volcano defaults already set: mutate leaves it alone.
FULL: dict[str, Any] = {"queue": "q1", "schedulerName": "volcano", "maxRetry": 3, "minAvailable": 3}


def full_task(name: str, replicas: Any, **fields: Any) -> Raw:
    return task(name, replicas, **{"minAvailable": replicas, "maxRetry": 3, **fields})


FULL_TASKS = [full_task("master", 1), full_task("worker", 2)]


@dataclass(frozen=True)
class Case:
    id: str
    obj: Raw
    want: list[PatchOp]
    cluster: StaticLookup = field(default_factory=lambda: CLUSTER)


CASES = [
    Case("nothing to default", job_obj(tasks=FULL_TASKS, **FULL), []),
    Case(
        "every job-level default",
        job_obj(tasks=FULL_TASKS, queue=None),
        [
            {"op": "add", "path": "/spec/queue", "value": "default"},
            {"op": "add", "path": "/spec/schedulerName", "value": "volcano"},
            {"op": "add", "path": "/spec/maxRetry", "value": 3},
            {"op": "add", "path": "/spec/minAvailable", "value": 3},
        ],
    ),
    Case(
        "the configured default queue",
        job_obj(tasks=FULL_TASKS, **{**FULL, "queue": ""}),
        [{"op": "add", "path": "/spec/queue", "value": "batch"}],
        cluster=lookup(default_queue="batch"),
    ),
    Case(
        "volcano is preferred among our scheduler names",
        job_obj(tasks=FULL_TASKS, **{**FULL, "schedulerName": ""}),
        [{"op": "add", "path": "/spec/schedulerName", "value": "volcano"}],
        cluster=StaticLookup(scheduler_names=frozenset({"z", "volcano", "a"})),
    ),
    Case(
        "else the first of our scheduler names",
        job_obj(tasks=FULL_TASKS, **{**FULL, "schedulerName": None}),
        [{"op": "add", "path": "/spec/schedulerName", "value": "a"}],
        cluster=StaticLookup(scheduler_names=frozenset({"z", "a"})),
    ),
    Case(
        "maxRetry 0 becomes 3, as in Volcano",
        job_obj(tasks=FULL_TASKS, **{**FULL, "maxRetry": 0}),
        [{"op": "add", "path": "/spec/maxRetry", "value": 3}],
    ),
    Case(
        "unnamed tasks are default<index>",
        job_obj(tasks=[full_task("", 1), {**full_task("x", 2), "name": None}], **FULL),
        [
            {"op": "add", "path": "/spec/tasks/0/name", "value": "default0"},
            {"op": "add", "path": "/spec/tasks/1/name", "value": "default1"},
        ],
    ),
    Case(
        "task minAvailable is its replicas, task maxRetry 3",
        job_obj(tasks=[task("master", 1), full_task("worker", 2, maxRetry=0)], **FULL),
        [
            {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 1},
            {"op": "add", "path": "/spec/tasks/0/maxRetry", "value": 3},
            {"op": "add", "path": "/spec/tasks/1/maxRetry", "value": 3},
        ],
    ),
    Case(
        "job minAvailable sums the tasks' minAvailable after their defaults",
        job_obj(
            tasks=[task("master", 1, maxRetry=3), full_task("worker", 4, minAvailable=2)],
            **{**FULL, "minAvailable": 0},
        ),
        [
            {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 1},
            {"op": "add", "path": "/spec/minAvailable", "value": 3},
        ],
    ),
    Case(
        "a given job minAvailable stays",
        job_obj(tasks=[task("worker", 4, maxRetry=3)], **{**FULL, "minAvailable": 2}),
        [{"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 4}],
    ),
    Case(
        "a job of empty tasks keeps minAvailable 0",
        job_obj(tasks=[full_task("worker", 0)], **{**FULL, "minAvailable": 0}),
        [],
    ),
    Case(
        "partition policy with minPartitions",
        job_obj(
            tasks=[
                task(
                    "w",
                    6,
                    maxRetry=3,
                    partitionPolicy={"totalPartitions": 3, "partitionSize": 2, "minPartitions": 2},
                )
            ],
            **{**FULL, "minAvailable": None},
        ),
        [
            {"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 4},
            {"op": "add", "path": "/spec/minAvailable", "value": 4},
        ],
    ),
    Case(
        "partition policy without minPartitions keeps the gang whole",
        job_obj(
            tasks=[task("w", 6, maxRetry=3, partitionPolicy={"totalPartitions": 3, "partitionSize": 2})],
            **FULL,
        ),
        [{"op": "add", "path": "/spec/tasks/0/minAvailable", "value": 6}],
    ),
    Case(
        "hostNetwork gets ClusterFirstWithHostNet",
        job_obj(
            tasks=[
                full_task("w", 1, pod={"hostNetwork": True}),
                full_task("v", 1, pod={"hostNetwork": True, "dnsPolicy": "Default"}),
            ],
            **FULL,
        ),
        [{"op": "add", "path": "/spec/tasks/0/template/spec/dnsPolicy", "value": "ClusterFirstWithHostNet"}],
    ),
    Case(
        "pytorch needs svc",
        job_obj(tasks=FULL_TASKS, plugins={"pytorch": ["--port=23456"]}, **FULL),
        [{"op": "add", "path": "/spec/plugins/svc", "value": []}],
    ),
    Case(
        "tensorflow with svc already",
        job_obj(tasks=FULL_TASKS, plugins={"tensorflow": [], "svc": ["--disable-network-policy"]}, **FULL),
        [],
    ),
    Case(
        "mpi needs svc and ssh",
        job_obj(tasks=FULL_TASKS, plugins={"mpi": []}, **FULL),
        [
            {"op": "add", "path": "/spec/plugins/svc", "value": []},
            {"op": "add", "path": "/spec/plugins/ssh", "value": []},
        ],
    ),
    Case(
        "ray needs svc",
        job_obj(tasks=[full_task("head", 1), full_task("worker", 2)], plugins={"ray": []}, **FULL),
        [{"op": "add", "path": "/spec/plugins/svc", "value": []}],
    ),
    Case("hcclrank needs nothing", job_obj(tasks=FULL_TASKS, plugins={"hcclrank": []}, **FULL), []),
    Case("env alone needs nothing", job_obj(tasks=FULL_TASKS, plugins={"env": []}, **FULL), []),
    Case("no spec: nothing to default", {"metadata": {"name": "j"}}, []),
    Case(
        "tasks of the wrong shape are left to validation",
        job_obj(tasks=[5, {**full_task("w", "2"), "minAvailable": None}], **{**FULL, "minAvailable": None}),
        [],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_mutate(case: Case) -> None:
    assert jobs.mutate(case.obj, case.cluster) == case.want


def test_a_defaulted_job_validates() -> None:
    new = job_obj(
        queue=None,
        tasks=[
            {"replicas": 1, "template": task()["template"]},
            {"replicas": 2, "template": task()["template"], "dependsOn": {"name": ["default0"]}},
        ],
        plugins={"mpi": ["--master=default0", "--worker=default1"]},
    )
    cluster = lookup()
    defaulted = apply_patch(new, jobs.mutate(new, cluster))
    assert defaulted["spec"]["tasks"][1]["name"] == "default1"
    assert defaulted["spec"]["plugins"] == {
        "mpi": ["--master=default0", "--worker=default1"],
        "svc": [],
        "ssh": [],
    }
    assert defaulted["spec"]["minAvailable"] == 3


def test_a_defaulted_ray_job_validates() -> None:
    """Volcano's ray example as a user writes it (no svc, no counts): defaulted, it passes validation."""
    new = job_obj(
        "ray-cluster-job",
        queue=None,
        minAvailable=3,
        tasks=[task("head", 1, pod={"restartPolicy": "OnFailure"}), task("worker", 2)],
        plugins={"ray": []},
        policies=[{"event": "PodEvicted", "action": "RestartJob"}],
    )
    cluster = lookup()
    defaulted = apply_patch(new, jobs.mutate(new, cluster))
    assert defaulted["spec"]["plugins"] == {"ray": [], "svc": []}
    assert jobs.validate(defaulted, None, cluster) == []
    assert jobs.validate(defaulted, None, cluster) == []
    assert jobs.mutate(defaulted, cluster) == []


@pytest.mark.parametrize(
    "tasks",
    [
        [{"name": "a", "replicas": 1, "minAvailable": 2**63 - 1}, {"name": "b", "minAvailable": 2**63 - 1}],
        [{"name": "a", "partitionPolicy": {"minPartitions": 2**40, "partitionSize": 2**40}}],
        [{"name": "a", "replicas": -1}],
    ],
    ids=["minAvailable sum beyond 64 bits", "partition product beyond 64 bits", "negative replicas"],
)
def test_no_default_beyond_int32(tasks: list[dict[str, object]]) -> None:
    """A default computed from numbers validation refuses is not set: it could not even be encoded."""
    ops = jobs.mutate({"metadata": {"name": "j"}, "spec": {"tasks": tasks}}, lookup())
    assert not [op for op in ops if op["path"].endswith("/minAvailable")]
    patch("u", ops)  # encodes
