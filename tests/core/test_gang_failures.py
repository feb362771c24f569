"""Failing a gang alike to one that failed since the last commit, without an attempt, changes nothing.

The allocate action remembers gangs that could not be placed, by shape, until a statement commits
(``extender.framework.gang_failures``); ``remember_failures=False`` tries every gang. Over random clusters
with many alike gangs (a few shapes, two queues, one with a capability, nearly full nodes) and confs where
the memory applies and where it must stand aside (task-topology's per-pod scores), with inter-pod rules
(residents' anti-affinity, pending pods' anti-affinity and spreads, labels they look at),
``minTaskMember``, members already running, refused nodes and plans from an earlier cycle, both give the
same placements in the same order, the same reasons, the same admitted and ready groups.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api.labels import TASK_TOPOLOGY_AFFINITY, TASK_TOPOLOGY_ANTI_AFFINITY
from extender.core.model import PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework import gang_failures
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.registry import load_conf
from tests.core.builders import (
    HOSTNAME,
    Raw,
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
    None,  # Volcano's default: proportion, nodeorder, binpack
    conf_with("gang", "predicates", "capacity", "nodeorder", "binpack"),
    conf_with("priority", "gang", "drf", "predicates", "proportion", "binpack"),
    conf_with("gang", "predicates", "proportion", "resource-strategy-fit"),
    conf_with("gang", "predicates", "proportion", "nodegroup", "nodeorder"),
    conf_with("gang", "predicates", "proportion", "task-topology", "nodeorder"),  # the memory stands aside
)
# A few shapes, so that many gangs are alike: (cpu, memory, gpus, pods, minMember).
SHAPES = (
    ("1", "1Gi", 0, 1, 1),
    ("2", "1Gi", 0, 2, 2),
    ("1", "2Gi", 1, 1, 1),
    ("3", "1Gi", 0, 3, 2),
    ("2", "1Gi", 0, 2, 1),  # alike in what waits to the next, one of whose pods runs: not in its counts
    ("2", "1Gi", 0, 3, 2),
)


def random_cluster(seed: int) -> Snapshot:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i}",
            cpu=rng.choice(("2", "4", "6")),
            memory=rng.choice(("4Gi", "8Gi")),
            gpus=rng.choice((0, 2)),
            labels={HOSTNAME: f"n{i}"},
        )
        for i in range(rng.randint(1, 6))
    ]
    queues = [queue("default"), queue("small", weight=2, capability={"cpu": rng.choice(("2", "5", "9"))})]
    pods: list[Raw] = []
    for i in range(rng.randint(0, 6)):  # running pods fill the nodes part of the way
        on = rng.choice(nodes)["metadata"]["name"]
        labels = {"app": "x"} if rng.random() < 0.5 else {}
        anti = required(term(HOSTNAME, app="y")) if rng.random() < 0.2 else None  # rules for every pod
        cpu = rng.choice(("1", "2"))
        pods.append(pod(f"run{i}", cpu=cpu, node=on, phase="Running", labels=labels, anti_affinity=anti))
    groups: list[Raw] = []
    refused: dict[PodUID, frozenset[str]] = {}
    plans: dict[PodUID, str] = {}
    shapes = rng.sample(SHAPES, rng.randint(1, len(SHAPES)))
    for g in range(rng.randint(2, 30)):
        cpu, memory, gpus, size, min_member = rng.choice(shapes)
        name = f"g{g:02d}"
        min_task = {"a": rng.randint(0, 1), "b": rng.randint(0, 1)} if rng.random() < 0.2 else None
        group = podgroup(
            name,
            min_member,
            queue=rng.choice(("default", "default", "small")),
            phase=rng.choice(("Inqueue", "Inqueue", "Inqueue", "Pending")),
            min_task_member=min_task,
            created=f"2024-01-01T00:00:{g:02d}Z",
        )
        if rng.random() < 0.3:  # task-topology: pack the pods of task a together (or keep them apart)
            which = rng.choice((TASK_TOPOLOGY_AFFINITY, TASK_TOPOLOGY_ANTI_AFFINITY))
            group["metadata"]["annotations"] = {which: "a"}
        groups.append(group)
        spec: dict[str, Any] = {"cpu": cpu, "memory": memory, "gpus": gpus}
        rules = rng.random()
        if rules < 0.1:
            spec["anti_affinity"] = required(term(HOSTNAME, app="x"))
        elif rules < 0.15:
            spec["spread"] = [spread_by(HOSTNAME, 1, app=name)]
        if rng.random() < 0.3:  # what residents' terms and spreads look at
            spec["labels"] = {"app": rng.choice(("x", "y", name))}
        for k in range(size if rng.random() < 0.9 else size - 1):  # now and then a pod short
            uid = f"{name}-{k}"
            task = rng.choice(("a", "b")) if min_task else "a"
            if k == 0 and size > 1 and rng.random() < 0.3:  # a member already running counts toward it
                on = rng.choice(nodes)["metadata"]["name"]
                pods.append(pod(uid, group=name, task=task, node=on, phase="Running", **spec))
                continue
            pods.append(pod(uid, group=name, task=task, **spec))
            if rng.random() < 0.05:
                refused[PodUID(uid)] = frozenset({rng.choice(nodes)["metadata"]["name"]})
            elif rng.random() < 0.03:
                plans[PodUID(uid)] = rng.choice(nodes)["metadata"]["name"]
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in queues],
        plans=plans,
        refused=refused,
    )


def _cycle(snap: Snapshot, conf: str | None, *, remember: bool) -> CycleResult:
    loaded = load_conf(conf)
    ssn = Session(snap, build_hooks(loaded.tiers()), remember_failures=remember)
    for act in loaded.actions:
        act(ssn)
    return ssn.result


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_failing_alike_gangs_unattempted_changes_nothing(seed: int, which: int) -> None:
    remembered = _cycle(random_cluster(seed), CONFS[which], remember=True)
    tried = _cycle(random_cluster(seed), CONFS[which], remember=False)
    assert list(remembered.placements.items()) == list(tried.placements.items())
    assert remembered.unschedulable == tried.unschedulable
    assert remembered.ready == tried.ready
    assert remembered.admitted == tried.admitted


def _full_cluster(waiting: int, conf: str | None = None) -> CycleResult:
    """One 4-cpu node, half taken, and ``waiting`` gangs of two 2-cpu pods: none fits."""
    objects = [pod("busy", cpu="2", node="n0", phase="Running")]
    groups = []
    for g in range(waiting):
        groups.append(podgroup(f"g{g}", 2, phase="Inqueue", created=f"2024-01-01T00:00:{g:02d}Z"))
        objects += [pod(f"g{g}-{k}", group=f"g{g}", cpu="2") for k in range(2)]
    snap = build_snapshot(
        nodes=[parse_node(node("n0", cpu="4", memory="64Gi"))],
        pods=[parse_pod(p) for p in objects],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
    )
    return _cycle(snap, conf, remember=True)


def test_a_backlog_of_alike_gangs_costs_one_attempt(recalled: list[bool]) -> None:
    result = _full_cluster(5)
    assert recalled == [False, True, True, True, True]
    assert len({why.message for why in result.unschedulable.values()}) == 1
    assert result.unschedulable[next(iter(result.unschedulable))].message == (
        "gang 1/2 placeable: needs cpu 2, best node n0 has cpu 0"
    )


def _one_node(cpus: tuple[str, ...]) -> Snapshot:
    """A 4-cpu node, half taken, and a gang of one pod per entry of ``cpus``, in that order of creation."""
    objects = [pod("busy", cpu="2", node="n0", phase="Running")]
    objects += [pod(f"g{g}-0", group=f"g{g}", cpu=c) for g, c in enumerate(cpus)]
    groups = [
        podgroup(f"g{g}", 1, phase="Inqueue", created=f"2024-01-01T00:00:0{g}Z") for g in range(len(cpus))
    ]
    return build_snapshot(
        nodes=[parse_node(node("n0", cpu="4", memory="64Gi"))],
        pods=[parse_pod(p) for p in objects],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
    )


def test_a_commit_between_two_alike_gangs_makes_the_second_try(recalled: list[bool]) -> None:
    """g0 (3 cpus) fails, g1 (1 cpu) fits and commits, so g2 (alike to g0) is tried afresh; g3 then is
    answered from memory."""
    result = _cycle(_one_node(("3", "1", "3", "3")), None, remember=True)
    assert set(result.placements) == {"g1-0"}
    assert recalled == [False, False, False, True]


def test_it_stands_aside_where_more_than_the_shape_decides() -> None:
    snap = _one_node(())
    assert gang_failures.applies(Session(snap, build_hooks(load_conf(None).tiers())))
    for conf in (
        conf_with("gang", "predicates", "proportion", "task-topology"),  # per-pod scores by the job's pods
        conf_with("gang", "predicates", "proportion", "deviceshare"),  # which pod holds which card
        conf_with("gang", "predicates", "proportion", "numa-aware"),  # which pod holds which NUMA cells
    ):
        assert not gang_failures.applies(Session(snap, build_hooks(load_conf(conf).tiers()))), conf
    off = Session(snap, build_hooks(load_conf(None).tiers()), remember_failures=False)
    assert not gang_failures.applies(off)
