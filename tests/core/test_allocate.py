"""The allocate and backfill actions: gangs planned whole or not at all, reservations, tasks, extras.

Every scenario runs Volcano's default conf over raw objects. Groups are Inqueue (already admitted)
unless the scenario is about admission, so only allocation decides.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from extender.core.model import GroupKey, PodUID
from extender.framework.reasons import NOT_ENOUGH_PODS, NOT_ENOUGH_RESOURCES, QUEUE_UNAVAILABLE
from extender.framework.result import CycleResult
from tests.core.builders import GPU, T0, conf_with, gang, node, placed, pod, podgroup, queue, run

Raw = dict[str, Any]


def t(second: int) -> str:
    return f"2024-01-01T00:00:{second:02d}Z"


def test_gang_that_fits_is_planned_whole() -> None:
    pg, pods = gang("a", 4)
    result = run([node("n0", cpu="4")], pods, [pg])
    assert placed(result) == {f"a-{i}": "n0" for i in range(4)}
    assert result.ready == {"default/a"} and result.unschedulable == {}


def test_gang_that_does_not_fit_gets_nothing_and_the_shortfall() -> None:
    pg, pods = gang("a", 4)
    result = run([node("n0", cpu="3")], pods, [pg])
    assert result.placements == {} and result.ready == set()
    u = result.unschedulable[GroupKey("default/a")]
    assert u.reason == NOT_ENOUGH_RESOURCES
    assert u.message == "gang 3/4 placeable: needs cpu 1, best node n0 has cpu 0"


def test_shortfall_names_the_closest_node() -> None:
    pg, pods = gang("a", 1, cpu="3")
    result = run([node("n0", cpu="1"), node("n1", cpu="2"), node("n2", cpu="500m")], pods, [pg])
    assert (
        result.unschedulable[GroupKey("default/a")].message
        == "gang 0/1 placeable: needs cpu 3, best node n1 has cpu 2"
    )


def test_statically_impossible_pod_says_why_per_node() -> None:
    pg, pods = gang("a", 1, selector={"zone": "x"})
    result = run([node("n0"), node("n1", unschedulable=True)], pods, [pg])
    assert result.unschedulable[GroupKey("default/a")].message == (
        "gang 0/1 placeable: no node can take it: node does not match the pod's nodeSelector (1 nodes); "
        "node is unschedulable (cordoned) (1 nodes)"
    )


# Two gangs that each fit alone but not together: exactly one is planned, whole.
TWO_GANGS = [
    ("same-node", [node("n0", cpu="4")], 3, 3, "1Gi"),
    ("two-nodes", [node("n0", cpu="4"), node("n1", cpu="4")], 5, 5, "1Gi"),
    ("memory-bound", [node("n0", cpu="64", memory="4Gi")], 2, 2, "2Gi"),
]


@pytest.mark.parametrize(
    ("nodes", "size_a", "size_b", "memory"), [r[1:] for r in TWO_GANGS], ids=[r[0] for r in TWO_GANGS]
)
def test_two_gangs_that_do_not_fit_together(nodes: list[Raw], size_a: int, size_b: int, memory: str) -> None:
    a, pa = gang("a", size_a, memory=memory)
    b, pb = gang("b", size_b, memory=memory)
    a["metadata"]["creationTimestamp"] = t(0)
    b["metadata"]["creationTimestamp"] = t(1)
    result = run(nodes, pa + pb, [a, b])
    assert set(placed(result, "a-")) == {f"a-{i}" for i in range(size_a)}  # the older gang wins
    assert placed(result, "b-") == {}
    assert result.ready == {"default/a"}
    assert result.unschedulable[GroupKey("default/b")].reason == NOT_ENOUGH_RESOURCES


def test_gang_minimum_beats_other_gangs_extras() -> None:
    """a (min 2 of 4) and b (min 2): b's minimum is planned before a's elastic extras."""
    a, pa = gang("a", 4, min_member=2)
    b, pb = gang("b", 2)
    a["metadata"]["creationTimestamp"] = t(0)
    b["metadata"]["creationTimestamp"] = t(1)
    result = run([node("n0", cpu="4")], pa + pb, [a, b])
    assert len(placed(result, "a-")) == 2 and len(placed(result, "b-")) == 2
    assert result.ready == {"default/a", "default/b"}


# (id, node cpu, pods planned earlier, expected result for gang b of 2 x 1 cpu)
PLANS = [
    ("plan-reserves", "4", {"x-0": "n0", "x-1": "n0", "x-2": "n0"}, False),
    ("room-left-after-plans", "5", {"x-0": "n0", "x-1": "n0", "x-2": "n0"}, True),
    ("plan-on-unknown-node-is-ignored", "4", {"x-0": "gone", "x-1": "gone", "x-2": "gone"}, True),
]


@pytest.mark.parametrize(("cpu", "plans", "fits"), [r[1:] for r in PLANS], ids=[r[0] for r in PLANS])
def test_existing_plans_reserve_capacity(cpu: str, plans: dict[str, str], fits: bool) -> None:
    x, px = gang("x", 3)
    b, pb = gang("b", 2)
    result = run([node("n0", cpu=cpu)], px + pb, [x, b], plans=plans)
    assert set(placed(result, "b-")) == ({"b-0", "b-1"} if fits else set())
    # Pods already planned are never planned again.
    assert not any(uid in plans and plans[uid] != "gone" for uid in result.placements)


def test_planned_gang_counts_as_whole() -> None:
    """A gang whose minimum was planned last cycle is not re-planned; its extras are backfilled."""
    x, px = gang("x", 3, min_member=2)
    result = run([node("n0", cpu="4")], px, [x], plans={"x-0": "n0", "x-1": "n0"})
    assert result.placements == {"x-2": "n0"}
    assert result.unschedulable == {} and result.ready == set()


@pytest.mark.parametrize(
    ("first", "min_member", "placed_count"),
    [
        ({"selector": {"zone": "nowhere"}}, 2, 3),  # the gang's 2, then the third as an extra
        ({"cpu": "64"}, 3, 3),
        ({"cpu": "64"}, 4, 0),
    ],
    ids=["unplaceable-selector-then-others", "too-big-then-others", "too-big-no-substitute"],
)
def test_a_failed_pod_does_not_stop_different_pods(
    first: dict[str, Any], min_member: int, placed_count: int
) -> None:
    """The first pod (highest priority) cannot be placed; pods of another shape still can."""
    pg = podgroup("g", min_member, phase="Inqueue")
    pods = [pod("g-0", group="g", priority=9, **first)] + [pod(f"g-{i}", group="g") for i in range(1, 4)]
    result = run([node("n0", cpu="4")], pods, [pg], conf=conf_with("gang", "predicates", actions="allocate"))
    assert len(result.placements) == placed_count and "g-0" not in result.placements


def test_large_failing_gang_reports_first_problem() -> None:
    pg, pods = gang("g", 200, memory="512Mi")
    result = run([node("n0", cpu="8"), node("n1", cpu="8")], pods, [pg])
    assert result.placements == {}
    assert result.unschedulable[GroupKey("default/g")].message == (
        "gang 16/200 placeable: needs cpu 1, best node n0 has cpu 0"
    )


def test_partly_running_gang_needs_only_the_rest() -> None:
    pg = podgroup("a", 3, phase="Inqueue")
    pods = [
        pod("a-0", group="a", node="n0", phase="Running"),
        pod("a-1", group="a", node="n0", phase="Running"),
    ]
    pods.append(pod("a-2", group="a"))
    result = run([node("n0", cpu="3")], pods, [pg])
    assert result.placements == {"a-2": "n0"} and result.ready == {"default/a"}


def test_succeeded_pods_count_toward_the_gang_failed_do_not() -> None:
    pg = podgroup("a", 3, phase="Running")
    pods = [
        pod("a-0", group="a", node="n0", phase="Succeeded"),
        pod("a-1", group="a", node="n0", phase="Failed"),
        pod("a-2", group="a"),
        pod("a-3", group="a"),
    ]
    result = run([node("n0", cpu="2")], pods, [pg])
    assert set(result.placements) == {"a-2", "a-3"}


# minTaskMember: (id, min_member, min_task_member, pods as (name, task, priority), node cpu, expected placed)
TASKS = [
    (
        "task-minimum-first",
        2,
        {"ps": 1},
        [("w0", "worker", 10), ("w1", "worker", 10), ("ps0", "ps", 0)],
        "2",
        {"ps0", "w0"},
    ),
    (
        "each-task-minimum",
        3,
        {"ps": 1, "worker": 2},
        [("ps0", "ps", 0), ("ps1", "ps", 9), ("w0", "worker", 0), ("w1", "worker", 0)],
        "3",
        {"ps1", "w0", "w1"},
    ),
    (
        "task-minimum-beyond-min-member",
        1,
        {"worker": 2},
        [("w0", "worker", 0), ("w1", "worker", 0), ("w2", "worker", 0)],
        "2",
        {"w0", "w1"},
    ),
    (
        "task-minimum-does-not-fit",
        2,
        {"ps": 2},
        [("ps0", "ps", 0), ("ps1", "ps", 0), ("w0", "worker", 0)],
        "1",
        set(),
    ),
]


@pytest.mark.parametrize(
    ("min_member", "mtm", "members", "cpu", "expected"), [r[1:] for r in TASKS], ids=[r[0] for r in TASKS]
)
def test_min_task_member(
    min_member: int, mtm: dict[str, int], members: list[tuple[str, str, int]], cpu: str, expected: set[str]
) -> None:
    pg = podgroup("j", min_member, phase="Inqueue", min_task_member=mtm)
    pods = [pod(n, group="j", task=task, priority=prio) for n, task, prio in members]
    result = run([node("n0", cpu=cpu)], pods, [pg], conf=conf_with("gang", "predicates", actions="allocate"))
    assert set(result.placements) == expected
    assert ("default/j" in result.ready) is bool(expected)


def test_min_task_member_satisfied_by_running_pods() -> None:
    pg = podgroup("j", 2, phase="Running", min_task_member={"ps": 1})
    pods = [pod("ps0", group="j", task="ps", node="n0", phase="Running"), pod("w0", group="j", task="worker")]
    result = run([node("n0", cpu="2")], pods, [pg])
    assert result.placements == {"w0": "n0"}


@pytest.mark.parametrize(
    ("min_member", "mtm", "tasks", "message"),
    [
        (3, {}, ["w", "w"], "gang 2/3: waiting for 1 more pods"),
        (2, {"ps": 1}, ["w", "w", "w"], "task ps: 0/1 pods"),
        (2, {"ps": 2, "w": 1}, ["ps", "w", "w"], "task ps: 1/2 pods"),
    ],
    ids=["too-few-pods", "task-missing", "task-short"],
)
def test_not_enough_pods(min_member: int, mtm: dict[str, int], tasks: list[str], message: str) -> None:
    pg = podgroup("j", min_member, phase="Inqueue", min_task_member=mtm)
    pods = [pod(f"p{i}", group="j", task=task) for i, task in enumerate(tasks)]
    result = run([node("n0", cpu="16")], pods, [pg])
    assert result.placements == {}
    u = result.unschedulable[GroupKey("default/j")]
    assert u.reason == NOT_ENOUGH_PODS
    assert message in u.message
    assert "-" not in u.message.split(":")[-1]  # never "waiting for -1 more pods"


def test_task_named_by_label_only() -> None:
    """Volcano's job controller also writes ``volcano.sh/task-spec`` as a label; a pod carrying only the
    label still belongs to its task (before: "task master: 0/1 pods, waiting for 1 more")."""
    pg = podgroup("j", 2, phase="Inqueue", min_task_member={"master": 1, "worker": 1})
    pods = [pod("m", group="j", task_label="master"), pod("w", group="j", task="worker")]
    result = run([node("n0", cpu="4")], pods, [pg])
    assert result.unschedulable == {}
    assert result.placements == {"m": "n0", "w": "n0"}


# Elastic extras (pods beyond minMember): (id, size, min, node cpu, expected number placed)
ELASTIC = [
    ("all-fit", 5, 2, "8", 5),
    ("extras-where-room-remains", 5, 2, "3", 3),
    ("only-minimum-fits", 5, 2, "2", 2),
    ("nothing-unless-gang-whole", 5, 3, "2", 0),
]


@pytest.mark.parametrize(
    ("size", "min_member", "cpu", "count"), [r[1:] for r in ELASTIC], ids=[r[0] for r in ELASTIC]
)
def test_elastic_extras(size: int, min_member: int, cpu: str, count: int) -> None:
    pg, pods = gang("e", size, min_member=min_member)
    result = run([node("n0", cpu=cpu)], pods, [pg])
    assert len(result.placements) == count


def test_extras_of_running_gang_are_backfilled() -> None:
    pg = podgroup("e", 1, phase="Running")
    pods = [pod("e-0", group="e", node="n0", phase="Running"), pod("e-1", group="e"), pod("e-2", group="e")]
    result = run([node("n0", cpu="2")], pods, [pg])
    assert result.placements == {"e-1": "n0"}
    assert result.unschedulable == {}


def test_backfill_alone_never_starts_a_gang() -> None:
    pg, pods = gang("a", 2)
    result = run([node("n0")], pods, [pg], conf=conf_with("gang", actions="backfill"))
    assert result.placements == {}


def test_other_schedulers_pods_are_never_planned_but_their_usage_counts() -> None:
    pg, pods = gang("a", 2)
    others = [
        pod("sys", cpu="3", node="n0", phase="Running", scheduler="default-scheduler"),
        pod("theirs", cpu="100m", scheduler="default-scheduler"),
    ]
    result = run([node("n0", cpu="4"), node("n1", cpu="1")], pods + others, [pg])
    assert result.placements == {"a-0": "n0", "a-1": "n1"} or result.placements == {"a-0": "n1", "a-1": "n0"}
    result = run([node("n0", cpu="4")], pods + others, [pg])
    assert result.placements == {}
    assert "default/podgroup-theirs" not in result.admitted | set(result.unschedulable)


def test_finished_pods_free_their_node() -> None:
    pg, pods = gang("a", 2)
    done = [pod(f"d{i}", cpu="2", node="n0", phase=ph) for i, ph in enumerate(["Succeeded", "Failed"])]
    result = run([node("n0", cpu="2")], pods + done, [pg])
    assert len(result.placements) == 2


def test_deleting_pods_are_not_planned() -> None:
    pg = podgroup("a", 1, phase="Inqueue")
    result = run([node("n0")], [pod("a-0", group="a", deleting=True), pod("a-1", group="a")], [pg])
    assert result.placements == {"a-1": "n0"}


def test_orphan_pods_wait_for_their_podgroup() -> None:
    result = run([node("n0")], [pod("o-0", group="missing")])
    assert result.placements == {} and result.unschedulable == {}


def test_plain_pod_gets_an_implicit_group() -> None:
    result = run([node("n0")], [pod("p0")])
    assert result.placements == {"p0": "n0"}
    assert result.admitted == {"default/podgroup-p0"} and result.ready == {"default/podgroup-p0"}


def test_failed_plain_pod_is_left_alone() -> None:
    result = run([node("n0")], [pod("p0", node="n0", phase="Failed")])
    assert result.placements == {} and result.unschedulable == {} and result.admitted == set()


def test_gang_spreads_over_nodes_and_resources() -> None:
    pg = podgroup("j", 4, phase="Inqueue")
    pods = [pod(f"j-{i}", group="j", cpu="2") for i in range(3)] + [pod("j-gpu", group="j", cpu="1", gpus=2)]
    nodes = [node("c0", cpu="4"), node("c1", cpu="2"), node("g0", cpu="1", gpus=2)]
    result = run(nodes, pods, [pg])
    assert result.placements[PodUID("j-gpu")] == "g0"
    assert sorted(result.placements[PodUID(f"j-{i}")] for i in range(3)) == ["c0", "c0", "c1"]


def test_pods_slot_limits_a_node() -> None:
    pg, pods = gang("a", 3, cpu="100m", memory="1Mi")
    result = run([node("n0", pods=2), node("n1", pods=1)], pods, [pg])
    assert sorted(result.placements.values()) == ["n0", "n0", "n1"]
    result = run([node("n0", pods=2)], pods, [pg])
    assert result.placements == {}
    assert "needs pods 1, best node n0 has pods 0" in result.unschedulable[GroupKey("default/a")].message


@pytest.mark.parametrize(
    ("queues", "phase", "fragment"),
    [
        ([queue("q", state="Closed")], "Inqueue", "queue q is Closed"),
        ([queue("default")], "Inqueue", "queue q does not exist"),
        ([queue("default")], "Pending", "queue q does not exist"),
    ],
    ids=["closed-after-admission", "deleted-after-admission", "missing-at-enqueue"],
)
def test_unavailable_queue_plans_nothing_and_says_so(queues: list[Raw], phase: str, fragment: str) -> None:
    pg, pods = gang("a", 2, queue="q", phase=phase)
    result = run([node("n0")], pods, [pg], queues=queues)
    assert result.placements == {}
    u = result.unschedulable[GroupKey("default/a")]
    assert u.reason == QUEUE_UNAVAILABLE and fragment in u.message


def test_closed_queue_keeps_running_gang_but_plans_no_extras() -> None:
    pg = podgroup("a", 1, queue="q", phase="Running")
    pods = [pod("a-0", group="a", node="n0", phase="Running"), pod("a-1", group="a")]
    result = run([node("n0")], pods, [pg], queues=[queue("q", state="Closed")])
    assert result.placements == {}


def test_allocate_without_enqueue_action_admits_pending_groups() -> None:
    """Volcano: with no enqueue action configured, allocate treats Pending jobs as Inqueue."""
    pg, pods = gang("a", 2, phase="Pending")
    plain = pod("p0")
    result = run(
        [node("n0")], [*pods, plain], [pg], conf=conf_with("gang", "predicates", actions="allocate, backfill")
    )
    assert set(result.placements) == {"a-0", "a-1", "p0"}
    assert result.admitted == {"default/a", "default/podgroup-p0"}


def test_allocate_without_enqueue_still_honours_queues() -> None:
    pg, pods = gang("a", 1, phase="Pending", queue="q")
    result = run(
        [node("n0")],
        pods,
        [pg],
        queues=[queue("q", state="Closed")],
        conf=conf_with("gang", actions="allocate"),
    )
    assert result.placements == {} and result.unschedulable[GroupKey("default/a")].reason == QUEUE_UNAVAILABLE


def test_pending_group_is_not_allocated_when_enqueue_refuses() -> None:
    pg, pods = gang("a", 2, phase="Pending", cpu="3")
    pg["spec"]["minResources"] = {"cpu": "6"}
    result = run([node("n0", cpu="4")], pods, [pg])
    assert result.placements == {} and "over-committed" in result.unschedulable[GroupKey("default/a")].message


def test_gpu_gang() -> None:
    pg, pods = gang("g", 2, gpus=4)
    nodes = [node("cpu0", cpu="64"), node("gpu0", gpus=4), node("gpu1", gpus=8)]
    result = run(nodes, pods, [pg])
    assert set(result.placements.values()) <= {"gpu0", "gpu1"} and len(result.placements) == 2
    result = run(nodes[:2], pods, [pg])
    assert result.placements == {}
    assert f"needs {GPU} 4, best node cpu0 has {GPU} 0" in result.unschedulable[GroupKey("default/g")].message


def _scenario() -> tuple[list[Raw], list[Raw], list[Raw], list[Raw]]:
    nodes = [node(f"n{i}", cpu=str(2 + i % 3), labels={"zone": f"z{i % 2}"}) for i in range(6)]
    queues = [queue("default"), queue("q1", weight=2), queue("q2", capability={"cpu": "4"})]
    pods: list[Raw] = []
    groups: list[Raw] = []
    for g in range(8):
        size = 1 + g % 3
        q = ["default", "q1", "q2"][g % 3]
        pg, ps = gang(f"g{g}", size + 1, min_member=size, queue=q, cpu="1", selector={"zone": f"z{g % 2}"})
        pg["metadata"]["creationTimestamp"] = t(g % 4)
        for p in ps:
            p["metadata"]["creationTimestamp"] = t(g % 4)
        groups.append(pg)
        pods.extend(ps)
    pods.append(pod("plain", created=T0))
    return nodes, pods, groups, queues


def _same(a: CycleResult, b: CycleResult) -> None:
    assert a.placements == b.placements
    assert a.admitted == b.admitted
    assert a.unschedulable == b.unschedulable
    assert a.ready == b.ready


def test_deterministic() -> None:
    nodes, pods, groups, queues = _scenario()
    first = run(nodes, pods, groups, queues)
    assert first.placements  # the scenario does plan something
    _same(first, run(nodes, pods, groups, queues))
    rng = random.Random(7)
    for _ in range(5):
        rng.shuffle(nodes)
        rng.shuffle(pods)
        rng.shuffle(groups)
        rng.shuffle(queues)
        _same(first, run(nodes, pods, groups, queues))


def test_plans_respect_every_node_limit() -> None:
    """Whatever is planned, no node is over its allocatable (bound + planned), in any resource."""
    nodes, pods, groups, queues = _scenario()
    result = run(nodes, pods, groups, queues)
    use: dict[str, int] = {}
    for uid in result.placements:
        use[result.placements[uid]] = use.get(result.placements[uid], 0) + 1000
    cap = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) * 1000 for n in nodes}
    assert all(use[n] <= cap[n] for n in use)
    # And gangs are all or nothing.
    for g in groups:
        name = g["metadata"]["name"]
        n = len(placed(result, f"{name}-"))
        assert n == 0 or n >= g["spec"]["minMember"]


def test_turns_are_recorded_in_order_with_the_placements_made_by_then() -> None:
    # Three gangs in line on a node that holds two of them: each turn with how many pods were placed when
    # it ended, in the order the placements were committed (what a forecast bounds the room by).
    groups: list[Raw] = []
    pods: list[Raw] = []
    for i, name in enumerate("abc"):
        pg, made = gang(name, 2, created=t(i))
        for p in made:
            p["metadata"]["creationTimestamp"] = t(i)
        groups.append(pg)
        pods += made
    result = run([node("n0", cpu="4")], pods, groups)
    assert result.turns == [
        (GroupKey("default/a"), 2),
        (GroupKey("default/b"), 4),
        (GroupKey("default/c"), 4),
    ]
    assert [PodUID(u) for u in result.placements] == [PodUID(f"{g}-{i}") for g in "ab" for i in range(2)]
