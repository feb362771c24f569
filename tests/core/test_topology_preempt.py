"""Preempt and reclaim for a gang with a hard network topology: its victims are chosen inside one
HyperNode, tried as allocate tries them (lowest tier, fullest first), and its extra pods stay in its
HyperNode. Before, such a gang never preempted (victims were not chosen by HyperNode)."""

from __future__ import annotations

from extender.core.hypernodes import HyperNodeSet, parse_hypernode
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, Raw, conf_with, node, pod, podgroup, priority_class, queue
from tests.core.test_hypernodes import exact, hn

# Leaves interleaved by name, so node order alone would cross leaves.
NODES = [node(n, cpu="4", memory="8Gi") for n in ("a1", "a2", "b1", "b2")]
TREE = [
    hn("leaf-x", 1, exact("a1"), exact("b1")),
    hn("leaf-y", 1, exact("a2"), exact("b2")),
    hn("spine", 2, exact("leaf-x", "HyperNode"), exact("leaf-y", "HyperNode")),
]
LEAF = {"a1": "leaf-x", "b1": "leaf-x", "a2": "leaf-y", "b2": "leaf-y"}
PLUGINS = ("priority", "gang", "conformance", "predicates", "nodeorder", "network-topology-aware")


def _cycle(
    running: dict[str, str], size: int, min_member: int, protect: str = "", actions: str = "preempt"
) -> CycleResult:
    """Nodes full of one-pod low jobs (``running``: pod -> node, 4 cpu each; the pods on ``protect``'s
    nodes are of a job as high as the gang); a high ``size``-pod gang (minMember ``min_member``) of 4-cpu
    pods with networkTopology hard, highestTierAllowed 1."""
    pods: list[Raw] = []
    groups: list[Raw] = []
    for name, where in running.items():
        level = "high" if protect and LEAF[where] == protect else "low"
        pods.append(pod(name, group=name, cpu="4", memory="1Gi", node=where, phase="Running"))
        groups.append(podgroup(name, 1, phase="Running", priority_class=level))
    gang = podgroup("g", min_member, phase="Inqueue", priority_class="high")
    gang["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    groups.append(gang)
    pods += [pod(f"g-{i}", group="g", cpu="4", memory="1Gi") for i in range(size)]
    snap = build(pods, groups)
    return run_cycle(snap, load_conf(conf_with(*PLUGINS, actions=f"enqueue, allocate, {actions}")), NOW)


def build(pods: list[Raw], groups: list[Raw]) -> Snapshot:
    return build_snapshot(
        nodes=[parse_node(n) for n in NODES],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
        priority_classes=[
            parse_priority_class(priority_class("high", 100)),
            parse_priority_class(priority_class("low", 1)),
        ],
        hypernodes=HyperNodeSet(parse_hypernode(o) for o in TREE),
    )


FULL = {"r-a1": "a1", "r-a2": "a2", "r-b1": "b1", "r-b2": "b2"}


def leaves(nodes: set[str]) -> set[str]:
    return {LEAF[n] for n in nodes}


def test_the_gang_preempts_inside_one_leaf() -> None:
    result = _cycle(FULL, 2, 2)
    gang_nodes = {n for u, n in result.placements.items() if u.startswith("g-")}
    assert len(gang_nodes) == 2
    assert len(leaves(gang_nodes)) == 1
    evicted = {FULL[str(u)] for u in result.evictions}
    assert evicted == gang_nodes  # the victims are the pods of that leaf, and only those


def test_a_leaf_whose_pods_may_not_go_is_passed_over() -> None:
    """leaf-x (tried first: its name sorts first) holds pods as high as the gang: the victims come from
    leaf-y."""
    result = _cycle(FULL, 2, 2, protect="leaf-x")
    gang_nodes = {n for u, n in result.placements.items() if u.startswith("g-")}
    assert leaves(gang_nodes) == {"leaf-y"}
    assert leaves({FULL[str(u)] for u in result.evictions}) == {"leaf-y"}


def test_a_gang_no_leaf_can_hold_evicts_nothing() -> None:
    """Three 4-cpu pods need three nodes; a leaf has two: nothing is evicted, the gang waits."""
    result = _cycle(FULL, 3, 3)
    assert result.evictions == {}
    assert not any(u.startswith("g-") for u in result.placements)


def test_extra_pods_stay_in_the_gangs_leaf() -> None:
    """Minimum 1 of 2: the extra pod preempts only inside the leaf the first one took."""
    result = _cycle(FULL, 2, 1)
    gang_nodes = {n for u, n in result.placements.items() if u.startswith("g-")}
    assert len(gang_nodes) == 2
    assert len(leaves(gang_nodes)) == 1
