"""Leaving settled groups out of a snapshot changes no decision.

A cache leaves out the groups a cycle left waiting for a reason that stands (short of room, refused
admission) and passes what they weigh on their queues instead (``CycleResult.aside`` →
``build_snapshot(aside=...)``). Over random clusters: cycle once over everything, then add new gangs and
cycle twice more, once over everything and once with the settled groups left out. The new gangs get the
same placements, admissions and reasons either way.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.core.model import GroupKey, PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Aside, Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from tests.core.builders import Raw, conf_of, node, pod, podgroup, queue

QUEUES = [queue("default", weight=1), queue("a", weight=2, capability={"cpu": "20"}), queue("b", weight=1)]


def _gangs(rng: random.Random, prefix: str, n: int, phase: str) -> tuple[list[Raw], list[Raw]]:
    groups: list[Raw] = []
    pods: list[Raw] = []
    for i in range(n):
        name = f"{prefix}{i}"
        size = rng.randint(1, 4)
        cpu = rng.choice(["1", "2", "3", "6", "12"])
        pg = podgroup(name, rng.randint(1, size), queue=rng.choice(["default", "a", "b"]), phase=phase)
        if rng.random() < 0.5:
            pg["spec"]["minResources"] = {"cpu": str(int(cpu) * rng.randint(1, size))}
        groups.append(pg)
        pods += [pod(f"{name}-{j}", group=name, cpu=cpu, memory="1Gi") for j in range(size)]
    return groups, pods


def _snap(
    nodes: Sequence[Raw],
    pods: Sequence[Raw],
    groups: Sequence[Raw],
    plans: dict[PodUID, str],
    phases: dict[GroupKey, str],
    aside: Sequence[Aside] = (),
) -> Snapshot:
    parsed_groups = []
    for g in groups:
        pg = parse_podgroup(g)
        parsed_groups.append(pg if pg.key not in phases else pg.__class__(**{
            **{f: getattr(pg, f) for f in pg.__dataclass_fields__}, "phase": phases[pg.key]
        }))  # fmt: skip
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=parsed_groups,
        queues=[parse_queue(q) for q in QUEUES],
        plans=plans,
        aside=aside,
    )


@pytest.mark.parametrize("seed", range(40))
def test_left_out_groups_change_no_decision(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu=str(rng.choice([4, 8, 16])), memory="64Gi") for i in range(rng.randint(2, 6))]
    conf = conf_of(None)
    old_groups, old_pods = _gangs(rng, "old", rng.randint(3, 10), rng.choice(["Pending", "Inqueue"]))
    first = run_cycle(_snap(nodes, old_pods, old_groups, {}, {}), conf, 0.0)
    plans = dict(first.placements)
    phases = dict.fromkeys(first.admitted, "Inqueue")
    left_out = set(first.aside)
    new_groups, new_pods = _gangs(rng, "new", rng.randint(1, 4), "Pending")
    every = _snap(nodes, old_pods + new_pods, old_groups + new_groups, plans, phases)
    kept_groups = [g for g in old_groups + new_groups if parse_podgroup(g).key not in left_out]
    kept_pods = [
        p for p in old_pods + new_pods if parse_pod(p).group_name not in {k.split("/")[1] for k in left_out}
    ]
    fewer = _snap(nodes, kept_pods, kept_groups, plans, phases, [first.aside[k] for k in left_out])
    full, reduced = run_cycle(every, conf, 0.0), run_cycle(fewer, conf, 0.0)
    assert reduced.placements == {u: n for u, n in full.placements.items() if u in fewer.pods}
    assert reduced.admitted == full.admitted - left_out
    assert {k: u.reason for k, u in reduced.unschedulable.items()} == {
        k: u.reason for k, u in full.unschedulable.items() if k not in left_out
    }
    # And the left-out groups would have gone on waiting, for the same reasons.
    assert not any(u in full.placements for k in left_out for u in every.members.get(k, ()))
    assert {k: full.unschedulable[k].reason for k in left_out} == {
        k: first.unschedulable[k].reason for k in left_out
    }


_AMOUNTS = st.dictionaries(
    st.sampled_from(["cpu", "memory", "pods", "nvidia.com/gpu", "other"]), st.integers(0, 10**12)
)


@given(st.lists(st.tuples(st.sampled_from(["default", "a", "b"]), _AMOUNTS, _AMOUNTS, _AMOUNTS), max_size=40))
def test_aside_totals_are_the_sums_of_each_groups_vector(
    rows: list[tuple[str, dict[str, int], dict[str, int], dict[str, int]]],
) -> None:
    """The snapshot's per-queue totals of what left-out groups weigh (summed as one matrix per queue) are
    the sums of each group's vector over the snapshot's resource index, as they were added one by one;
    a queue none of them weighs on in a part has no entry for it."""
    asides = [Aside(queue=q, waiting=w, owed=o, planned=p) for q, w, o, p in rows]
    snap = build_snapshot(
        nodes=[parse_node(node("n1", cpu="8", memory="8Gi"))], pods=[], podgroups=[], queues=[], aside=asides
    )
    for part, got in (
        ("waiting", snap.aside_waiting),
        ("owed", snap.aside_owed),
        ("planned", snap.aside_planned),
    ):
        want: dict[str, list[int]] = {}
        for a in asides:
            amounts = getattr(a, part)
            if amounts:
                v = snap.index.vector(amounts).tolist()
                want[a.queue] = (
                    v if a.queue not in want else [x + y for x, y in zip(want[a.queue], v, strict=True)]
                )
        assert {q: v.tolist() for q, v in got.items()} == want
