"""Placing a gang's identical pods as a batch gives exactly what placing them one by one gives.

The allocate and backfill actions place a run of identical pods (one request, one node mask, no inter-pod
rules) in one step (``extender.framework.place.place_run``); ``batch=False`` keeps the pod-by-pod loop.
Over random clusters and confs, including ones where batching must stand aside (inter-pod rules,
PreferNoSchedule taints that give per-pod scores, queues at capability), both give the same placements
in the same order, the same reasons and the same admitted and ready groups. Scores that change as a node
fills (binpack, leastrequested, balanced) are the case that matters: the batch replays the loop's choices.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import GroupKey, PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework import place
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.registry import SchedulerConf
from tests.core.builders import (
    GPU,
    HOSTNAME,
    ZONE,
    Raw,
    conf_of,
    conf_with,
    node,
    pod,
    podgroup,
    queue,
    required,
    spread_by,
    term,
)

CONFS = (
    None,  # Volcano's default: nodeorder (leastrequested, balanced) and binpack
    conf_with(
        "gang",
        "predicates",
        "proportion",
        "nodeorder",
        "binpack",
        arguments={
            "nodeorder": {
                "mostrequested.weight": 2,
                "leastrequested.weight": 0,
                "balancedresource.weight": 3,
            },
            "binpack": {"binpack.weight": 5, "binpack.cpu": 2, "binpack.resources": GPU},
        },
    ),
    conf_with("gang", "predicates", "nodeorder", arguments={"nodeorder": {"balancedresource.weight": 0}}),
    conf_with("gang", "predicates", "proportion", "binpack", actions="allocate, backfill"),
    conf_with("gang", "predicates", "proportion"),  # no scores at all: the lowest row wins every tie
)
CPUS = ("100m", "250m", "500m", "1", "2", "3")
MEMS = ("128Mi", "512Mi", "1Gi", "3Gi")


def random_cluster(seed: int) -> Snapshot:
    """Nodes of a few sizes (some cordoned, tainted, labelled), pods already running, and gangs whose
    tasks are runs of identical pods (a few planned by an earlier cycle, a few with a node refused), in
    queues one of which has a small capability."""
    rng = random.Random(seed)
    soft = rng.random() < 0.3  # PreferNoSchedule taints: nodeorder then scores each pod by itself
    nodes: list[Raw] = []
    for i in range(rng.randint(1, 30)):
        taints = []
        if rng.random() < 0.1:
            taints.append({"key": "dedicated", "value": "x", "effect": "NoSchedule"})
        if soft and rng.random() < 0.3:
            taints.append({"key": "spot", "value": "", "effect": "PreferNoSchedule"})
        nodes.append(
            node(
                f"n{i:02d}",
                cpu=rng.choice(("1", "2", "4", "8")),
                memory=rng.choice(("2Gi", "4Gi", "8Gi")),
                pods=rng.choice((3, 8, 110)),
                gpus=rng.choice((0, 0, 2, 4)),
                labels={HOSTNAME: f"n{i:02d}", ZONE: f"z{i % 3}"},
                taints=taints,
                unschedulable=rng.random() < 0.05,
            )
        )
    queues = [queue("default"), queue("small", weight=2, capability={"cpu": rng.choice(("2", "6"))})]
    pods: list[Raw] = []
    for i in range(rng.randint(0, 8)):
        pods.append(
            pod(
                f"run{i}",
                cpu=rng.choice(CPUS),
                memory=rng.choice(MEMS),
                node=rng.choice(nodes)["metadata"]["name"],
                phase="Running",
                labels={"app": rng.choice("ab")},
            )
        )
    groups: list[Raw] = []
    refused: dict[PodUID, frozenset[str]] = {}
    plans: dict[PodUID, str] = {}  # planned by an earlier cycle: reservations, and members counted whole
    for g in range(rng.randint(1, 14)):
        name = f"g{g:02d}"
        tasks = {f"t{t}": rng.randint(1, 9) for t in range(rng.randint(1, 3))}
        size = sum(tasks.values())
        min_task = {t: rng.randint(0, n) for t, n in tasks.items()} if rng.random() < 0.3 else None
        groups.append(
            podgroup(
                name,
                rng.randint(1, size),
                queue=rng.choice(("default", "default", "small")),
                phase=rng.choice(("Inqueue", "Inqueue", "Pending")),
                min_task_member=min_task,
                created=f"2024-01-01T00:00:{g:02d}Z",
            )
        )
        for t, n in tasks.items():
            # One spec per task, as a job controller makes them; now and then a pod of its own.
            spec: dict[str, Any] = {
                "cpu": rng.choice(CPUS),
                "memory": rng.choice(MEMS),
                "gpus": rng.choice((0, 0, 0, 1)),
                "task": t,
                "priority": rng.choice((0, 0, 5)),
            }
            if rng.random() < 0.2:
                spec["selector"] = {ZONE: f"z{rng.randrange(3)}"}
            if rng.random() < 0.1:
                spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
            rules = rng.random()
            if rules < 0.08:
                spec["anti_affinity"] = required(term(HOSTNAME, app=name))
                spec["labels"] = {"app": name}
            elif rules < 0.12:
                spec["spread"] = [spread_by(ZONE, 1, app=name)]
                spec["labels"] = {"app": name}
            for k in range(n):
                own = dict(spec)
                if rng.random() < 0.05:
                    own["cpu"] = rng.choice(CPUS)
                uid = f"{name}-{t}-{k}"
                pods.append(pod(uid, group=name, **own))
                if rng.random() < 0.05:
                    refused[PodUID(uid)] = frozenset({rng.choice(nodes)["metadata"]["name"]})
                elif rng.random() < 0.05:
                    plans[PodUID(uid)] = rng.choice(nodes)["metadata"]["name"]
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in queues],
        plans=plans,
        refused=refused,
    )


def _cycle(snap: Snapshot, conf: SchedulerConf, *, batch: bool) -> CycleResult:
    ssn = Session(snap, build_hooks(conf.tiers()), batch=batch)
    for act in conf.actions:
        act(ssn)
    return ssn.result


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_batched_placement_equals_one_by_one(seed: int, which: int) -> None:
    conf = conf_of(CONFS[which])
    batched = _cycle(random_cluster(seed), conf, batch=True)
    single = _cycle(random_cluster(seed), conf, batch=False)
    assert list(batched.placements.items()) == list(single.placements.items())
    assert batched.unschedulable == single.unschedulable
    assert batched.ready == single.ready
    assert batched.admitted == single.admitted


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many pods each batch placed (a spy on the batch step)."""
    placed: list[int] = []
    real: Callable[..., int | None] = place.place_run

    def spy(*args: object) -> int | None:
        n = real(*args)
        if n:
            placed.append(n)
        return n

    monkeypatch.setattr(place, "place_run", spy)
    return placed


# (id, conf, expected placements of gang g: 6 pods of 1 cpu over three 4-cpu nodes, n0 half full)
FILL = [
    # leastrequested alone: the emptiest node each time, so the pods spread and refill n0 last.
    (
        "leastrequested-spreads",
        conf_with("gang", "predicates", "nodeorder", arguments={"nodeorder": {"balancedresource.weight": 0}}),
        ["n1", "n2", "n1", "n2", "n0", "n1"],
    ),
    # binpack alone: the fullest node that still fits, so n0 fills first, then the lowest row.
    ("binpack-packs", conf_with("gang", "predicates", "binpack"), ["n0", "n0", "n1", "n1", "n1", "n1"]),
    # No scorer: every node scores 0 and the lowest row that fits wins.
    ("no-scores-lowest-row", conf_with("gang", "predicates"), ["n0", "n0", "n1", "n1", "n1", "n1"]),
]


@pytest.mark.parametrize(("conf", "expected"), [r[1:] for r in FILL], ids=[r[0] for r in FILL])
def test_batch_replays_scores_that_change_as_nodes_fill(
    conf: str, expected: list[str], batches: list[int]
) -> None:
    nodes = [node(f"n{i}", cpu="4", memory="64Gi") for i in range(3)]
    running = [pod("busy", cpu="2", memory="1Gi", node="n0", phase="Running")]
    gang_pods = [pod(f"g-{i}", group="g", cpu="1", memory="1Gi") for i in range(6)]
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in [*running, *gang_pods]],
        podgroups=[parse_podgroup(podgroup("g", 6, phase="Inqueue"))],
        queues=[parse_queue(queue("default"))],
    )
    batched = _cycle(snap, conf_of(conf), batch=True)
    assert batches == [6]  # the whole gang in one batch
    assert list(batched.placements.values()) == expected
    assert batched.placements == _cycle(snap, conf_of(conf), batch=False).placements


def test_a_run_that_runs_out_of_room_stops_where_the_loop_does(batches: list[int]) -> None:
    """5 of 7 fit: the batch places 5, the 6th goes through the loop for the reason, nothing is kept."""
    nodes = [node("n0", cpu="3"), node("n1", cpu="2")]
    pods = [pod(f"g-{i}", group="g", cpu="1", memory="100Mi") for i in range(7)]
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup("g", 7, phase="Inqueue"))],
        queues=[parse_queue(queue("default"))],
    )
    batched = _cycle(snap, conf_of(None), batch=True)
    single = _cycle(snap, conf_of(None), batch=False)
    assert batches == [5]
    assert batched.placements == single.placements == {}
    assert batched.unschedulable == single.unschedulable
    assert batched.unschedulable[GroupKey("default/g")].message == (
        "gang 5/7 placeable: needs cpu 1, best node n0 has cpu 0"
    )


def test_pods_with_inter_pod_rules_are_placed_one_by_one(batches: list[int]) -> None:
    """Anti-affinity between the members: each placement changes where the next may go."""
    nodes = [node(f"n{i}", labels={HOSTNAME: f"n{i}"}) for i in range(4)]
    anti = required(term(HOSTNAME, app="g"))
    pods = [pod(f"g-{i}", group="g", labels={"app": "g"}, anti_affinity=anti) for i in range(3)]
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup("g", 3, phase="Inqueue"))],
        queues=[parse_queue(queue("default"))],
    )
    result = _cycle(snap, conf_of(None), batch=True)
    assert batches == []
    assert len(set(result.placements.values())) == 3


def test_queue_capability_is_checked_for_the_whole_run(batches: list[int]) -> None:
    """A queue with room for 3 of a gang of 4: no batch can pass the check, the loop stops at the 4th."""
    pods = [pod(f"g-{i}", group="g", cpu="1", queue="q") for i in range(5)]
    snap = build_snapshot(
        nodes=[parse_node(node("n0", cpu="8"))],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(podgroup("g", 4, queue="q", phase="Inqueue"))],
        queues=[parse_queue(queue("q", capability={"cpu": "3"})), parse_queue(queue("default"))],
    )
    batched = _cycle(snap, conf_of(None), batch=True)
    single = _cycle(snap, conf_of(None), batch=False)
    assert batches == []
    assert batched.placements == single.placements == {}
    assert batched.unschedulable == single.unschedulable
    assert (
        batched.unschedulable[GroupKey("default/g")].message
        == "gang 3/4 placeable: queue q: cpu 4/3 over capability"
    )
