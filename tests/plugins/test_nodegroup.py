"""nodegroup: tables from Volcano's own tests (nodegroup_test.go: TestNodeGroup, TestNodeGroupResourceLimits,
TestNodeGroupResourceLimitAllocationEvent) with our builders and our code; reasons; preempt under the
same predicates; the preemption-side proportional predicate; conf loading; queue parsing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from extender.api import labels as L
from extender.core.errors import ConfigError, InvalidObject
from extender.core.model import NodeGroupAffinity, PodUID
from extender.core.parse import parse_queue
from extender.framework.evict import PREEMPTED
from extender.framework.session import Session
from extender.plugins.nodegroup import NodegroupPlugin
from extender.plugins.registry import load_conf
from tests.core.builders import (
    GPU,
    Raw,
    conf_with,
    key,
    node,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    run,
)
from tests.plugins.helpers import session

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"


def q(
    name: str,
    parent: str | None = None,
    *,
    req: Sequence[str] = (),
    pref: Sequence[str] = (),
    anti_req: Sequence[str] = (),
    anti_pref: Sequence[str] = (),
    affinity: bool = True,
    limits: str | None = None,
) -> Raw:
    raw = queue(name, parent=parent)
    if affinity:
        raw["spec"]["affinity"] = {
            "nodeGroupAffinity": {REQ: list(req), PREF: list(pref)},
            "nodeGroupAntiAffinity": {REQ: list(anti_req), PREF: list(anti_pref)},
        }
    if limits is not None:
        raw["metadata"]["annotations"] = {L.NODEGROUP_LIMITS_ANNOTATION: limits}
    return raw


def grouped(name: str, group: str | None, cpu: str = "4", memory: str = "16Gi") -> Raw:
    return node(name, cpu=cpu, memory=memory, labels={L.NODEGROUP_LABEL: group} if group else {})


NODES = [
    grouped("n1", "group1", "2", "4Gi"),
    grouped("n2", "group2"),
    grouped("n3", "group3"),
    grouped("n4", "group4"),
    grouped("n5", None),
]
ROOT = q(
    "root", req=["group1", "group3"], pref=["group3"], anti_req=["group2", "group4"], anti_pref=["group4"]
)
Q1 = q(
    "q1",
    "root",
    req=["group1", "group3"],
    pref=["group3"],
    anti_req=["group2", "group4"],
    anti_pref=["group4"],
)
Q2 = q("q2", "root", req=["group1"], pref=["group3"], anti_req=["group2"], anti_pref=["group4"])
Q3 = q("q3", pref=["group1", "group3"])
NO_AFFINITY_ROOT = q("root-no-affinity", affinity=False)
NO_AFFINITY = q("q-no-affinity", "root", affinity=False)
Q1_CHILD = q("q1-child", "q1", affinity=False)
NO_AFFINITY_CHILD = q("q-no-affinity-child", "q-no-affinity", affinity=False)


def _session(
    queues: list[Raw],
    target: str,
    arguments: dict[str, Any],
    hierarchy: bool,
    nodes: list[Raw] = NODES,
    **kw: Any,
) -> tuple[Session, NodegroupPlugin]:
    plugin = NodegroupPlugin(arguments)
    plugin.switches = {"enableHierarchy": hierarchy}
    pods = [pod("p", group="pg", cpu="2", memory="4Gi"), *kw.pop("pods", [])]
    groups = [podgroup("pg", 1, queue=target, phase="Inqueue"), *kw.pop("groups", [])]
    return session([plugin], nodes=nodes, pods=pods, groups=groups, queues=queues), plugin


def _feasible(ssn: Session, target: str, uid: str = "p") -> list[bool]:
    p = ssn.snapshot.pods[PodUID(uid)]
    mask = ssn.pod_mask(p).copy()
    limit = ssn.limit_mask(target, ssn.vector(p.uid))
    if limit is not None:
        mask &= limit
    return [bool(x) for x in mask]


# (id, queues, the pod's queue, arguments, hierarchy, scores n1..n5, feasible n1..n5)
T, F = True, False
NODEGROUP = [
    ("soft-subset-of-hard", [Q1], "q1", {}, False, [100, 0, 150, -1, 0], [T, F, T, T, F]),
    ("soft-not-subset-of-hard", [Q2], "q2", {}, False, [100, 0, 50, -1, 0], [T, F, T, T, F]),
    (
        "no-affinity-non-strict-only-unlabelled",
        [NO_AFFINITY_ROOT],
        "root-no-affinity",
        {"strict": False},
        False,
        [0, 0, 0, 0, 0],
        [F, F, F, F, T],
    ),
    (
        "inherits-from-parent",
        [ROOT, Q1, Q1_CHILD],
        "q1-child",
        {},
        True,
        [100, 0, 150, -1, 0],
        [T, F, T, T, F],
    ),
    (
        "inherits-from-ancestor",
        [ROOT, NO_AFFINITY, NO_AFFINITY_CHILD],
        "q-no-affinity-child",
        {},
        True,
        [100, 0, 150, -1, 0],
        [T, F, T, T, F],
    ),
    ("queue-without-affinity", [NO_AFFINITY], "q-no-affinity", {}, False, [0, 0, 0, 0, 0], [F, F, F, F, F]),
    (
        "preferred-order",
        [Q3],
        "q3",
        {"enablePreferredOrder": True},
        False,
        [50, 0, 25, 0, 0],
        [T, F, T, F, F],
    ),
    # Ours: without enableHierarchy nothing is inherited.
    (
        "no-hierarchy-no-inheritance",
        [ROOT, Q1, Q1_CHILD],
        "q1-child",
        {},
        False,
        [0, 0, 0, 0, 0],
        [F, F, F, F, F],
    ),
]


@pytest.mark.parametrize(
    ("queues", "target", "arguments", "hierarchy", "scores", "feasible"),
    [r[1:] for r in NODEGROUP],
    ids=[r[0] for r in NODEGROUP],
)
def test_volcano_nodegroup_table(
    queues: list[Raw],
    target: str,
    arguments: dict[str, Any],
    hierarchy: bool,
    scores: list[float],
    feasible: list[bool],
) -> None:
    ssn, _ = _session(queues, target, arguments, hierarchy)
    got = ssn.queue_scores(target)
    assert (np.zeros(5) if got is None else got).tolist() == scores
    assert _feasible(ssn, target) == feasible


AFFINITY = ["group1", "group2"]
LIMIT_NODES = [grouped("n1", "group1", "16", "64Gi"), grouped("n2", "group2", "16", "64Gi")]
# (id, annotation, running pods of the queue on n1, feasible n1, n2)
LIMITS = [
    ("no-annotation", None, 0, [T, T]),
    ("under-limit", '{"group1":{"cpu":"3","memory":"8Gi"}}', 0, [T, T]),
    ("omitted-dimension-unlimited", '{"group1":{"cpu":"3"}}', 0, [T, T]),
    ("specified-dimension-enforced", '{"group1":{"cpu":"1"}}', 0, [F, T]),
    ("over-limit-falls-back", '{"group1":{"cpu":"3","memory":"8Gi"}}', 1, [F, T]),
    ("invalid-annotation", '{"group1":{"cpu":', 0, [F, F]),
]


@pytest.mark.parametrize(
    ("annotation", "running", "feasible"), [r[1:] for r in LIMITS], ids=[r[0] for r in LIMITS]
)
def test_volcano_resource_limit_table(annotation: str | None, running: int, feasible: list[bool]) -> None:
    queues = [q("ql", req=AFFINITY, pref=["group1"], limits=annotation)]
    used = [
        pod(f"used{i}", group="used", cpu="2", memory="4Gi", node="n1", phase="Running")
        for i in range(running)
    ]
    ssn, _ = _session(
        queues,
        "ql",
        {},
        False,
        nodes=LIMIT_NODES,
        pods=used,
        groups=[podgroup("used", 1, queue="ql", phase="Running")],
    )
    assert _feasible(ssn, "ql") == feasible


def test_a_placement_counts_toward_the_limit_and_an_undo_gives_it_back() -> None:
    """Volcano's TestNodeGroupResourceLimitAllocationEvent, plus the undo."""
    queues = [q("ql", req=["group1"], limits='{"group1":{"cpu":"3","memory":"8Gi"}}')]
    ssn, _ = _session(
        queues,
        "ql",
        {},
        False,
        nodes=[grouped("n1", "group1", "16", "64Gi")],
        pods=[pod("p2", group="pg2", cpu="2", memory="4Gi")],
        groups=[podgroup("pg2", 1, queue="ql", phase="Inqueue")],
    )
    assert _feasible(ssn, "ql", "p2") == [True]
    stmt = ssn.statement()
    stmt.place(PodUID("p"), 0, "ql")
    assert _feasible(ssn, "ql", "p2") == [False]
    stmt.discard()
    assert _feasible(ssn, "ql", "p2") == [True]


# --- through a cycle: reasons, placements --------------------------------------------------------------
CONF = conf_with("gang", "predicates", "nodegroup", "nodeorder")


def test_required_affinity_lands_on_its_groups_and_says_why_not_elsewhere() -> None:
    nodes = [grouped("a-1", "a", "2"), grouped("b-1", "b", "8"), grouped("c-1", "c", "8")]
    queues = [q("q1", req=["a", "b"]), q("q2", req=["c"])]
    pods = [pod(f"j1-{i}", group="j1", cpu="2") for i in range(4)] + [pod("big", group="big", cpu="16")]
    groups = [podgroup("j1", 4, queue="q1", phase="Inqueue"), podgroup("big", 1, queue="q2", phase="Inqueue")]
    result = run(nodes, pods, groups, queues, conf=CONF)
    assert set(placed(result, "j1-").values()) <= {"a-1", "b-1"}
    assert len(placed(result, "j1-")) == 4
    # big fits no node of c by resources: the shortfall names a node of its group.
    assert "best node c-1" in result.unschedulable[key("big")].message


def test_a_queue_kept_off_every_node_names_its_groups() -> None:
    nodes = [grouped("a-1", "a"), grouped("b-1", "b")]
    queues = [q("q1", req=["c", "d"], pref=["a"], anti_req=["a"])]
    result = run(
        nodes, [pod("x", group="x")], [podgroup("x", 1, queue="q1", phase="Inqueue")], queues, conf=CONF
    )
    assert placed(result) == {}
    why = result.unschedulable[key("x")].message
    assert (
        "queue q1 may only use node group(s) c, d (required nodeGroupAffinity, preferred nodeGroupAffinity)"
        in why
    )


def test_a_queue_without_affinity_is_told_so_and_an_inherited_rule_names_its_queue() -> None:
    nodes = [grouped("a-1", "a")]
    queues = [q("root", req=["b"]), q("team", "root", affinity=False), q("lost", affinity=False)]
    pods = [pod("t", group="t"), pod("l", group="l")]
    groups = [
        podgroup("t", 1, queue="team", phase="Inqueue"),
        podgroup("l", 1, queue="lost", phase="Inqueue"),
    ]
    conf = conf_with("gang", "predicates", "nodegroup")
    conf = conf.replace("name: nodegroup", "name: nodegroup\n    enableHierarchy: true")
    result = run(nodes, pods, groups, queues, conf=conf)
    assert (
        "queue team may only use node group(s) b (required nodeGroupAffinity, inherited from queue root)"
        in (result.unschedulable[key("t")].message)
    )
    # A queue without spec.parent hangs below root (Volcano's tree): it inherits too.
    assert "inherited from queue root" in result.unschedulable[key("l")].message
    # Without the hierarchy neither inherits, and each is told it has no rules.
    result = run(
        nodes, pods, groups, queues, conf=conf.replace("enableHierarchy: true", "enableHierarchy: false")
    )
    assert "queue lost has no node group affinity (spec.affinity): it may use no node" in (
        result.unschedulable[key("l")].message
    )


def test_preferred_groups_win_and_preferred_anti_affinity_loses() -> None:
    nodes = [grouped("x-1", "x"), grouped("y-1", "y"), grouped("z-1", "z")]
    queues = [q("q1", req=["x", "y", "z"], pref=["y"], anti_pref=["x"])]
    result = run(
        nodes, [pod("s", group="s")], [podgroup("s", 1, queue="q1", phase="Inqueue")], queues, conf=CONF
    )
    assert placed(result) == {"s": "y-1"}
    queues = [q("q1", req=["x", "y", "z"], anti_pref=["y"])]
    result = run(
        nodes, [pod("s", group="s")], [podgroup("s", 1, queue="q1", phase="Inqueue")], queues, conf=CONF
    )
    assert placed(result) == {"s": "x-1"}  # y scores -1: x and z tie, the lowest row wins


def test_the_limit_stops_a_gang_at_its_cap_and_says_so() -> None:
    nodes = [grouped("a-1", "a", "16", "64Gi"), grouped("a-2", "a", "16", "64Gi")]
    queues = [q("q1", req=["a"], limits=json.dumps({"a": {"cpu": "5"}}))]
    pods = [pod(f"g-{i}", group="g", cpu="2") for i in range(3)] + [
        pod(f"h-{i}", group="h", cpu="2") for i in range(2)
    ]
    groups = [podgroup("g", 3, queue="q1", phase="Inqueue"), podgroup("h", 2, queue="q1", phase="Inqueue")]
    result = run(nodes, pods, groups, queues, conf=CONF)
    assert placed(result, "g-") == {}
    assert placed(result, "h-") != {}  # 4 cpu: under the cap of 5
    why = result.unschedulable[key("g")].message
    assert (
        "queue q1 would pass its volcano.sh/nodegroup-resource-limits in node group(s) a (cpu 6 > 5)" in why
    )


# --- preempt honours the same predicates ----------------------------------------------------------------
PREEMPT = conf_with("priority", "gang", "predicates", "nodegroup", actions="enqueue, allocate, preempt")
CLASSES = [priority_class("high", 1000), priority_class("low", 10)]


def test_preempt_evicts_only_on_nodes_the_queue_may_use() -> None:
    nodes = [grouped("n0-b", "b", "2"), grouped("n1-a", "a", "2")]
    queues = [q("q1", req=["a", "b"]), q("q2", req=["a"])]
    victims = [
        pod("vb", group="vb", cpu="2", node="n0-b", phase="Running"),
        pod("va", group="va", cpu="2", node="n1-a", phase="Running"),
    ]
    groups = [
        podgroup("vb", 1, queue="q1", phase="Running", priority_class="low"),
        podgroup("va", 1, queue="q1", phase="Running", priority_class="low"),
        podgroup("hi", 1, queue="q1", phase="Inqueue", priority_class="high"),
    ]
    # hi is in q1 (preempt stays in a queue): it may use a and b; n0-b comes first.
    result = run(
        nodes,
        [*victims, pod("hi", group="hi", cpu="2")],
        groups,
        queues,
        conf=PREEMPT,
        priority_classes=CLASSES,
    )
    assert set(result.evictions) == {PodUID("vb")}
    # The same with q1 narrowed to group a: the victim must be the one on n1-a.
    queues = [q("q1", req=["a"])]
    result = run(
        nodes,
        [*victims, pod("hi", group="hi", cpu="2")],
        groups,
        queues,
        conf=PREEMPT,
        priority_classes=CLASSES,
    )
    assert set(result.evictions) == {PodUID("va")}
    assert {e.reason for e in result.evictions.values()} == {PREEMPTED}
    assert placed(result) == {"hi": "n1-a"}


def test_preempt_keeps_cpu_for_idle_gpus() -> None:
    """The GPU node (first) would make room by its victim alone, but would then keep 2 cpu < 4 idle GPUs:
    the victim on the cpu node goes instead."""
    conf = conf_with(
        "priority",
        "gang",
        "predicates",
        "resource-strategy-fit",
        actions="enqueue, allocate, preempt",
        arguments={"resource-strategy-fit": {"proportional": {"enable": True, "resources": GPU}}},
    )
    nodes = [node("a-gpu", cpu="6", memory="64Gi", gpus=4), node("b-cpu", cpu="4", memory="64Gi")]
    pods = [
        pod("vg", group="vg", cpu="4", node="a-gpu", phase="Running"),
        pod("vc", group="vc", cpu="4", node="b-cpu", phase="Running"),
        pod("hi", group="hi", cpu="4"),
    ]
    groups = [
        podgroup("vg", 1, phase="Running", priority_class="low"),
        podgroup("vc", 1, phase="Running", priority_class="low"),
        podgroup("hi", 1, phase="Inqueue", priority_class="high"),
    ]
    result = run(nodes, pods, groups, conf=conf, priority_classes=CLASSES)
    assert set(result.evictions) == {PodUID("vc")}
    assert placed(result) == {"hi": "b-cpu"}


# --- conf and queue parsing -----------------------------------------------------------------------------
def test_bad_arguments_fail_startup() -> None:
    with pytest.raises(ConfigError, match="unknown argument 'stric'"):
        load_conf(conf_with("nodegroup", arguments={"nodegroup": {"stric": False}}))
    with pytest.raises(ConfigError, match="strict"):
        load_conf(conf_with("nodegroup", arguments={"nodegroup": {"strict": "no"}}))


def test_queue_affinity_is_parsed_and_a_bad_one_named() -> None:
    parsed = parse_queue(q("q", req=["a"], pref=["b"], anti_req=["c"], anti_pref=["d"], limits="{}"))
    assert parsed.node_group_affinity == NodeGroupAffinity(
        required=("a",), preferred=("b",), anti_required=("c",), anti_preferred=("d",)
    )
    assert parsed.node_group_limits == "{}"
    assert parse_queue(q("q", affinity=False)).node_group_affinity is None
    bad = q("q")
    bad["spec"]["affinity"]["nodeGroupAffinity"][REQ] = "a"
    with pytest.raises(
        InvalidObject, match=r"nodeGroupAffinity\.requiredDuringSchedulingIgnoredDuringExecution"
    ):
        parse_queue(bad)
