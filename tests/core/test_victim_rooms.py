"""The candidates per node worked out the fast way are those the plain way lists.

For every mode (preempt's own queue, reclaim's other reclaimable queues), every preemptor queue and a
``minRuntime`` off and on, over the random clusters of tests/core/test_victim_paths.py: the same rows
holding candidates, the same room per row (what all of a row's candidates free) and the same candidates in
victim order on each row. The decisions compared there cannot see every difference here: a row whose
room is overstated is looked at and passed over, so this compares the rooms themselves.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.framework.evict import PREEMPTED, RECLAIMED, _reclaimable_queue, _same_queue
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.framework.victim_rooms import CandidateQueue, plain_rooms, rooms
from tests.core.builders import NOW, VOLCANO_CI_CONF, conf_of
from tests.core.test_victim_paths import random_cluster

MODES: tuple[tuple[str, CandidateQueue], ...] = ((PREEMPTED, _same_queue), (RECLAIMED, _reclaimable_queue))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from((0.0, 1200.0)))
def test_fast_rooms_are_the_plain_ones(seed: int, min_runtime: float) -> None:
    snap = random_cluster(seed)
    ssn = Session(snap, build_hooks(conf_of(VOLCANO_CI_CONF).tiers()), now=NOW)
    for reason, candidate_queue in MODES:
        for queue in snap.queues:
            fast = rooms(ssn, reason, candidate_queue, min_runtime, queue)
            plain = plain_rooms(ssn, candidate_queue, min_runtime, queue)
            assert fast.rows.tolist() == plain.rows.tolist()
            assert fast.room.tolist() == plain.room.tolist()
            for row in plain.rows.tolist():
                assert [r.pod.uid for r in fast.cands(row)] == [r.pod.uid for r in plain.cands(row)]
