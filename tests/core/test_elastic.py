"""The queues' elastic resources (``Promises.elastic``), summed as one matrix, equal the per-pod sums they
replaced, on random clusters where the snapshot holds only some pods (a cache's work) and the rest are
residents: bound, planned, being deleted, another scheduler's, without a PodGroup or with one gone."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.model import GroupKey, PodGroup
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.resources import Vector
from extender.core.snapshot import build_snapshot, implicit_group, pod_group_key
from extender.framework.hooks import build_hooks
from extender.framework.promises import _elastic_by_queue
from extender.framework.session import Session
from extender.plugins.registry import load_conf
from tests.core.builders import node, pod, podgroup, queue

QUEUES = ("default", "q1", "q2")


def _plain(ssn: Session) -> dict[str, Vector]:
    """The formula as it was: each pod's vector added into its group's, one by one."""
    snap = ssn.snapshot
    held: dict[GroupKey, Vector] = {}
    groups: dict[GroupKey, PodGroup] = {}
    for p, _row in snap.residents.all():
        if p.scheduler_name not in snap.scheduler_names or p.deleting:
            continue
        key = pod_group_key(p)
        g = groups.get(key)
        if g is None:
            found = snap.groups.get(key) or snap.other_groups.get(key)
            if found is None:
                if p.group_name:
                    continue
                found = implicit_group(p, snap.default_queue)
            g = groups[key] = found
        v = snap.request(p.uid) if p.uid in snap.pods else snap.index.vector(p.requests)
        held[key] = v.copy() if key not in held else held[key] + v
    out: dict[str, Vector] = {}
    for key, v in held.items():
        g = groups[key]
        past = np.maximum(v - snap.index.vector(g.min_resources), 0)
        if past.any():
            out[g.queue] = past if g.queue not in out else out[g.queue] + past
    return out


def _session(seed: int) -> Session:
    rnd = random.Random(seed)
    nodes = [
        node(f"n{i}", cpu="16", memory="64Gi", gpus=rnd.choice((0, 8))) for i in range(rnd.randint(1, 6))
    ]
    raw_groups, raw_pods = [], []
    for g in range(rnd.randint(0, 8)):
        mins = rnd.choice((None, {"cpu": str(rnd.randint(0, 6))}, {"cpu": "2", "memory": "3Gi"}))
        raw_groups.append(
            podgroup(
                f"g{g}", rnd.randint(1, 3), queue=rnd.choice(QUEUES), min_resources=mins, phase="Running"
            )
        )
    names = [f"g{g}" for g in range(len(raw_groups))] + ["gone", None]
    for i in range(rnd.randint(0, 30)):
        where = rnd.choice(("bound", "planned", "waiting"))
        raw_pods.append(
            pod(
                f"p{i}",
                group=rnd.choice(names),
                cpu=str(rnd.randint(0, 3)),
                memory=f"{rnd.randint(0, 4)}Gi",
                gpus=rnd.choice((0, 0, 1)),
                node=rnd.choice(nodes)["metadata"]["name"] if where == "bound" else "",
                phase=rnd.choice(("Running", "Running", "Succeeded")) if where == "bound" else "Pending",
                scheduler=rnd.choice(("volcano", "volcano", "default-scheduler")),
                deleting=rnd.random() < 0.1,
                queue=rnd.choice((None, "q1")),
            )
        )
    pods = [parse_pod(p) for p in raw_pods]
    groups = [parse_podgroup(g) for g in raw_groups]
    plans = {
        p.uid: rnd.choice(nodes)["metadata"]["name"] for p in pods if not p.node_name and rnd.random() < 0.5
    }
    # A cache's snapshot: only some pods and groups, the others residents and other_groups.
    work = [p for p in pods if rnd.random() < 0.5]
    shown = [g for g in groups if rnd.random() < 0.5]
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=work,
        podgroups=shown,
        queues=[parse_queue(queue(q)) for q in QUEUES],
        plans=plans,
        residents=pods,
        other_groups={g.key: g for g in groups if g not in shown},
    )
    return Session(snap, build_hooks(load_conf(None).tiers()))


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_matrix_sums_equal_per_pod_sums(seed: int) -> None:
    ssn = _session(seed)
    got, want = _elastic_by_queue(ssn), _plain(ssn)
    assert got.keys() == want.keys()
    for q, v in want.items():
        assert got[q].tolist() == v.tolist(), q
