"""Plugin node predicates keep the caches and batches exact.

resource-strategy-fit's ``proportional`` predicate (a ``node_fit``: row-local on free capacity) is folded
into the per-request fit mask and checked on a batch's hypothetical rows; nodegroup's queue rules (a
``node_mask`` and a ``queue_node_score``, fixed per queue) into the static mask and every score; its
per-group caps (a ``node_limit``) are asked at every placement. Over random clusters with GPU nodes,
node groups and queues with affinity and caps: batched placement equals one by one, cached scores equal
fresh ones, and the cached fit mask equals a fresh computation after any sequence of places and undos;
pods with their own scoring table (a per-pod score) among them are kept out of batches.
"""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api import labels as L
from extender.core import fit
from extender.core.model import PodUID
from extender.core.running import Running
from extender.core.snapshot import Snapshot
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.framework.victim_rooms import LiveCandidates
from extender.framework.victim_search import room_fits
from extender.plugins.registry import SchedulerConf
from tests.core.builders import GPU, Raw, conf_of, conf_with, node, pod, podgroup, queue, replay, snapshot

RSF = {
    "resourceStrategyFitWeight": 3,
    "resources": {
        GPU: {"type": "MostAllocated", "weight": 2},
        "cpu": {"type": "LeastAllocated", "weight": 1},
    },
    "sra": {"enable": True, "resources": GPU, "weight": 2},
    "proportional": {
        "enable": True,
        "resources": GPU,
        "resourceProportion": {f"{GPU}.cpu": 1, f"{GPU}.memory": 0.5},
    },
}
CONFS = (
    conf_with(
        "gang", "predicates", "resource-strategy-fit", "binpack", arguments={"resource-strategy-fit": RSF}
    ),
    conf_with("gang", "predicates", "nodegroup", "nodeorder", arguments={"nodegroup": {"strict": False}}),
    conf_with(
        "gang",
        "predicates",
        "proportion",
        "nodegroup",
        "resource-strategy-fit",
        arguments={"resource-strategy-fit": RSF, "nodegroup": {"enablePreferredOrder": True}},
    ),
)
CPUS = ("250m", "500m", "1", "2", "3")
MEMS = ("256Mi", "1Gi", "2Gi")
GROUPS = ("a", "b", "c")


def _queue(name: str, rng: random.Random, parent: str | None = None) -> Raw:
    q = queue(name, weight=rng.randint(1, 3), parent=parent)
    if rng.random() < 0.8:

        def pick() -> list[str]:
            return rng.sample(GROUPS, rng.randint(0, 2))

        q["spec"]["affinity"] = {
            "nodeGroupAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": pick(),
                "preferredDuringSchedulingIgnoredDuringExecution": pick(),
            },
            "nodeGroupAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": pick() if rng.random() < 0.3 else [],
                "preferredDuringSchedulingIgnoredDuringExecution": pick() if rng.random() < 0.3 else [],
            },
        }
    if rng.random() < 0.4:
        caps = {g: {"cpu": rng.choice(("2", "4", "8"))} for g in rng.sample(GROUPS, 2)}
        q["metadata"]["annotations"] = {L.NODEGROUP_LIMITS_ANNOTATION: json.dumps(caps)}
    return q


def random_cluster(seed: int) -> Snapshot:
    rng = random.Random(seed)
    nodes: list[Raw] = []
    for i in range(rng.randint(4, 30)):
        labels = {L.NODEGROUP_LABEL: rng.choice(GROUPS)} if rng.random() < 0.85 else {}
        nodes.append(
            node(
                f"n{i:02d}",
                cpu=rng.choice(("2", "4", "8")),
                memory=rng.choice(("4Gi", "8Gi")),
                gpus=rng.choice((0, 0, 2, 4)),
                labels=labels,
            )
        )
    queues = [queue("default"), _queue("q1", rng), _queue("q2", rng)]
    queues[0]["spec"]["affinity"] = {
        "nodeGroupAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": list(GROUPS)}
    }
    pods: list[Raw] = []
    for i in range(rng.randint(0, 6)):
        pods.append(
            pod(f"run{i}", cpu=rng.choice(CPUS), node=rng.choice(nodes)["metadata"]["name"], phase="Running")
        )
    groups: list[Raw] = []
    for g in range(rng.randint(1, 12)):
        name = f"g{g:02d}"
        size = rng.randint(1, 8)
        groups.append(
            podgroup(
                name,
                rng.randint(1, size),
                queue=rng.choice(("default", "q1", "q2")),
                phase="Inqueue",
                created=f"2024-01-01T00:00:{g:02d}Z",
            )
        )
        spec: dict[str, Any] = {
            "cpu": rng.choice(CPUS),
            "memory": rng.choice(MEMS),
            "gpus": rng.choice((0, 0, 1)),
        }
        own: dict[str, str] = {}
        if rng.random() < 0.25:  # resource-strategy-fit's per-pod table (now and then unreadable)
            own[L.RESOURCE_STRATEGY_TYPE_ANNOTATION] = rng.choice(("MostAllocated", "LeastAllocated"))
            own[L.RESOURCE_STRATEGY_WEIGHT_ANNOTATION] = rng.choice(
                ('{"cpu": 2}', f'{{"{GPU}": 1, "cpu": 1}}', "x")
            )
        for k in range(size):
            member = pod(f"{name}-{k}", group=name, **spec)
            # Mostly the whole group alike (as a job's template makes them); now and then one pod differs.
            member["metadata"]["annotations"].update(own if rng.random() < 0.9 else {})
            pods.append(member)
    return snapshot(nodes, pods, groups, queues)


def _cycle(snap: Snapshot, conf: SchedulerConf, *, batch: bool = True, cache: bool = True) -> CycleResult:
    ssn = Session(snap, build_hooks(conf.tiers()), batch=batch, cache_scores=cache)
    for act in conf.actions:
        act(ssn)
    return ssn.result


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_batched_and_cached_placement_equal_one_by_one_and_fresh(seed: int, which: int) -> None:
    conf = conf_of(CONFS[which])
    batched = _cycle(random_cluster(seed), conf)
    single = _cycle(random_cluster(seed), conf, batch=False)
    fresh = _cycle(random_cluster(seed), conf, cache=False)
    assert list(batched.placements.items()) == list(single.placements.items())
    assert batched.unschedulable == single.unschedulable
    assert batched.ready == single.ready
    assert batched.placements == fresh.placements
    assert batched.unschedulable == fresh.unschedulable


ops = st.lists(
    st.tuples(st.sampled_from(["place", "discard", "commit"]), st.integers(0, 11), st.integers(0, 63)),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4))
def test_cached_fit_mask_always_equals_a_fresh_one(
    operations: list[tuple[str, int, int]], probes: list[int]
) -> None:
    # 64 GPU and cpu nodes of a few sizes, so a few changed rows are refreshed alone.
    nodes = [
        node(f"n{i:02d}", cpu=str(2 + i % 5), memory=f"{4 + i % 3}Gi", gpus=4 * (i % 2)) for i in range(64)
    ]
    sizes = [(c, m, g) for c, m in zip(CPUS, MEMS * 2, strict=False) for g in (0, 1, 0)][:12]
    pods = [pod(f"p{i}", cpu=c, memory=m, gpus=g) for i, (c, m, g) in enumerate(sizes)]
    ssn = Session(snapshot(nodes, pods), build_hooks(conf_of(CONFS[0]).tiers()))
    fitters = [p for tier in ssn.tiers for p in tier if p.name == "resource-strategy-fit"]
    for _ in replay(ssn, operations):
        for probe in probes:
            req = ssn.vector(PodUID(f"p{probe}"))
            expected = fit.fits(ssn.free, req)
            for p in fitters:
                m = p.node_fit(ssn, req, ssn.free)
                if m is not None:
                    expected &= m
            assert np.array_equal(ssn.fit_mask(req), expected)


def test_the_proportional_predicate_bites_in_the_batch_path() -> None:
    """A run of cpu-only pods on a GPU node stops where the kept cpu begins, batched or not (without the
    predicate in the batch's look-ahead the batch would pack all four onto the node)."""
    nodes = [node("gpu", cpu="8", memory="64Gi", gpus=4)]
    pods = [pod(f"g-{i}", group="g", cpu="1", memory="1Gi") for i in range(6)]
    snap = snapshot(nodes, pods, [podgroup("g", 1, phase="Inqueue")])
    conf = conf_of(
        conf_with(
            "gang",
            "predicates",
            "resource-strategy-fit",
            arguments={"resource-strategy-fit": {"proportional": {"enable": True, "resources": GPU}}},
        )
    )
    batched, single = _cycle(snap, conf), _cycle(snap, conf, batch=False)
    assert sorted(batched.placements) == ["g-0", "g-1", "g-2", "g-3"]  # 8 cpu - 4 kept for 4 idle GPUs
    assert batched.placements == single.placements


class _Rooms:
    """What :func:`extender.framework.victim_search.room_fits` reads of a mode's candidates: the rows
    holding some, what evicting them all frees per row, and the per-request memo."""

    def __init__(self, rows: list[int], room: list[list[int]]) -> None:
        self.rows = np.asarray(rows, dtype=np.intp)
        self.room = np.asarray(room, dtype=np.int64).reshape(len(rows), -1)
        self.fits: dict[bytes, tuple[fit.Mask, int]] = {}
        self.live = LiveCandidates(len(rows))

    def cands(self, row: int) -> list[Running]:
        return []


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4), st.integers(0, 2**32))
def test_room_fits_always_equals_a_fresh_judgement(
    operations: list[tuple[str, int, int]], probes: list[int], seed: int
) -> None:
    """Preempt's look at where victims could make room, kept per request by the row clock, is after any
    sequence of places and undos what judging the rows afresh gives (resources and the proportional
    predicate, on the free capacity plus what the candidates would free)."""
    nodes = [
        node(f"n{i:02d}", cpu=str(2 + i % 5), memory=f"{4 + i % 3}Gi", gpus=4 * (i % 2)) for i in range(64)
    ]
    sizes = [(c, m, g) for c, m in zip(CPUS, MEMS * 2, strict=False) for g in (0, 1, 0)][:12]
    pods = [pod(f"p{i}", cpu=c, memory=m, gpus=g) for i, (c, m, g) in enumerate(sizes)]
    ssn = Session(snapshot(nodes, pods), build_hooks(conf_of(CONFS[0]).tiers()))
    rng = random.Random(seed)
    rows = sorted(rng.sample(range(64), rng.randint(1, 64)))
    r = len(ssn.snapshot.index)
    room = [[rng.choice((0, 0, 500, 2000, 2**30)) for _ in range(r)] for _ in rows]
    rooms = _Rooms(rows, room)
    for _ in replay(ssn, operations):
        for probe in probes:
            req = ssn.vector(PodUID(f"p{probe}"))
            fresh = ssn.nodes.fits_at(req, ssn.free[rooms.rows] + rooms.room, rooms.rows)
            assert np.array_equal(room_fits(ssn, rooms, req), fresh)
