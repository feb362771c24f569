"""proportion: deserved shares by weight, queue order by share, capability on admission and allocation."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.model import GroupKey, PodUID
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES
from extender.plugins.proportion import ProportionPlugin
from tests.core.builders import Raw, conf_with, gang, node, pod, podgroup, queue, run
from tests.plugins.helpers import queue_of, session

CPU = 0  # column of cpu in every snapshot's resource index


def asks(q: str, cpu: str, *, held: bool = False) -> tuple[Raw, list[Raw]]:
    """A group in queue ``q`` with one pod asking ``cpu`` and as many Gi (bound when ``held``)."""
    name = f"{q}-job"
    pg = podgroup(name, 1, queue=q, phase="Running" if held else "Inqueue")
    p = pod(f"{name}-0", group=name, cpu=cpu, memory=f"{cpu}Gi", queue=q, node="n0" if held else "")
    return pg, [p]


# (id, queues as kwargs, cpu asked per queue, expected deserved milli-cpu per queue) on one 8-cpu node
DESERVED: list[tuple[str, list[dict[str, Any]], dict[str, str], dict[str, int]]] = [
    ("equal-weights", [{"name": "a"}, {"name": "b"}], {"a": "8", "b": "8"}, {"a": 4000, "b": 4000}),
    (
        "weights-1-3",
        [{"name": "a"}, {"name": "b", "weight": 3}],
        {"a": "8", "b": "8"},
        {"a": 2000, "b": 6000},
    ),
    ("capped-by-request", [{"name": "a"}, {"name": "b"}], {"a": "1", "b": "8"}, {"a": 1000, "b": 7000}),
    (
        "capped-by-capability",
        [{"name": "a"}, {"name": "b", "weight": 3, "capability": {"cpu": "4"}}],
        {"a": "8", "b": "8"},
        {"a": 4000, "b": 4000},
    ),
    ("nothing-asked", [{"name": "a"}, {"name": "b"}], {"a": "2"}, {"a": 2000, "b": 0}),
    (
        "explicit-deserved",
        [{"name": "a", "deserved": {"cpu": "1"}}, {"name": "b"}],
        {"a": "8", "b": "8"},
        {"a": 1000, "b": 4000},
    ),
    ("held-counts-as-asked", [{"name": "a"}, {"name": "b"}], {"a": "3!", "b": "8"}, {"a": 3000, "b": 5000}),
]


@pytest.mark.parametrize(
    ("queues", "asked", "deserved"), [r[1:] for r in DESERVED], ids=[r[0] for r in DESERVED]
)
def test_deserved(queues: list[dict[str, Any]], asked: dict[str, str], deserved: dict[str, int]) -> None:
    groups: list[Raw] = []
    pods: list[Raw] = []
    for q, cpu in asked.items():
        pg, ps = asks(q, cpu.rstrip("!"), held=cpu.endswith("!"))
        groups.append(pg)
        pods.extend(ps)
    plugin = ProportionPlugin({})
    session([plugin], [node("n0", cpu="8", memory="8Gi")], pods, groups, [queue(**q) for q in queues])
    assert {q: int(v[CPU]) for q, v in plugin.deserved.items()} == deserved


def test_queue_order_is_lowest_share_first() -> None:
    """a holds all it asks (share 1), b holds 1 of the 4 it asks (share 1/4), c holds nothing (share 0).
    The ``pods`` slot is not a share resource (Volcano's shares are over cpu, memory and scalars): b holds
    1 of its 2 pods, which must not make its share 1/2."""
    groups, pods = [], []
    for q, held, waiting in [("a", "4", None), ("b", "1", "3"), ("c", None, "8")]:
        pg, ps = asks(q, held or "0", held=held is not None)
        groups.append(pg)
        pods.extend(ps)
        if waiting:
            pods.append(pod(f"{q}-job-1", group=f"{q}-job", cpu=waiting, memory=f"{waiting}Gi"))
    plugin = ProportionPlugin({})
    ssn = session(
        [plugin], [node("n0", cpu="12", memory="12Gi")], pods, groups, [queue("a"), queue("b"), queue("c")]
    )
    shares = {q: plugin.queue_order(ssn, queue_of(ssn, q))[1] for q in "abc"}
    assert shares == pytest.approx({"a": 1.0, "b": 0.25, "c": 0.0})
    assert sorted("abc", key=lambda q: ssn.queue_key(queue_of(ssn, q))) == ["c", "b", "a"]


def test_queue_under_its_share_gets_the_room() -> None:
    """Queue a already holds 3 of 4 cpu; a's older gang and b's younger one each want the last cpu."""
    held = pod("a-held", group="a-old", cpu="3", node="n0", phase="Running", queue="a")
    a_pg = podgroup("a-new", 1, queue="a", phase="Inqueue", created="2024-01-01T00:00:00Z")
    b_pg = podgroup("b-new", 1, queue="b", phase="Inqueue", created="2024-01-02T00:00:00Z")
    pods = [held, pod("a-new-0", group="a-new"), pod("b-new-0", group="b-new")]
    groups = [podgroup("a-old", 1, queue="a", phase="Running"), a_pg, b_pg]
    queues = [queue("a"), queue("b")]
    result = run([node("n0", cpu="4")], pods, groups, queues, conf=conf_with("gang", "proportion"))
    assert set(result.placements) == {"b-new-0"}
    result = run([node("n0", cpu="4")], pods, groups, queues, conf=conf_with("gang"))
    assert set(result.placements) == {"a-new-0"}  # without proportion: job age decides


def test_capability_refuses_allocation() -> None:
    pg, pods = gang("j", 3, queue="q")
    result = run([node("n0", cpu="8")], pods, [pg], [queue("q", capability={"cpu": "2"})])
    assert result.placements == {}
    u = result.unschedulable[GroupKey("default/j")]
    assert u.reason == NOT_ENOUGH_RESOURCES
    assert u.message == "gang 2/3 placeable: queue q: cpu 3/2 over capability"


def test_capability_limits_elastic_extras() -> None:
    pg, pods = gang("j", 4, min_member=1, queue="q")
    result = run([node("n0", cpu="8")], pods, [pg], [queue("q", capability={"cpu": "2"})])
    assert len(result.placements) == 2


def test_capability_refuses_admission() -> None:
    pg = podgroup("j", 1, queue="q", min_resources={"cpu": "3", "memory": "1Gi"})
    result = run([node("n0", cpu="8")], [], [pg], [queue("q", capability={"cpu": "2", "memory": "8Gi"})])
    u = result.unschedulable[GroupKey("default/j")]
    assert (u.reason, u.message) == (
        NOT_ADMITTED,
        "queue q: cpu 3/2 over capability (cpu: used 0 + minResources 3)",  # the sum's terms spelled out
    )


def test_capability_on_extended_resource() -> None:
    pg, pods = gang("j", 2, queue="q", gpus=1)
    result = run([node("n0", gpus=8)], pods, [pg], [queue("q", capability={"nvidia.com/gpu": "1"})])
    assert result.placements == {}
    assert "nvidia.com/gpu 2/1 over capability" in result.unschedulable[GroupKey("default/j")].message


# --- preemptive: may a queue reclaim ------------------------------------------------------------------

# (id, the reclaimer's pod: cpu, memory; reason or None). Volcano proportion_test.go TestEnqueueAndAllocable:
# q1 (capability 2 cpu 2Gi) holds pod1 (1 cpu 2Gi), q2 (capability 3 cpu 3Gi) holds pod2 (2 cpu 1Gi), on two
# 2-cpu 2Gi nodes. Volcano's PreemptiveFn for proportion is its allocatable check, so its cases hold for it.
PREEMPTIVE: list[tuple[str, str, str, str | None]] = [
    # case3 ("exceed deserved, can not allocate"): pod5 would take q1 past its memory share (capped at 2Gi).
    ("past-share-in-memory", "1", "1", "queue q1: reclaiming would pass its deserved share (memory 3Gi/2Gi)"),
    # case0 ("memory exceed deserved, job only request cpu can be ... allocated"): only what it asks counts.
    ("asks-only-cpu", "1", "0", None),
]


@pytest.mark.parametrize(
    ("cpu", "memory", "reason"), [r[1:] for r in PREEMPTIVE], ids=[r[0] for r in PREEMPTIVE]
)
def test_preemptive_keeps_a_reclaimer_within_its_deserved_share(
    cpu: str, memory: str, reason: str | None
) -> None:
    nodes = [node("n1", cpu="2", memory="2Gi"), node("n2", cpu="2", memory="2Gi")]
    groups = [
        podgroup("pg1", 1, queue="q1", phase="Running"),
        podgroup("pg2", 1, queue="q2", phase="Running"),
        podgroup("pg5", 1, queue="q1", phase="Inqueue"),
    ]
    pods = [
        pod("p1", group="pg1", cpu="1", memory="2Gi", node="n1", phase="Running"),
        pod("p2", group="pg2", cpu="2", memory="1Gi", node="n2", phase="Running"),
        pod("p5", group="pg5", cpu=cpu, memory=f"{memory}Gi"),
    ]
    queues = [
        queue("q1", capability={"cpu": "2", "memory": "2Gi"}),
        queue("q2", capability={"cpu": "3", "memory": "3Gi"}),
    ]
    plugin = ProportionPlugin({})
    ssn = session([plugin], nodes, pods, groups, queues)
    assert plugin.preemptive(ssn, queue_of(ssn, "q1"), ssn.vector(PodUID("p5"))) == reason
