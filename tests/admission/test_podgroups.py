"""PodGroup admission rules: default queue, Open queue on CREATE, field shapes."""

from __future__ import annotations

from typing import Any

import pytest

from admission import podgroups
from admission.lookup import StaticLookup
from extender.core.model import Queue, QueueState
from tests.admission.builders import Raw, judged, lookup, podgroup_obj

CLUSTER = lookup(Queue(name="q1"), Queue(name="shut", state=QueueState.CLOSED))

VALIDATE_CASES: list[tuple[str, Raw, Raw | None, list[str]]] = [
    ("open queue", podgroup_obj(queue="q1", minMember=2), None, []),
    ("no queue means the default", podgroup_obj(minMember=1), None, []),
    (
        "missing queue",
        podgroup_obj(queue="nope"),
        None,
        ["spec.queue: queue 'nope' does not exist; create it or choose another queue"],
    ),
    (
        "closed queue",
        podgroup_obj(queue="shut"),
        None,
        ["spec.queue: queue 'shut' is Closed; PodGroups can only be submitted to an Open queue"],
    ),
    ("closed queue on update is not re-checked", podgroup_obj(queue="shut"), podgroup_obj(queue="shut"), []),
    ("queue not a string", podgroup_obj(queue=5), None, ["spec.queue: must be a queue name"]),
    ("minMember zero", podgroup_obj(queue="q1", minMember=0), None, []),
    (
        "minMember negative",
        podgroup_obj(queue="q1", minMember=-1),
        None,
        ["spec.minMember: must be an integer >= 0, got -1"],
    ),
    (
        "minMember text",
        podgroup_obj(queue="q1", minMember="2"),
        podgroup_obj(queue="q1"),
        ["spec.minMember: must be an integer >= 0, got '2'"],
    ),
    (
        "minTaskMember negative",
        podgroup_obj(queue="q1", minTaskMember={"ps": 1, "worker": -2}),
        None,
        ["spec.minTaskMember[worker]: must be an integer >= 0, got -2"],
    ),
    (
        "minTaskMember not a map",
        podgroup_obj(queue="q1", minTaskMember=[1]),
        None,
        ["spec.minTaskMember: must be a map of task name to count"],
    ),
    (
        "minResources",
        podgroup_obj(queue="q1", minResources={"cpu": "2", "memory": "x"}),
        None,
        ["spec.minResources[memory]: 'x' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    (
        "network topology with both tiers",
        podgroup_obj(
            queue="q1", networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "s"}
        ),
        None,
        ["spec.networkTopology: set either highestTierAllowed or highestTierName, not both"],
    ),
    (
        "sub-group topology with both tiers",
        podgroup_obj(
            queue="q1",
            subGroupPolicy=[
                {"name": "a"},
                {"name": "b", "networkTopology": {"highestTierAllowed": 2, "highestTierName": "x"}},
            ],
        ),
        None,
        [
            "spec.subGroupPolicy[1].networkTopology: set either highestTierAllowed or "
            "highestTierName, not both"
        ],
    ),
    ("one tier is fine", podgroup_obj(queue="q1", networkTopology={"highestTierAllowed": 2}), None, []),
    (
        "a vcjob's sub-group rule",
        podgroup_obj(
            queue="q1",
            subGroupPolicy=[
                {
                    "name": "t0",
                    "subGroupSize": 2,
                    "minSubGroups": 2,
                    "labelSelector": {"matchLabels": {"volcano.sh/task-spec": "t0"}},
                    "matchLabelKeys": ["volcano.sh/partition-id"],
                    "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                }
            ],
        ),
        None,
        [],
    ),
    (
        "sub-group numbers",
        podgroup_obj(
            queue="q1",
            subGroupPolicy=[{"name": "a", "subGroupSize": 0, "minSubGroups": -1, "matchLabelKeys": ["k"]}],
        ),
        None,
        [
            "spec.subGroupPolicy[0].subGroupSize: must be an integer >= 1, got 0",
            "spec.subGroupPolicy[0].minSubGroups: must be an integer >= 0, got -1",
        ],
    ),
    (
        "minSubGroups without matchLabelKeys can never start",
        podgroup_obj(queue="q1", subGroupPolicy=[{"name": "a", "minSubGroups": 2}]),
        None,
        [
            "spec.subGroupPolicy[0].matchLabelKeys: required with minSubGroups 2: a pod joins a sub-group "
            "by these labels only, without them the group could never start"
        ],
    ),
    (
        "sub-group selector and topology",
        podgroup_obj(
            queue="q1",
            subGroupPolicy=[
                {
                    "name": "a",
                    "matchLabelKeys": ["k", ""],
                    "labelSelector": {"matchExpressions": [{"key": "k", "operator": "In"}, {"key": "k"}]},
                    "networkTopology": {"mode": "tight", "highestTierAllowed": -1},
                }
            ],
        ),
        None,
        [
            "spec.subGroupPolicy[0].matchLabelKeys: must be a list of label keys",
            "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].values: operator In needs at least "
            "one value",
            "spec.subGroupPolicy[0].labelSelector.matchExpressions[1]: must have a key and an operator In, "
            "NotIn, Exists or DoesNotExist",
            "spec.subGroupPolicy[0].networkTopology.mode: must be hard or soft, got 'tight'",
            "spec.subGroupPolicy[0].networkTopology.highestTierAllowed: must be an integer >= 0, got -1",
        ],
    ),
    (
        "sub-group policy not a list",
        podgroup_obj(queue="q1", subGroupPolicy={"name": "a"}),
        None,
        ["spec.subGroupPolicy: must be a list of rules"],
    ),
    ("spec not an object", {"metadata": {"name": "pg"}, "spec": []}, None, ["spec: must be an object"]),
    (
        "several errors",
        podgroup_obj(queue="nope", minMember=-1),
        None,
        [
            "spec.minMember: must be an integer >= 0, got -1",
            "spec.queue: queue 'nope' does not exist; create it or choose another queue",
        ],
    ),
]


@pytest.mark.parametrize(
    ("new", "old", "want"), [c[1:] for c in VALIDATE_CASES], ids=[c[0] for c in VALIDATE_CASES]
)
def test_validate(new: Raw, old: Raw | None, want: list[str]) -> None:
    assert [str(e) for e in podgroups.validate(new, old, CLUSTER)] == want


def test_default_queue_comes_from_the_lookup() -> None:
    cluster = StaticLookup(default_queue="batch")
    assert [str(e) for e in podgroups.validate(podgroup_obj(), None, cluster)] == [
        "spec.queue: queue 'batch' does not exist; create it or choose another queue"
    ]


def test_delete_is_allowed() -> None:
    assert judged("/podgroups/validate")(None, podgroup_obj(queue="shut"), CLUSTER) == []


MUTATE_CASES: list[tuple[str, Raw, str, list[dict[str, Any]]]] = [
    (
        "no queue",
        podgroup_obj(minMember=1),
        "default",
        [{"op": "add", "path": "/spec/queue", "value": "default"}],
    ),
    (
        "empty queue",
        podgroup_obj(queue=""),
        "batch",
        [{"op": "add", "path": "/spec/queue", "value": "batch"}],
    ),
    (
        "no spec",
        {"metadata": {"name": "pg", "namespace": "ns"}},
        "default",
        [{"op": "add", "path": "/spec", "value": {"queue": "default"}}],
    ),
    ("queue set", podgroup_obj(queue="q1"), "default", []),
    ("spec malformed", {"metadata": {"name": "pg"}, "spec": 3}, "default", []),
]


@pytest.mark.parametrize(
    ("obj", "default", "want"), [c[1:] for c in MUTATE_CASES], ids=[c[0] for c in MUTATE_CASES]
)
def test_mutate(obj: Raw, default: str, want: list[dict[str, Any]]) -> None:
    assert podgroups.mutate(obj, lookup(default_queue=default)) == want


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {
            "spec": {
                "queue": None,
                "minTaskMember": {"a": None},
                "networkTopology": "x",
                "subGroupPolicy": [3],
            }
        },
        {"spec": {"minResources": "x", "queue": ["q"]}},
    ],
)
def test_garbage_never_raises(obj: Raw) -> None:
    podgroups.validate(obj, None, CLUSTER)
    podgroups.validate(obj, obj, CLUSTER)
    podgroups.mutate(obj, CLUSTER)
