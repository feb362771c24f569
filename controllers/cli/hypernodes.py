"""``pumice hypernode list|get``: the HyperNode objects (``topology.volcano.sh/v1alpha1``) as the
scheduler resolves them, with what it has to leave out.

Reads the live HyperNodes and Nodes from the API server and resolves them with the scheduler's own code
(:func:`extender.core.hypernode_report.report`, over :func:`extender.core.hypernodes.build_tree`), so the
answer is the scheduler's. ``list`` shows NAME, TIER, MEMBERS (entries of ``spec.members``), NODES (how
many nodes it resolves to, through nested HyperNodes too), PROBLEMS (how many) and AGE; ``get NAME`` shows
its members, the nodes, and each problem with its reason (``InvalidMember``, ``OverlappingMember``) and
what to fix, the same text the Warning Events on the HyperNode carry. A HyperNode the scheduler cannot
read at all (it skips it) shows one problem, ``Unreadable``, saying which field.

``-o yaml|json`` prints the objects with a ``resolved`` key (on a List: ``resolved`` by HyperNode name)
holding the nodes and problems; a jsonpath template sees the same document; ``-o name`` as kubectl.
Without read access to Nodes, NODES shows ``?`` and node-dependent problems are not looked for.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from controllers.cli import output
from controllers.cli.errors import CliError
from controllers.cli.kubeconfig import list_all, run_action, selector_query
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.tables import NONE, Obj, age, metadata, render_table
from extender.core.errors import InvalidObject
from extender.core.hypernode_report import report
from extender.core.hypernodes import HyperNode, Member, Problem, parse_hypernode
from extender.core.model import LabelSelector, Node

RESOURCE: Final = "hypernode.topology.volcano.sh"
UNREADABLE: Final = "Unreadable"


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One HyperNode object as the CLI shows it (``hypernode`` None: the scheduler cannot read it)."""

    obj: Obj
    hypernode: HyperNode | None
    nodes: tuple[str, ...] | None  # None: nodes not readable
    problems: tuple[Problem, ...]


def _now() -> datetime:
    return datetime.now(UTC)


def _node(obj: Mapping[str, Any]) -> Node | None:
    name = metadata(obj).get("name")
    labels = metadata(obj).get("labels")
    if not isinstance(name, str) or not name:
        return None
    labels = {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}
    return Node(name=name, allocatable={}, labels=labels)


def resolve_rows(objs: Sequence[Obj], node_objs: Sequence[Obj] | None) -> list[Row]:
    """Each HyperNode object (by name) with what it resolves to over ``node_objs`` (None: unknown)."""
    parsed: dict[str, HyperNode] = {}
    unreadable: dict[str, str] = {}
    by_name: dict[str, Obj] = {}
    for o in objs:
        name = str(metadata(o).get("name") or "")
        by_name[name] = o
        try:
            parsed[name] = parse_hypernode(o)
        except (InvalidObject, ValueError, TypeError, AttributeError, KeyError) as e:
            unreadable[name] = str(e) or type(e).__name__
    nodes = [n for n in (_node(o) for o in node_objs or ()) if n is not None]
    nodes.sort(key=lambda n: n.name)
    resolved, _ = report(list(parsed.values()), nodes)
    rows = {
        r.hypernode.name: Row(
            obj=by_name[r.hypernode.name],
            hypernode=r.hypernode,
            nodes=r.nodes if node_objs is not None else None,
            problems=r.problems,
        )
        for r in resolved
    }
    for name, why in unreadable.items():
        problem = Problem(
            kind="HyperNode",
            name=name,
            reason=UNREADABLE,
            message=f"hypernode {name or '?'}: the scheduler cannot read it ({why}); fix that field",
        )
        rows[name] = Row(obj=by_name[name], hypernode=None, nodes=(), problems=(problem,))
    return [rows[n] for n in sorted(rows)]


def _selector_text(sel: LabelSelector | None) -> str:
    if sel is None:
        return NONE
    parts = [f"{k}={v}" for k, v in sel.match_labels]
    for r in sel.match_expressions:
        values = f" ({','.join(r.values)})" if r.values else ""
        parts.append(f"{r.key} {r.operator}{values}")
    return ",".join(parts) or "(all)"


def member_text(m: Member) -> str:
    if m.exact is not None:
        return f"{m.type} {m.exact}"
    if m.regex is not None:
        return f"{m.type} matching /{m.regex}/"
    return f"{m.type}s with labels {_selector_text(m.labels)}"


def list_table(rows: Sequence[Row], now: datetime) -> str:
    table = []
    for r in rows:
        h = r.hypernode
        table.append(
            [
                str(metadata(r.obj).get("name") or NONE),
                str(h.tier) if h is not None else "?",
                str(len(h.members)) if h is not None else "?",
                "?" if r.nodes is None else str(len(r.nodes)),
                str(len(r.problems)),
                age(r.obj, now),
            ]
        )
    return render_table(["NAME", "TIER", "MEMBERS", "NODES", "PROBLEMS", "AGE"], table)


def describe(row: Row, now: datetime) -> str:
    h = row.hypernode
    tier = NONE if h is None else (f"{h.tier} ({h.tier_name})" if h.tier_name else str(h.tier))
    lines = [
        f"Name:      {metadata(row.obj).get('name') or NONE}",
        f"Tier:      {tier}",
        f"Age:       {age(row.obj, now)}",
        "Members:" + ("" if h is not None and h.members else f"   {NONE}"),
        *(f"  {member_text(m)}" for m in (h.members if h is not None else ())),
    ]
    if row.nodes is None:
        lines.append("Nodes:     ? (cannot list nodes)")
    else:
        lines.append(f"Nodes:     {', '.join(row.nodes) if row.nodes else NONE} ({len(row.nodes)})")
    lines.append("Problems:" + ("" if row.problems else f"  {NONE}"))
    lines += [f"  {p.reason}: {p.message}" for p in row.problems]
    return "\n".join(lines) + "\n"


def resolved_doc(row: Row) -> Obj:
    return {
        "nodes": None if row.nodes is None else list(row.nodes),
        "problems": [{"reason": p.reason, "message": p.message} for p in row.problems],
    }


async def _fetch(client: KubeClient, selector: str | None = None) -> tuple[list[Obj], list[Obj] | None]:
    hypernodes = await list_all(client, paths.HYPERNODES.collection(), selector_query(selector))
    try:
        nodes: list[Obj] | None = await list_all(client, paths.NODES.collection())
    except ApiError as e:
        if e.status not in (401, 403):
            raise
        print(f"pumice: cannot list nodes ({e.status}): NODES shown as ?", file=sys.stderr)
        nodes = None
    return hypernodes, nodes


def cmd_list(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        objs, nodes = await _fetch(client, args.selector)
        if not objs and not output.always_printed(args.output):
            print("No resources found", file=sys.stderr)
            return
        rows = resolve_rows(objs, nodes)
        doc = output.as_list([r.obj for r in rows])
        doc["resolved"] = {str(metadata(r.obj).get("name") or ""): resolved_doc(r) for r in rows}
        special = output.render_as(args.output, doc, RESOURCE)
        if special is not None:
            sys.stdout.write(special)
        elif args.output in output.DOCUMENTS:
            sys.stdout.write(output.dump(doc, args.output))
        else:
            sys.stdout.write(list_table(rows, _now()))

    return run_action(args, action)


def cmd_get(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        # The object first: a missing one is the API server's 404, as kubectl says it.
        await client.get(paths.HYPERNODES.item(paths.segment(args.name)))
        objs, nodes = await _fetch(client)  # the others too: nested members and overlaps need them
        row = next((r for r in resolve_rows(objs, nodes) if metadata(r.obj).get("name") == args.name), None)
        if row is None:  # deleted between the two reads
            raise CliError(f'{RESOURCE} "{args.name}" not found')
        doc = {**row.obj, "resolved": resolved_doc(row)}
        special = output.render_as(args.output, doc, RESOURCE)
        if special is not None:
            sys.stdout.write(special)
        elif args.output in output.DOCUMENTS:
            sys.stdout.write(output.dump(doc, args.output))
        else:
            sys.stdout.write(describe(row, _now()))

    return run_action(args, action)
