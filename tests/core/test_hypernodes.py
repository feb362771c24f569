"""HyperNode parsing and resolution (extender.core.hypernodes): exact, regex and label members, nested
HyperNodes, discovery from node labels, and bad objects (a clear reason, never a crash). Tables after
Volcano's hyper_node_info_test.go (which nodes each HyperNode ends up holding), with our code."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from extender.core.errors import InvalidObject
from extender.core.hypernodes import (
    HyperNodeSet,
    build_tree,
    parse_hypernode,
    parse_network_topology,
)
from extender.core.model import NetworkTopology, Node
from extender.core.parse import parse_node, parse_podgroup
from tests.core.builders import node, podgroup

Raw = dict[str, Any]


def hn(
    name: str, tier: int, *members: Raw, tier_name: str = "", labels: Mapping[str, str] | None = None
) -> Raw:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"tier": tier, "tierName": tier_name, "members": list(members)},
    }


def exact(name: str, kind: str = "Node") -> Raw:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def regex(pattern: str, kind: str = "Node") -> Raw:
    return {"type": kind, "selector": {"regexMatch": {"pattern": pattern}}}


def by_labels(kind: str = "Node", **labels: str) -> Raw:
    return {"type": kind, "selector": {"labelMatch": {"matchLabels": labels}}}


def nodes(*names: str, labels: Mapping[str, Mapping[str, str]] | None = None) -> tuple[Node, ...]:
    got = labels or {}
    return tuple(sorted((parse_node(node(n, labels=got.get(n, {}))) for n in names), key=lambda n: n.name))


def held(objs: Sequence[Raw], table: Sequence[Node], discovery: Sequence[str] = ()) -> dict[str, list[str]]:
    tree = build_tree([parse_hypernode(o) for o in objs], table, discovery)
    return {d.name: [table[r].name for r in d.rows.tolist()] for d in tree.domains}


NODES = nodes("s0-n1", "s0-n2", "s1-n3", "s1-n4", "gpu-a", "gpu-b", labels={"gpu-a": {"rack": "r1"}})


@pytest.mark.parametrize(
    ("objs", "expect"),
    [
        pytest.param(
            [hn("s0", 1, exact("s0-n1"), exact("s0-n2")), hn("s1", 1, exact("s1-n3"), exact("s1-n4"))],
            {"s0": ["s0-n1", "s0-n2"], "s1": ["s1-n3", "s1-n4"]},
            id="exact members",
        ),
        pytest.param(
            [hn("s0", 1, regex("^s0-")), hn("any-n", 1, regex("n[34]"))],
            {"any-n": ["s1-n3", "s1-n4"], "s0": ["s0-n1", "s0-n2"]},
            id="regex members (matched anywhere in the name, as Go's MatchString)",
        ),
        pytest.param(
            [hn("r1", 1, by_labels(rack="r1"))],
            {"r1": ["gpu-a"]},
            id="label members",
        ),
        pytest.param(
            [
                hn("s0", 1, exact("s0-n1"), exact("s0-n2")),
                hn("s1", 1, regex("^s1-")),
                hn("s2", 2, exact("s0", "HyperNode"), exact("s1", "HyperNode")),
                hn("s3", 3, exact("s2", "HyperNode"), exact("gpu-b")),
            ],
            {
                "s0": ["s0-n1", "s0-n2"],
                "s1": ["s1-n3", "s1-n4"],
                "s2": ["s0-n1", "s0-n2", "s1-n3", "s1-n4"],
                "s3": ["gpu-b", "s0-n1", "s0-n2", "s1-n3", "s1-n4"],
            },
            id="nested HyperNodes, mixed with nodes",
        ),
        pytest.param(
            [hn("leaf", 1, exact("gone")), hn("s0", 1, exact("s0-n1"))],
            {"s0": ["s0-n1"]},
            id="a domain without nodes is dropped",
        ),
        pytest.param(
            [
                hn("zone", 2, regex("^s", "HyperNode")),
                hn("s0", 1, exact("s0-n1")),
                hn("s1", 1, exact("s1-n3")),
            ],
            {"s0": ["s0-n1"], "s1": ["s1-n3"], "zone": ["s0-n1", "s1-n3"]},
            id="regex over HyperNode members (ours: Volcano takes exactMatch there)",
        ),
    ],
)
def test_members_resolve_to_nodes(objs: list[Raw], expect: dict[str, list[str]]) -> None:
    assert held(objs, NODES) == expect


def test_domains_come_lowest_tier_first_then_by_name() -> None:
    objs = [hn("b", 2, exact("a", "HyperNode")), hn("z", 1, exact("s1-n3")), hn("a", 1, exact("s0-n1"))]
    tree = build_tree([parse_hypernode(o) for o in objs], NODES)
    assert [(d.tier, d.name) for d in tree.domains] == [(1, "a"), (1, "z"), (2, "b")]
    assert tree.tiers == (1, 2)
    # Per-domain sums over rows (what the plugin's capacity checks use).
    ones = np.ones(len(NODES), dtype=np.int64)
    assert tree.sums(ones).tolist() == [1, 1, 1]


@pytest.mark.parametrize(
    ("objs", "problem"),
    [
        pytest.param([hn("s0", 1, regex("(unclosed"))], "not a valid pattern", id="bad regex"),
        pytest.param([hn("s2", 2, exact("missing", "HyperNode"))], "does not exist", id="unknown member"),
        pytest.param(
            [hn("a", 2, exact("b", "HyperNode")), hn("b", 2, exact("s0-n1"))], "not below it", id="same tier"
        ),
        pytest.param(
            [hn("s0", 1, exact("s0-n1")), hn("s1", 1, exact("s0-n1"))],
            "node s0-n1 is in both s0 and s1",
            id="a node in two domains of one tier",
        ),
    ],
)
def test_unresolvable_members_are_named_and_the_rest_stands(objs: list[Raw], problem: str) -> None:
    tree = build_tree([parse_hypernode(o) for o in objs], NODES)
    assert any(problem in p for p in tree.problems), tree.problems


def test_a_cycle_is_cut_not_followed() -> None:
    # Tiers forbid a cycle, but a hand-made object may lie about them: a, b at tiers 2 and 3 naming each
    # other; b -> a is below it, a -> b is not: left out with a reason, and the nodes still resolve.
    objs = [hn("a", 2, exact("b", "HyperNode"), exact("s0-n1")), hn("b", 3, exact("a", "HyperNode"))]
    tree = build_tree([parse_hypernode(o) for o in objs], NODES)
    assert {d.name: d.rows.tolist() for d in tree.domains} == {"a": [2], "b": [2]}
    assert any("not below it" in p for p in tree.problems)


def test_discovery_from_node_labels() -> None:
    table = nodes(
        "n1",
        "n2",
        "n3",
        "n4",
        "n5",
        labels={
            "n1": {"leaf": "l1", "spine": "s1"},
            "n2": {"leaf": "l1", "spine": "s1"},
            "n3": {"leaf": "l2", "spine": "s1"},
            "n4": {"leaf": "l3", "spine": "s2"},
            "n5": {},
        },
    )
    got = held([], table, discovery=("leaf", "spine"))
    assert got == {
        "leaf=l1": ["n1", "n2"],
        "leaf=l2": ["n3"],
        "leaf=l3": ["n4"],
        "spine=s1": ["n1", "n2", "n3"],
        "spine=s2": ["n4"],
    }
    tree = build_tree([], table, ("leaf", "spine"))
    assert [d.tier for d in tree.domains] == [1, 1, 1, 2, 2]
    assert tree.tier_named("spine") == 2


def test_an_object_wins_over_a_discovered_domain_of_the_same_name() -> None:
    table = nodes("n1", "n2", labels={"n1": {"leaf": "l1"}, "n2": {"leaf": "l1"}})
    got = held([hn("leaf=l1", 1, exact("n2"))], table, discovery=("leaf",))
    assert got == {"leaf=l1": ["n2"]}


def test_the_set_memoizes_per_node_table() -> None:
    s = HyperNodeSet([parse_hypernode(hn("s0", 1, regex("^s0")))])
    first = s.tree(NODES)
    assert s.tree(NODES) is first
    other = nodes("s0-x")
    assert s.tree(other) is not first
    assert [d.rows.tolist() for d in s.tree(other).domains] == [[0]]
    assert HyperNodeSet().tree(NODES).domains == ()


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        pytest.param({"metadata": {}}, "metadata.name", id="no name"),
        pytest.param(hn("x", -1), "spec.tier", id="negative tier"),
        pytest.param({"metadata": {"name": "x"}, "spec": {"tier": "1"}}, "spec.tier", id="tier not a number"),
        pytest.param(
            hn("x", 1, {"type": "Rack", "selector": {"exactMatch": {"name": "a"}}}), "type", id="bad type"
        ),
        pytest.param(hn("x", 1, {"type": "Node", "selector": {}}), "exactly one", id="no selector"),
        pytest.param(
            hn(
                "x",
                1,
                {"type": "Node", "selector": {"exactMatch": {"name": "a"}, "regexMatch": {"pattern": "a"}}},
            ),
            "exactly one",
            id="two selectors",
        ),
        pytest.param(
            hn(
                "x",
                1,
                {
                    "type": "Node",
                    "selector": {"labelMatch": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}},
                },
            ),
            "operator",
            id="bad label operator",
        ),
        pytest.param(
            {"metadata": {"name": "x"}, "spec": {"tier": 1, "members": {"a": 1}}},
            "spec.members",
            id="members",
        ),
    ],
)
def test_bad_objects_name_the_field(obj: Raw, field: str) -> None:
    with pytest.raises(InvalidObject, match=field.replace(".", r"\.")):
        parse_hypernode(obj)


@pytest.mark.parametrize(
    ("spec", "annotations", "expect"),
    [
        ({}, {}, None),
        (
            {"networkTopology": {"mode": "hard", "highestTierAllowed": 1}},
            {},
            NetworkTopology(hard=True, highest_tier=1),
        ),
        ({"networkTopology": {"mode": "soft"}}, {}, NetworkTopology(hard=False)),
        ({"networkTopology": {}}, {}, NetworkTopology(hard=True)),
        ({"networkTopology": {"highestTierName": "spine"}}, {}, NetworkTopology(highest_tier_name="spine")),
        (
            {},
            {"volcano.sh/network-topology-mode": "hard", "volcano.sh/network-topology-highest-tier": "2"},
            NetworkTopology(hard=True, highest_tier=2),
        ),
        ({}, {"volcano.sh/network-topology-mode": "soft"}, NetworkTopology(hard=False)),
    ],
)
def test_network_topology_from_spec_or_annotations(
    spec: Raw, annotations: dict[str, str], expect: NetworkTopology | None
) -> None:
    assert parse_network_topology(spec, annotations) == expect


@pytest.mark.parametrize(
    ("spec", "annotations", "field"),
    [
        ({"networkTopology": {"mode": "strict"}}, {}, "mode"),
        ({"networkTopology": {"highestTierAllowed": -1}}, {}, "highestTierAllowed"),
        ({"networkTopology": "hard"}, {}, "networkTopology"),
        ({}, {"volcano.sh/network-topology-highest-tier": "one"}, "network-topology-highest-tier"),
    ],
)
def test_bad_network_topology_names_the_field(spec: Raw, annotations: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidObject, match=field):
        parse_network_topology(spec, annotations)


def test_podgroup_carries_network_topology() -> None:
    raw = podgroup("pg", 4)
    raw["spec"]["networkTopology"] = {"mode": "soft", "highestTierAllowed": 2}
    assert parse_podgroup(raw).network_topology == NetworkTopology(hard=False, highest_tier=2)
    assert parse_podgroup(podgroup("plain", 1)).network_topology is None
