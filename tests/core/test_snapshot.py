"""build_snapshot's totals, summed in bulk over a request matrix, equal the per-pod sums they replace."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import PodUID
from extender.core.snapshot import pod_group_key
from tests.core.builders import gang, node, pod, snapshot


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32))
def test_request_rows_and_totals_equal_per_pod_sums(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu="16", gpus=rng.choice((0, 4))) for i in range(rng.randint(1, 6))]
    names = [n["metadata"]["name"] for n in nodes]
    pods = [
        pod(
            f"b{i}",
            cpu=rng.choice(("100m", "1", "3")),
            memory=rng.choice(("1Mi", "1Gi")),
            gpus=rng.choice((0, 1)),
            node=rng.choice(names),
            phase=rng.choice(("Running", "Pending", "Succeeded")),
            scheduler=rng.choice(("volcano", "default-scheduler")),
        )
        for i in range(rng.randint(0, 12))
    ]
    groups = []
    for g in range(rng.randint(0, 4)):
        pg, members = gang(
            f"g{g}", rng.randint(1, 4), cpu=rng.choice(("250m", "2")), extra={"example.com/x": "3"}
        )
        groups.append(pg)
        pods.extend(members)
    plans = {p["metadata"]["uid"]: rng.choice([*names, "gone"]) for p in pods if rng.random() < 0.3}
    snap = snapshot(nodes, pods, groups, plans=plans)

    for uid, p in snap.pods.items():
        assert snap.request(uid).tolist() == snap.index.vector(p.requests).tolist()
    assert not snap.requests.flags.writeable
    used = np.zeros_like(snap.alloc)
    reserved = np.zeros_like(snap.alloc)
    held: dict[str, np.ndarray] = {}
    for p in snap.pods.values():
        v = snap.index.vector(p.requests)
        if p.holds_resources and p.node_name in snap.node_pos:
            used[snap.node_pos[p.node_name]] += v
        if p.uid in snap.plans:
            reserved[snap.node_pos[snap.plans[p.uid]]] += v
        key = pod_group_key(p)
        if (
            p.scheduler_name == "volcano"
            and key in snap.groups
            and (p.holds_resources or p.uid in snap.plans)
        ):
            q = snap.groups[key].queue
            held[q] = held.get(q, np.zeros(len(snap.index), dtype=np.int64)) + v
    assert np.array_equal(snap.used, used)
    assert np.array_equal(snap.reserved, reserved)
    assert {q: v.tolist() for q, v in snap.queue_held.items()} == {q: v.tolist() for q, v in held.items()}
    uids = [PodUID(u) for u in list(snap.pods)[::2]]
    expected = sum(
        (snap.index.vector(snap.pods[u].requests) for u in uids), np.zeros(len(snap.index), dtype=np.int64)
    )
    assert snap.request_sum(uids).tolist() == expected.tolist()
