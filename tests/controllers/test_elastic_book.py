"""The cache's elastic figures (:mod:`controllers.state.elastic_book`), kept per group from one snapshot to
the next, equal the walk over the snapshot's residents (``promises._elastic_by_queue``) after every step of
random event sequences: pods arriving bound or waiting, planned, their plans released, bound by the
scheduler (assumed) and by the watch, finishing, being deleted; PodGroups created, changed (minResources,
queue) and deleted; nodes added and removed; pods of another scheduler and pods without a PodGroup
among them. The simulator binds every plan before its next cycle, so the plans are exercised here."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.state.cluster import cluster_state
from extender.core.model import PodUID, group_key
from extender.framework import promises
from tests.core.builders import node, pod, podgroup, queue

QUEUES = ("default", "q1", "q2")


def _check(state: Any, rnd: random.Random) -> None:
    """Compare the two figures over a snapshot of a random part of the work."""
    cache = state.cache
    keys = cache.podgroup_keys()
    work = {k for k in keys if rnd.random() < 0.5}
    snap = cache.snapshot(work)
    assert snap.elastic is not None
    ssn = SimpleNamespace(snapshot=snap)
    kept, walked = promises._elastic_kept(ssn), promises._elastic_by_queue(ssn)  # type: ignore[arg-type]
    assert kept.keys() == walked.keys()
    for q, v in walked.items():
        assert kept[q].tolist() == v.tolist(), q


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32))
def test_the_kept_figures_are_the_walked_ones_after_every_change(seed: int) -> None:
    rnd = random.Random(seed)
    state = cluster_state(frozenset({"volcano"}))
    cache, ledger = state.cache, state.ledger
    for q in QUEUES:
        cache.upsert_queue(queue(q))
    nodes = [f"n{i}" for i in range(4)]
    for n in nodes[:3]:
        cache.upsert_node(node(n, cpu="64", memory="256Gi", gpus=8))
    groups = [f"g{i}" for i in range(5)]
    pods: dict[str, dict[str, Any]] = {}
    for step in range(60):
        op = rnd.random()
        if op < 0.15:
            mins = rnd.choice((None, {"cpu": str(rnd.randint(0, 6))}, {"cpu": "2", "memory": "3Gi"}))
            g = podgroup(rnd.choice(groups), rnd.randint(1, 3), queue=rnd.choice(QUEUES), min_resources=mins)
            cache.upsert_podgroup(g)
        elif op < 0.45:
            name = f"p{step}"
            bound = rnd.random() < 0.4
            raw = pod(
                name,
                group=rnd.choice((*groups, "gone", None)),
                cpu=str(rnd.randint(0, 3)),
                memory=f"{rnd.randint(0, 4)}Gi",
                node=rnd.choice(nodes) if bound else "",
                phase="Running" if bound else "Pending",
                scheduler=rnd.choice(("volcano", "volcano", "volcano", "default-scheduler")),
                deleting=rnd.random() < 0.05,
            )
            pods[name] = raw
            cache.upsert_pod(raw)
        elif op < 0.65 and pods:
            name = rnd.choice(sorted(pods))
            p = cache.pod(PodUID(pods[name]["metadata"]["uid"]))
            if p is not None and p.waiting:
                key = group_key(p.namespace, p.group_name or f"podgroup-{p.uid}")
                ledger.plan(p.uid, rnd.choice(nodes), p.requests, cache.pod_queue(p), key)
        elif op < 0.72 and pods:
            ledger.release(PodUID(pods[rnd.choice(sorted(pods))]["metadata"]["uid"]))
        elif op < 0.8 and pods:
            uid = PodUID(pods[rnd.choice(sorted(pods))]["metadata"]["uid"])
            planned = ledger.planned_node(uid)
            if planned is not None:
                cache.assume_bound(uid, planned)
        elif op < 0.88 and pods:
            name = rnd.choice(sorted(pods))
            raw = pods.pop(name)
            if rnd.random() < 0.5:
                cache.remove_pod(raw)
            else:
                cache.upsert_pod({**raw, "status": {"phase": "Succeeded"}})
        elif op < 0.93:
            name = rnd.choice(groups)
            cache.remove_podgroup(podgroup(name, 1))
        else:
            n = rnd.choice(nodes)
            if cache.node(n) is None:
                cache.upsert_node(node(n, cpu="64", memory="256Gi", gpus=8))
            else:
                cache.handlers()["nodes"].remove(node(n))
        _check(state, rnd)
