"""Leaving placed groups out of a snapshot changes no decision.

A cache leaves out an admitted group whose every waiting pod holds a plan (``CycleResult.placed``; kube-
scheduler binds them next) and passes what it weighs on its queue instead, as it does for settled groups
(tests/core/test_aside.py). Over random clusters and every conf that allows it: cycle once over everything,
add new gangs (and bind some planned pods of the groups still looked at), then cycle twice, once over
everything and once with the placed and settled groups left out. Both snapshots are built as the cache
builds them: the reservation ledger's totals over one node table, every pod a resident. The new gangs get
the same placements, admissions and reasons either way, and the groups left out get nothing.

Also: :meth:`Promises.asides` (many groups at once) is :meth:`Promises.aside` group by group, and a conf
outside the ones that allow it (preempt, reclaim, nodegroup) leaves no group out as placed.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import GroupKey, GroupPhase, PodGroup, PodUID
from extender.core.node_table import NodeTable
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Aside, Snapshot, build_snapshot, pod_group_key
from extender.framework.cycle import run_cycle
from extender.framework.session import Session
from tests.core.builders import Raw, conf_of, conf_with, node, pod, podgroup, queue

QUEUES = [
    queue("default", weight=1),
    queue("a", weight=2, capability={"cpu": "24"}),
    queue("b", weight=1, guarantee={"cpu": "2"}),
]

_DRF_TREE = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: drf
    enableHierarchy: true
  - name: predicates
  - name: nodeorder
"""

CONFS = (
    None,  # Volcano's default: priority, gang, conformance, overcommit, drf, predicates, proportion, ...
    conf_with("priority", "gang", "capacity", "predicates", "nodeorder", "binpack"),
    conf_with(
        "gang", "sla", "overcommit", "proportion", "predicates", "binpack", actions="enqueue, allocate"
    ),
    conf_with("gang", "drf", "proportion", "resourcequota", "task-topology", "predicates", "nodeorder"),
    _DRF_TREE,
)


def _gangs(rng: random.Random, prefix: str, n: int, phase: str) -> tuple[list[Raw], list[Raw]]:
    groups: list[Raw] = []
    pods: list[Raw] = []
    for i in range(n):
        name = f"{prefix}{i}"
        size = rng.randint(1, 4)
        cpu = rng.choice(["1", "2", "3", "6"])
        pg = podgroup(name, rng.randint(1, size), queue=rng.choice(["default", "a", "b"]), phase=phase)
        if rng.random() < 0.5:
            pg["spec"]["minResources"] = {"cpu": str(int(cpu) * rng.randint(1, size + 1))}
        groups.append(pg)
        gpus = 1 if rng.random() < 0.1 else 0
        pods += [pod(f"{name}-{j}", group=name, cpu=cpu, memory="1Gi", gpus=gpus) for j in range(size)]
    return groups, pods


def _phased(groups: Sequence[Raw], phases: Mapping[GroupKey, GroupPhase]) -> list[PodGroup]:
    out = []
    for g in groups:
        pg = parse_podgroup(g)
        if pg.key in phases:
            pg = PodGroup(**{**{f: getattr(pg, f) for f in pg.__dataclass_fields__}, "phase": phases[pg.key]})
        out.append(pg)
    return out


def _table(snap: Snapshot) -> NodeTable:
    return NodeTable(
        nodes=snap.nodes,
        index=snap.index,
        alloc=snap.alloc,
        total=snap.alloc_total,
        prefer_taints=snap.prefer_taints,
        node_pos=snap.node_pos,
        node_names=snap.node_names,
        topology=snap.topology,
    )


def _as_cache(
    nodes: Sequence[Raw],
    pods: Sequence[Raw],
    groups: Sequence[Raw],
    plans: Mapping[PodUID, str],
    phases: Mapping[GroupKey, GroupPhase],
    left_out: set[GroupKey],
    aside: Sequence[Aside],
) -> Snapshot:
    """A snapshot as the cache takes it: the groups not ``left_out`` with their pods, over the totals of
    every pod (bound, planned) and one node table, every pod a resident."""
    every_pod = [parse_pod(p) for p in pods]
    every_group = _phased(groups, phases)
    queues = [parse_queue(q) for q in QUEUES]
    whole = build_snapshot(nodes=[parse_node(n) for n in nodes], pods=every_pod, podgroups=every_group,
                           queues=queues, plans=plans)  # fmt: skip
    usage = {q: whole.index.to_map(v) for q, v in whole.queue_held.items()}
    kept = [p for p in every_pod if whole.group_of(p.uid) not in left_out]
    return build_snapshot(
        nodes=_table(whole),
        pods=kept,
        podgroups=[g for g in every_group if g.key not in left_out],
        queues=queues,
        plans=plans,
        used=whole.used,
        reserved=whole.reserved,
        queue_usage=usage,
        residents=every_pod,
        aside=aside,
        other_groups={g.key: g for g in every_group},
    )


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), conf_i=st.integers(0, len(CONFS) - 1))
def test_left_out_placed_groups_change_no_decision(seed: int, conf_i: int) -> None:
    rng = random.Random(seed)
    conf = conf_of(CONFS[conf_i])
    nodes = [
        node(f"n{i}", cpu=str(rng.choice([4, 8, 16])), memory="64Gi", gpus=rng.choice([0, 0, 2]))
        for i in range(rng.randint(2, 6))
    ]
    old_groups, old_pods = _gangs(rng, "old", rng.randint(3, 10), rng.choice(["Pending", "Inqueue"]))
    first = run_cycle(_as_cache(nodes, old_pods, old_groups, {}, {}, set(), []), conf, 0.0)
    plans = dict(first.placements)
    phases = dict.fromkeys(first.admitted, GroupPhase.INQUEUE)
    placed, settled = set(first.placed), set(first.aside)
    assert not placed & settled
    # kube-scheduler binds some planned pods of groups that stay in view (a bind touches its group).
    pods = list(old_pods)
    for i, p in enumerate(pods):
        parsed = parse_pod(p)
        uid, key = parsed.uid, pod_group_key(parsed)
        if uid in plans and key not in placed and rng.random() < 0.5:
            pods[i] = {**p, "spec": {**p["spec"], "nodeName": plans.pop(uid)}}
    new_groups, new_pods = _gangs(rng, "new", rng.randint(1, 4), "Pending")
    groups, pods = old_groups + new_groups, pods + new_pods
    left_out = placed | settled
    asides = [first.placed[k] for k in placed] + [first.aside[k] for k in settled]
    every = _as_cache(nodes, pods, groups, plans, phases, set(), [])
    fewer = _as_cache(nodes, pods, groups, plans, phases, left_out, asides)
    full, reduced = run_cycle(every, conf, 0.0), run_cycle(fewer, conf, 0.0)
    assert reduced.placements == {u: n for u, n in full.placements.items() if u in fewer.pods}
    assert reduced.admitted == full.admitted - left_out
    assert {k: u.reason for k, u in reduced.unschedulable.items()} == {
        k: u.reason for k, u in full.unschedulable.items() if k not in left_out
    }
    assert reduced.ready == full.ready - left_out
    # The groups left out get nothing, and the placed ones say nothing.
    assert not any(u in full.placements for k in left_out for u in every.members.get(k, ()))
    assert not any(k in full.unschedulable for k in placed)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6))
def test_asides_at_once_are_the_asides_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu="8", memory="64Gi", gpus=2) for i in range(rng.randint(1, 4))]
    groups, pods = _gangs(rng, "g", rng.randint(1, 8), rng.choice(["Pending", "Inqueue"]))
    snap = _as_cache(nodes, pods, groups, {}, {}, set(), [])
    conf = conf_of(None)
    ssn = Session(snap, conf.hooks(), now=0.0)
    for act in conf.actions:
        act(ssn)
    keys = [k for k in snap.groups if rng.random() < 0.7]
    assert ssn.promises.asides(keys) == {k: ssn.promises.aside(k) for k in keys}


def test_confs_with_eviction_or_node_groups_leave_nothing_out_as_placed() -> None:
    nodes = [node("n1", cpu="8")]
    groups, pods = [podgroup("g", 2, phase="Inqueue")], [pod(f"g-{i}", group="g") for i in range(2)]
    snap = _as_cache(nodes, pods, groups, {}, {}, set(), [])
    assert run_cycle(snap, conf_of(None), 0.0).placed  # the default conf leaves it out
    for text in (
        conf_with("priority", "gang", "proportion", "predicates", actions="enqueue, allocate, preempt"),
        conf_with("gang", "proportion", "predicates", actions="enqueue, allocate, reclaim"),
        conf_with("gang", "nodegroup", "predicates", "proportion"),
    ):
        result = run_cycle(_as_cache(nodes, pods, groups, {}, {}, set(), []), conf_of(text), 0.0)
        assert not result.placed


def test_a_group_with_a_pod_left_to_place_is_not_placed() -> None:
    nodes = [node("n1", cpu="8")]
    groups = [podgroup("small", 1, phase="Inqueue"), podgroup("big", 1, phase="Inqueue")]
    pods = [
        pod("small-0", group="small"),
        pod("big-0", group="big", cpu="2"),
        pod("big-1", group="big", cpu="9"),
    ]
    result = run_cycle(_as_cache(nodes, pods, groups, {}, {}, set(), []), conf_of(None), 0.0)
    assert set(result.placements) == {"small-0", "big-0"}
    assert set(result.placed) == {"default/small"}  # big-1 still waits for room
