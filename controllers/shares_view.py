"""The queue share view that ``pumice queue list`` and ``pumice simulate --snapshot`` print: per queue and
resource, deserved / allocated / guarantee / capability, the queue tree, and its table and document.

A shared module of ``controllers`` beside the rooms, so the CLI and the simulator show the same figures
without either importing the other. Pure: raw API objects in, a :class:`SharesView` out, then text. No
share is worked out here: the objects are read with the scheduler's own parsers
(:mod:`extender.core.parse`), put in one snapshot by :func:`~extender.core.snapshot.build_snapshot`, and
:func:`extender.plugins.queue_shares.queue_shares` computes deserved and allocated over it with the share
plugin alone (``proportion``, or ``capacity`` as the user says), as the metrics do with the conf's. So the
CLI shows what a scheduling cycle over the same objects would use, and a change to the plugins changes
every figure alike.

How this snapshot differs from a cycle's, and why the figures stay the same:

- it holds no plans (the scheduler's ledger is in its memory only): a pod planned but not yet bound counts
  as waiting rather than held. ``proportion`` asks, per queue, for what is held plus what waits, so its
  share is unchanged; ``capacity`` reads no usage at all when it opens;
- it holds every pod and PodGroup, where a cycle holds those with work and carries the rest as totals
  (running usage, and the demand of groups it leaves aside): the same sums.

``allocated`` is the snapshot's ``queue_held`` (:func:`extender.core.status.queue_allocated`): the
requests of bound, unfinished pods of pumice's schedulers, per queue of their group (a pod without a
PodGroup: its ``scheduling.volcano.sh/queue-name`` annotation, else the default queue), as the scheduler
counts a queue's usage. ``guarantee`` and ``capability`` are the queue's spec (``capability`` absent:
unlimited).

Resources shown: ``cpu``, ``memory``, every extended resource (a name with a ``/``, such as
``nvidia.com/gpu``) that a node offers, a pod asks for or a PodGroup names, and any other resource a queue's
spec names. Not the ``pods`` slot, which no share is taken over.

The tree is :class:`~extender.core.hierarchy.QueueTree`, the one the ``capacity`` plugin's hierarchy
walks: children under ``spec.parent``; a queue without a parent at the top (under ``root`` when a queue of
that name exists); a queue whose parent is missing, or whose parent chain runs into a loop, set flat at
the top with a note saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeVar

from controllers.tables import Obj, age, count, field, mapping, render_table, text
from extender.core.errors import InvalidObject
from extender.core.hierarchy import QueueTree, parent_loop
from extender.core.model import Queue
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.quantity import format_units, human
from extender.core.resources import parse_resource_list
from extender.core.snapshot import build_snapshot
from extender.plugins.queue_shares import PROPORTION, queue_shares, share_conf

Raw = Mapping[str, Any]
BASE: Final = ("cpu", "memory")

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """The objects a share depends on besides the queues, as the API server lists them."""

    nodes: Sequence[Raw]
    pods: Sequence[Raw]
    podgroups: Sequence[Raw]


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueShare:
    """One queue's row. Amounts are accounted integers (milli-cpu, bytes, counts) keyed by resource."""

    name: str
    parent: str | None  # in the tree: None for a top queue
    depth: int
    note: str  # why the queue is not where its spec.parent puts it; "" when it is
    weight: int
    priority: int
    deserved: Mapping[str, int] | None  # None: not computed (see SharesView.error)
    allocated: Mapping[str, int]
    guarantee: Mapping[str, int]
    capability: Mapping[str, int]  # only the resources it limits


@dataclass(frozen=True, slots=True, kw_only=True)
class SharesView:
    plugin: str
    hierarchy: bool
    resources: tuple[str, ...]
    total: Mapping[str, int] | None  # the nodes' allocatable, summed; None when not computed
    queues: tuple[QueueShare, ...]  # depth first: each queue right above its subtree, siblings by name
    error: str  # why deserved shares are not computed; "" when they are
    skipped: tuple[str, ...]  # objects that could not be read, each with why


def _read(parse: Callable[[Raw], T], objs: Sequence[Raw], kind: str, skipped: list[str]) -> list[T]:
    """The objects that parse; each that does not is named in ``skipped`` (as the cache logs and skips it)."""
    out: list[T] = []
    for obj in objs:
        try:
            out.append(parse(obj))
        except InvalidObject as e:
            meta = obj.get("metadata")
            meta = meta if isinstance(meta, Mapping) else {}
            where = "/".join(str(meta[k]) for k in ("namespace", "name") if meta.get(k))
            skipped.append(f"{kind} {where or '<unnamed>'}: {e}")
    return out


def _resources(names: Sequence[str], queues: Sequence[Queue]) -> tuple[str, ...]:
    named = {r for q in queues for spec in (q.capability, q.deserved, q.guarantee) for r in spec}
    extra = {n for n in names if "/" in n} | (named - {"pods"})
    return (*BASE, *sorted(extra - set(BASE)))


def _on(resources: Sequence[str], amounts: Mapping[str, int]) -> dict[str, int]:
    return {r: amounts.get(r, 0) for r in resources}


def _note(queues: Mapping[str, Queue], tree: QueueTree, name: str) -> str:
    parent = queues[name].parent
    if not parent:
        return ""
    where = f"under {tree.parent[name]}" if tree.parent[name] else "at the top"
    loop = parent_loop(queues, name)
    if loop is not None:
        return f"spec.parent forms a loop ({' -> '.join(loop)}); shown {where}"
    if parent not in queues:
        return f"spec.parent {parent} does not exist; shown {where}"
    return ""


def _display_order(tree: QueueTree) -> list[str]:
    """Depth first, siblings by name: each queue right above its subtree (``top_down`` is breadth first)."""
    out: list[str] = []
    stack = sorted((n for n, up in tree.parent.items() if up is None), reverse=True)
    while stack:
        name = stack.pop()
        out.append(name)
        stack.extend(sorted(tree.children[name], reverse=True))
    return out


def compute_shares(
    queue_objs: Sequence[Raw],
    cluster: Cluster | None,
    *,
    plugin: str = PROPORTION,
    hierarchy: bool = False,
    scheduler_names: frozenset[str] = frozenset({"volcano"}),
    default_queue: str = "default",
    error: str = "",
) -> SharesView:
    """Every queue's row. Without ``cluster`` (it could not be listed: ``error`` says why) deserved shares
    are not computed and ``allocated`` is what the queue's status says (pumice's status writer keeps it)."""
    skipped: list[str] = []
    conf = share_conf(plugin, hierarchy=hierarchy)
    queues = _read(parse_queue, queue_objs, "Queue", skipped)
    by_name = {q.name: q for q in queues}
    deserved: Mapping[str, Mapping[str, int]] | None = None
    held: dict[str, Mapping[str, int]] = {}
    total: Mapping[str, int] | None = None
    names: Sequence[str] = ()
    if cluster is not None:
        snapshot = build_snapshot(
            nodes=_read(parse_node, cluster.nodes, "Node", skipped),
            pods=_read(parse_pod, cluster.pods, "Pod", skipped),
            podgroups=_read(
                lambda o: parse_podgroup(o, default_queue), cluster.podgroups, "PodGroup", skipped
            ),
            queues=queues,
            scheduler_names=scheduler_names,
            default_queue=default_queue,
        )
        shares = queue_shares(snapshot, conf)
        deserved = shares.deserved
        held = dict(shares.allocated)
        names = shares.resources
        total = shares.total
    else:
        for obj in queue_objs:
            meta, status = obj.get("metadata"), obj.get("status")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            allocated = status.get("allocated") if isinstance(status, Mapping) else None
            if name in by_name and isinstance(allocated, Mapping):
                try:
                    held[str(name)] = parse_resource_list(allocated)
                except ValueError as e:
                    skipped.append(f"Queue {name}: status.allocated: {e}")
        names = sorted({r for amounts in held.values() for r in amounts})
    resources = _resources(names, queues)
    tree = QueueTree.of(by_name)
    rows = tuple(
        QueueShare(
            name=n,
            parent=tree.parent[n],
            depth=len(tree.ancestors(n)),
            note=_note(by_name, tree, n),
            weight=by_name[n].weight,
            priority=by_name[n].priority,
            deserved=None if deserved is None else _on(resources, deserved.get(n, {})),
            allocated=_on(resources, held.get(n, {})),
            guarantee=_on(resources, by_name[n].guarantee),
            capability={r: v for r, v in by_name[n].capability.items() if r in resources},
        )
        for n in _display_order(tree)
    )
    return SharesView(
        plugin=plugin,
        hierarchy=hierarchy,
        resources=resources,
        total=None if total is None else _on(resources, total),
        queues=rows,
        error=error if deserved is None else "",
        skipped=tuple(skipped),
    )


# -- the table and the document --------------------------------------------------------------------

# What a resource column's cells hold, in order; in every such column's header.
SHARE_LEGEND: Final = "(D/A/G/C)"
UNLIMITED: Final = "-"  # a capability cell for a resource the queue does not limit
UNKNOWN: Final = "?"  # a deserved cell when shares could not be computed
INDENT: Final = "  "  # per tree level, in the NAME column
SHARES_COLUMNS: Final = ("NAME", "WEIGHT", "STATE", "PRIORITY")
SHARES_COUNTS: Final = ("INQUEUE", "PENDING", "RUNNING", "AGE")
SHARES_WIDE: Final = ("UNKNOWN", "COMPLETED", "PARENT")


def share_cell(row: QueueShare, resource: str) -> str:
    """``deserved/allocated/guarantee/capability`` of one resource, as short human figures."""
    deserved = UNKNOWN if row.deserved is None else human(resource, row.deserved[resource])
    cap = row.capability.get(resource)
    return "/".join(
        (
            deserved,
            human(resource, row.allocated[resource]),
            human(resource, row.guarantee[resource]),
            UNLIMITED if cap is None else human(resource, cap),
        )
    )


def shares_table(
    view: SharesView, queues: Mapping[str, Mapping[str, Any]], now: datetime, *, wide: bool
) -> str:
    """``queue list``: one row per queue in tree order, children indented under their parent.

    ``queues`` are the Queue objects by name (state and PodGroup counts come from their status)."""
    headers = [
        *SHARES_COLUMNS,
        *(f"{r}{SHARE_LEGEND}" for r in view.resources),
        *SHARES_COUNTS,
        *(SHARES_WIDE if wide else ()),
    ]
    rows = []
    for q in view.queues:
        obj = queues.get(q.name, {})
        status = mapping(obj.get("status"))
        row = [
            INDENT * q.depth + q.name,
            str(q.weight),
            text(status.get("state")),
            str(q.priority),
            *(share_cell(q, r) for r in view.resources),
            count(status.get("inqueue")),
            count(status.get("pending")),
            count(status.get("running")),
            age(obj, now),
        ]
        if wide:
            row += [
                count(status.get("unknown")),
                count(status.get("completed")),
                text(field(obj, "spec", "parent")),
            ]
        rows.append(row)
    return render_table(headers, rows)


def _quantities(resources: Sequence[str], amounts: Mapping[str, int]) -> dict[str, str | None]:
    return {r: format_units(r, amounts[r]) if r in amounts else None for r in resources}


def shares_document(view: SharesView, queues: Mapping[str, Mapping[str, Any]]) -> Obj:
    """The ``shares`` key of ``queue list -o json|yaml``. A stable shape; fields may be added, never
    renamed or removed:

    - ``plugin`` (``proportion``|``capacity``), ``hierarchy`` (bool): what computed ``deserved``;
    - ``resources``: the resource names every map below has a key for, in column order;
    - ``clusterTotal``: the nodes' allocatable summed, or null when shares were not computed;
    - ``error``: why shares were not computed (then every ``deserved`` is null), else null;
    - ``skipped``: objects that could not be read, each with why (empty list when none);
    - ``queues``: in the table's order (depth first: each queue right above its subtree), each ``name``,
      ``parent`` (its parent in the tree, null at the top), ``depth`` (0 at the top), ``note`` (why it is
      not where its ``spec.parent`` says, else null), ``weight``, ``priority``, ``state`` (``status.state``,
      null when unset), and four maps from resource name to a canonical quantity string: ``deserved``
      (null when not computed), ``allocated``, ``guarantee``, ``capability`` (a null amount: not limited).
    """
    return {
        "plugin": view.plugin,
        "hierarchy": view.hierarchy,
        "resources": list(view.resources),
        "clusterTotal": None if view.total is None else _quantities(view.resources, view.total),
        "error": view.error or None,
        "skipped": list(view.skipped),
        "queues": [
            {
                "name": q.name,
                "parent": q.parent,
                "depth": q.depth,
                "note": q.note or None,
                "weight": q.weight,
                "priority": q.priority,
                "state": field(queues.get(q.name, {}), "status", "state") or None,
                "deserved": None if q.deserved is None else _quantities(view.resources, q.deserved),
                "allocated": _quantities(view.resources, q.allocated),
                "guarantee": _quantities(view.resources, q.guarantee),
                "capability": _quantities(view.resources, q.capability),
            }
            for q in view.queues
        ],
    }


def warnings(view: SharesView) -> list[str]:
    """What the user should know about the figures: printed on stderr, as kubectl prints warnings."""
    out = [f"Warning: deserved shares not computed: {view.error}"] if view.error else []
    out += [f"Warning: queue {q.name}: {q.note}" for q in view.queues if q.note]
    out += [f"Warning: skipped {s}" for s in view.skipped]
    return out
