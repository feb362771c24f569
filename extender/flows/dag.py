"""The dependency graph of a JobFlow: which entries wait for which, and why a graph is refused.

Volcano's webhook refuses a flow whose ``dependsOn.targets`` do not form a DAG ("jobflow Flow is not
DAG"); we say more: a duplicate entry, a target that is not another entry of the same flow (itself
included) and a cycle, each naming the field, the cycle with its path (``a -> b -> c -> a``). Pure and
deterministic: entries are visited in spec order, so the same flow always reports the same cycle.
"""

from __future__ import annotations

from collections.abc import Sequence

from extender.flows.model import FlowEntry


def graph_problems(flows: Sequence[FlowEntry]) -> list[tuple[str, str]]:
    """``(field, message)`` for every problem of the graph; empty for a DAG."""
    problems: list[tuple[str, str]] = []
    index: dict[str, int] = {}
    for i, f in enumerate(flows):
        if f.name in index:
            problems.append(
                (
                    f"spec.flows[{i}].name",
                    f"{f.name!r} is already spec.flows[{index[f.name]}]; entries are unique",
                )
            )
        else:
            index[f.name] = i
    for i, f in enumerate(flows):
        for j, t in enumerate(f.targets):
            where = f"spec.flows[{i}].dependsOn.targets[{j}]"
            if t == f.name:
                problems.append((where, f"{f.name!r} cannot depend on itself"))
            elif t not in index:
                known = ", ".join(sorted(index)) or "none"
                problems.append((where, f"{t!r} is not an entry of this flow (entries: {known})"))
    if problems:
        return problems
    cycle = find_cycle(flows)
    if cycle is not None:
        i = index[cycle[0]]
        problems.append(
            (f"spec.flows[{i}].dependsOn.targets", "dependency cycle: " + " -> ".join([*cycle, cycle[0]]))
        )
    return problems


def find_cycle(flows: Sequence[FlowEntry]) -> list[str] | None:
    """One cycle of the "depends on" relation as the list of its entries (each depends on the next), or
    None. Iterative depth-first search, so a long chain cannot exhaust the stack."""
    deps = {f.name: [t for t in f.targets if t != f.name] for f in flows}
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(deps, white)
    for root in deps:
        if color[root] != white:
            continue
        path: list[str] = [root]
        stack = [iter(deps[root])]
        color[root] = grey
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                color[path.pop()] = black
                stack.pop()
                continue
            if nxt not in color:
                continue
            if color[nxt] == grey:
                return path[path.index(nxt) :]
            if color[nxt] == white:
                color[nxt] = grey
                path.append(nxt)
                stack.append(iter(deps[nxt]))
    return None


def order(flows: Sequence[FlowEntry]) -> list[str]:
    """Entries in an order where each comes after its targets (spec order among the ready ones)."""
    done: set[str] = set()
    out: list[str] = []
    pending = list(flows)
    while pending:
        ready = [f for f in pending if all(t in done or t == f.name for t in f.targets)]
        if not ready:  # a cycle or a missing target: the rest in spec order
            out.extend(f.name for f in pending)
            break
        for f in ready:
            done.add(f.name)
            out.append(f.name)
        pending = [f for f in pending if f.name not in done]
    return out
