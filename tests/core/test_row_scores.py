"""One changed row brought up to date in plain floats (:mod:`extender.framework.row_scores`) is exact.

- a node's summed score and fit from :class:`RowScores` equal, bit for bit, what the numpy path computes
  for that row, over random allocatable and free capacity (beyond allocatable, negative, columns of 0),
  requests and nodeorder/binpack weights;
- two sessions over one cluster, one with ``fast_rows`` and one without, hold the same cached fit masks
  and scores (bytes) at every step of random placements, discards and commits, and cycles place alike;
- the row clock's log answers "which rows changed since" exactly as a pass over every row's clock.
"""

from __future__ import annotations

import random
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import fit
from extender.core.model import PodUID
from extender.core.snapshot import Snapshot
from extender.framework import row_log
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.plugins.registry import SchedulerConf
from tests.core.builders import GPU, conf_of, conf_with, gang, node, pod, replay, snapshot

CPUS = ("250m", "500m", "1", "2", "3")
MEMS = ("256Mi", "1Gi", "2Gi", "3Gi")


def _conf(rng: random.Random) -> SchedulerConf:
    """predicates, nodeorder and binpack with random weights (0 switches a term off)."""

    def w() -> int:
        return rng.choice((0, 1, 1, 2, 3))

    nodeorder = {"leastrequested.weight": w(), "mostrequested.weight": w(), "balancedresource.weight": w()}
    binpack: dict[str, Any] = {"binpack.weight": w(), "binpack.cpu": w(), "binpack.memory": w()}
    if rng.random() < 0.5:
        binpack.update({"binpack.resources": GPU, f"binpack.resources.{GPU}": w()})
    plugins = ["gang", "predicates", "nodeorder", "binpack"]
    return conf_of(conf_with(*plugins, arguments={"nodeorder": nodeorder, "binpack": binpack}))


def _nodes(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [
        node(
            f"n{i:02d}",
            cpu=rng.choice(("1", "2", "4", "8")),
            memory=rng.choice(("2Gi", "4Gi", "8Gi")),
            gpus=rng.choice((0, 0, 2, 4)),
        )
        for i in range(n)
    ]


def _bits(x: object) -> bytes:
    return np.float64(x).tobytes()  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_one_row_equals_the_numpy_row_bit_for_bit(seed: int) -> None:
    rng = random.Random(seed)
    nodes = _nodes(rng, rng.randint(1, 12))
    ssn = Session(snapshot(nodes, [pod("p")]), build_hooks(_conf(rng).tiers()))
    alloc = ssn.snapshot.alloc
    # Any free capacity: within allocatable, beyond it, below zero (a node over-committed).
    for r in range(alloc.shape[0]):
        for c in range(alloc.shape[1]):
            top = max(int(alloc[r, c]), 4)
            ssn.free[r, c] = rng.choice((0, top, rng.randint(-top, 2 * top), rng.randint(0, top)))
    for _ in range(6):
        request = np.array(
            [rng.choice((0, rng.randint(0, max(int(a), 4)))) for a in alloc.max(axis=0)], dtype=np.int64
        )
        for row in range(alloc.shape[0]):
            rows = np.array([row], dtype=np.intp)
            numpy_row = ssn.nodes.scores_at(request, ssn.free[rows], rows)[0]
            assert _bits(ssn.nodes.one_row.total(request, row)) == _bits(numpy_row)
            assert ssn.nodes.one_row.fits(request, row) == bool(fit.fits(ssn.free[rows], request)[0])
            for column in range(alloc.shape[1]):
                fraction = ssn.nodes.fraction(request, ssn.free[rows], rows, column)[0]
                assert _bits(ssn.nodes.row_fraction(request, row, column)) == _bits(fraction)


def _probes() -> list[dict[str, Any]]:
    return [pod(f"p{i}", cpu=c, memory=m, gpus=g) for i, (c, m, g) in enumerate(_shapes())]


def _shapes() -> list[tuple[str, str, int]]:
    return [(c, m, g) for c, m in zip(CPUS, MEMS * 2, strict=False) for g in (0, 1, 2)][:12]


ops = st.lists(
    st.tuples(
        st.sampled_from(["place", "place", "discard", "commit"]), st.integers(0, 11), st.integers(0, 39)
    ),
    max_size=40,
)


@settings(max_examples=100, deadline=None)
@given(ops, st.lists(st.integers(0, 11), min_size=1, max_size=4), st.integers(0, 2**32))
def test_cached_fits_and_scores_are_the_same_with_and_without_fast_rows(
    operations: list[tuple[str, int, int]], probes: list[int], seed: int
) -> None:
    rng = random.Random(seed)
    conf = _conf(rng)
    snap = snapshot(_nodes(rng, 40), _probes())
    fast = Session(snap, build_hooks(conf.tiers()))
    plain = Session(snap, build_hooks(conf.tiers()), fast_rows=False)
    for _ in zip(replay(fast, operations), replay(plain, operations), strict=True):
        assert np.array_equal(fast.free, plain.free)
        for probe in probes:
            req = fast.vector(PodUID(f"p{probe}"))
            assert fast.fit_mask(req).tobytes() == plain.fit_mask(req).tobytes()
            assert fast.scores(req).tobytes() == plain.scores(req).tobytes()


def _cluster(seed: int) -> Snapshot:
    rng = random.Random(seed)
    nodes = _nodes(rng, rng.randint(5, 30))
    pods: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    for g in range(rng.randint(1, 25)):
        size = rng.randint(1, 6)
        pg, members = gang(
            f"g{g:02d}",
            size,
            min_member=rng.randint(1, size),
            cpu=rng.choice(CPUS),
            memory=rng.choice(MEMS),
            created=f"2024-01-01T00:00:{g:02d}Z",
            gpus=rng.choice((0, 0, 1, 2)),
        )
        groups.append(pg)
        pods.extend(members)
    return snapshot(nodes, pods, groups)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_cycles_place_alike_with_and_without_fast_rows(seed: int) -> None:
    conf = _conf(random.Random(seed))
    results = []
    for fast_rows in (True, False):
        ssn = Session(_cluster(seed), build_hooks(conf.tiers()), fast_rows=fast_rows, batch=False)
        for act in conf.actions:
            act(ssn)
        results.append(ssn.result)
    assert results[0].placements == results[1].placements
    assert results[0].unschedulable == results[1].unschedulable


touches = st.lists(
    st.one_of(st.integers(0, 19), st.lists(st.integers(0, 19), max_size=7)), min_size=1, max_size=60
)


@settings(max_examples=150, deadline=None)
@given(touches, st.sampled_from((2, 5, 4096)), st.sampled_from((1, 3, 64)))
def test_the_row_log_answers_as_a_pass_over_the_clocks(
    steps: list[int | list[int]], logged: int, few: int
) -> None:
    # A short log and a low "few" make the log start afresh and give way to the pass, as a long cycle does.
    with mock.patch.object(row_log, "LOGGED", logged), mock.patch.object(row_log, "FEW", few):
        ssn = Session(
            snapshot([node(f"n{i:02d}") for i in range(20)], []), build_hooks(conf_of(None).tiers())
        )
        nodes = ssn.nodes
        clocks = [nodes.clock]
        every = np.arange(20, dtype=np.intp)
        for step in steps:
            if isinstance(step, int):
                nodes.touched(step)
            else:
                nodes.touched_rows(step)
            clocks.append(nodes.clock)
            for start in clocks:
                expected = np.flatnonzero(nodes.row_clocks(every) > start)
                assert nodes.changed_since(start).tolist() == expected.tolist()
