"""The figures behind ``pumice queue list``: per queue and resource, deserved / allocated / guarantee /
capability, and the queue tree.

Pure: raw API objects in, a :class:`SharesView` out. ``deserved`` is not worked out here. The objects are
read with the scheduler's own parsers (:mod:`extender.core.parse`), put in one snapshot by
:func:`~extender.core.snapshot.build_snapshot`, and a :class:`~extender.framework.session.Session` is
opened over it with the share plugin alone (``proportion``, or ``capacity`` as the user says), built from a
conf through the plugin registry as the scheduler builds it; what the plugin computed when the session
opened (its ``deserved``) is read back. So the CLI shows what a scheduling cycle over the same objects would
use, and a change to the plugins changes both alike.

How this snapshot differs from a cycle's, and why the figures stay the same:

- it holds no plans (the scheduler's ledger is in its memory only): a pod planned but not yet bound counts
  as waiting rather than held. ``proportion`` asks, per queue, for what is held plus what waits, so its
  share is unchanged; ``capacity`` reads no usage at all when it opens;
- it holds every pod and PodGroup, where a cycle holds those with work and carries the rest as totals
  (running usage, and the demand of groups it leaves aside): the same sums.

``allocated`` is the snapshot's ``queue_held``: the requests of bound, unfinished pods of pumice's
schedulers, per queue of their group (a pod without a PodGroup: its ``scheduling.volcano.sh/queue-name``
annotation, else the default queue), as the scheduler counts a queue's usage. ``guarantee`` and
``capability`` are the queue's spec (``capability`` absent: unlimited).

Resources shown: ``cpu``, ``memory``, every extended resource (a name with a ``/``, such as
``nvidia.com/gpu``) that a node offers, a pod asks for or a PodGroup names, and any other resource a queue's
spec names. Not the ``pods`` slot, which no share is taken over.

The tree is :class:`~extender.core.hierarchy.QueueTree`, the one the ``capacity`` plugin's hierarchy
walks: children under ``spec.parent``; a queue without a parent at the top (under ``root`` when a queue of
that name exists); a queue whose parent is missing, or whose parent chain runs into a loop, set flat at
the top with a note saying why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from extender.core.errors import InvalidObject
from extender.core.hierarchy import QueueTree, parent_loop
from extender.core.model import Queue
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.resources import parse_resource_list
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.session import Session
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.proportion import ProportionPlugin
from extender.plugins.registry import load_conf

Obj = Mapping[str, Any]

PROPORTION: Final = "proportion"
CAPACITY: Final = "capacity"
SHARE_PLUGINS: Final = (PROPORTION, CAPACITY)
BASE: Final = ("cpu", "memory")

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Cluster:
    """The objects a share depends on besides the queues, as the API server lists them."""

    nodes: Sequence[Obj]
    pods: Sequence[Obj]
    podgroups: Sequence[Obj]


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


def _read(parse: Callable[[Obj], T], objs: Sequence[Obj], kind: str, skipped: list[str]) -> list[T]:
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


def share_plugin(name: str, *, hierarchy: bool) -> ProportionPlugin | CapacityPlugin:
    """The plugin as the scheduler builds it from a conf that names it (so switches apply as there)."""
    entry: dict[str, Any] = {"name": name}
    if hierarchy:
        entry["enableHierarchy"] = True
    conf = load_conf(json.dumps({"actions": "enqueue, allocate", "tiers": [{"plugins": [entry]}]}))
    plugin = conf.tiers()[0][0]
    if not isinstance(plugin, ProportionPlugin | CapacityPlugin):
        raise ValueError(f"{name} is not a share plugin; choose one of {', '.join(SHARE_PLUGINS)}")
    return plugin


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


def _open(snapshot: Snapshot, plugin: ProportionPlugin | CapacityPlugin) -> dict[str, dict[str, int]]:
    Session(snapshot, [[plugin]])  # opening the session opens the plugin: what a cycle starts with
    return {q: snapshot.index.to_map(v) for q, v in plugin.deserved.items()}


def compute_shares(
    queue_objs: Sequence[Obj],
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
    share = share_plugin(plugin, hierarchy=hierarchy)
    queues = _read(parse_queue, queue_objs, "Queue", skipped)
    by_name = {q.name: q for q in queues}
    deserved: dict[str, dict[str, int]] | None = None
    held: dict[str, dict[str, int]] = {}
    total: dict[str, int] | None = None
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
        deserved = _open(snapshot, share)
        held = {q: snapshot.index.to_map(v) for q, v in snapshot.queue_held.items()}
        names = snapshot.index.names
        total = snapshot.index.to_map(snapshot.alloc.sum(axis=0))
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
