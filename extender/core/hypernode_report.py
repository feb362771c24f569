"""What the HyperNode objects resolve to, per object, for users: the nodes each holds and its problems.

:func:`extender.core.hypernodes.build_tree` resolves the objects for the scheduler and keeps what it had to
leave out as :class:`~extender.core.hypernodes.Problem` values, each naming the object it concerns (the
HyperNode whose member is wrong, or a Node). This module maps them to those objects
(:func:`by_object`), so each problem can be reported where a user looks: a Warning Event on the HyperNode
(:mod:`controllers.reconcilers.hypernode_problems`) and ``pumice hypernode list|get``.

Pure and total: any set of parsed HyperNodes over any node table gives a report; nothing here raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from extender.core.hypernodes import HYPERNODE, HyperNode, Problem, build_tree
from extender.core.model import Node

ObjectKey = tuple[str, str]  # (kind, name): HyperNode and Node are cluster-scoped


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """One HyperNode object: the nodes it resolves to (sorted names) and the problems that concern it."""

    hypernode: HyperNode
    nodes: tuple[str, ...]
    problems: tuple[Problem, ...]


def by_object(problems: Iterable[Problem]) -> dict[ObjectKey, tuple[Problem, ...]]:
    """The problems grouped by the object each concerns, in their order, each distinct problem once."""
    out: dict[ObjectKey, list[Problem]] = {}
    for p in dict.fromkeys(problems):
        out.setdefault((p.kind, p.name), []).append(p)
    return {k: tuple(v) for k, v in out.items()}


def report(hypernodes: Sequence[HyperNode], nodes: Sequence[Node]) -> tuple[list[Resolved], list[Problem]]:
    """Each HyperNode (by name) with its nodes and problems, and the problems that concern no HyperNode
    object (a Node)."""
    tree = build_tree(hypernodes, nodes)
    rows = {d.name: d.rows for d in tree.domains}  # a HyperNode that holds no node has no domain
    grouped = by_object(tree.issues)
    resolved = [
        Resolved(
            hypernode=h,
            nodes=tuple(sorted(nodes[r].name for r in rows[h.name].tolist())) if h.name in rows else (),
            problems=grouped.pop((HYPERNODE, h.name), ()),
        )
        for h in sorted(hypernodes, key=lambda h: h.name)
    ]
    return resolved, [p for ps in grouped.values() for p in ps]
