"""Preempt and reclaim decide the same on their fast path as on the plain one.

The fast path (``Session(fast_victims=True)``, the default) finds candidate victims per node with numpy
sums over the running index and sorts a node's candidates only when the search looks at it, picks the
best-scored nodes by partition rather than a full sort, asks only groups with a waiting pod whether they
can start, and remembers what victim rules that depend only on the groups involved answered (see
:mod:`extender.framework.victim_rooms`); ``fast_victims=False`` keeps the plain path. Over random clusters
(queues in trees, priority classes, gangs running and waiting, pods that must not be victims or must not
preempt, sub-groups, pods already leaving, anti-affinity) and confs (preempt and reclaim under priority,
drf, proportion, capacity with a hierarchy, pdb; topology-aware preemption and minRuntime on and off),
both give the same evictions with the same reasons, the same placements in the same order, and the same
reasons, ready and admitted groups.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.api import labels as L
from extender.core.budgets import DisruptionBudget
from extender.core.model import LabelSelector
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_priority_class, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.framework.victim_search import best_first
from extender.plugins.registry import SchedulerConf
from tests.core.builders import (
    HOSTNAME,
    NOW,
    VOLCANO_CI_CONF,
    Raw,
    conf_of,
    node,
    pod,
    podgroup,
    priority_class,
    queue,
    required,
    term,
)

ACTIONS = "enqueue, allocate, backfill, preempt, reclaim"


def _conf(tiers: str, preempt: str = "", reclaim: str = "") -> str:
    text = f'actions: "{ACTIONS}"\ntiers:\n{tiers}'
    configured = [(name, args) for name, args in (("preempt", preempt), ("reclaim", reclaim)) if args]
    if configured:
        text += "configurations:\n" + "".join(
            f"- name: {name}\n  arguments: {{{args}}}\n" for name, args in configured
        )
    return text


CONFS = (
    VOLCANO_CI_CONF,
    _conf(
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: pdb}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n",
        preempt="enableTopologyAwarePreemption: true",
    ),
    _conf(
        "- plugins: [{name: priority}, {name: gang}, {name: conformance}]\n"
        "- plugins: [{name: drf}, {name: predicates}, {name: capacity, enableHierarchy: true},"
        " {name: nodeorder}, {name: binpack}]\n",
        preempt="minRuntime: 20m",
        reclaim="minRuntime: 20m",
    ),
    _conf(
        "- plugins: [{name: priority}, {name: gang}]\n"
        "- plugins: [{name: drf, enableHierarchy: true}, {name: predicates},"
        " {name: proportion}]\n",
    ),
    _conf("- plugins: [{name: gang}, {name: conformance}, {name: predicates}, {name: proportion}]\n"),
)
PRIORITY_CLASSES = [
    priority_class("low", 10),
    priority_class("mid", 100),
    priority_class("high", 1000),
    {**priority_class("polite", 1000), "preemptionPolicy": "Never"},
]
CPUS = ("500m", "1", "2", "3")
ZONE_COUNT = 3


def _queues(rng: random.Random) -> tuple[list[Raw], list[str]]:
    """A tree: root, two or three parents, their leaves; jobs go to leaves."""
    out = [queue("root", weight=1)]
    leaves: list[str] = []
    for p in range(rng.randint(1, 3)):
        out.append(
            queue(f"p{p}", weight=rng.randint(1, 3), parent="root", deserved={"cpu": str(rng.randint(2, 12))})
        )
        for c in range(rng.randint(1, 3)):
            name = f"p{p}c{c}"
            cap = {"cpu": str(rng.randint(4, 16))} if rng.random() < 0.3 else None
            out.append(
                queue(
                    name,
                    weight=rng.randint(1, 4),
                    parent=f"p{p}",
                    capability=cap,
                    deserved={"cpu": str(rng.randint(1, 8))},
                    reclaimable=rng.random() < 0.85,
                )
            )
            leaves.append(name)
    return out, leaves


def _sub_groups(rng: random.Random, size: int) -> list[Raw] | None:
    if size < 4 or rng.random() > 0.2:
        return None
    return [
        {
            "name": "part",
            "matchLabelKeys": ["part"],
            "subGroupSize": 2,
            "minSubGroups": rng.randint(1, size // 2),
        }
    ]


def _group(rng: random.Random, name: str, size: int, q: str, phase: str, prio: str) -> Raw:
    g = podgroup(name, rng.randint(1, size), queue=q, phase=phase, priority_class=prio, created=_time(rng))
    sub = _sub_groups(rng, size)
    if sub is not None:
        g["spec"]["subGroupPolicy"] = sub
        g["spec"]["minMember"] = max(g["spec"]["minMember"], 2)
    return g


def _time(rng: random.Random) -> str:
    return f"2024-01-01T00:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"


def random_cluster(seed: int) -> Snapshot:
    """Full-ish nodes running gangs of several queues and priorities, and gangs waiting for room."""
    rng = random.Random(seed)
    queues, leaves = _queues(rng)
    nodes = [
        node(
            f"n{i:02d}",
            cpu=rng.choice(("4", "8")),
            memory="32Gi",
            labels={HOSTNAME: f"n{i:02d}", "zone": f"z{i % ZONE_COUNT}"},
        )
        for i in range(rng.randint(2, 10))
    ]
    free = {n["metadata"]["name"]: int(n["status"]["allocatable"]["cpu"]) * 1000 for n in nodes}
    pods: list[Raw] = []
    groups: list[Raw] = []
    # Most running work in a few queues (over their share: what reclaim takes back), now and then anywhere.
    busy = leaves[: max(1, len(leaves) // 2)] if rng.random() < 0.7 else leaves

    def members(name: str, size: int, g: Raw | None, running: bool, **kw: Any) -> None:
        """``size`` pods of group ``g`` (None: a pod of its own, in queue ``kw["queue"]``)."""
        sub = g is not None and "subGroupPolicy" in g["spec"]
        cpu = rng.choice(CPUS)
        milli = int(float(cpu) * 1000) if not cpu.endswith("m") else int(cpu[:-1])
        for i in range(size):
            extra: dict[str, Any] = dict(kw)
            labels: dict[str, str] = {"app": name}
            if sub:
                labels["part"] = str(i // 2)
            if running and rng.random() < 0.1:
                labels[L.PREEMPTABLE_ANNOTATION] = "false"
            if rng.random() < 0.08:
                extra["anti_affinity"] = required(term(HOSTNAME, app=name))
            if running:
                fits = [n for n, f in free.items() if f >= milli]
                if not fits:
                    return
                where = rng.choice(fits)
                free[where] -= milli
                extra.update(node=where, phase="Running", deleting=rng.random() < 0.04)
            raw = pod(
                f"{name}-{i}",
                group=None if g is None else name,
                cpu=cpu,
                memory="1Gi",
                priority=rng.choice((0, 10, 100)),
                created=_time(rng),
                labels=labels,
                **extra,
            )
            if not running and rng.random() < 0.1:
                raw["spec"]["preemptionPolicy"] = "Never"
            pods.append(raw)

    for j in range(rng.randint(1, 14)):
        name, size = f"run{j:02d}", rng.randint(1, 6)
        if rng.random() < 0.15:
            members(name, 1, None, True, queue=rng.choice(busy))  # a pod without a PodGroup
            continue
        g = _group(rng, name, size, rng.choice(busy), "Running", rng.choice(("low", "low", "mid", "")))
        groups.append(g)
        members(name, size, g, True)
    for j in range(rng.randint(1, 8)):
        name, size = f"wait{j:02d}", rng.randint(1, 5)
        g = _group(
            rng,
            name,
            size,
            rng.choice(leaves),
            rng.choice(("Inqueue", "Inqueue", "Pending")),
            rng.choice(("low", "mid", "high", "high", "polite", "")),
        )
        if rng.random() < 0.2:
            g["spec"]["minTaskMember"] = {"t": 1}
        groups.append(g)
        members(name, size, g, False, task="t" if rng.random() < 0.5 else "")
    budgets = [
        DisruptionBudget(
            namespace="default",
            name=f"pdb-run{j:02d}",
            selector=LabelSelector(match_labels=(("app", f"run{j:02d}"),)),
            disruptions_allowed=rng.randint(0, 2),
        )
        for j in range(14)
        if rng.random() < 0.15
    ]
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(q) for q in queues],
        priority_classes=[parse_priority_class(pc) for pc in PRIORITY_CLASSES],
        budgets=budgets,
    )


def _cycle(snap: Snapshot, conf: SchedulerConf, *, fast: bool) -> CycleResult:
    ssn = Session(snap, build_hooks(conf.tiers()), fast_victims=fast, now=NOW)
    for act in conf.actions:
        act(ssn)
    for plugin in ssn.plugins:
        plugin.close(ssn)
    return ssn.result


def _same(fast: CycleResult, plain: CycleResult) -> None:
    assert list(fast.evictions.items()) == list(plain.evictions.items())
    assert list(fast.placements.items()) == list(plain.placements.items())
    assert fast.pipelined == plain.pipelined
    assert fast.unschedulable == plain.unschedulable
    assert fast.ready == plain.ready
    assert fast.admitted == plain.admitted


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(range(len(CONFS))))
def test_fast_victim_search_equals_the_plain_one(seed: int, which: int) -> None:
    conf = conf_of(CONFS[which])
    _same(_cycle(random_cluster(seed), conf, fast=True), _cycle(random_cluster(seed), conf, fast=False))


def test_the_random_clusters_evict() -> None:
    """The comparison is not vacuous: most confs evict in many of these clusters."""
    for text in CONFS:
        conf = conf_of(text)
        evicting = sum(bool(_cycle(random_cluster(seed), conf, fast=True).evictions) for seed in range(40))
        assert evicting >= 8, text


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 1.0, 2.5, -1.0, float("-inf"), float("nan")]), min_size=0, max_size=200),
    st.integers(1, 80),
)
def test_best_first_begins_as_the_full_sort(scores: list[float], k: int) -> None:
    """The search's partition picks the first ``k`` nodes a sort on (-score, row) gives, ties included."""
    rows = np.arange(0, 3 * len(scores), 3, dtype=np.intp)  # ascending, not contiguous
    s = np.array(scores, dtype=np.float64)
    assert best_first(rows, s, k).tolist() == rows[np.lexsort((rows, -s))][:k].tolist()
