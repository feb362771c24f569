"""A run's nodes scored one hypothetical row at a time, in plain floats, equal the grid's numpy scores.

``place_run`` replays the loop's choices from each candidate node's score with ``j`` copies of the run on
it (its free capacity less ``j`` requests). When every scorer can score a row alone and no ``node_fit``
plugin takes part (``NodeCache.rows_alone``), the replay asks for those scores when it reaches them
(``RowScores.total_at``) instead of scoring a full grid of hypothetical rows through numpy, and brings
the next best node into line only when the one before it is first taken. Over random
clusters and confs (nodeorder and binpack weights, nodegroup's queue scores added to every node's):

- a hypothetical row's plain-float score equals ``NodeCache.scores_at`` of that row, bit for bit, for
  any free capacity (within allocatable, beyond it, negative);
- cycles that place runs give the same placements in the same order, the same reasons and the same
  ready groups with ``fast_rows`` (the lazy scores) and without (the grid), and the same as pod by pod.
"""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core.snapshot import Snapshot
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.registry import SchedulerConf
from tests.core import test_node_predicate_cache as grouped
from tests.core import test_row_scores as rows
from tests.core.builders import conf_of, pod, snapshot


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32))
def test_a_hypothetical_row_scores_as_the_grid_does(seed: int) -> None:
    rng = random.Random(seed)
    nodes = rows._nodes(rng, rng.randint(1, 12))
    ssn = Session(snapshot(nodes, [pod("p")]), build_hooks(rows._conf(rng).tiers()))
    assert ssn.nodes.rows_alone
    alloc = ssn.snapshot.alloc
    for _ in range(6):
        request = np.array(
            [rng.choice((0, rng.randint(0, max(int(a), 4)))) for a in alloc.max(axis=0)], dtype=np.int64
        )
        # Hypothetical rows: the free capacity a node would have, not the session's (left untouched).
        free = np.array(
            [
                [rng.choice((0, a, rng.randint(-a, 2 * a), rng.randint(0, a))) for a in map(int, r)]
                for r in np.maximum(alloc, 4)
            ],
            dtype=np.int64,
        )
        before = ssn.free.copy()
        grid = ssn.nodes.scores_at(request, free, np.arange(len(free), dtype=np.intp))
        for row in range(len(free)):
            lazy = ssn.nodes.one_row.total_at(request, row, free[row].tolist())
            assert np.float64(lazy).tobytes() == grid[row].tobytes()
        assert np.array_equal(ssn.free, before)


def _cycle(snap: Snapshot, conf: SchedulerConf, *, fast_rows: bool, batch: bool = True) -> CycleResult:
    ssn = Session(snap, build_hooks(conf.tiers()), fast_rows=fast_rows, batch=batch)
    assert ssn.nodes.rows_alone == (fast_rows and not ssn.hooks.node_fit)
    for act in conf.actions:
        act(ssn)
    return ssn.result


def _same(a: CycleResult, b: CycleResult) -> None:
    assert list(a.placements.items()) == list(b.placements.items())
    assert a.unschedulable == b.unschedulable
    assert a.ready == b.ready


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32))
def test_runs_place_alike_with_lazy_and_grid_scores(seed: int) -> None:
    conf = rows._conf(random.Random(seed))
    snap = rows._cluster(seed)
    lazy = _cycle(snap, conf, fast_rows=True)
    _same(lazy, _cycle(snap, conf, fast_rows=False))
    _same(lazy, _cycle(snap, conf, fast_rows=True, batch=False))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32))
def test_runs_place_alike_with_queue_scores(seed: int) -> None:
    # nodegroup with nodeorder: a queue's affinity adds its score to every node's (the replay's bonus).
    conf = conf_of(grouped.CONFS[1])
    snap = grouped.random_cluster(seed)
    lazy = _cycle(snap, conf, fast_rows=True)
    _same(lazy, _cycle(snap, conf, fast_rows=False))
    _same(lazy, _cycle(snap, conf, fast_rows=True, batch=False))
