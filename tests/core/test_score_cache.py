"""The per-request score cache is exact: cached scores equal a fresh sum, and placements do not change.

The same for the inter-pod counts a cycle keeps current as it places and discards pods: at every step
they, and the masks and scores drawn from them, equal a count made afresh.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import fit
from extender.core.interpod import PodsOnNodes
from extender.core.model import PodUID
from extender.core.snapshot import Snapshot
from extender.framework.hooks import build_hooks
from extender.framework.plugin import Plugin
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
    gang,
    node,
    pod,
    prefer_node,
    preferred,
    replay,
    required,
    snapshot,
    spread_by,
    term,
)

CPUS = ("250m", "500m", "1", "2")
MEMS = ("256Mi", "1Gi", "2Gi")
# Volcano's default conf, and one that weighs GPUs in binpack and packs with mostrequested.
CONFS = (
    None,
    conf_with(
        "gang",
        "predicates",
        "nodeorder",
        "binpack",
        arguments={
            "nodeorder": {"mostrequested.weight": 2, "leastrequested.weight": 0},
            "binpack": {"binpack.weight": 5, "binpack.cpu": 2, "binpack.resources": GPU},
        },
    ),
)


APPS = ("a", "b", "c")


class PodRules(TypedDict, total=False):
    """The keyword arguments of :func:`tests.core.builders.pod` that :func:`_rules` sets."""

    labels: Mapping[str, str]
    anti_affinity: Mapping[str, Any]
    pod_affinity: Mapping[str, Any]
    spread: Sequence[Mapping[str, Any]]
    preferred_nodes: Sequence[Mapping[str, Any]]


def _rules(rng: random.Random) -> PodRules:
    """Pod kwargs for a random mix of inter-pod, spread and node preferences (often none)."""
    kw: PodRules = {"labels": {"app": rng.choice(APPS)}}
    key = rng.choice((HOSTNAME, ZONE))
    kind = rng.randrange(8)
    if kind == 1:
        kw["anti_affinity"] = required(term(key, app=rng.choice(APPS)))
    elif kind == 2:
        kw["pod_affinity"] = required(term(key, app=rng.choice(APPS)))
    elif kind == 3:
        kw["spread"] = [spread_by(ZONE, rng.randint(1, 2), hard=rng.random() < 0.5, app=rng.choice(APPS))]
    elif kind == 4:
        kw["pod_affinity"] = preferred((rng.randint(1, 100), term(key, app=rng.choice(APPS))))
        kw["anti_affinity"] = preferred((rng.randint(1, 100), term(key, app=rng.choice(APPS))))
    elif kind == 5:
        kw["preferred_nodes"] = [
            prefer_node(rng.randint(1, 100), {"key": ZONE, "operator": "In", "values": ["z1"]})
        ]
    return kw


def _cluster(seed: int, rules: bool = False) -> Snapshot:
    """A random cluster; with ``rules``, labelled nodes (zones, some PreferNoSchedule taints) and pods
    with the mix of :func:`_rules`."""
    rng = random.Random(seed)
    soft_taint = [{"key": "spot", "value": "", "effect": "PreferNoSchedule"}]
    nodes = [
        node(
            f"n{i:02d}",
            cpu=rng.choice(("2", "4", "8")),
            memory=rng.choice(("4Gi", "8Gi", "16Gi")),
            gpus=rng.choice((0, 0, 4)),
            pods=rng.choice((4, 110)),
            labels={HOSTNAME: f"n{i:02d}", ZONE: f"z{i % 3}"} if rules else None,
            taints=soft_taint if rules and rng.random() < 0.2 else (),
        )
        for i in range(rng.randint(10, 40))
    ]
    pods: list[Raw] = []
    for i in range(rng.randint(0, 10)):
        n = rng.choice(nodes)["metadata"]["name"]
        kw: PodRules = _rules(rng) if rules else {}
        pods.append(
            pod(f"run{i}", cpu=rng.choice(CPUS), memory=rng.choice(MEMS), node=n, phase="Running", **kw)
        )
    groups: list[Raw] = []
    for g in range(rng.randint(1, 25)):
        size = rng.randint(1, 6)
        gpus = rng.choice((0, 0, 0, 1, 2))
        pg, members = gang(
            f"g{g:02d}",
            size,
            min_member=rng.randint(1, size),
            cpu=rng.choice(CPUS),
            memory=rng.choice(MEMS),
            created=f"2024-01-01T00:00:{g:02d}Z",
            gpus=gpus,
            phase=rng.choice(("Inqueue", "Pending")),
            **(_rules(rng) if rules else {}),
        )
        groups.append(pg)
        pods.extend(members)
    return snapshot(nodes, pods, groups)


def _cycle(snap: Snapshot, conf: SchedulerConf, cache: bool) -> CycleResult:
    ssn = Session(snap, build_hooks(conf.tiers()), cache_scores=cache)
    for act in conf.actions:
        act(ssn)
    return ssn.result


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))), st.booleans())
def test_placements_are_identical_with_and_without_the_score_cache(
    seed: int, which: int, rules: bool
) -> None:
    conf = conf_of(CONFS[which])
    with_cache = _cycle(_cluster(seed, rules), conf, cache=True)
    without = _cycle(_cluster(seed, rules), conf, cache=False)
    assert with_cache.placements == without.placements
    assert with_cache.ready == without.ready
    assert with_cache.unschedulable == without.unschedulable


def _probe_pods() -> list[dict[str, Any]]:
    """The pods the operations place and the probes ask for (p0..p11: every size, with 0, 1, 2 GPUs)."""
    sizes = [(c, m, gpus) for c, m in zip(CPUS, MEMS * 2, strict=False) for gpus in (0, 1, 2)]
    return [pod(f"p{i}", cpu=c, memory=m, gpus=g) for i, (c, m, g) in enumerate(sizes)]


ops = st.lists(
    st.tuples(st.sampled_from(["place", "discard", "commit"]), st.integers(0, 11), st.integers(0, 63)),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4), st.sampled_from(range(len(CONFS))))
def test_cached_scores_always_equal_a_fresh_sum(
    operations: list[tuple[str, int, int]], probes: list[int], which: int
) -> None:
    # 64 nodes, so a few changed rows are rescored alone rather than all rows recomputed.
    nodes = [
        node(f"n{i:02d}", cpu=str(2 + i % 5), memory=f"{4 + i % 3}Gi", gpus=4 * (i % 2)) for i in range(64)
    ]
    pods = _probe_pods()
    ssn = Session(snapshot(nodes, pods), build_hooks(conf_of(CONFS[which]).tiers()))
    scorers = [p for tier in ssn.tiers for p in tier if type(p).node_score is not Plugin.node_score]
    for _ in replay(ssn, operations):
        for probe in probes:
            req = ssn.vector(PodUID(f"p{probe}"))
            fresh = np.zeros(len(nodes), dtype=np.float64)
            for p in scorers:
                s = p.node_score(ssn, req, ssn.free)
                if s is not None:
                    fresh += s
            assert np.array_equal(ssn.scores(req), fresh)


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4), st.integers(0, 2**32))
def test_kept_shortfalls_always_equal_a_fresh_one(
    operations: list[tuple[str, int, int]], probes: list[int], seed: int
) -> None:
    # Small nodes (64, as the operations address): after a few placements some probes fit nowhere.
    nodes = [
        node(f"n{i:02d}", cpu=str(1 + i % 2), memory=f"{1 + i % 2}Gi", gpus=2 * (i % 2)) for i in range(64)
    ]
    pods = _probe_pods()
    ssn = Session(snapshot(nodes, pods), build_hooks(conf_of(None).tiers()))
    rng = np.random.default_rng(seed)
    masks = [rng.random(len(nodes)) < 0.7 for _ in probes]
    for _ in replay(ssn, operations):
        for probe, mask in zip(probes, masks, strict=True):
            req = ssn.vector(PodUID(f"p{probe}"))
            snap = ssn.snapshot
            assert ssn.nodes.shortfall(req, mask) == fit.shortfall(
                ssn.free, req, mask, snap.index, snap.node_names
            )


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4), st.integers(0, 2**32))
def test_inter_pod_counts_always_equal_a_fresh_count(
    operations: list[tuple[str, int, int]], probes: list[int], seed: int
) -> None:
    rng = random.Random(seed)
    nodes = [
        node(f"n{i:02d}", cpu="64", labels={HOSTNAME: f"n{i:02d}", ZONE: f"z{i % 4}"}) for i in range(64)
    ]
    running = [
        pod(f"r{i}", node=f"n{rng.randrange(64):02d}", phase="Running", **_rules(rng)) for i in range(6)
    ]
    pods = [pod(f"p{i}", **_rules(rng)) for i in range(12)]
    snap = snapshot(nodes, [*running, *pods])
    ssn = Session(snap, build_hooks(conf_of(None).tiers()))
    state = ssn.interpod  # built up front: every place and discard below goes through its updates
    everywhere = np.ones(len(nodes), dtype=np.bool_)
    for _ in replay(ssn, operations):
        placed = [(snap.pods[u], snap.node_pos[n]) for u, n in ssn.plans.items() if u not in snap.plans]
        fresh = PodsOnNodes(snap, placed)
        for probe in probes:
            p = snap.pods[PodUID(f"p{probe}")]
            mine, theirs = state.allowed(p), fresh.allowed(p)
            assert (mine is None) == (theirs is None)
            assert mine is None or theirs is None or np.array_equal(mine, theirs)
            for score in ("affinity_scores", "spread_scores"):
                a, b = getattr(state, score)(p, everywhere), getattr(fresh, score)(p, everywhere)
                assert (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
        for kept, recounted in state.recount().values():
            assert np.array_equal(kept, recounted)
        assert state.holds_terms == fresh.holds_terms


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 63), st.integers(1, 4)), min_size=1, max_size=6),
    st.sampled_from(range(len(CONFS))),
)
def test_hypothetical_rows_score_as_the_nodes_will(steps: list[tuple[int, int, int]], which: int) -> None:
    """Scoring a node's free capacity less j copies of a request (how a batch looks ahead) gives
    bit-for-bit the score the node gets once the j copies are placed."""
    nodes = [
        node(f"n{i:02d}", cpu=str(2 + i % 5), memory=f"{4 + i % 3}Gi", gpus=4 * (i % 2)) for i in range(64)
    ]
    sizes = [(c, m, gpus) for c, m in zip(CPUS, MEMS * 2, strict=False) for gpus in (0, 1, 2)]
    pods = [pod(f"p{i}-{k}", cpu=c, memory=m, gpus=g) for i, (c, m, g) in enumerate(sizes) for k in range(4)]
    ssn = Session(snapshot(nodes, pods), build_hooks(conf_of(CONFS[which]).tiers()))
    stmt = ssn.statement()
    for probe, row, copies in steps:
        req = ssn.vector(PodUID(f"p{probe}-0"))
        rows = np.full(copies, row, dtype=np.intp)
        ahead = ssn.free[rows] - np.arange(1, copies + 1, dtype=np.int64)[:, None] * req
        expected = ssn.scores_at(req, ahead, rows)
        for k in range(copies):
            uid = PodUID(f"p{probe}-{k}")
            if uid in ssn.plans:
                return  # that pod was placed by an earlier step
            stmt.place(uid, row, "default")
            assert ssn.scores(req)[row] == expected[k]
