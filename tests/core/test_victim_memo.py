"""Preempt and reclaim decide the same when a node's victims are reused for the next pod that asks.

:mod:`extender.framework.victim_memo` keeps each node's victims per kind of pod (mode, queue, priorities,
request) and reuses them while no row they read has changed. Over random full clusters (gangs spread
over several nodes with members to spare or none, so evictions change who may go alone; waiting gangs
of several pods of one shape, in a few queues and priorities, some of them partly running; pods that
must not be victims) and confs (Volcano's CI conf, drf in the lower tier; binpack; pdb or drf beside
priority in the deciding tier, whose answers change as pods go; minRuntime; capacity's reclaim), the
search with the memo gives the same evictions, placements (in order), reasons, ready and admitted
groups as without it, and as the plain path (``fast_victims=False``). The memo is used: many answers
are reused in these clusters.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api import labels as L
from extender.core.snapshot import Snapshot
from extender.framework.victim_memo import NodeVictims
from tests.core.builders import (
    HOSTNAME,
    VOLCANO_CI_CONF,
    Raw,
    conf_of,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    snapshot,
)

# The conf text, cycle and comparison of the fast-path test this one extends.
from tests.core.test_victim_paths import _conf, _cycle, _same, _time

CONFS = (
    VOLCANO_CI_CONF,
    _conf(
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder},"
        " {name: binpack}]\n"
    ),
    _conf(
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: pdb}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    ),
    _conf(
        "- plugins: [{name: priority}, {name: drf}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: predicates}, {name: proportion}, {name: nodeorder}]\n"
    ),
    _conf(
        "- plugins: [{name: gang}, {name: conformance}]\n"
        "- plugins: [{name: priority}, {name: drf}, {name: predicates}, {name: proportion}]\n"
    ),
    _conf(
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: capacity}, {name: nodeorder}]\n",
        preempt="minRuntime: 20m",
        reclaim="minRuntime: 20m",
    ),
)
PRIORITY_CLASSES = [priority_class("low", 10), priority_class("mid", 100), priority_class("high", 1000)]


def random_full_cluster(seed: int) -> Snapshot:
    """Nodes filled with running gangs spread over several nodes, and gangs of one shape waiting."""
    rng = random.Random(seed)
    leaves = [f"q{i}" for i in range(rng.choice((1, 2, 2, 3)))]
    queues = [queue("root", weight=1)] + [
        queue(
            name,
            weight=rng.randint(1, 3),
            parent="root",
            deserved={"cpu": str(rng.randint(2, 20))},
            capability={"cpu": str(rng.randint(8, 64))} if rng.random() < 0.2 else None,
        )
        for name in leaves
    ]
    nodes = [
        node(f"n{i:02d}", cpu=rng.choice(("4", "8")), memory="64Gi", labels={HOSTNAME: f"n{i:02d}"})
        for i in range(rng.randint(4, 24))
    ]
    free = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) * 1000 for n in nodes}
    pods: list[Raw] = []
    groups: list[Raw] = []
    for j in range(rng.randint(2, 40)):
        name, size, milli = f"run{j:02d}", rng.randint(1, 8), rng.choice((1000, 2000))
        where = [n for n, f in free.items() if f >= milli]
        if not where:
            break
        prio = rng.choice(("low", "low", "mid"))
        q = rng.choice(leaves)
        groups.append(
            podgroup(
                name, rng.randint(1, size), queue=q, phase="Running", priority_class=prio, created=_time(rng)
            )
        )
        start = rng.randrange(len(nodes))
        for i in range(size):
            # Members spread over consecutive nodes (as a gang placed across a full cluster is).
            names = [n["metadata"]["name"] for n in nodes]
            fits = [n for n in names[start + i :] + names[: start + i] if free[n] >= milli]
            if not fits:
                break
            free[fits[0]] -= milli
            labels = {L.PREEMPTABLE_ANNOTATION: "false"} if rng.random() < 0.04 else {}
            pods.append(
                pod(
                    f"{name}-{i}",
                    group=name,
                    cpu=f"{milli}m",
                    memory="1Gi",
                    priority=rng.choice((0, 10)),
                    created=_time(rng),
                    labels=labels,
                    node=fits[0],
                    phase="Running",
                )
            )
    for j in range(rng.randint(1, 8)):
        name, size, milli = f"wait{j:02d}", rng.randint(1, 6), rng.choice((1000, 2000))
        prio = rng.choice(("high", "high", "high", "mid", "low"))
        # Now and then a gang already partly running: its own pods are no victims for it.
        running = rng.randint(1, size - 1) if size > 1 and rng.random() < 0.3 else 0
        groups.append(
            podgroup(
                name,
                rng.randint(max(1, running), size),
                queue=rng.choice(leaves),
                phase="Running" if running else "Inqueue",
                priority_class=prio,
                created=_time(rng),
            )
        )
        for i in range(size):
            where = [n for n, f in free.items() if f >= milli] if i < running else []
            if where:
                free[where[0]] -= milli
            at = {"node": where[0], "phase": "Running"} if where else {}
            pods.append(
                pod(f"{name}-{i}", group=name, cpu=f"{milli}m", memory="1Gi", created=_time(rng), **at)
            )
    return snapshot(nodes, pods, groups, queues, priority_classes=PRIORITY_CLASSES)


@contextmanager
def _memo_off() -> Iterator[None]:
    """Nothing the memo keeps is ever found: every node's victims are worked out afresh."""
    with mock.patch.object(NodeVictims, "get", return_value=None):
        yield


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_reused_victims_decide_as_fresh_ones(seed: int, which: int) -> None:
    conf = conf_of(CONFS[which])
    with_memo = _cycle(random_full_cluster(seed), conf, fast=True)
    with _memo_off():
        without = _cycle(random_full_cluster(seed), conf, fast=True)
    _same(with_memo, without)
    _same(with_memo, _cycle(random_full_cluster(seed), conf, fast=False))


def test_the_memo_is_used() -> None:
    """Not vacuous: in these clusters the search evicts, and finds many nodes' victims kept."""
    found = 0
    real_get = NodeVictims.get

    def counting(self: NodeVictims, row: int) -> Any:
        nonlocal found
        out = real_get(self, row)
        found += out is not None
        return out

    evicting = 0
    with mock.patch.object(NodeVictims, "get", counting):
        for seed in range(60):
            result = _cycle(random_full_cluster(seed), conf_of(VOLCANO_CI_CONF), fast=True)
            evicting += bool(result.evictions)
    assert evicting >= 20
    assert found >= 100
