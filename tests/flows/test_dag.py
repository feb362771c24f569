"""The dependency graph of a JobFlow as a table: which graphs are DAGs, and the words for the others."""

from __future__ import annotations

import pytest

from extender.flows.dag import find_cycle, graph_problems, order
from extender.flows.model import FlowEntry, parse_jobflow
from tests.flows.builders import entry, flow


def _entries(*es: dict[str, object]) -> tuple[FlowEntry, ...]:
    return parse_jobflow(flow("f", *es)).flows


VOLCANO_EXAMPLE = (entry("a"), entry("b", "a"), entry("c", "b"), entry("d", "b"), entry("e", "c", "d"))

TABLE = [
    ("volcano example", VOLCANO_EXAMPLE, []),
    ("single", (entry("a"),), []),
    ("empty", (), []),
    ("self", (entry("a", "a"),), [("spec.flows[0].dependsOn.targets[0]", "'a' cannot depend on itself")]),
    (
        "missing target",
        (entry("a"), entry("b", "zz")),
        [("spec.flows[1].dependsOn.targets[0]", "'zz' is not an entry of this flow (entries: a, b)")],
    ),
    (
        "duplicate",
        (entry("a"), entry("a")),
        [("spec.flows[1].name", "'a' is already spec.flows[0]; entries are unique")],
    ),
    (
        "two-cycle",
        (entry("a", "b"), entry("b", "a")),
        [("spec.flows[0].dependsOn.targets", "dependency cycle: a -> b -> a")],
    ),
    (
        "cycle behind a root",
        (entry("r"), entry("x", "r", "z"), entry("y", "x"), entry("z", "y")),
        [("spec.flows[1].dependsOn.targets", "dependency cycle: x -> z -> y -> x")],
    ),
]


@pytest.mark.parametrize(("name", "entries", "want"), TABLE, ids=[t[0] for t in TABLE])
def test_graph_problems(
    name: str, entries: tuple[dict[str, object], ...], want: list[tuple[str, str]]
) -> None:
    assert graph_problems(_entries(*entries)) == want


def test_order_puts_targets_first() -> None:
    assert order(_entries(*VOLCANO_EXAMPLE)) == ["a", "b", "c", "d", "e"]
    assert order(_entries(entry("e", "c"), entry("c"))) == ["c", "e"]


def test_long_chain_does_not_recurse() -> None:
    n = 5000
    chain = [entry("s0")] + [entry(f"s{i}", f"s{i - 1}") for i in range(1, n)]
    assert find_cycle(_entries(*chain)) is None
    chain[0] = entry("s0", f"s{n - 1}")
    cycle = find_cycle(_entries(*chain))
    assert cycle is not None and len(cycle) == n
