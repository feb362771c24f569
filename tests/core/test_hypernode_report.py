"""Each problem of HyperNode resolution lands on the object it concerns, with a reason and what to fix;
the per-object report gives each HyperNode its nodes and its problems."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from extender.core.hypernode_report import by_object, report
from extender.core.hypernodes import (
    HYPERNODE,
    INVALID_MEMBER,
    NODE,
    OVERLAPPING_MEMBER,
    Problem,
    build_tree,
    parse_hypernode,
    resolve,
)
from tests.core.test_hypernodes import NODES, Raw, by_labels, exact, hn, nodes, regex


def problems(objs: Sequence[Raw], discovery: Sequence[str] = ()) -> list[tuple[str, str, str]]:
    tree = build_tree([parse_hypernode(o) for o in objs], NODES, discovery)
    return [(p.kind, p.name, p.reason) for p in tree.issues]


@pytest.mark.parametrize(
    ("objs", "expect", "fix"),
    [
        pytest.param(
            [hn("s0", 1, regex("(unclosed"), exact("s0-n1"))],
            [(HYPERNODE, "s0", INVALID_MEMBER)],
            "until the pattern is fixed",
            id="bad regex: on the HyperNode that has it",
        ),
        pytest.param(
            [hn("s2", 2, exact("missing", "HyperNode"), exact("s1-n3"))],
            [(HYPERNODE, "s2", INVALID_MEMBER)],
            "create it or remove the member",
            id="missing member HyperNode: on its parent",
        ),
        pytest.param(
            [hn("a", 2, exact("b", "HyperNode")), hn("b", 2, exact("s0-n1"))],
            [(HYPERNODE, "a", INVALID_MEMBER)],
            "needs a lower tier",
            id="same-tier member: on the parent, not the member",
        ),
        pytest.param(
            [hn("s0", 1, exact("s0-n1")), hn("s1", 1, exact("s0-n1"))],
            [(HYPERNODE, "s1", OVERLAPPING_MEMBER)],
            "remove it from one of them",
            id="a node in two HyperNodes of a tier: on the later one",
        ),
        pytest.param(
            [hn("s0", 1, exact("s0-n1"))],
            [],
            "",
            id="nothing wrong: nothing said",
        ),
    ],
)
def test_each_problem_is_on_the_object_it_concerns(
    objs: list[Raw], expect: list[tuple[str, str, str]], fix: str
) -> None:
    assert problems(objs) == expect
    tree = build_tree([parse_hypernode(o) for o in objs], NODES)
    assert all(fix in p.message for p in tree.issues)
    # The lines kept for existing readers are the same messages.
    assert tree.problems == tuple(p.message for p in tree.issues)


def test_a_bad_pattern_is_said_on_every_hypernode_that_uses_it_once_each() -> None:
    objs = [
        hn("s0", 1, regex("(bad"), regex("(bad")),
        hn("s1", 1, regex("(bad"), exact("s1-n3")),
    ]
    assert problems(objs) == [(HYPERNODE, "s0", INVALID_MEMBER), (HYPERNODE, "s1", INVALID_MEMBER)]
    # resolve() keeps returning lines.
    _, lines = resolve([parse_hypernode(o) for o in objs], NODES)
    assert len(lines) == 2 and all(isinstance(x, str) and "(bad" in x for x in lines)


def test_an_overlap_with_a_discovered_domain_is_said_on_the_object() -> None:
    table = nodes("n1", "n2", labels={"n1": {"leaf": "x"}})
    objs = [hn("leaf=y", 1, exact("n2")), hn("obj", 1, exact("n1"))]
    tree = build_tree([parse_hypernode(o) for o in objs], table, ["leaf"])
    # "leaf=x" (discovered) and "obj" both hold n1 at tier 1: the object is where it can be fixed.
    assert [(p.kind, p.name) for p in tree.issues] == [(HYPERNODE, "obj")]


def test_by_object_groups_in_order_and_drops_repeats() -> None:
    a1 = Problem(kind=HYPERNODE, name="a", reason=INVALID_MEMBER, message="one")
    a2 = Problem(kind=HYPERNODE, name="a", reason=OVERLAPPING_MEMBER, message="two")
    n = Problem(kind=NODE, name="n1", reason=OVERLAPPING_MEMBER, message="three")
    assert by_object([a1, n, a2, a1]) == {(HYPERNODE, "a"): (a1, a2), (NODE, "n1"): (n,)}
    assert by_object([]) == {}


def test_report_gives_each_hypernode_its_nodes_and_problems() -> None:
    objs = [
        hn("rack", 2, exact("s0", "HyperNode"), exact("gone", "HyperNode")),
        hn("s0", 1, by_labels(rack="r1"), exact("s0-n1")),
        hn("empty", 1, regex("^nothing-")),
    ]
    resolved, elsewhere = report([parse_hypernode(o) for o in objs], NODES)
    got = {r.hypernode.name: (r.nodes, [p.reason for p in r.problems]) for r in resolved}
    assert got == {
        "empty": ((), []),
        "rack": (("gpu-a", "s0-n1"), [INVALID_MEMBER]),
        "s0": (("gpu-a", "s0-n1"), []),
    }
    assert [r.hypernode.name for r in resolved] == ["empty", "rack", "s0"]
    assert elsewhere == []
