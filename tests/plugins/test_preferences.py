"""nodeorder's scores by who the pod is: preferred node affinity, PreferNoSchedule taints, preferred
inter-pod affinity (both ways) and ScheduleAnyway topology spread.

Each choice test pits a preference against the resource scores: without it the pod goes to ``idle``
(least requested, balanced allocation), with it to ``busy``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.core.model import PodUID
from extender.plugins.nodeorder import NodeorderPlugin
from tests.core.builders import (
    HOSTNAME,
    ZONE,
    Raw,
    conf_with,
    node,
    pod,
    podgroup,
    prefer_node,
    preferred,
    required,
    run,
    spread_by,
    term,
)
from tests.plugins.helpers import session

SSD = {"key": "disk", "operator": "In", "values": ["ssd"]}
PREFER_TAINT = {"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}


def two_nodes(busy_kw: dict[str, Any] | None = None, idle_kw: dict[str, Any] | None = None) -> list[Raw]:
    return [
        node("busy", cpu="8", memory="16Gi", **{"labels": {HOSTNAME: "busy"}, **(busy_kw or {})}),
        node("idle", cpu="8", memory="16Gi", **{"labels": {HOSTNAME: "idle"}, **(idle_kw or {})}),
    ]


def load() -> Raw:
    return pod("sys", cpu="3", memory="2Gi", node="busy", phase="Running", scheduler="default-scheduler")


def marker(name: str, on: str, labels: dict[str, str], **kw: Any) -> Raw:
    """A pod of another scheduler asking for nothing: it only carries labels (and terms)."""
    return pod(
        name,
        cpu=None,
        memory=None,
        node=on,
        phase="Running",
        scheduler="default-scheduler",
        labels=labels,
        **kw,
    )


def choose(nodes: list[Raw], others: list[Raw], args: dict[str, Any] | None = None, **pod_kw: Any) -> str:
    conf = conf_with("nodeorder", arguments={"nodeorder": args} if args else None)
    result = run(
        nodes,
        [load(), *others, pod("p", group="j", **pod_kw)],
        [podgroup("j", 1, phase="Inqueue")],
        conf=conf,
    )
    return result.placements[PodUID("p")]


# (id, nodes, other pods, nodeorder arguments, pod kwargs, expected node)
CHOICE: list[tuple[str, list[Raw], list[Raw], dict[str, Any] | None, dict[str, Any], str]] = [
    ("resources-alone", two_nodes(), [], None, {}, "idle"),
    (
        "preferred-node-affinity",
        two_nodes(busy_kw={"labels": {HOSTNAME: "busy", "disk": "ssd"}}),
        [],
        None,
        {"preferred_nodes": [prefer_node(1, SSD)]},
        "busy",
    ),
    (
        "preferred-node-affinity-weight-zero",
        two_nodes(busy_kw={"labels": {HOSTNAME: "busy", "disk": "ssd"}}),
        [],
        {"nodeaffinity.weight": 0},
        {"preferred_nodes": [prefer_node(1, SSD)]},
        "idle",
    ),
    ("prefer-no-schedule-taint", two_nodes(idle_kw={"taints": [PREFER_TAINT]}), [], None, {}, "busy"),
    (
        "prefer-no-schedule-tolerated",
        two_nodes(idle_kw={"taints": [PREFER_TAINT]}),
        [],
        None,
        {"tolerations": [{"key": "spot", "operator": "Exists", "effect": "PreferNoSchedule"}]},
        "idle",
    ),
    (
        "prefer-no-schedule-weight-zero",
        two_nodes(idle_kw={"taints": [PREFER_TAINT]}),
        [],
        {"tainttoleration.weight": 0},
        {},
        "idle",
    ),
    (
        "preferred-pod-affinity",
        two_nodes(),
        [marker("db", "busy", {"app": "db"})],
        None,
        {"pod_affinity": preferred((50, term(HOSTNAME, app="db")))},
        "busy",
    ),
    (
        "preferred-pod-anti-affinity",
        two_nodes(),
        [marker("cache", "idle", {"app": "cache"})],
        None,
        {"anti_affinity": preferred((50, term(HOSTNAME, app="cache")))},
        "busy",
    ),
    (
        "preferred-pod-affinity-weight-zero",
        two_nodes(),
        [marker("db", "busy", {"app": "db"})],
        {"podaffinity.weight": 0},
        {"pod_affinity": preferred((50, term(HOSTNAME, app="db")))},
        "idle",
    ),
    (
        "existing-pods-preferred-affinity",
        two_nodes(),
        [marker("db", "busy", {"app": "db"}, pod_affinity=preferred((50, term(HOSTNAME, app="web"))))],
        None,
        {"labels": {"app": "web"}},
        "busy",
    ),
    (
        "existing-pods-required-affinity",
        two_nodes(),
        [marker("db", "busy", {"app": "db"}, pod_affinity=required(term(HOSTNAME, app="web")))],
        None,
        {"labels": {"app": "web"}},
        "busy",
    ),
    (
        "existing-pods-preferred-anti-affinity",
        two_nodes(),
        [marker("db", "idle", {"app": "db"}, anti_affinity=preferred((50, term(HOSTNAME, app="web"))))],
        None,
        {"labels": {"app": "web"}},
        "busy",
    ),
    (
        "existing-pods-terms-for-other-pods",
        two_nodes(),
        [marker("db", "busy", {"app": "db"}, pod_affinity=preferred((50, term(HOSTNAME, app="api"))))],
        None,
        {"labels": {"app": "web"}},
        "idle",
    ),
    (
        "schedule-anyway-spread",
        two_nodes(
            busy_kw={"labels": {HOSTNAME: "busy", ZONE: "a"}},
            idle_kw={"labels": {HOSTNAME: "idle", ZONE: "b"}},
        ),
        [marker("w1", "idle", {"app": "web"}), marker("w2", "idle", {"app": "web"})],
        None,
        {"labels": {"app": "web"}, "spread": [spread_by(ZONE, 1, hard=False, app="web")]},
        "busy",
    ),
    (
        "schedule-anyway-spread-weight-zero",
        two_nodes(
            busy_kw={"labels": {HOSTNAME: "busy", ZONE: "a"}},
            idle_kw={"labels": {HOSTNAME: "idle", ZONE: "b"}},
        ),
        [marker("w1", "idle", {"app": "web"}), marker("w2", "idle", {"app": "web"})],
        {"podtopologyspread.weight": 0},
        {"labels": {"app": "web"}, "spread": [spread_by(ZONE, 1, hard=False, app="web")]},
        "idle",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "others", "args", "pod_kw", "expected"), [r[1:] for r in CHOICE], ids=[r[0] for r in CHOICE]
)
def test_preference_decides(
    nodes: list[Raw], others: list[Raw], args: dict[str, Any] | None, pod_kw: dict[str, Any], expected: str
) -> None:
    assert choose(nodes, others, args, **pod_kw) == expected


def test_volcano_default_weights() -> None:
    p = NodeorderPlugin({})
    assert (p.least, p.most, p.balanced) == (1, 0, 1)
    assert (p.node_affinity, p.pod_affinity, p.taints, p.spread) == (2, 2, 3, 2)


def pod_scores(nodes: list[Raw], others: list[Raw], args: dict[str, Any], **pod_kw: Any) -> list[float]:
    """nodeorder's per-pod scores over all nodes as candidates, resource scores off."""
    off = {"leastrequested.weight": 0, "balancedresource.weight": 0}
    plugin = NodeorderPlugin(
        {
            **off,
            "nodeaffinity.weight": 0,
            "podaffinity.weight": 0,
            "tainttoleration.weight": 0,
            "podtopologyspread.weight": 0,
            **args,
        }
    )
    ssn = session([plugin], nodes, [*others, pod("p", **pod_kw)])
    s = plugin.pod_score(ssn, ssn.snapshot.pods[PodUID("p")], np.ones(len(nodes), dtype=np.bool_))
    return [] if s is None else [float(x) for x in s]


def three(labels: list[dict[str, str]], taints: list[list[dict[str, str]]] | None = None) -> list[Raw]:
    return [
        node(f"n{i}", labels={HOSTNAME: f"n{i}", **labels[i]}, taints=(taints or [[], [], []])[i])
        for i in range(3)
    ]


def test_node_affinity_score_formula() -> None:
    """Σ weights of matched terms, ×100 / the best candidate's (integer division), × weight."""
    nodes = three([{"disk": "ssd", "gpu": "a"}, {"disk": "ssd"}, {}])
    gpu = {"key": "gpu", "operator": "Exists"}
    scores = pod_scores(
        nodes, [], {"nodeaffinity.weight": 2}, preferred_nodes=[prefer_node(1, SSD), prefer_node(2, gpu)]
    )
    assert scores == [200.0, 2 * (100 * 1 // 3), 0.0]


def test_taint_score_formula() -> None:
    """100 - 100 × intolerable PreferNoSchedule taints / the most any candidate has, × weight."""
    other = {"key": "old", "value": "", "effect": "PreferNoSchedule"}
    nodes = three([{}, {}, {}], [[PREFER_TAINT, other], [PREFER_TAINT], []])
    assert pod_scores(nodes, [], {"tainttoleration.weight": 3}) == [0.0, 150.0, 300.0]
    tolerate_spot = [{"key": "spot", "operator": "Equal", "value": "yes"}]  # empty effect: every effect
    assert pod_scores(nodes, [], {"tainttoleration.weight": 1}, tolerations=tolerate_spot) == [
        0.0,
        100.0,
        100.0,
    ]
    no_taints = three([{}, {}, {}])
    assert pod_scores(no_taints, [], {"tainttoleration.weight": 1}) == []


def test_inter_pod_score_formula() -> None:
    """Domain sums of matched weights (anti-affinity negative), normalised min..max to 0..100."""
    nodes = three([{}, {}, {}])
    others = [marker("db", "n0", {"app": "db"}), marker("cache", "n1", {"app": "cache"})]
    scores = pod_scores(
        nodes,
        others,
        {"podaffinity.weight": 1},
        pod_affinity=preferred((10, term(HOSTNAME, app="db"))),
        anti_affinity=preferred((5, term(HOSTNAME, app="cache"))),
    )
    assert scores == [100.0, 0.0, float(100 * 5 // 15)]


def test_spread_score_formula() -> None:
    """count × log(domains + 2) + maxSkew - 1, rounded; normalised so the emptiest domain scores 100."""
    nodes = three([{ZONE: "a"}, {ZONE: "b"}, {ZONE: "c"}])
    web = {"app": "web"}
    others = [marker("w1", "n0", web), marker("w2", "n0", web), marker("w3", "n1", web)]
    scores = pod_scores(
        nodes,
        others,
        {"podtopologyspread.weight": 1},
        labels=web,
        spread=[spread_by(ZONE, 1, hard=False, app="web")],
    )
    raw = [round(2 * np.log(5)), round(1 * np.log(5)), 0]  # 3, 2, 0
    top, low = max(raw), min(raw)
    assert scores == [float(100 * (top + low - r) // top) for r in raw]


def test_spread_score_ignores_nodes_without_the_key() -> None:
    nodes = [node("a0", labels={ZONE: "a"}), node("bare")]
    scores = pod_scores(nodes, [], {"podtopologyspread.weight": 1}, spread=[spread_by(ZONE, 1, hard=False)])
    assert scores == [100.0, 0.0]


def test_pods_without_preferences_get_no_pod_score() -> None:
    nodes = three([{}, {}, {}])
    assert (
        pod_scores(
            nodes, [marker("x", "n0", {"app": "x"})], {"podaffinity.weight": 5, "nodeaffinity.weight": 5}
        )
        == []
    )
