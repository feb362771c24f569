"""network-topology-aware: tables after Volcano's allocate tests with network topologies
(allocate_test.go: "hard network topology constrain, can not allocate job when cross highestTierAllowed
tier", "... can allocate job when highestTierAllowed is 2", "soft network topology constrain ...") with our
builders and our code; tiers lowest first; hard never crosses; soft spreads only when needed; HyperNode
binpack; pods already placed pin the gang; discovery from node labels; the batch and caches stay exact;
groups without networkTopology are untouched."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.core.hypernodes import HyperNodeSet, parse_hypernode
from extender.core.model import NetworkTopology
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.jobs.model import parse_job
from extender.jobs.reconcile import podgroup_spec
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, conf_with, key, node, pod, podgroup, queue
from tests.core.test_hypernodes import exact, hn
from tests.jobs.test_reconcile import job_json, task

Raw = dict[str, Any]
PLUGINS = ("priority", "gang", "predicates", "nodeorder", "network-topology-aware")


def conf(args: Mapping[str, Any] | None = None, plugins: Sequence[str] = PLUGINS) -> str:
    extra = {"network-topology-aware": dict(args)} if args else None
    return conf_with(*plugins, actions="enqueue, allocate", arguments=extra)


def job(
    name: str,
    size: int,
    mode: str | None = None,
    tier: int | None = None,
    cpu: str = "2",
    tier_name: str | None = None,
    min_member: int | None = None,
) -> tuple[Raw, list[Raw]]:
    pg = podgroup(name, size if min_member is None else min_member, phase="Inqueue")
    if mode is not None:
        nt: Raw = {"mode": mode}
        if tier is not None:
            nt["highestTierAllowed"] = tier
        if tier_name is not None:
            nt["highestTierName"] = tier_name
        pg["spec"]["networkTopology"] = nt
    return pg, [pod(f"{name}-{i}", group=name, cpu=cpu, memory="1Gi") for i in range(size)]


def snap(
    nodes: Iterable[Raw], pods: Iterable[Raw], groups: Iterable[Raw], objs: Iterable[Raw] = ()
) -> Snapshot:
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
        hypernodes=HyperNodeSet(parse_hypernode(o) for o in objs),
    )


def cycle(
    nodes: Iterable[Raw],
    pods: Iterable[Raw],
    groups: Iterable[Raw],
    objs: Iterable[Raw] = (),
    args: Mapping[str, Any] | None = None,
) -> CycleResult:
    return run_cycle(snap(nodes, pods, groups, objs), load_conf(conf(args)), NOW)


# Volcano's table: four 2-cpu nodes, two leaves of two under one spine.
VOLCANO_NODES = [node(n, cpu="2", memory="4Gi") for n in ("s0-n1", "s0-n2", "s1-n3", "s1-n4")]
VOLCANO_TREE = [
    hn("s0", 1, exact("s0-n1"), exact("s0-n2")),
    hn("s1", 1, exact("s1-n3"), exact("s1-n4")),
    hn("s2", 2, exact("s0", "HyperNode"), exact("s1", "HyperNode")),
]


@pytest.mark.parametrize(
    ("mode", "tier", "binds"),
    [
        pytest.param("hard", 1, 0, id="hard 1: a leaf holds 2 of 3, the job waits"),
        pytest.param("hard", 2, 3, id="hard 2: the spine holds it"),
        pytest.param("soft", None, 3, id="soft: spreads when no leaf holds it"),
        pytest.param(None, None, 3, id="no networkTopology"),
    ],
)
def test_volcano_cross_tier_table(mode: str | None, tier: int | None, binds: int) -> None:
    pg, pods = job("pg1", 3, mode, tier)
    result = cycle(VOLCANO_NODES, pods, [pg], VOLCANO_TREE)
    assert len(result.placements) == binds


def test_hard_refusal_says_which_tier_and_what_was_short() -> None:
    pg, pods = job("pg1", 3, "hard", 1)
    result = cycle(VOLCANO_NODES, pods, [pg], VOLCANO_TREE)
    why = result.unschedulable[key("pg1")]
    assert why.reason == "NotEnoughResources"
    assert why.message == (
        "network topology hard, highestTierAllowed 1: no tier-1 HyperNode has room for 3 pods of "
        "cpu 2, memory 1Gi (best s0: 2)"
    )


# Leaves interleaved by name, so the usual node order (lowest row on equal scores) crosses leaves.
NODES = [node(n, cpu="4", memory="8Gi") for n in ("a1", "a2", "b1", "b2")]
TREE = [
    hn("leaf-x", 1, exact("a1"), exact("b1")),
    hn("leaf-y", 1, exact("a2"), exact("b2")),
    hn("spine", 2, exact("leaf-x", "HyperNode"), exact("leaf-y", "HyperNode")),
]
LEAF = {"leaf-x": {"a1", "b1"}, "leaf-y": {"a2", "b2"}}


def leaves_of(result: CycleResult, prefix: str) -> set[str]:
    nodes = {n for u, n in result.placements.items() if u.startswith(prefix)}
    return {name for name, members in LEAF.items() if nodes & members}


@pytest.mark.parametrize(
    ("mode", "tier"), [("hard", 1), ("hard", 2), ("soft", None), ("hard", None)], ids=str
)
def test_a_gang_one_leaf_can_hold_lands_under_one_leaf(mode: str, tier: int | None) -> None:
    pg, pods = job("g", 4, mode, tier)  # 4 x 2 cpu: one leaf (2 x 4 cpu) holds it
    result = cycle(NODES, pods, [pg], TREE)
    assert len(result.placements) == 4
    assert len(leaves_of(result, "g-")) == 1


def test_without_the_rule_the_same_gang_crosses_leaves() -> None:
    # What makes the test above bite: the usual placement spreads it (leastrequested, lowest row).
    pg, pods = job("g", 4)
    result = cycle(NODES, pods, [pg], TREE)
    assert len(result.placements) == 4
    assert len(leaves_of(result, "g-")) == 2


def test_soft_spreads_only_when_no_domain_holds_it() -> None:
    pg, pods = job("g", 6, "soft")  # 12 cpu: no leaf (8) holds it, the spine (16) does
    result = cycle(NODES, pods, [pg], TREE)
    assert len(result.placements) == 6
    pg, pods = job("g", 9, "soft")  # 18 cpu: more than the spine; soft still places what fits: nothing
    result = cycle(NODES, pods, [pg], TREE)
    assert result.placements == {}
    assert "gang 8/9" in result.unschedulable[key("g")].message


def test_hard_never_crosses_even_when_the_cluster_has_room() -> None:
    pg, pods = job("g", 6, "hard", 1)
    result = cycle(NODES, pods, [pg], TREE)
    assert result.placements == {}
    assert "no tier-1 HyperNode has room for 6 pods of cpu 2, memory 1Gi (best leaf-x: 4)" in (
        result.unschedulable[key("g")].message
    )


def test_hypernode_binpack_fills_the_used_leaf_and_keeps_the_other_whole() -> None:
    busy = pod("busy", node="b2", cpu="1", memory="1Gi", phase="Running")
    pg, pods = job("g", 2, "hard", 1, cpu="1")
    result = cycle(NODES, [busy, *pods], [pg], TREE)
    assert leaves_of(result, "g-") == {"leaf-y"}


def test_two_gangs_leave_a_whole_leaf_for_the_large_one() -> None:
    # The small gang goes first (older). Fill-first puts it beside the running pod (leaf-y), so the large
    # one still finds a whole leaf; by name order it would take leaf-x and leave no leaf for the large one.
    busy = pod("busy", node="a2", cpu="1", memory="1Gi", phase="Running")
    small_pg, small = job("small", 1, "hard", 1, cpu="1")
    large_pg, large = job("large", 4, "hard", 1, cpu="2")
    large_pg["metadata"]["creationTimestamp"] = "2024-01-01T00:00:01Z"
    result = cycle(NODES, [busy, *small, *large], [small_pg, large_pg], TREE)
    assert leaves_of(result, "small-") == {"leaf-y"}
    assert leaves_of(result, "large-") == {"leaf-x"}
    assert len(result.placements) == 5


def test_pods_already_placed_pin_the_gang() -> None:
    # One member runs on a2 (leaf-y); leaf-x is fuller (binpack would pick it), but the gang must stay
    # with its running pod.
    heavy = pod("heavy", node="a1", cpu="3", memory="1Gi", phase="Running")
    pg, pods = job("g", 3, "hard", 1, cpu="1")
    pods[0]["spec"]["nodeName"] = "a2"
    pods[0]["status"]["phase"] = "Running"
    result = cycle(NODES, [heavy, *pods], [pg], TREE)
    assert set(result.placements.values()) <= LEAF["leaf-y"]
    assert len(result.placements) == 2


def test_no_hypernodes_hard_waits_soft_places() -> None:
    pg, pods = job("g", 2, "hard", 1)
    result = cycle(NODES, pods, [pg])
    assert result.placements == {}
    assert "no HyperNode of tier 1 or lower exists" in result.unschedulable[key("g")].message
    pg, pods = job("g", 2, "soft")
    assert len(cycle(NODES, pods, [pg]).placements) == 2


def test_discovery_from_node_labels_and_tier_names() -> None:
    labelled = [
        node("a1", cpu="4", labels={"leaf": "x", "spine": "s"}),
        node("a2", cpu="4", labels={"leaf": "y", "spine": "s"}),
        node("b1", cpu="4", labels={"leaf": "x", "spine": "s"}),
        node("b2", cpu="4", labels={"leaf": "y", "spine": "s"}),
    ]
    args = {"hypernode.discovery.labels": "leaf, spine"}
    pg, pods = job("g", 4, "hard", 1)
    result = cycle(labelled, pods, [pg], args=args)
    assert len(leaves_of(result, "g-")) == 1
    pg, pods = job("g", 6, "hard", tier_name="leaf")
    result = cycle(labelled, pods, [pg], args=args)
    assert result.placements == {}
    assert "highestTierName leaf (tier 1)" in result.unschedulable[key("g")].message
    pg, pods = job("g", 6, "hard", tier_name="spine")
    assert len(cycle(labelled, pods, [pg], args=args).placements) == 6
    pg, pods = job("g", 2, "hard", tier_name="rack")
    result = cycle(labelled, pods, [pg], args=args)
    assert "no HyperNode has that tierName" in result.unschedulable[key("g")].message


def test_node_selectors_inside_a_leaf_are_told() -> None:
    # leaf-x has room by capacity but its nodes refuse the pods (selector): the try fails with why.
    pg, pods = job("g", 2, "hard", 1)
    for p in pods:
        p["spec"]["nodeSelector"] = {"gpu": "yes"}
    result = cycle(NODES, pods, [pg], TREE)
    msg = result.unschedulable[key("g")].message
    assert msg.startswith(
        "network topology hard, highestTierAllowed 1: no HyperNode of tier 1 or lower can hold"
    )
    assert "in leaf-x: gang 0/2 placeable" in msg


@pytest.mark.parametrize(("size", "placed"), [(4, 4), (6, 4)])
def test_extra_pods_of_a_hard_gang_stay_in_its_hypernode(size: int, placed: int) -> None:
    pg, pods = job("g", size, "hard", 1, min_member=2)
    result = cycle(NODES, pods, [pg], TREE)
    assert len(result.placements) == placed
    assert len(leaves_of(result, "g-")) == 1


def test_extra_pods_of_a_soft_gang_go_anywhere() -> None:
    pg, pods = job("g", 6, "soft", min_member=2)
    assert len(cycle(NODES, pods, [pg], TREE).placements) == 6


def test_pods_missing_is_said_as_usual() -> None:
    pg, pods = job("g", 4, "hard", 1, min_member=5)
    result = cycle(NODES, pods, [pg], TREE)
    assert result.unschedulable[key("g")].reason == "NotEnoughTasks"


def random_cluster(seed: int) -> tuple[list[Raw], list[Raw], list[Raw], list[Raw]]:
    rng = random.Random(seed)
    names = [f"n{i:02d}" for i in range(24)]
    nodes = [node(n, cpu=str(rng.choice([4, 8])), memory="32Gi") for n in names]
    leaves = [hn(f"leaf{i}", 1, *(exact(n) for n in names[i::6])) for i in range(6)]
    spines = [hn(f"spine{i}", 2, *(exact(f"leaf{j}", "HyperNode") for j in range(i, 6, 2))) for i in range(2)]
    pods: list[Raw] = []
    groups: list[Raw] = []
    for g in range(8):
        mode = rng.choice(["hard", "soft", None])
        size = rng.randint(1, 6)
        pg, ps = job(
            f"j{g}",
            size,
            mode,
            rng.choice([1, 2]),
            cpu=str(rng.choice([1, 2, 3])),
            min_member=rng.randint(1, size),
        )
        pg["metadata"]["creationTimestamp"] = f"2024-01-01T00:00:{g:02d}Z"
        groups.append(pg)
        pods.extend(ps)
    return nodes, pods, groups, [*leaves, *spines]


@pytest.mark.parametrize("seed", range(12))
def test_batch_and_caches_stay_exact(seed: int) -> None:
    nodes, pods, groups, objs = random_cluster(seed)
    loaded = load_conf(conf())
    results = []
    for fast in (True, False):
        ssn = Session(
            snap(nodes, pods, groups, objs),
            build_hooks(loaded.tiers()),
            batch=fast,
            cache_scores=fast,
            now=NOW,
        )
        for act in loaded.actions:
            act(ssn)
        results.append((ssn.result.placements, set(ssn.result.unschedulable)))
    assert results[0] == results[1]


@pytest.mark.parametrize("seed", range(6))
def test_groups_without_network_topology_are_untouched(seed: int) -> None:
    nodes, pods, groups, objs = random_cluster(seed)
    for g in groups:
        g["spec"].pop("networkTopology", None)
    with_plugin = cycle(nodes, pods, groups, objs)
    without = run_cycle(snap(nodes, pods, groups, objs), load_conf(conf(plugins=PLUGINS[:-1])), NOW)
    assert with_plugin.placements == without.placements


def test_conf_arguments() -> None:
    load_conf(conf({"weight": 10, "hypernode.binpack.cpu": 1}))
    with pytest.raises(ConfigError, match="unknown argument"):
        load_conf(conf({"hypernode.discovery.label": "leaf"}))


def test_a_vcjob_network_topology_reaches_its_podgroup() -> None:
    raw = job_json(
        task("worker", 4), minAvailable=4, networkTopology={"mode": "hard", "highestTierAllowed": 1}
    )
    spec = podgroup_spec(parse_job(raw))
    assert spec["networkTopology"] == {"highestTierAllowed": 1, "mode": "hard"}
    pg = parse_podgroup({"metadata": {"name": "pg", "namespace": "default"}, "spec": spec})
    assert pg.network_topology == NetworkTopology(hard=True, highest_tier=1)
    assert "networkTopology" not in podgroup_spec(parse_job(job_json(task("worker", 4))))


def test_a_workload_podgroup_takes_the_pods_annotations() -> None:
    annotations = {
        "volcano.sh/network-topology-mode": "soft",
        "volcano.sh/network-topology-highest-tier": "2",
    }
    pg = parse_podgroup(
        {"metadata": {"name": "pg", "namespace": "default", "annotations": annotations}, "spec": {}}
    )
    assert pg.network_topology == NetworkTopology(hard=False, highest_tier=2)
