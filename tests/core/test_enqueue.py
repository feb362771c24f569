"""The enqueue action: which Pending PodGroups are admitted (→ Inqueue), and why the others are not.

Volcano's semantics: a group is admitted when its queue exists and is Open, its minResources keep the
queue within capability (proportion), and the cluster's idle capacity — allocatable × overcommit-factor,
less what is used and what was promised to other Inqueue groups — covers them (overcommit).
"""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.model import GroupKey, group_key
from extender.framework.reasons import NOT_ADMITTED, QUEUE_UNAVAILABLE
from tests.core.builders import GPU, T0, conf_with, node, pod, podgroup, priority_class, queue, run

Raw = dict[str, Any]
NODES = [node("n0", cpu="4", memory="8Gi")]  # overcommit 1.2: idle cpu 4.8, memory 9.6Gi


def pg(name: str, cpu: str | None = None, **kw: Any) -> Raw:
    return podgroup(name, 1, min_resources=None if cpu is None else {"cpu": cpu}, **kw)


# (id, nodes, pods, groups, queues, {group: expected reason or None for admitted}, message fragments)
SCENARIOS: list[
    tuple[str, list[Raw], list[Raw], list[Raw], list[Raw] | None, dict[str, str | None], list[str]]
] = [
    ("admits-when-room", NODES, [], [pg("a", "2")], None, {"a": None}, []),
    ("no-min-resources-always-admitted", NODES, [], [pg("a")], None, {"a": None}, []),
    ("pods-need-not-exist", NODES, [], [podgroup("a", 4)], None, {"a": None}, []),
    (
        "missing-queue",
        NODES,
        [],
        [pg("a", "1", queue="nope")],
        None,
        {"a": QUEUE_UNAVAILABLE},
        ["queue nope does not exist"],
    ),
    (
        "closed-queue",
        NODES,
        [],
        [pg("a", "1", queue="q")],
        [queue("q", state="Closed")],
        {"a": QUEUE_UNAVAILABLE},
        ["queue q is Closed"],
    ),
    (
        "closing-queue",
        NODES,
        [],
        [pg("a", "1", queue="q")],
        [queue("q", state="Closing")],
        {"a": QUEUE_UNAVAILABLE},
        ["queue q is Closing"],
    ),
    (
        "queue-parent-loop",
        NODES,
        [],
        [pg("a", "1", queue="q")],
        [queue("q", parent="r"), queue("r", parent="s"), queue("s", parent="r")],
        {"a": QUEUE_UNAVAILABLE},
        ["queue q: spec.parent forms a loop (r -> s -> r)", "outside the loop"],
    ),
    (
        "queue-parent-chain-is-fine",
        NODES,
        [],
        [pg("a", "1", queue="q")],
        [queue("q", parent="r"), queue("r")],
        {"a": None},
        [],
    ),
    (
        "implicit-group-missing-default-queue",
        NODES,
        [pod("p0")],
        [],
        [queue("other")],
        {"podgroup-p0": QUEUE_UNAVAILABLE},
        ["queue default does not exist"],
    ),
    (
        "implicit-group-queue-annotation",
        NODES,
        [pod("p0", queue="q")],
        [],
        [queue("q", state="Closed")],
        {"podgroup-p0": QUEUE_UNAVAILABLE},
        ["queue q is Closed"],
    ),
    (
        "over-capability",
        NODES,
        [],
        [pg("a", "3", queue="q")],
        [queue("q", capability={"cpu": "2"})],
        {"a": NOT_ADMITTED},
        ["queue q: cpu 3/2 over capability"],
    ),
    (
        "capability-counts-held",
        [node("n0", cpu="16")],
        [pod("r0", group="r", cpu="3", node="n0", phase="Running")],
        [podgroup("r", 1, queue="q", phase="Running", min_resources={"cpu": "3"}), pg("a", "2", queue="q")],
        [queue("q", capability={"cpu": "4"})],
        {"a": NOT_ADMITTED},
        ["queue q: cpu 5/4 over capability"],
    ),
    (
        # Volcano's jobEnqueueable subtracts the queue's elastic resources (job_info_test.go
        # TestGetElasticResources: what a job holds beyond its minResources): r holds 3 of which its
        # minimum is 1, so 2 are reclaimable and a fits (3 + 2 - 2 = 3 <= 4).
        "capability-less-elastic",
        [node("n0", cpu="16")],
        [pod(f"r{i}", group="r", cpu="1", node="n0", phase="Running") for i in range(3)],
        [podgroup("r", 1, queue="q", phase="Running", min_resources={"cpu": "1"}), pg("a", "2", queue="q")],
        [queue("q", capability={"cpu": "4"})],
        {"a": None},
        [],
    ),
    (
        # Volcano: a group without minResources counts all it holds as elastic (GetMinResources is empty).
        "capability-elastic-without-min-resources",
        [node("n0", cpu="16")],
        [pod("r0", group="r", cpu="3", node="n0", phase="Running")],
        [podgroup("r", 1, queue="q", phase="Running"), pg("a", "2", queue="q")],
        [queue("q", capability={"cpu": "4"})],
        {"a": None},
        [],
    ),
    (
        # The elastic part is only what is past the minimum: r holds 4 with a minimum of 3.
        "capability-elastic-is-only-past-the-minimum",
        [node("n0", cpu="16")],
        [pod(f"r{i}", group="r", cpu="1", node="n0", phase="Running") for i in range(4)],
        [podgroup("r", 3, queue="q", phase="Running", min_resources={"cpu": "3"}), pg("a", "2", queue="q")],
        [queue("q", capability={"cpu": "4"})],
        {"a": NOT_ADMITTED},
        ["queue q: cpu 5/4 over capability (cpu: used 4 + minResources 2 − elastic 1)"],
    ),
    (
        "capability-counts-promised",
        [node("n0", cpu="16")],
        [],
        [pg("b", "3", queue="q", phase="Inqueue"), pg("a", "2", queue="q")],
        [queue("q", capability={"cpu": "4"})],
        {"a": NOT_ADMITTED},
        ["cpu 5/4 over capability"],
    ),
    (
        "capability-other-resource-free",
        NODES,
        [],
        [podgroup("a", 1, queue="q", min_resources={"cpu": "1", "memory": "1Gi"})],
        [queue("q", capability={"memory": "2Gi"})],
        {"a": None},
        [],
    ),
    ("overcommit-factor-allows-over-allocatable", NODES, [], [pg("a", "4800m")], None, {"a": None}, []),
    (
        "overcommit-rejects",
        NODES,
        [],
        [pg("a", "5")],
        None,
        {"a": NOT_ADMITTED},
        ["cluster over-committed: minResources cpu 5 > idle cpu 4.8"],
    ),
    (
        "overcommit-counts-used-by-other-schedulers",
        NODES,
        [pod("sys", cpu="3", node="n0", phase="Running", scheduler="default-scheduler")],
        [pg("a", "2")],
        None,
        {"a": NOT_ADMITTED},
        ["idle cpu 1.8"],
    ),
    (
        "overcommit-counts-promised-inqueue",
        NODES,
        [],
        [pg("b", "4", phase="Inqueue"), pg("a", "1")],
        None,
        {"a": NOT_ADMITTED},
        ["idle cpu 0.8"],
    ),
    (
        "promise-less-what-inqueue-group-holds",
        NODES,
        [pod("b0", group="b", cpu="2", node="n0", phase="Running")],
        [pg("b", "4", phase="Inqueue"), pg("a", "800m")],
        None,
        {"a": None},  # idle = 4.8 - 2 used - (4 - 2) promised = 0.8
        [],
    ),
    (
        "admission-in-cycle-is-a-promise",
        NODES,
        [],
        [pg("a", "3", created="2024-01-01T00:00:00Z"), pg("b", "3", created="2024-01-01T00:00:01Z")],
        None,
        {"a": None, "b": NOT_ADMITTED},
        [],
    ),
    (
        "gpu-min-resources-on-gpu-less-cluster",
        NODES,
        [],
        [podgroup("a", 1, min_resources={GPU: "2"})],
        None,
        {"a": NOT_ADMITTED},
        [f"minResources {GPU} 2 > idle"],
    ),
    (
        "gpu-min-resources-on-gpu-cluster",
        [node("n0", gpus=2)],
        [],
        [podgroup("a", 1, min_resources={GPU: "2"})],
        None,
        {"a": None},
        [],
    ),
]


@pytest.mark.parametrize(
    ("nodes", "pods", "groups", "queues", "expected", "messages"),
    [s[1:] for s in SCENARIOS],
    ids=[s[0] for s in SCENARIOS],
)
def test_enqueue(
    nodes: list[Raw],
    pods: list[Raw],
    groups: list[Raw],
    queues: list[Raw] | None,
    expected: dict[str, str | None],
    messages: list[str],
) -> None:
    result = run(nodes, pods, groups, queues, conf=conf_with("overcommit", "proportion", actions="enqueue"))
    for name, reason in expected.items():
        key = group_key("default", name)
        if reason is None:
            assert key in result.admitted, result.unschedulable.get(key)
            assert key not in result.unschedulable
        else:
            assert key not in result.admitted
            assert result.unschedulable[key].reason == reason
    text = " | ".join(u.message for u in result.unschedulable.values())
    for fragment in messages:
        assert fragment in text


def test_already_admitted_groups_are_not_admitted_again() -> None:
    groups = [
        pg(n, "1", phase=ph)
        for n, ph in [("i", "Inqueue"), ("r", "Running"), ("u", "Unknown"), ("c", "Completed")]
    ]
    result = run(NODES, [], groups, conf=conf_with("overcommit", "proportion", actions="enqueue"))
    assert result.admitted == set() and result.unschedulable == {}


@pytest.mark.parametrize(
    ("phase", "node_name", "planned"),
    [("Running", "n0", False), ("Pending", "n0", False), ("Succeeded", "n0", False), ("Pending", "", True)],
    ids=["running", "bound", "succeeded", "planned"],
)
def test_plain_pod_holding_or_planned_is_not_enqueued_again(
    phase: str, node_name: str, planned: bool
) -> None:
    """A plain pod's implicit group is admitted already once its pod is bound or planned: enqueue must not
    count the pod twice (used/reserved and minResources) and report a running pod as over-committed."""
    p = pod("p0", cpu="4", node=node_name, phase=phase)
    result = run(NODES, [p], plans={"p0": "n0"} if planned else None)
    assert result.unschedulable == {}
    assert "default/podgroup-p0" not in result.admitted


def test_enqueue_order_follows_priority() -> None:
    """Room for one: the higher-priority group is admitted although it is younger."""
    groups = [
        pg("old", "3", created="2024-01-01T00:00:00Z"),
        pg("young", "3", created="2024-01-02T00:00:00Z", priority_class="high"),
    ]
    result = run(NODES, [], groups, priority_classes=[priority_class("high", 100)])
    assert result.admitted == {"default/young"}
    assert result.unschedulable[GroupKey("default/old")].reason == NOT_ADMITTED


def test_enqueue_without_overcommit_admits_past_the_cluster() -> None:
    result = run(NODES, [], [pg("a", "100")], conf=conf_with("gang", actions="enqueue"))
    assert result.admitted == {"default/a"}


def test_enqueue_only_admits() -> None:
    """Admission alone plans nothing."""
    result = run(NODES, [pod("p0", created=T0)], conf=conf_with("overcommit", actions="enqueue"))
    assert result.admitted == {"default/podgroup-p0"} and result.placements == {}


def _backlog(seed: int) -> tuple[list[Raw], list[Raw], list[Raw], list[Raw]]:
    """Pending groups of a few minResources shapes in queues near their capability, over running pods."""
    import random

    rnd = random.Random(seed)
    nodes = [node(f"n{i}", cpu="8", memory="16Gi") for i in range(rnd.randint(1, 3))]
    queues = [
        queue("a", capability={"cpu": str(rnd.randint(2, 12))}),
        queue("b", weight=2),
        queue("c", capability={"cpu": str(rnd.randint(1, 6)), "memory": "8Gi"}),
    ]
    shapes = [{"cpu": rnd.choice(("1", "2", "3")), "memory": rnd.choice(("1Gi", "4Gi"))} for _ in range(3)]
    groups, pods = [], []
    for i in range(rnd.randint(0, 4)):  # running, some past their minimum (elastic)
        q = rnd.choice("abc")
        groups.append(podgroup(f"r{i}", 1, queue=q, phase="Running", min_resources={"cpu": "1"}))
        for m in range(rnd.randint(1, 3)):
            pods.append(
                pod(f"r{i}-{m}", group=f"r{i}", cpu="1", node=nodes[0]["metadata"]["name"], phase="Running")
            )
    for i in range(rnd.randint(1, 25)):
        groups.append(
            podgroup(
                f"p{i:02}",
                1,
                queue=rnd.choice("aabc"),
                min_resources=rnd.choice(shapes),
                created=f"2024-01-01T00:{rnd.randint(0, 59):02}:00Z",
            )
        )
    return nodes, pods, groups, queues


CONFS = [None, conf_with("priority", "gang", "drf", "predicates", "proportion"), conf_with("capacity")]


@pytest.mark.parametrize("conf", CONFS, ids=["default", "proportion", "capacity"])
def test_refusals_by_shape_are_the_refusals_asked_one_by_one(
    conf: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enqueue's refusal per (queue, minResources) between admissions (``actions._by_shape``) gives every
    group the admission and the reason, message included, that asking each group's votes gives."""
    from extender.framework import actions

    for seed in range(60):
        nodes, pods, groups, queues = _backlog(seed)
        fast = run(nodes, pods, groups, queues, conf=conf)
        with monkeypatch.context() as mp:
            mp.setattr(actions, "SHAPE_ONLY_ENQUEUE", frozenset())
            plain = run(nodes, pods, groups, queues, conf=conf)
        assert fast.admitted == plain.admitted, seed
        assert fast.unschedulable == plain.unschedulable, seed
