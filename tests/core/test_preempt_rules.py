"""Volcano's preemption rules pumice follows, each a table case named after the Volcano scheduler test it
mirrors (``pkg/scheduler/actions/preempt/preempt_test.go`` TestPreempt / TestTopologyAwarePreempt and
``pkg/scheduler/actions/reclaim/reclaim_test.go`` TestReclaim, Volcano master):

- ``volcano.sh/preemptable: "false"`` (label or annotation, the annotation read first) keeps a pod from
  being a victim of preempt and reclaim;
- ``preemptionPolicy: Never`` (the pod's, or its PriorityClass's) keeps a pod from evicting anyone, in
  preempt and in reclaim; it may still take room that needs no victim;
- preempt evicts pods of the preemptor's queue until the queue may take the preemptor (its
  ``allocatable`` votes, e.g. ``capability``), and tries the next node when one cannot get there;
- with ``enableTopologyAwarePreemption: true`` a victim may be chosen to clear a required pod
  anti-affinity conflict, and victims not needed are given back; with it off (Volcano's default) such a
  conflict is not cleared by eviction.

Each Volcano case runs the preempt (or reclaim) action alone, as Volcano's test does, over the objects the
case builds; names, numbers and expected evictions are Volcano's. Where pumice differs the case says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from extender.api import labels as L
from extender.core.parse import parse_pod
from tests.core.builders import (
    Raw,
    conf_with,
    node,
    placed,
    pod,
    podgroup,
    priority_class,
    queue,
    required,
    run,
    term,
)

PREEMPTABLE = L.PREEMPTABLE_ANNOTATION
HIGH = priority_class("high-priority", 100000)
LOW = priority_class("low-priority", 10)
PREEMPT_PLUGINS = ("conformance", "gang", "priority", "proportion", "predicates")


def conf(action: str, **arguments: Any) -> str:
    text = conf_with(*PREEMPT_PLUGINS, actions=action)
    if arguments:
        args = ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in arguments.items())
        text += f"configurations:\n- name: {action}\n  arguments: {{{args}}}\n"
    return text


def pg(name: str, min_member: int, q: str = "q1", prio: str = "", phase: str = "Inqueue") -> Raw:
    return podgroup(name, min_member, queue=q, phase=phase, priority_class=prio, namespace="c1")


def running(name: str, group: str, cpu: str = "1", mem: str = "1G", node_name: str = "n1", **kw: Any) -> Raw:
    return pod(name, group=group, cpu=cpu, memory=mem, node=node_name, phase="Running", namespace="c1", **kw)


def pending(name: str, group: str, cpu: str = "1", mem: str = "1G", **kw: Any) -> Raw:
    return pod(name, group=group, cpu=cpu, memory=mem, namespace="c1", **kw)


def label(raw: Raw, **labels: str) -> Raw:
    raw["metadata"].setdefault("labels", {}).update(labels)
    return raw


def annotate(raw: Raw, **annotations: str) -> Raw:
    raw["metadata"]["annotations"].update(annotations)
    return raw


def preemptable(raw: Raw, value: str) -> Raw:
    return label(raw, **{PREEMPTABLE: value})


def never(raw: Raw) -> Raw:
    raw["spec"]["preemptionPolicy"] = "Never"
    return raw


def anti(raw: Raw, **match: str) -> Raw:
    """Required pod anti-affinity per hostname against pods labelled ``match``."""
    raw["spec"]["affinity"] = {"podAntiAffinity": required(term(**match))}
    return raw


def n(name: str, cpu: str, mem: str, pods: int = 10, **labels: str) -> Raw:
    return node(name, cpu=cpu, memory=mem, pods=pods, labels={"kubernetes.io/hostname": name, **labels})


@dataclass(frozen=True)
class Case:
    name: str  # Volcano's test case name
    groups: list[Raw]
    pods: list[Raw]
    nodes: list[Raw]
    queues: list[Raw]
    evicted: set[str]
    action: str = "preempt"
    arguments: dict[str, Any] = field(default_factory=dict)
    classes: list[Raw] = field(default_factory=lambda: [HIGH, LOW])


CASES = [
    Case(
        "preempt one task of different job to fit both jobs on one node",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1"), "true"),
            preemptable(running("preemptee2", "pg1"), "false"),
            pending("preemptor1", "pg2"),
            pending("preemptor2", "pg2"),
        ],
        [n("n1", "2", "2G")],
        [queue("q1")],
        {"preemptee1"},
    ),
    Case(
        "preempt enough tasks to fit large task of different job",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1"), "true"),
            preemptable(running("preemptee2", "pg1"), "true"),
            preemptable(running("preemptee3", "pg1"), "false"),
            pending("preemptor1", "pg2", cpu="5", mem="5G"),
        ],
        [n("n1", "6", "6G")],
        [queue("q1")],
        {"preemptee1", "preemptee2"},
    ),
    Case(
        # Volcano #3161: the node has room, the queue's capability does not.
        "preempt low priority job in same queue",
        [pg("pg1", 0, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1", "3", "3G"), "true"),
            pending("preemptor1", "pg2", "3", "3G"),
        ],
        [n("n1", "12", "12G")],
        [queue("q1", capability={"cpu": "4", "memory": "4G"})],
        {"preemptee1"},
    ),
    Case(
        "preempt low priority job in same queue: allocatable and has enough resource, don't preempt",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1", "3", "3G"), "true"),
            pending("preemptor1", "pg2", "3", "3G"),
        ],
        [n("n1", "12", "12G")],
        [queue("q1", capability={"cpu": "6", "memory": "6G"})],
        set(),
    ),
    Case(
        # Volcano #2232: the victims come in order until the queue takes the preemptor; preemptee1 may
        # not go, preemptee3 (a higher pod priority) is not needed.
        "preempt low priority job in same queue but not pod with preemptable=false or higher priority",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1"), "false"),
            preemptable(running("preemptee2", "pg1"), "true"),
            preemptable(running("preemptee3", "pg1", priority=100000), "true"),
            pending("preemptor1", "pg2"),
        ],
        [n("n1", "12", "12G")],
        [queue("q1", capability={"cpu": "3", "memory": "3G"})],
        {"preemptee2"},
    ),
    Case(
        # Volcano #3642.
        "can not preempt resources when task preemption policy is never",
        [pg("pg1", 0, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [preemptable(running("preemptee1", "pg1"), "true"), never(pending("preemptor1", "pg2"))],
        [n("n1", "1", "1Gi", pods=1)],
        [queue("q1")],
        set(),
    ),
    Case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1"), "true"),
            preemptable(running("preemptee2", "pg1"), "true"),
            pending("preemptor1", "pg2", "4", "4G"),
        ],
        [n("n1", "10", "10G")],
        [queue("q1", capability={"cpu": "3", "memory": "3G"})],
        set(),
    ),
    Case(
        # n1 comes first (no scores tell the nodes apart) and its victim cannot bring the queue under its
        # capability: n2 is tried and its victim goes, n1's stays.
        "only commit evictions on the node where preemption succeeds",
        [
            pg("pg1", 0, prio="low-priority"),
            pg("pg2", 1, prio="high-priority"),
            pg("pg3", 0, prio="low-priority"),
        ],
        [
            preemptable(running("preemptee1", "pg1"), "true"),
            preemptable(running("preemptee2", "pg3", "4", "4G", node_name="n2"), "true"),
            pending("preemptor1", "pg2", "3", "3G"),
        ],
        [n("n1", "3", "3G"), n("n2", "4", "4G")],
        [queue("q1", capability={"cpu": "6", "memory": "6G"})],
        {"preemptee2"},
    ),
    Case(
        # TestTopologyAwarePreempt: the preemptor's anti-affinity refuses n1 while preemptee2 is there; the
        # victims are taken in order (preemptee1, then preemptee2) and preemptee1 is given back.
        "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict",
        [
            pg("pg1", 0, prio="low-priority"),
            pg("pg2", 0, prio="low-priority"),
            pg("pg3", 1, prio="high-priority"),
        ],
        [
            preemptable(running("preemptee1", "pg2"), "true"),
            anti(
                label(running("preemptee2", "pg1"), **{PREEMPTABLE: "true", "test": "test"}),
                **{PREEMPTABLE: "true", "test": "test"},
            ),
            anti(label(pending("preemptor1", "pg3"), test="test"), test="test"),
        ],
        [n("n1", "2", "2Gi", pods=2)],
        [queue("q1", capability={"cpu": "2", "memory": "2G"})],
        {"preemptee2"},
        arguments={"enableTopologyAwarePreemption": True},
    ),
    Case(
        # The same with Volcano's default (TestPreempt runs with the switch off): its normal preemption
        # judges pod affinity on the node as it stands, so the conflict is never cleared by eviction.
        "preempt low-priority pod when high-priority pod has PodAntiAffinity conflict (switch off)",
        [
            pg("pg1", 0, prio="low-priority"),
            pg("pg2", 0, prio="low-priority"),
            pg("pg3", 1, prio="high-priority"),
        ],
        [
            preemptable(running("preemptee1", "pg2"), "true"),
            anti(
                label(running("preemptee2", "pg1"), **{PREEMPTABLE: "true", "test": "test"}),
                **{PREEMPTABLE: "true", "test": "test"},
            ),
            anti(label(pending("preemptor1", "pg3"), test="test"), test="test"),
        ],
        [n("n1", "2", "2Gi", pods=2)],
        [queue("q1", capability={"cpu": "2", "memory": "2G"})],
        set(),
    ),
    Case(
        # Volcano's node has 3Gi of memory; pumice's proportion never takes a queue below its deserved share
        # in any resource (a deliberate difference, see the README), and q1's memory share on 3Gi would be
        # 2.2G, which the victim's 1G takes it below: the node here has 3G.
        "Two Queue with one Queue overusing resource, should reclaim",
        [pg("pg1", 1, prio="low-priority"), pg("pg2", 1, q="q2", prio="high-priority")],
        [
            preemptable(running("preemptee1", "pg1"), "false"),
            preemptable(running("preemptee2", "pg1"), "true"),
            preemptable(running("preemptee3", "pg1"), "false"),
            pending("preemptor1", "pg2"),
        ],
        [n("n1", "3", "3G")],
        [queue("q1"), queue("q2")],
        {"preemptee2"},
        action="reclaim",
    ),
    Case(
        "can not reclaim resources when task preemption policy is never",
        [pg("pg1", 0, prio="low-priority"), pg("pg2", 0, q="q2", prio="high-priority")],
        [preemptable(running("preemptee1", "pg1"), "true"), never(pending("preemptor1", "pg2"))],
        [n("n1", "1", "1Gi", pods=1)],
        [queue("q1", weight=5), queue("q2", weight=10)],
        set(),
        action="reclaim",
        classes=[
            priority_class("low-priority", 100),
            dict(priority_class("high-priority", 1000), preemptionPolicy="Never"),
        ],
    ),
    Case(
        # Volcano's case has minMember 2 and expects the eviction though the gang cannot be whole (its
        # test harness leaves gang's JobPipelined vote off); pumice evicts only for a gang that can
        # start, so the group here asks one pod: the Never pod is passed over, the other one reclaims.
        "Reclaim succeeds for second task when first task has PreemptionPolicy=Never",
        [
            pg("pg-victim", 1, prio="low-priority", phase="Running"),
            pg("pg-preemptor", 1, q="q2", prio="high-priority-no-preempt"),
        ],
        [
            preemptable(running("victim-pod-no", "pg-victim"), "false"),
            preemptable(running("victim-pod", "pg-victim"), "true"),
            never(pending("preemptor-task1-non-preemptable", "pg-preemptor")),
            pending("preemptor-task2-preemptable", "pg-preemptor"),
        ],
        [n("n1", "2", "2G")],
        [queue("q1"), queue("q2")],
        {"victim-pod"},
        action="reclaim",
        classes=[
            priority_class("low-priority", 100),
            dict(priority_class("high-priority-no-preempt", 1000), preemptionPolicy="Never"),
            priority_class("high-priority-can-preempt", 900),
        ],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_volcano_case(case: Case) -> None:
    result = run(
        case.nodes,
        case.pods,
        case.groups,
        case.queues,
        conf=conf(case.action, **case.arguments),
        priority_classes=case.classes,
    )
    assert {str(u) for u in result.evictions} == case.evicted


# --- pumice's own cases around the same rules ------------------------------------------------------------
def test_preemptable_annotation_wins_over_the_label() -> None:
    """Volcano's GetPodPreemptable reads the annotation first, then the label; a value Go's ParseBool
    cannot read protects the pod."""
    both = annotate(preemptable(running("p", "pg1"), "true"), **{PREEMPTABLE: "false"})
    assert parse_pod(both).preemptable is False
    assert parse_pod(annotate(preemptable(running("p", "pg1"), "false"), **{PREEMPTABLE: "True"})).preemptable
    assert parse_pod(preemptable(running("p", "pg1"), "no")).preemptable is False
    assert parse_pod(running("p", "pg1")).preemptable is True


def test_a_gang_holding_a_pod_that_may_not_go_is_not_taken_whole() -> None:
    """A running gang at its minimum goes whole or not at all; one member marked not preemptable keeps
    the whole gang (taking the others would break it)."""
    groups = [pg("low", 2, prio="low-priority", phase="Running"), pg("high", 2, prio="high-priority")]
    low = [running("low-0", "low", "2", "1G"), preemptable(running("low-1", "low", "2", "1G"), "false")]
    high = [pending("high-0", "high", "2", "1G"), pending("high-1", "high", "2", "1G")]
    result = run(
        [n("n1", "4", "4G")],
        low + high,
        groups,
        [queue("q1")],
        conf=conf("preempt"),
        priority_classes=[HIGH, LOW],
    )
    assert result.evictions == {}
    low[1] = preemptable(running("low-1", "low", "2", "1G"), "true")
    result = run(
        [n("n1", "4", "4G")],
        low + high,
        groups,
        [queue("q1")],
        conf=conf("preempt"),
        priority_classes=[HIGH, LOW],
    )
    assert {str(u) for u in result.evictions} == {"low-0", "low-1"}


def test_a_pod_whose_class_says_never_evicts_nobody_but_takes_free_room() -> None:
    """The PriorityClass's preemptionPolicy counts when the pod's spec names none (a pod written without
    the API server's defaulting); room that needs no victim is still taken."""
    never_class = dict(priority_class("high-never", 100000), preemptionPolicy="Never")
    groups = [pg("low", 1, prio="low-priority", phase="Running"), pg("high", 1, prio="high-never")]
    pods = [running("low-0", "low", "2", "1G"), pending("high-0", "high", "2", "1G")]
    pods[1]["spec"]["priorityClassName"] = "high-never"
    full = run(
        [n("n1", "2", "2G")],
        pods,
        groups,
        [queue("q1")],
        conf=conf("preempt"),
        priority_classes=[never_class, LOW],
    )
    assert full.evictions == {} and placed(full) == {}
    roomy = run(
        [n("n1", "4", "4G")],
        pods,
        groups,
        [queue("q1")],
        conf=conf("preempt"),
        priority_classes=[never_class, LOW],
    )
    assert roomy.evictions == {} and placed(roomy) == {"high-0": "n1"}


def test_topology_aware_preemption_is_refused_as_an_argument_of_reclaim() -> None:
    """enableTopologyAwarePreemption is preempt's argument (Volcano's reclaim has no such switch)."""
    from extender.core.errors import ConfigError
    from extender.plugins.registry import load_conf

    with pytest.raises(ConfigError, match="enableTopologyAwarePreemption"):
        load_conf(conf("reclaim", enableTopologyAwarePreemption=True))
    load_conf(conf("preempt", enableTopologyAwarePreemption=False))


def test_topology_aware_preemption_clears_a_victims_own_anti_affinity() -> None:
    """The other direction of the conflict: a low-priority pod's anti-affinity refuses the preemptor on
    the only node; with the switch that pod may be the victim (the room itself is free)."""
    groups = [pg("low", 1, prio="low-priority", phase="Running"), pg("high", 1, prio="high-priority")]
    pods = [
        anti(running("low-0", "low"), app="web"),
        label(pending("high-0", "high"), app="web"),
    ]
    off = run(
        [n("n1", "4", "4G")], pods, groups, [queue("q1")], conf=conf("preempt"), priority_classes=[HIGH, LOW]
    )
    assert off.evictions == {}
    on = run(
        [n("n1", "4", "4G")],
        pods,
        groups,
        [queue("q1")],
        conf=conf("preempt", enableTopologyAwarePreemption=True),
        priority_classes=[HIGH, LOW],
    )
    assert {str(u) for u in on.evictions} == {"low-0"}
    assert placed(on) == {"high-0": "n1"}
