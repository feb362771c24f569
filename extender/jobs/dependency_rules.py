"""``dependsOn`` of a vcjob's tasks: each names other tasks of the job, with iteration ``any`` or ``all``,
and the tasks form a directed acyclic graph (Volcano's ``admit_job.go`` checks the DAG).

Volcano reports an unknown or self dependency only as "not a DAG"; we name the entry, and show one cycle
(``a -> b -> a``, starting at its earliest task). The graph walk uses an explicit stack, so a chain of
thousands of tasks cannot exhaust the Python stack. Never raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from extender.core.validation import FieldError, shown
from extender.jobs.model import Iteration
from extender.jobs.task_rules import Tasks, other_names, task_names

# A cycle longer than this many tasks is shown cut, so the message stays a line.
_LISTED_NAMES: Final = 10


def dependency_errors(tasks: Tasks) -> list[FieldError]:
    """``dependsOn`` names other tasks of the job, with iteration any or all, and the tasks form a DAG.

    Volcano reports an unknown or self dependency only as "not a DAG"; we name it, and name one cycle."""
    names = task_names(tasks)
    errors: list[FieldError] = []
    graph: dict[str, list[str]] = {}
    for i, t in tasks:
        raw = t.get("dependsOn")
        if raw is None:
            continue
        at = f"spec.tasks[{i}].dependsOn"
        if not isinstance(raw, Mapping):
            errors.append(
                FieldError(field=at, message="must be an object with name (a list of tasks) and iteration")
            )
            continue
        own = t.get("name")
        deps = raw.get("name")
        if deps is not None and not isinstance(deps, list):
            errors.append(FieldError(field=f"{at}.name", message="must be a list of task names"))
        elif deps is not None:
            for k, d in enumerate(deps):
                if d == own and isinstance(d, str):
                    errors.append(
                        FieldError(
                            field=f"{at}.name[{k}]", message=f"task {shown(d)} cannot depend on itself"
                        )
                    )
                elif not isinstance(d, str) or d not in names:
                    errors.append(
                        FieldError(
                            field=f"{at}.name[{k}]",
                            message=f"no task named {shown(d)} in this job; dependsOn must name other tasks "
                            f"of the job ({other_names(names, own)})",
                        )
                    )
                elif isinstance(own, str) and names.get(own) == i:
                    graph.setdefault(own, []).append(d)
        iteration = raw.get("iteration")
        if iteration not in (None, "", *(it.value for it in Iteration)):
            errors.append(
                FieldError(field=f"{at}.iteration", message=f"must be any or all, got {shown(iteration)}")
            )
    cycle = _find_cycle(graph, list(names))
    if cycle:
        shown_cycle = cycle if len(cycle) <= _LISTED_NAMES + 1 else [*cycle[:_LISTED_NAMES], "...", cycle[0]]
        errors.append(
            FieldError(
                field=f"spec.tasks[{names[cycle[0]]}].dependsOn",
                message=f"tasks depend on each other in a cycle ({' -> '.join(shown_cycle)}); "
                "dependsOn must form a directed acyclic graph",
            )
        )
    return errors


def _find_cycle(graph: Mapping[str, Sequence[str]], order: Sequence[str]) -> list[str]:
    """One cycle (first task repeated at the end), starting at its earliest task in ``order``; [] if none.

    Depth-first with an explicit stack: a chain of thousands of tasks must not exhaust the Python stack."""
    position = {name: k for k, name in enumerate(order)}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in order:
        if root in state:
            continue
        path: list[str] = [root]
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]  # (node, index of the next edge to follow)
        while stack:
            node, edge = stack[-1]
            edges = graph.get(node, ())
            if edge == len(edges):
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            stack[-1] = (node, edge + 1)
            nxt = edges[edge]
            if state.get(nxt) == 1:
                loop = path[path.index(nxt) :]
                start = min(range(len(loop)), key=lambda k: position[loop[k]])
                loop = loop[start:] + loop[:start]
                return [*loop, loop[0]]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, 0))
    return []
