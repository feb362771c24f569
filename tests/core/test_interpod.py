"""Required inter-pod affinity and anti-affinity: nodes, pods and groups in, placements or reasons out.

Every scenario runs Volcano's default conf over raw objects; groups are Inqueue so only placement decides.
Nodes ``n0..`` carry their hostname label and a zone label (``a``, ``b``, ... in turn, unless given).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from extender.core.interpod import PodsOnNodes
from extender.core.model import GroupKey, PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.reasons import NOT_ENOUGH_RESOURCES
from extender.framework.session import Session
from extender.plugins.registry import load_conf
from tests.core.builders import (
    HOSTNAME,
    ZONE,
    Raw,
    gang,
    node,
    pod,
    podgroup,
    queue,
    required,
    run,
    snapshot,
    term,
)

WEB = {"app": "web"}


def nodes(count: int, zones: str = "abc", **kw: Any) -> list[Raw]:
    return [
        node(f"n{i}", labels={HOSTNAME: f"n{i}", ZONE: zones[i % len(zones)]}, **kw) for i in range(count)
    ]


def running(name: str, on: str, labels: dict[str, str], namespace: str = "default", **kw: Any) -> Raw:
    """A pod of another scheduler already running on ``on``."""
    return pod(
        name,
        node=on,
        phase="Running",
        scheduler="default-scheduler",
        labels=labels,
        namespace=namespace,
        **kw,
    )


def test_gang_with_anti_affinity_between_members_lands_on_distinct_nodes_in_one_cycle() -> None:
    """The acceptance case: no member shares a node with another, decided in a single cycle."""
    pg, pods = gang("web", 3, labels=WEB, anti_affinity=required(term(HOSTNAME, app="web")))
    result = run(nodes(4), pods, [pg])
    assert result.ready == {"default/web"} and result.unschedulable == {}
    assert len(result.placements) == 3
    assert len(set(result.placements.values())) == 3


def test_gang_that_anti_affinity_cannot_place_says_so() -> None:
    pg, pods = gang("web", 5, labels=WEB, anti_affinity=required(term(HOSTNAME, app="web")))
    result = run(nodes(4), pods, [pg])
    assert result.placements == {} and result.ready == set()
    u = result.unschedulable[GroupKey("default/web")]
    assert u.reason == NOT_ENOUGH_RESOURCES
    assert u.message == (
        "gang 4/5 placeable: no node satisfies its inter-pod rules: "
        "pod anti-affinity app=web per kubernetes.io/hostname (4 nodes)"
    )


# (id, nodes, pods already there, the pod's kwargs, the nodes it may land on; empty: none)
FILTER: list[tuple[str, list[Raw], list[Raw], dict[str, Any], set[str]]] = [
    (
        "anti-avoids-existing-pod",
        nodes(3),
        [running("w", "n0", WEB)],
        {"anti_affinity": required(term(HOSTNAME, app="web"))},
        {"n1", "n2"},
    ),
    (
        "anti-by-zone",
        nodes(4, zones="ab"),
        [running("w", "n0", WEB)],
        {"anti_affinity": required(term(ZONE, app="web"))},
        {"n1", "n3"},
    ),
    (
        "anti-other-labels-ignored",
        nodes(2),
        [running("d", "n0", {"app": "db"})],
        {"anti_affinity": required(term(HOSTNAME, app="web"))},
        {"n0", "n1"},
    ),
    (
        "anti-other-namespace-ignored-by-default",
        nodes(2),
        [running("w", "n0", WEB, namespace="other")],
        {"anti_affinity": required(term(HOSTNAME, app="web"))},
        {"n0", "n1"},
    ),
    (
        "anti-namespaces-list",
        nodes(2),
        [running("w", "n0", WEB, namespace="other")],
        {"anti_affinity": required(term(HOSTNAME, namespaces=["other"], app="web"))},
        {"n1"},
    ),
    (
        "anti-node-without-key-is-fine",
        [node("n0", labels={HOSTNAME: "n0"}), node("n1", labels={HOSTNAME: "n1"})],
        [running("w", "n0", WEB)],
        {"anti_affinity": required(term(ZONE, app="web"))},
        {"n0", "n1"},
    ),
    (
        "anti-counts-terminating-pods",
        nodes(2),
        [running("w", "n0", WEB, deleting=True)],
        {"anti_affinity": required(term(HOSTNAME, app="web"))},
        {"n1"},
    ),
    (
        "anti-ignores-finished-pods",
        nodes(2),
        [pod("w", node="n0", phase="Succeeded", scheduler="x", labels=WEB)],
        {"anti_affinity": required(term(HOSTNAME, app="web"))},
        {"n0", "n1"},
    ),
    (
        "symmetry-existing-anti-affinity",
        nodes(3),
        [running("guard", "n1", {"app": "guard"}, anti_affinity=required(term(HOSTNAME, app="web")))],
        {"labels": WEB},
        {"n0", "n2"},
    ),
    (
        "symmetry-by-zone",
        nodes(4, zones="ab"),
        [running("guard", "n1", {"app": "guard"}, anti_affinity=required(term(ZONE, app="web")))],
        {"labels": WEB},
        {"n0", "n2"},
    ),
    (
        "symmetry-only-for-matching-pods",
        nodes(2),
        [running("guard", "n1", {"app": "guard"}, anti_affinity=required(term(HOSTNAME, app="web")))],
        {"labels": {"app": "db"}},
        {"n0", "n1"},
    ),
    (
        "symmetry-in-the-holders-namespace",
        nodes(2),
        [running("guard", "n1", {}, namespace="other", anti_affinity=required(term(HOSTNAME, app="web")))],
        {"labels": WEB},
        {"n0", "n1"},
    ),
    (
        "affinity-joins-existing-pod",
        nodes(3),
        [running("db", "n2", {"app": "db"})],
        {"pod_affinity": required(term(HOSTNAME, app="db"))},
        {"n2"},
    ),
    (
        "affinity-by-zone",
        nodes(4, zones="ab"),
        [running("db", "n1", {"app": "db"})],
        {"pod_affinity": required(term(ZONE, app="db"))},
        {"n1", "n3"},
    ),
    (
        "affinity-needs-the-key",
        [node("n0", labels={ZONE: "a"}), node("n1", labels={HOSTNAME: "n1"})],
        [running("db", "n0", {"app": "db"})],
        {"pod_affinity": required(term(ZONE, app="db"))},
        {"n0"},
    ),
    (
        "affinity-all-terms-by-one-pod",
        nodes(3),
        [running("db", "n0", {"app": "db"}), running("cache", "n1", {"tier": "cache"})],
        {"pod_affinity": required(term(HOSTNAME, app="db"), term(HOSTNAME, tier="cache"))},
        set(),
    ),
    (
        "affinity-nothing-matches",
        nodes(2),
        [],
        {"pod_affinity": required(term(HOSTNAME, app="db"))},
        set(),
    ),
    (
        "self-affinity-first-pod-goes-anywhere",
        nodes(2),
        [],
        {"labels": WEB, "pod_affinity": required(term(HOSTNAME, app="web"))},
        {"n0", "n1"},
    ),
    (
        "self-affinity-joins-the-group",
        nodes(3),
        [running("w", "n1", WEB)],
        {"labels": WEB, "pod_affinity": required(term(HOSTNAME, app="web"))},
        {"n1"},
    ),
]


@pytest.mark.parametrize(
    ("node_list", "existing", "pod_kw", "allowed"), [r[1:] for r in FILTER], ids=[r[0] for r in FILTER]
)
def test_required_inter_pod_rules(
    node_list: list[Raw], existing: list[Raw], pod_kw: dict[str, Any], allowed: set[str]
) -> None:
    # Each node once as the least loaded (the default conf spreads): the rule, not the score, decides.
    for favourite in (n["metadata"]["name"] for n in node_list):
        load = [
            pod(
                f"load-{n['metadata']['name']}",
                cpu="2",
                node=n["metadata"]["name"],
                phase="Running",
                scheduler="x",
            )
            for n in node_list
            if n["metadata"]["name"] != favourite
        ]
        result = run(
            node_list, [*existing, *load, pod("p", group="j", **pod_kw)], [podgroup("j", 1, phase="Inqueue")]
        )
        if not allowed:
            assert result.placements == {}
            assert "inter-pod rules" in result.unschedulable[GroupKey("default/j")].message
            return
        assert result.placements[PodUID("p")] in allowed
        if favourite in allowed:
            assert result.placements[PodUID("p")] == favourite


def selector_anti(expr: dict[str, Any]) -> dict[str, Any]:
    return required({"labelSelector": {"matchExpressions": [expr]}, "topologyKey": HOSTNAME})


# (id, labelSelector expression, labels of the pod on n0, whether the selector matches it)
EXPRESSIONS = [
    ("in", {"key": "app", "operator": "In", "values": ["web", "api"]}, {"app": "api"}, True),
    ("in-miss", {"key": "app", "operator": "In", "values": ["web"]}, {"app": "api"}, False),
    ("notin", {"key": "app", "operator": "NotIn", "values": ["web"]}, {"app": "api"}, True),
    ("notin-absent-key", {"key": "app", "operator": "NotIn", "values": ["web"]}, {}, True),
    ("notin-hit", {"key": "app", "operator": "NotIn", "values": ["api"]}, {"app": "api"}, False),
    ("exists", {"key": "app", "operator": "Exists"}, {"app": ""}, True),
    ("exists-miss", {"key": "app", "operator": "Exists"}, {}, False),
    ("doesnotexist", {"key": "app", "operator": "DoesNotExist"}, {}, True),
    ("doesnotexist-hit", {"key": "app", "operator": "DoesNotExist"}, {"app": "x"}, False),
]


@pytest.mark.parametrize(
    ("expr", "labels", "matches"), [r[1:] for r in EXPRESSIONS], ids=[r[0] for r in EXPRESSIONS]
)
def test_label_selector_expressions(expr: dict[str, Any], labels: dict[str, str], matches: bool) -> None:
    # n0 would win on score; the load is in another namespace, out of the term's reach.
    load = pod("load", cpu="2", node="n1", phase="Running", scheduler="x", namespace="sys")
    existing = running("other", "n0", labels)
    result = run(
        nodes(2),
        [existing, load, pod("p", group="j", anti_affinity=selector_anti(expr))],
        [podgroup("j", 1, phase="Inqueue")],
    )
    assert result.placements[PodUID("p")] == ("n1" if matches else "n0")


def _ns_term(selector: dict[str, Any]) -> Raw:
    t = term(HOSTNAME, app="web")
    t["namespaceSelector"] = selector
    return t


# (id, namespaceSelector, namespace labels given to the snapshot or None, whether the web pod on n0 in
# namespace "other" counts)
NAMESPACE_SELECTORS: list[tuple[str, dict[str, Any], dict[str, dict[str, str]] | None, bool]] = [
    ("empty-selector-is-every-namespace", {}, None, True),
    ("by-name-label", {"matchLabels": {"kubernetes.io/metadata.name": "other"}}, None, True),
    ("by-name-label-miss", {"matchLabels": {"kubernetes.io/metadata.name": "else"}}, None, False),
    ("by-team-with-labels", {"matchLabels": {"team": "a"}}, {"other": {"team": "a"}}, True),
    ("by-team-with-labels-miss", {"matchLabels": {"team": "a"}}, {"other": {"team": "b"}}, False),
    # Unknown namespace labels: anti-affinity does not refuse (kube-scheduler refuses what is wrong).
    ("by-team-unknown", {"matchLabels": {"team": "a"}}, None, False),
]


@pytest.mark.parametrize(
    ("selector", "ns_labels", "counts"),
    [r[1:] for r in NAMESPACE_SELECTORS],
    ids=[r[0] for r in NAMESPACE_SELECTORS],
)
def test_namespace_selector(
    selector: dict[str, Any], ns_labels: dict[str, dict[str, str]] | None, counts: bool
) -> None:
    load = pod("load", cpu="2", node="n1", phase="Running", scheduler="x")
    existing = running("w", "n0", WEB, namespace="other")
    p = pod("p", group="j", anti_affinity=required(_ns_term(selector)))
    snap = snapshot(nodes(2), [existing, load, p], [podgroup("j", 1, phase="Inqueue")])
    snap = replace(snap, namespace_labels=ns_labels)
    result = run_cycle(snap, load_conf(None), 0.0)
    assert result.placements[PodUID("p")] == ("n1" if counts else "n0")


def test_planned_pods_count() -> None:
    """A pod planned (not yet bound) on n0 by an earlier cycle repels like a running one."""
    x = podgroup("x", 1, phase="Inqueue")
    planned = pod("x-0", group="x", labels=WEB)
    result = run(
        nodes(2),
        [planned, pod("p", group="j", anti_affinity=required(term(HOSTNAME, app="web")))],
        [x, podgroup("j", 1, phase="Inqueue")],
        plans={"x-0": "n0"},
    )
    assert result.placements == {"p": "n1"}


def test_gangs_planned_in_one_cycle_see_each_other() -> None:
    """The second gang respects the first one's fresh placements: both its pods share the third node,
    although spreading alone would use the emptier nodes the first gang took one pod of each."""
    a, pa = gang("a", 2, labels=WEB)
    b, pb = gang("b", 2, anti_affinity=required(term(HOSTNAME, app="web")))
    b["metadata"]["creationTimestamp"] = "2024-01-01T00:00:01Z"
    result = run(nodes(3), pa + pb, [a, b])
    assert result.ready == {"default/a", "default/b"}
    free = ({"n0", "n1", "n2"} - {result.placements[PodUID("a-0")], result.placements[PodUID("a-1")]}).pop()
    assert result.placements[PodUID("b-0")] == result.placements[PodUID("b-1")] == free


def test_members_joining_a_pod_placed_later_in_the_same_gang() -> None:
    """Workers need the master's node but sort before it: they are retried once the master is placed."""
    pg = podgroup("j", 3, phase="Inqueue")
    workers = [
        pod(f"w{i}", group="j", priority=1, pod_affinity=required(term(HOSTNAME, role="master")))
        for i in range(2)
    ]
    master = pod("m", group="j", labels={"role": "master"})
    result = run(nodes(3), [*workers, master], [pg])
    assert result.ready == {"default/j"}
    assert len(set(result.placements.values())) == 1


def test_self_affine_gang_stays_together() -> None:
    """The first member goes anywhere (no pod matches yet); the rest follow it to its zone."""
    pg, pods = gang("web", 4, labels=WEB, pod_affinity=required(term(ZONE, app="web")))
    result = run(nodes(6), pods, [pg])
    zones = {int(n[1:]) % 3 for n in result.placements.values()}
    assert result.ready == {"default/web"} and len(zones) == 1


def test_discarded_gang_leaves_no_trace() -> None:
    """A gang that fails is discarded; a later gang must not see its tentative placements."""
    a = podgroup("a", 3, phase="Inqueue")
    big = [pod(f"a-{i}", group="a", labels=WEB, cpu="3") for i in range(3)]  # only two nodes: a fails
    b = podgroup("b", 1, phase="Inqueue")
    b["metadata"]["creationTimestamp"] = "2024-01-01T00:00:01Z"
    p = pod("b-0", group="b", anti_affinity=required(term(HOSTNAME, app="web")))
    result = run(nodes(2), [*big, p], [a, b])
    assert "default/a" in result.unschedulable
    assert "b-0" in result.placements


def test_pods_without_rules_never_build_the_inter_pod_state() -> None:
    """The fast path: no pod with rules, none on a node: the cycle never counts pods on nodes."""
    pg, pods = gang("plain", 3, labels=WEB)
    snap = snapshot(nodes(3), [*pods, running("r", "n0", WEB)], [pg])
    ssn = Session(snap, build_hooks(load_conf(None).tiers()))
    for act in load_conf(None).actions:
        act(ssn)
    assert len(ssn.result.placements) == 3
    assert ssn.rules._interpod is None


def test_explain_counts_each_node_once() -> None:
    snap = snapshot(
        nodes(3),
        [running("w", "n0", WEB), running("d", "n1", {"app": "db"})],
    )
    state = PodsOnNodes(snap)
    p = parse_pod(
        pod("p", anti_affinity=required(term(HOSTNAME, app="web"), term(HOSTNAME, app="db")), labels=WEB)
    )
    assert state.explain(p, np.ones(3, dtype=np.bool_)) == (
        "pod anti-affinity app=db per kubernetes.io/hostname (1 nodes); "
        "pod anti-affinity app=web per kubernetes.io/hostname (1 nodes)"
    )


def test_residents_passed_apart_from_the_pending_work() -> None:
    """The cache's way: ``pods`` holds only the groups with work, ``residents`` every pod it knows;
    a running pod of another workload outside ``pods`` still repels."""
    other = parse_pod(running("w", "n0", WEB))
    mine = parse_pod(pod("p", group="j", anti_affinity=required(term(HOSTNAME, app="web"))))
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes(2)],
        pods=[mine],
        podgroups=[parse_podgroup(podgroup("j", 1, phase="Inqueue"))],
        queues=[parse_queue(queue("default"))],
        residents=[other, mine],
    )
    assert run_cycle(snap, load_conf(None), 0.0).placements == {"p": "n1"}
    without = build_snapshot(
        nodes=[parse_node(n) for n in nodes(2)],
        pods=[mine],
        podgroups=[parse_podgroup(podgroup("j", 1, phase="Inqueue"))],
        queues=[parse_queue(queue("default"))],
    )
    assert run_cycle(without, load_conf(None), 0.0).placements == {
        "p": "n0"
    }  # unseen: only kube-scheduler knows


def test_spread_key_missing_everywhere_says_so() -> None:
    pg, pods = gang("web", 1, labels=WEB, spread=[{"maxSkew": 1, "topologyKey": "rack", "labelSelector": {}}])
    result = run(nodes(2), pods, [pg])
    assert result.unschedulable[GroupKey("default/web")].message == (
        "gang 0/1 placeable: no node satisfies its inter-pod rules: "
        "node lacks the topology spread key rack (2 nodes)"
    )
