"""Queue positions: the allocate action's own turns, so the order is the order it places groups in."""

from __future__ import annotations

import random

import pytest

from extender.core.model import GroupKey
from extender.core.snapshot import pod_group_key
from extender.forecast.model import Position
from extender.forecast.positions import positions
from extender.framework.cycle import run_cycle
from tests.core.builders import NOW, Raw, conf_of, gang, node, pod, priority_class, queue, snapshot


def order(pos: dict[GroupKey, Position]) -> list[str]:
    return [k.partition("/")[2] for k, _ in sorted(pos.items(), key=lambda kv: kv[1].in_cluster)]


def test_the_fairest_queue_takes_the_next_turn() -> None:
    """Queue a holds 4 of 10 cpu and deserves 7 (b asks only 3): b's share is lower until it holds 2 of
    its 3, then the turns alternate as each turn raises the share of the queue that took it."""
    held, held_pods = gang("running", 1, queue="a", cpu="4", memory="4Gi", phase="Running", node="n")
    held_pods[0]["status"]["phase"] = "Running"
    pods, groups = held_pods, [held]
    for q in ("a", "b"):
        for i in (1, 2, 3):
            g, ps = gang(f"{q}{i}", 1, queue=q, created=f"2024-01-01T00:00:0{i}Z")
            groups.append(g)
            pods += ps
    snap = snapshot([node("n", cpu="10", memory="64Gi")], pods, groups, [queue("a"), queue("b")])
    pos = positions(snap, conf_of(None), NOW)
    assert order(pos) == ["b1", "b2", "a1", "b3", "a2", "a3"]
    a2 = pos[GroupKey("default/a2")]
    assert (a2.queue, a2.in_queue, a2.in_cluster, a2.ahead) == ("a", 2, 5, (GroupKey("default/a1"),))


def test_priority_goes_first_within_a_queue_and_a_closed_queue_has_no_line() -> None:
    low, low_pods = gang("low", 1, created="2024-01-01T00:00:01Z")
    high, high_pods = gang("high", 1, created="2024-01-01T00:00:09Z", priority=100)
    high["spec"]["priorityClassName"] = "urgent"
    shut, shut_pods = gang("shut", 1, queue="closed")
    snap = snapshot(
        [node("n")],
        [*low_pods, *high_pods, *shut_pods],
        [low, high, shut],
        [queue("default"), queue("closed", state="Closed")],
        priority_classes=[priority_class("urgent", 100)],
    )
    pos = positions(snap, conf_of(None), NOW)
    assert order(pos) == ["high", "low"]
    assert GroupKey("default/shut") not in pos


def test_a_queue_at_its_share_waits_behind_the_others() -> None:
    """With a capability, a queue that reaches its deserved share takes no more turns this cycle."""
    conf = """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}]
"""
    groups: list[Raw] = []
    pods: list[Raw] = []
    for name, q in (("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")):
        g, ps = gang(name, 1, queue=q, cpu="2", created=f"2024-01-01T00:00:0{len(groups)}Z")
        groups.append(g)
        pods += ps
    snap = snapshot([node("n", cpu="8")], pods, groups, [queue("a", capability={"cpu": "2"}), queue("b")])
    pos = positions(snap, conf_of(conf), NOW)
    # a deserves 2 cpu: a1 takes it; a2 and a3 come after b1.
    assert order(pos) == ["a1", "b1", "a2", "a3"]
    assert pos[GroupKey("default/a3")].in_queue == 3


@pytest.mark.parametrize("seed", range(8))
def test_when_everything_fits_allocate_places_groups_in_position_order(seed: int) -> None:
    """The cluster order is the order a cycle's allocate takes groups: with room for all, the order of
    its placements."""
    rnd = random.Random(seed)
    queues = [queue(q, weight=rnd.randint(1, 4)) for q in ("a", "b", "c")]
    pods = [pod("held", group="held", node="n0", cpu=str(rnd.randint(1, 8)), queue="b", phase="Running")]
    groups = []
    for i in range(12):
        q = rnd.choice("abc")
        g, ps = gang(
            f"g{i}",
            rnd.randint(1, 3),
            queue=q,
            cpu=str(rnd.randint(1, 3)),
            created=f"2024-01-01T00:{i:02}:00Z",
            priority=rnd.choice([0, 0, 10]),
        )
        groups.append(g)
        pods += ps
    nodes = [node(f"n{i}", cpu="64", memory="256Gi") for i in range(4)]
    snap = snapshot(nodes, pods, groups, queues)
    conf = conf_of(None)
    pos = positions(snap, conf, NOW)
    result = run_cycle(snap, conf, NOW)
    placed: list[str] = []
    for uid in result.placements:
        name = pod_group_key(snap.pods[uid]).partition("/")[2]
        if name not in placed:
            placed.append(name)
    assert placed == order(pos)


def test_a_group_whose_gang_runs_has_no_place_in_line_while_its_phase_lags() -> None:
    """The status writer turns a group Running a moment after its gang binds. A forecast taken in between
    must not put it in line: it gave a fourth position to a queue of three waiting gangs (e2e)."""
    started, started_pods = gang("started", 2, phase="Inqueue", node="n", created="2024-01-01T00:00:01Z")
    for p in started_pods:
        p["status"]["phase"] = "Running"
    short, short_pods = gang("short", 2, phase="Inqueue", created="2024-01-01T00:00:02Z")
    short_pods[1]["spec"]["nodeName"] = "n"  # one of two bound: the gang is not whole yet
    waiting, waiting_pods = gang("waiting", 1, created="2024-01-01T00:00:03Z")
    snap = snapshot(
        [node("n", cpu="16")],
        [*started_pods, *short_pods, *waiting_pods],
        [started, short, waiting],
        [queue("default")],
    )
    pos = positions(snap, conf_of(None), NOW)
    assert sorted(order(pos)) == ["short", "waiting"]  # "started" has no place in line
