"""The session's working state: statements apply and undo exactly; the incremental fit masks stay exact."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import fit
from extender.core.model import PodUID
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from tests.core.builders import conf_of, gang, node, pod, replay, snapshot
from tests.core.test_batch import CONFS, random_cluster

NODES = [node(f"n{i}", cpu=str(1 + i % 3), memory=f"{1 + i % 2}Gi", pods=3) for i in range(6)]
SIZES = [("100m", "128Mi"), ("500m", "512Mi"), ("1", "1Gi"), ("2", "256Mi")]


def _session() -> Session:
    pods = [pod(f"p{i}", cpu=c, memory=m) for i, (c, m) in enumerate(SIZES * 3)]
    return Session(snapshot(NODES, pods), build_hooks([[]]))


ops = st.lists(
    st.tuples(st.sampled_from(["place", "discard", "commit"]), st.integers(0, 11), st.integers(0, 5)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops, st.lists(st.integers(0, 3), min_size=1, max_size=6))
def test_fit_mask_always_equals_a_fresh_check(
    operations: list[tuple[str, int, int]], probes: list[int]
) -> None:
    ssn = _session()
    for _ in replay(ssn, operations):
        for probe in probes:
            req = ssn.vector(PodUID(f"p{probe}"))
            assert ssn.fit_mask(req).tolist() == fit.fits(ssn.free, req).tolist()


def test_statement_discard_restores_everything() -> None:
    pg, pods = gang("g", 3)
    ssn = Session(snapshot([node("n0"), node("n1")], pods, [pg]), build_hooks([[]]))
    free, used, plans = ssn.free.copy(), {q: v.copy() for q, v in ssn.queue_used.items()}, dict(ssn.plans)
    stmt = ssn.statement()
    for i in range(3):
        stmt.place(PodUID(f"g-{i}"), i % 2, "default")
    assert not np.array_equal(ssn.free, free) and len(ssn.plans) == 3
    stmt.discard()
    assert np.array_equal(ssn.free, free)
    assert all(np.array_equal(ssn.queue_used[q], v) for q, v in used.items())
    assert ssn.plans == plans and ssn.result.placements == {}


def test_statement_commit_records_placements() -> None:
    pg, pods = gang("g", 2)
    ssn = Session(snapshot([node("n0"), node("n1")], pods, [pg]), build_hooks([[]]))
    stmt = ssn.statement()
    stmt.place(PodUID("g-0"), 0, "default")
    stmt.place(PodUID("g-1"), 1, "default")
    stmt.commit()
    assert ssn.result.placements == {"g-0": "n0", "g-1": "n1"}
    stmt.discard()  # nothing left to undo after a commit
    assert ssn.result.placements == {"g-0": "n0", "g-1": "n1"} and len(ssn.plans) == 2
    assert int(ssn.queue_used["default"][0]) == 2000


def test_free_counts_bound_and_planned_pods() -> None:
    pods = [pod("bound", cpu="1", node="n0", phase="Running"), pod("planned", cpu="2"), pod("w", cpu="1")]
    snap = snapshot([node("n0", cpu="4")], pods, plans={"planned": "n0"})
    assert snap.free[0].tolist()[:1] == [1000]
    ssn = Session(snap, build_hooks([[]]))
    assert int(ssn.queue_used["default"][0]) == 3000  # bound + planned pods of the queue


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_cached_queue_and_job_keys_change_nothing(seed: int, which: int) -> None:
    """Queue keys kept while their queue's usage stands, and job keys computed once per group, give the
    cycle every key computing them afresh each time gives."""
    conf = conf_of(CONFS[which])
    results = []
    for cached in (True, False):
        ssn = Session(random_cluster(seed), build_hooks(conf.tiers()), cache_keys=cached)
        for act in conf.actions:
            act(ssn)
        results.append(ssn.result)
    assert list(results[0].placements.items()) == list(results[1].placements.items())
    assert results[0].unschedulable == results[1].unschedulable


def test_queue_keys_follow_the_queue_usage() -> None:
    pg, pods = gang("g", 3)
    ssn = Session(snapshot([node("n0"), node("n1")], pods, [pg]), build_hooks(conf_of(None).tiers()))
    q = ssn.snapshot.queues["default"]
    before = ssn.queue_key(q)
    stmt = ssn.statement()
    stmt.place(PodUID("g-0"), 0, "default")
    after = ssn.queue_key(q)
    assert after != before
    fresh = [
        k for p in ssn.plugins if p.takes_part("queue_order") and (k := p.queue_order(ssn, q)) is not None
    ]
    assert after == (*(x for k in fresh for x in k), "default")
    stmt.discard()
    assert ssn.queue_key(q) == before
