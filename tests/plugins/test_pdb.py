"""pdb: preempt and reclaim plan no more evictions of a PodDisruptionBudget's pods than its
``status.disruptionsAllowed``, across the cycle. Cases from Volcano's pdb_test.go (expected outcomes), then
ours."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.state.cluster import cluster_state
from extender.core.model import PodUID
from extender.framework.result import Eviction
from extender.framework.session import Session
from extender.plugins.pdb import PdbPlugin
from tests.core.builders import Raw, conf_with, node, pod, podgroup, priority_class, queue
from tests.plugins.quota_objects import budget, run_with, session_with

JOB = {"matchLabels": {"volcano.sh/job-name": "job-1"}}


def _world(budgets: list[Raw], **extra: Any) -> Session:
    """Two running pods of job-1 (Volcano's test-pod1, test-pod2) and one of another job, on n0."""
    pods = [
        pod(f"test-pod{i}", group="j1", node="n0", phase="Running", labels={"volcano.sh/job-name": "job-1"})
        for i in (1, 2)
    ]
    pods.append(pod("other", group="j2", node="n0", phase="Running", labels={"app": "other"}))
    groups = [podgroup("j1", 1, phase="Running"), podgroup("j2", 1, phase="Running")]
    return session_with(
        [PdbPlugin({})], nodes=[node("n0")], pods=pods, groups=groups, budgets=budgets, **extra
    )


def _answer(ssn: Session, *names: str) -> list[str]:
    pods = [ssn.snapshot.pods[PodUID(n)] for n in names]
    pdb = ssn.plugins[0]
    pre = pdb.preemptable(ssn, pods[0], pods)
    rec = pdb.reclaimable(ssn, pods[0], pods)
    assert pre is not None and rec is not None
    assert [p.name for p in pre] == [p.name for p in rec]
    return [p.name for p in pre]


# Volcano's TestPreemptableAndReclaimableFn: (id, budgets, victims of test-pod1, test-pod2).
VOLCANO = [
    ("without-pdbs", [], ["test-pod1", "test-pod2"]),
    ("evict-0", [budget("test-pdb", allowed=0, selector=JOB)], []),
    ("evict-1", [budget("test-pdb", allowed=1, selector=JOB)], ["test-pod1"]),
]


@pytest.mark.parametrize(("budgets", "victims"), [r[1:] for r in VOLCANO], ids=[r[0] for r in VOLCANO])
def test_volcano_cases(budgets: list[Raw], victims: list[str]) -> None:
    assert _answer(_world(budgets), "test-pod1", "test-pod2") == victims


# (id, budgets, victims among test-pod1, test-pod2, other)
CASES = [
    ("uncovered-pods-go", [budget("b", allowed=0, selector=JOB)], ["other"]),
    (
        "already-disrupted-costs-nothing",
        [budget("b", allowed=0, selector=JOB, disrupted=["test-pod2"])],
        ["test-pod2", "other"],
    ),
    ("empty-selector-covers-the-namespace", [budget("b", allowed=1, selector={})], ["test-pod1"]),
    ("no-selector-covers-nothing", [budget("b", allowed=0)], ["test-pod1", "test-pod2", "other"]),
    (
        "other-namespace",
        [budget("b", namespace="elsewhere", allowed=0, selector=JOB)],
        ["test-pod1", "test-pod2", "other"],
    ),
    (
        "two-budgets-refuse",  # the Eviction API refuses a pod under two budgets, whatever they allow
        [
            budget("b1", allowed=5, selector=JOB),
            budget("b2", allowed=5, selector={"matchLabels": {"volcano.sh/job-name": "job-1"}}),
        ],
        ["other"],
    ),
    (
        "expressions",
        [
            budget(
                "b",
                allowed=0,
                selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["other"]}]},
            )
        ],
        ["test-pod1", "test-pod2"],
    ),
]


@pytest.mark.parametrize(("budgets", "victims"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_which_pods_a_budget_holds_back(budgets: list[Raw], victims: list[str]) -> None:
    assert _answer(_world(budgets), "test-pod1", "test-pod2", "other") == victims


def test_victims_chosen_earlier_in_the_cycle_spend_the_budget() -> None:
    """Volcano starts each answer from the full budget; here test-pod1, already chosen, spent it."""
    ssn = _world([budget("b", allowed=1, selector=JOB)])
    assert _answer(ssn, "test-pod2") == ["test-pod2"]
    stmt = ssn.statement()
    first = ssn.running.by_uid[PodUID("test-pod1")]
    stmt.evict(first.pod, first.row, first.queue, Eviction("Preempted", "test", first.group))
    assert _answer(ssn, "test-pod2") == []
    # Discarded, the eviction gives the budget back.
    stmt.discard()
    assert _answer(ssn, "test-pod2") == ["test-pod2"]


CLASSES = [priority_class("high", 1000), priority_class("low", 10)]


@pytest.mark.parametrize(
    ("plugins", "evictions"),
    [(("priority", "gang", "pdb"), 1), (("priority", "gang"), 2)],
    ids=["pdb-allows-one", "without-pdb"],
)
def test_two_preemptors_share_one_budget(plugins: tuple[str, ...], evictions: int) -> None:
    """A full node of low-priority pods under a budget allowing one disruption; two high-priority one-pod
    jobs each need a victim: only one is evicted in the cycle."""
    low = podgroup("low", 1, phase="Running", priority_class="low")
    lp = [
        pod(f"low-{i}", group="low", node="n0", phase="Running", memory="100Mi", labels={"app": "low"})
        for i in range(4)
    ]
    highs = [podgroup(f"high{i}", 1, phase="Inqueue", priority_class="high") for i in range(2)]
    hp = [pod(f"high{i}-0", group=f"high{i}", memory="100Mi") for i in range(2)]
    result = run_with(
        conf_with(*plugins, actions="enqueue, allocate, preempt"),
        nodes=[node("n0", cpu="4")],
        pods=lp + hp,
        groups=[low, *highs],
        budgets=[budget("low", allowed=1, selector={"matchLabels": {"app": "low"}})],
        queues=[queue("default")],
        priority_classes=CLASSES,
    )
    assert len(result.evictions) == evictions
    assert len(result.placements) == evictions


def test_reclaim_keeps_within_the_budget() -> None:
    """qb borrowed the whole cluster; qa would reclaim two pods, the budget lets one go."""
    b = podgroup("b", 1, queue="qb", phase="Running")
    pb = [
        pod(f"b-{i}", group="b", node="n0", phase="Running", memory="100Mi", queue="qb", labels={"app": "b"})
        for i in range(4)
    ]
    a = podgroup("a", 1, queue="qa", phase="Inqueue")
    pa = [pod(f"a-{i}", group="a", memory="100Mi", queue="qa") for i in range(4)]
    conf = conf_with("priority", "gang", "pdb", "proportion", actions="enqueue, allocate, reclaim")
    objects: dict[str, Any] = {
        "nodes": [node("n0", cpu="4")],
        "pods": pb + pa,
        "groups": [b, a],
        "queues": [queue("qa"), queue("qb")],
    }
    assert len(run_with(conf, **objects).evictions) == 2
    one = [budget("b", allowed=1, selector={"matchLabels": {"app": "b"}})]
    assert len(run_with(conf, budgets=one, **objects).evictions) == 1


def test_the_cache_skips_a_bad_budget_with_why() -> None:
    state = cluster_state(frozenset({"volcano"}))
    handler = state.cache.handlers()["poddisruptionbudgets"]
    good = budget("good", allowed=2, selector=JOB)
    bad = budget("bad", allowed=1, selector=JOB)
    bad["status"]["disruptionsAllowed"] = "lots"
    handler.replace([good, bad])
    budgets = state.cache.full_snapshot().budgets["default"]
    assert [(b.name, b.disruptions_allowed) for b in budgets] == [("good", 2)]
    assert "status.disruptionsAllowed" in state.cache.unreadable()["PodDisruptionBudget", "default/bad"]
    handler.remove(good)
    assert "default" not in state.cache.full_snapshot().budgets
