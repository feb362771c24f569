"""Sub-groups (a PodGroup's ``subGroupPolicy``): table cases named after Volcano's allocate tests with
sub-groups (``pkg/scheduler/actions/allocate/allocate_test.go``,
TestAllocateWithPartitionPolicyNetworkTopology, Volcano master), run through pumice's enqueue and
allocate with Volcano's objects and expected bind counts (Volcano's cases check only the count,
``MinimalBindCheck``; where we also check where pods go, it is what the rules force); then pumice's own
cases for the reasons, preemption and the parser.

Nodes are ``sN-nM`` (2 cpu, 4Gi); HyperNodes ``s0``, ``s1`` (and ``s2`` where the case has it) are tier 1
over their nodes and the last one tier 2 over them, as in Volcano's cases. Every pod asks 2 cpu.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from extender.core.errors import InvalidObject
from extender.core.hypernodes import HyperNodeSet, parse_hypernode
from extender.core.model import GroupKey, Pod, PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from extender.core.snapshot import build_snapshot
from extender.core.subgroups import may_lose, sub_group_of
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult, Eviction
from extender.framework.session import Session
from extender.framework.victims import refuse_victims
from extender.plugins.registry import load_conf
from tests.core.builders import (
    NOW,
    Raw,
    conf_of,
    conf_with,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    snapshot,
)
from tests.core.test_hypernodes import exact, hn

SPEC = "volcano.sh/task-spec"
INSTANCE = "volcano.sh/task-instance"
PLUGINS = ("priority", "gang", "conformance", "predicates", "nodeorder", "network-topology-aware")
ALLOCATE = conf_with(*PLUGINS, actions="enqueue, allocate, backfill")


def policy(
    name: str, key: str, mode: str = "", tier: int = 0, size: int = 1, min_groups: int = 0, **extra: Any
) -> Raw:
    """Volcano's BuildSubGroupPolicyWithMinSubGroups: matchLabelKeys ``[key]`` and, with ``mode``, a
    network topology of that mode and highestTierAllowed ``tier``."""
    out: Raw = {
        "name": name,
        "matchLabelKeys": [key],
        "subGroupSize": size,
        "minSubGroups": min_groups,
        **extra,
    }
    if mode:
        out["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
    return out


def group(min_member: int, policies: Sequence[Raw], mode: str = "", tier: int = 0, **kw: Any) -> Raw:
    g = podgroup("pg1", min_member, queue="q1", phase="Inqueue", namespace="c1", **kw)
    if mode:
        g["spec"]["networkTopology"] = {"mode": mode, "highestTierAllowed": tier}
    g["spec"]["subGroupPolicy"] = list(policies)
    return g


def p(name: str, key: str, value: str, node_name: str = "", **kw: Any) -> Raw:
    phase = "Running" if node_name else "Pending"
    return pod(
        name,
        group="pg1",
        cpu="2",
        memory="3Gi",
        node=node_name,
        phase=phase,
        namespace="c1",
        labels={key: value},
        **kw,
    )


def leaves(*sizes: int, top: bool = True) -> tuple[list[Raw], list[Raw]]:
    """Nodes and HyperNodes: leaf ``sI`` (tier 1) holding ``sizes[I]`` nodes ``sI-nJ`` (J counting on
    across leaves, as Volcano names them), and a tier-2 HyperNode over every leaf."""
    nodes: list[Raw] = []
    hns: list[Raw] = []
    j = 1
    for i, n in enumerate(sizes):
        names = [f"s{i}-n{j + k}" for k in range(n)]
        j += n
        nodes += [node(name, cpu="2", memory="4Gi", pods=10) for name in names]
        hns.append(hn(f"s{i}", 1, *(exact(name) for name in names)))
    if top:
        hns.append(hn(f"s{len(sizes)}", 2, *(exact(f"s{i}", "HyperNode") for i in range(len(sizes)))))
    return nodes, hns


def cycle(
    nodes: list[Raw],
    hns: list[Raw],
    pods: list[Raw],
    groups: list[Raw],
    conf: str = ALLOCATE,
    classes: Sequence[Raw] = (),
) -> CycleResult:
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(x) for x in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("q1"))],
        priority_classes=[parse_priority_class(c) for c in classes],
        hypernodes=HyperNodeSet(parse_hypernode(h) for h in hns),
    )
    return run_cycle(snap, load_conf(conf), NOW)


@dataclass(frozen=True)
class Case:
    name: str  # Volcano's test case name
    group: Raw
    pods: list[Raw]
    leaves: tuple[int, ...]
    binds: int
    where: Mapping[str, str] = field(default_factory=dict)  # pod -> node, where the rules force it
    same_leaf: tuple[tuple[str, ...], ...] = ()  # pods that must share a leaf (a sub-group)


CASES = [
    Case(
        "podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate "
        "job when resources are enough",
        group(3, [policy("task1", SPEC, "soft", 0)], "hard", 2),
        [p("p1", SPEC, "master"), p("p2", SPEC, "worker"), p("p3", SPEC, "worker")],
        (2, 2),
        3,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup soft network topology constrain, can allocate "
        "job when minavailable < replicas",
        group(1, [policy("task1", SPEC, "soft", 0)], "hard", 1),
        [p("p1", SPEC, "master"), p("p2", SPEC, "worker")],
        (2, 2),
        2,
        same_leaf=(("p1", "p2"),),  # the gang's own hard tier-1 rule
    ),
    Case(
        "podgroup soft network topology constrain and subGroup hard network topology constrain, can allocate "
        "job when resources are enough",
        group(3, [policy("task1", SPEC, "hard", 1, size=2), policy("task2", INSTANCE, "hard", 1)], "soft", 0),
        [p("p1", SPEC, "master"), p("p2", SPEC, "master"), p("p3", INSTANCE, "worker")],
        (2, 1),
        3,
        where={"p3": "s1-n3"},
        same_leaf=(("p1", "p2"),),
    ),
    Case(
        "podgroup soft network topology constrain and subGroup hard network topology constrain, can not "
        "allocate job when cross highestTierAllowed tier",
        group(3, [policy("task1", SPEC, "hard", 1)], "soft", 0),
        [p("p1", SPEC, "master"), p("p2", SPEC, "worker"), p("p3", SPEC, "worker"), p("p4", SPEC, "worker")],
        (2, 2),
        0,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate "
        "job according to the network topology constrain of subGroup policy with minSubGroups",
        group(
            5,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=1),
                policy("task2", INSTANCE, "hard", 1, 2, 2),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", INSTANCE, "worker"),
            p("p3", INSTANCE, "worker"),
            p("p4", INSTANCE, "worker2"),
            p("p5", INSTANCE, "worker2"),
        ],
        (2, 2, 1),
        5,
        where={"p1": "s2-n5"},
        same_leaf=(("p2", "p3"), ("p4", "p5")),
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate "
        "job according to the network topology constrain of subGroup policy with minSubGroups and "
        "minavailable = replicas",
        group(
            3,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=1),
                policy("task2", INSTANCE, "hard", 1, 2, 1),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", INSTANCE, "worker"),
            p("p3", INSTANCE, "worker"),
            p("p4", INSTANCE, "worker2"),
            p("p5", INSTANCE, "worker2"),
        ],
        (2, 1),
        3,
        where={"p1": "s1-n3"},
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain, can allocate "
        "job according to the network topology constrain of subGroup policy with minSubGroups and hypernode "
        "resources meet minSubGroups",
        group(
            3,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=2),
                policy("task2", INSTANCE, "hard", 1, 2, 1),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", SPEC, "master2"),
            p("p3", SPEC, "master3"),
            p("p4", SPEC, "master4"),
            p("p5", INSTANCE, "worker"),
            p("p6", INSTANCE, "worker"),
            p("p7", INSTANCE, "worker2"),
            p("p8", INSTANCE, "worker2"),
        ],
        (2, 2),
        4,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain, can not "
        "allocate job when minMember is not satisfied",
        group(
            5,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=1),
                policy("task2", INSTANCE, "hard", 1, 2, 1),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", INSTANCE, "worker"),
            p("p3", INSTANCE, "worker"),
            p("p4", INSTANCE, "worker2"),
            p("p5", INSTANCE, "worker2"),
        ],
        (2, 2),
        0,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain, can not "
        "allocate job when minSubGroups is not satisfied",
        group(
            3,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=1),
                policy("task2", INSTANCE, "hard", 1, 2, 2),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", INSTANCE, "worker"),
            p("p3", INSTANCE, "worker"),
            p("p4", INSTANCE, "worker2"),
            p("p5", INSTANCE, "worker2"),
        ],
        (2, 2),
        0,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain with "
        "minSubGroups and tasks in job rescheduled, two available hyperNodes, can allocate job to nodes with "
        "affinity",
        group(2, [policy("task1", SPEC, "hard", 1, size=2, min_groups=1)], "hard", 2),
        [p("p1", SPEC, "master", "s0-n1"), p("p2", SPEC, "worker", "s1-n3"), p("p3", SPEC, "worker")],
        (2, 2),
        1,
        where={"p3": "s1-n4"},
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain with "
        "minSubGroups and tasks in job rescheduled, can not allocate job when hypernode resources are "
        "insufficient.",
        group(2, [policy("task1", SPEC, "hard", 1, size=2, min_groups=1)], "hard", 2),
        [
            p("p1", SPEC, "master", "s0-n1"),
            p("p2", SPEC, "worker", "s1-n3"),
            p("p3", SPEC, "worker", "s1-n4"),
            p("p4", SPEC, "worker"),
        ],
        (2, 2),
        0,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain with "
        "minSubGroups and tasks in job rescheduled, can allocate job when highestTierAllowed not reached and "
        "minAvailable = replicas",
        group(4, [policy("task1", SPEC, "hard", 2, size=2, min_groups=2)], "hard", 2),
        [
            p("p1", SPEC, "master", "s0-n1"),
            p("p2", SPEC, "worker", "s0-n2"),
            p("p3", SPEC, "worker"),
            p("p4", SPEC, "master"),
        ],
        (2, 2),
        2,
    ),
    Case(
        "podgroup hard network topology constrain and subGroup hard network topology constrain with "
        "minSubGroups and tasks in job rescheduled, can allocate job when subGroup is rescheduled",
        group(
            3,
            [
                policy("task1", SPEC, "hard", 1, size=1, min_groups=2),
                policy("task2", INSTANCE, "hard", 1, 2, 1),
            ],
            "hard",
            2,
        ),
        [
            p("p1", SPEC, "master"),
            p("p2", SPEC, "master2"),
            p("p3", SPEC, "master3", "s0-n1"),
            p("p4", SPEC, "master4", "s0-n2"),
            p("p5", INSTANCE, "worker"),
            p("p6", INSTANCE, "worker"),
            p("p7", INSTANCE, "worker2"),
            p("p8", INSTANCE, "worker2"),
        ],
        (2, 2),
        2,
        same_leaf=(("p5", "p6"),),
    ),
    Case(
        "no network topology at job or subgroup level but has SubJobPolicy, can allocate job successfully",
        group(2, [policy("worker", SPEC, size=1, min_groups=2)]),
        [p("p1", SPEC, "worker-0"), p("p2", SPEC, "worker-1")],
        (2,),
        2,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_volcano_case(case: Case) -> None:
    nodes, hns = leaves(*case.leaves)
    result = cycle(nodes, hns, case.pods, [case.group])
    binds = {str(u): n for u, n in result.placements.items()}
    assert len(binds) == case.binds, result.unschedulable
    for name, where in case.where.items():
        assert binds[name] == where
    running = {x["metadata"]["name"]: x["spec"].get("nodeName") for x in case.pods}
    for together in case.same_leaf:
        assert len({(binds.get(x) or running[x]).split("-")[0] for x in together}) == 1


# --- pumice's own cases --------------------------------------------------------------------------------
def partition(name: str, part: int, node_name: str = "", **kw: Any) -> Raw:
    """A pod as Volcano's job controller makes a partitioned task's: task-spec and partition-id labels."""
    raw = p(name, SPEC, "t0", node_name, **kw)
    raw["metadata"]["labels"]["volcano.sh/partition-id"] = str(part)
    return raw


def partitioned(min_member: int, min_groups: int, tier: int | None = 1, **kw: Any) -> Raw:
    """The PodGroup a vcjob task with ``partitionPolicy`` (size 2) gets (see extender.jobs.reconcile)."""
    extra: Raw = {"labelSelector": {"matchLabels": {SPEC: "t0"}}}
    rule = policy(
        "t0", "volcano.sh/partition-id", "hard" if tier is not None else "", tier or 0, 2, min_groups, **extra
    )
    return group(min_member, [rule], **kw)


def test_a_sub_group_that_cannot_reach_its_minimum_holds_the_gang_and_its_reason_names_it() -> None:
    """Three leaves of two nodes, one node of leaf s0 and one of s1 busy: four free nodes hold the gang's
    four pods, but each partition must fit in one leaf; only s2 can hold one. The reason names the
    partition that could not be placed."""
    nodes, hns = leaves(2, 2, 2)
    busy = [
        pod("busy-0", cpu="2", memory="1Gi", node="s0-n1", phase="Running"),
        pod("busy-1", cpu="2", memory="1Gi", node="s1-n3", phase="Running"),
    ]
    pods = [partition(f"t0-{i}", i // 2) for i in range(4)]
    held = cycle(nodes, hns, busy + pods, [partitioned(4, 2)])
    assert held.placements == {}
    why = held.unschedulable[GroupKey("c1/pg1")].message
    assert "subGroupPolicy t0: 1 of minSubGroups 2 sub-groups whole" in why
    assert "sub-group t0[volcano.sh/partition-id=1]: network topology hard, highestTierAllowed 1" in why
    # Without sub-groups the same gang would run across leaves.
    flat = partitioned(4, 2)
    del flat["spec"]["subGroupPolicy"]
    assert len(cycle(nodes, hns, busy + pods, [flat]).placements) == 4
    # One busy node goes: both partitions fit, each in a leaf of its own.
    ran = cycle(nodes, hns, busy[1:] + pods, [partitioned(4, 2)])
    binds = {str(u): n for u, n in ran.placements.items()}
    assert len(binds) == 4
    assert binds["t0-0"][:2] == binds["t0-1"][:2] and binds["t0-2"][:2] == binds["t0-3"][:2]


def test_min_sub_groups_below_the_partitions_starts_the_gang_with_fewer() -> None:
    """minSubGroups 1 of 2 partitions and minMember 2: the first partition starts alone when only one leaf
    has room; the second follows as extra pods, whole, when a leaf frees up."""
    nodes, hns = leaves(2, 2)
    busy = [pod("busy-0", cpu="2", memory="1Gi", node="s1-n3", phase="Running")]
    pods = [partition(f"t0-{i}", i // 2) for i in range(4)]
    result = cycle(nodes, hns, busy + pods, [partitioned(2, 1)])
    assert {str(u) for u in result.placements} == {"t0-0", "t0-1"}


def test_a_policy_with_too_few_sub_groups_waits_for_pods() -> None:
    """Volcano's CheckSubJobValid: minSubGroups 2 but the pods form one partition: the gang waits for
    pods, with a reason saying so."""
    nodes, hns = leaves(2, 2)
    result = cycle(nodes, hns, [partition("t0-0", 0), partition("t0-1", 0)], [partitioned(2, 2)])
    assert result.placements == {}
    why = result.unschedulable[GroupKey("c1/pg1")]
    assert why.reason == "NotEnoughTasks"
    assert "subGroupPolicy t0: 1 of minSubGroups 2 sub-groups have 2 pods" in why.message


def test_sub_group_membership_follows_volcano() -> None:
    """The first policy whose selector matches and whose keys the pod carries, non-empty; no
    matchLabelKeys takes no pod; no labelSelector matches every pod."""
    g = parse_podgroup(
        group(
            1,
            [
                {"name": "none", "subGroupSize": 1},
                {"name": "sel", "matchLabelKeys": ["k"], "labelSelector": {"matchLabels": {"role": "w"}}},
                {"name": "any", "matchLabelKeys": ["k"]},
            ],
        )
    )

    def of(**labels: str) -> Any:
        return sub_group_of(g, parse_pod(pod("x", labels=labels)))

    assert of(role="w", k="1") == (1, ("1",))
    assert of(role="ps", k="1") == (2, ("1",))
    assert of(role="w", k="") is None
    assert of(role="w") is None


def test_a_running_member_may_go_alone_only_while_its_policy_keeps_its_minimum() -> None:
    """Volcano's eviction bundles: a pod of a whole sub-group goes alone only when its policy keeps
    minSubGroups whole sub-groups without it; a pod of a sub-group already short goes freely."""
    g = parse_podgroup(partitioned(1, 1, tier=None))
    pods: list[Pod] = [parse_pod(partition(f"t0-{i}", i // 2, "s0-n1")) for i in range(4)]
    assert may_lose(g, pods, pods[0])  # two whole partitions, one needed
    assert not may_lose(g, pods[:3], pods[0])  # partition 1 is short already: partition 0 is the one needed
    assert may_lose(g, pods[:3], pods[2])  # partition 1 is short: its last pod costs nothing more


def test_preemption_keeps_a_running_gangs_sub_groups() -> None:
    """A low-priority gang of two partitions (minSubGroups 2, minMember 1) runs on the two nodes of one
    leaf; a high-priority pod needs one node: taking one pod would break a partition the gang needs, so
    the whole gang goes (taken whole, as a gang below its minimum would be)."""
    nodes = [node(f"n{i}", cpu="2", memory="4Gi") for i in range(4)]
    low = partitioned(1, 2, tier=None, priority_class="low")
    low["metadata"]["name"] = "pg1"
    low["status"]["phase"] = "Running"
    running = [partition(f"t0-{i}", i // 2, f"n{i}") for i in range(4)]
    high = podgroup("high", 1, queue="q1", phase="Inqueue", namespace="c1", priority_class="high")
    preemptor = pod("high-0", group="high", cpu="2", memory="1Gi", namespace="c1")
    conf = conf_with("priority", "gang", "conformance", "predicates", actions="enqueue, allocate, preempt")
    classes = [priority_class("high", 1000), priority_class("low", 10)]
    result = cycle(nodes, [], [*running, preemptor], [low, high], conf=conf, classes=classes)
    assert {str(u) for u in result.evictions} == {f"t0-{i}" for i in range(4)}
    # minSubGroups 1: one partition is spare, so one pod of it goes alone.
    low1 = partitioned(1, 1, tier=None, priority_class="low")
    low1["status"]["phase"] = "Running"
    result = cycle(nodes, [], [*running, preemptor], [low1, high], conf=conf, classes=classes)
    assert len(result.evictions) == 1


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"subGroupPolicy": [{"name": "a", "subGroupSize": 0}]}, "spec.subGroupPolicy[0].subGroupSize"),
        ({"subGroupPolicy": [{"name": "a", "minSubGroups": -1}]}, "spec.subGroupPolicy[0].minSubGroups"),
        (
            {"subGroupPolicy": [{"name": "a", "networkTopology": {"mode": "x"}}]},
            "spec.subGroupPolicy[0].networkTopology.mode",
        ),
        ({"subGroupPolicy": [{"name": "a", "matchLabelKeys": [1]}]}, "spec.subGroupPolicy[0].matchLabelKeys"),
    ],
)
def test_an_unreadable_policy_names_its_field(spec: Raw, message: str) -> None:
    raw = podgroup("pg", 1)
    raw["spec"].update(spec)
    with pytest.raises(InvalidObject, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_podgroup(raw)


def test_kube_schedulers_preemption_keeps_the_sub_groups_a_gang_needs() -> None:
    """The extender's preempt verb refuses victims that take a running gang below a policy's
    minSubGroups whole sub-groups, as below its minMember."""
    g = partitioned(1, 2, tier=None)
    g["status"]["phase"] = "Running"
    pods = [partition(f"t0-{i}", i // 2, f"n{i}") for i in range(4)]
    snap = snapshot([node(f"n{i}", cpu="2", memory="4Gi") for i in range(4)], pods, [g], [queue("q1")])
    ssn = Session(snap, build_hooks(conf_of(None).tiers()))
    assert refuse_victims(ssn, {"n0": [PodUID("t0-0")]}) == {
        "n0": "gang c1/pg1: subGroupPolicy t0 would keep 1 of minSubGroups 2 sub-groups whole"
    }
    g1 = partitioned(1, 1, tier=None)
    g1["status"]["phase"] = "Running"
    snap = snapshot([node(f"n{i}", cpu="2", memory="4Gi") for i in range(4)], pods, [g1], [queue("q1")])
    assert refuse_victims(Session(snap, build_hooks(conf_of(None).tiers())), {"n0": [PodUID("t0-0")]}) == {}


def test_a_gang_with_partitions_preempts_a_leaf_for_each_partition_or_nothing() -> None:
    """Two leaves full of low-priority one-pod jobs; a high-priority job of two partitions (two pods each,
    each partition inside one leaf): the four low pods go and each partition takes a leaf. With one low
    pod of leaf s1 as high as the job, the second partition fits nowhere: nothing is evicted."""
    nodes, hns = leaves(2, 2)
    classes = [priority_class("high", 1000), priority_class("low", 10)]
    conf = conf_with(*PLUGINS, actions="enqueue, allocate, preempt")

    def low(i: int, where: str, level: str = "low") -> tuple[Raw, Raw]:
        g = podgroup(f"low{i}", 1, queue="q1", phase="Running", namespace="c1", priority_class=level)
        return g, pod(
            f"low{i}-0", group=f"low{i}", cpu="2", memory="1Gi", node=where, phase="Running", namespace="c1"
        )

    where = ["s0-n1", "s0-n2", "s1-n3", "s1-n4"]
    lows = [low(i, n) for i, n in enumerate(where)]
    high = partitioned(4, 2, priority_class="high")
    pods = [partition(f"t0-{i}", i // 2) for i in range(4)]
    result = cycle(nodes, hns, [p for _, p in lows] + pods, [g for g, _ in lows] + [high], conf, classes)
    assert {str(u) for u in result.evictions} == {f"low{i}-0" for i in range(4)}
    binds = {str(u): n for u, n in result.placements.items()}
    assert binds["t0-0"][:2] == binds["t0-1"][:2] != binds["t0-2"][:2] == binds["t0-3"][:2]

    lows[3] = low(3, "s1-n4", "high")
    result = cycle(nodes, hns, [p for _, p in lows] + pods, [g for g, _ in lows] + [high], conf, classes)
    assert result.evictions == {} and result.placements == {}


def test_an_eviction_undone_alone_leaves_the_session_as_it_was() -> None:
    """Statement.unevict (preempt's reprieve): one eviction undone, the others kept; free capacity, queue
    usage and the inter-pod counts as if it had never happened."""
    pods = [
        pod("a", node="n0", phase="Running", labels={"app": "x"}),
        pod("b", node="n0", phase="Running", labels={"app": "x"}),
        pod(
            "w",
            labels={"app": "y"},
            anti_affinity={
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
                ]
            },
        ),
    ]
    ssn = Session(
        snapshot([node("n0", labels={"kubernetes.io/hostname": "n0"})], pods),
        build_hooks(conf_of(None).tiers()),
    )
    w = ssn.snapshot.pods[PodUID("w")]
    rules = ssn.pod_rules(w)
    assert rules is not None

    def allowed_on_n0() -> bool:
        mask = rules.allowed(w)
        assert mask is not None
        return bool(mask[0])

    assert not allowed_on_n0()
    free, used = ssn.free.copy(), ssn.queue_used["default"].copy()
    ssn.evictions_lift_rules = True
    stmt = ssn.statement()
    why = Eviction("Trial", "", GroupKey(""))
    for uid in ("a", "b"):
        stmt.evict(ssn.snapshot.pods[PodUID(uid)], 0, "default", why)
    assert allowed_on_n0()
    stmt.unevict(ssn.snapshot.pods[PodUID("a")])
    assert not allowed_on_n0()
    assert set(ssn.evicting) == {PodUID("b")}
    stmt.discard()
    assert np.array_equal(ssn.free, free) and np.array_equal(ssn.queue_used["default"], used)
    assert ssn.evicting == {} and ssn.lifted == set()
    assert all(np.array_equal(kept, fresh) for kept, fresh in rules.recount().values())
