"""HyperNode problems as Warning Events on the HyperNode they concern.

The scheduler resolves HyperNode objects (``topology.volcano.sh/v1alpha1``) over the nodes and leaves out
what it cannot resolve (:mod:`extender.core.hypernodes`): a bad ``regexMatch`` pattern, a member HyperNode
that does not exist or is not at a lower tier, a cycle (reason ``InvalidMember``), a node in two HyperNodes
of one tier (``OverlappingMember``). Silently, on the scheduling path. This controller makes each of them
visible where a user looks (``kubectl describe hypernode``, ``kubectl get events``): one Warning Event per
distinct problem on the object it concerns, whose note says what to fix.

It shares the process's HyperNode and Node watches (:meth:`HyperNodeProblems.handlers`, teed beside the
cluster cache) and keeps only what resolution reads: each HyperNode parsed (with its uid, for the Event's
``regarding``) and each node's labels. A change that can alter the result (a HyperNode, a node added or
removed, a node's labels) marks the set dirty; a node's status heartbeat does not. After both watches have
listed, a dirty set is resolved at most once per ``debounce`` seconds, in a worker thread over immutable
inputs, off the scheduling path (filter and prioritize never wait for it, and it makes no API calls: the
:class:`~controllers.events.EventRecorder` writes in the background).

Invariants: a problem is reported once while it persists (remembered by object uid and problem); one that
goes away is forgotten, so if it returns it is reported again; a restart reports what stands again (an
Event is information, never state). An object that cannot be parsed is skipped here (the cache logs it);
nothing a watch delivers can end the loop: a failed pass is logged and the next change tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from controllers.events import EventRecorder, Ref
from controllers.kube import paths
from controllers.kube.informer import Handler
from extender.core.errors import InvalidObject
from extender.core.hypernode_report import by_object
from extender.core.hypernodes import HYPERNODE, HyperNode, Problem, build_tree, parse_hypernode
from extender.core.model import Node

log = logging.getLogger(__name__)
Obj = Mapping[str, Any]

_ACTION: Final = "Resolve"


def _meta(obj: Obj) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _labels(obj: Obj) -> dict[str, str]:
    labels = _meta(obj).get("labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, Mapping) else {}


def problems_of(hypernodes: Sequence[HyperNode], labels: Mapping[str, Mapping[str, str]]) -> list[Problem]:
    """What resolving ``hypernodes`` over nodes with these labels (by node name) leaves out, grouped by
    the object each concerns."""
    nodes = [Node(name=n, allocatable={}, labels=labels[n]) for n in sorted(labels)]
    tree = build_tree(hypernodes, nodes)
    return [p for ps in by_object(tree.issues).values() for p in ps]


class HyperNodeProblems:
    def __init__(self, events: EventRecorder, *, debounce: float = 1.0) -> None:
        self.events = events
        self.debounce = debounce
        # name -> (uid, parsed) for every readable HyperNode; node name -> labels.
        self.hypernodes: dict[str, tuple[str, HyperNode]] = {}
        self.nodes: dict[str, dict[str, str]] = {}
        self.synced = {"hypernodes": False, "nodes": False}
        # What was reported and still stands: (uid or kind/name, problem).
        self.reported: set[tuple[str, Problem]] = set()
        self.stats = {"passes": 0, "recorded": 0, "errors": 0}
        self._dirty = asyncio.Event()

    # --- informer handlers ------------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        return {
            "hypernodes": Handler(self._replace_hypernodes, self._upsert_hypernode, self._remove_hypernode),
            "nodes": Handler(self._replace_nodes, self._upsert_node, self._remove_node),
        }

    def _parsed(self, obj: Obj) -> tuple[str, str, HyperNode | None]:
        meta = _meta(obj)
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        try:
            return name, uid, parse_hypernode(obj)
        except (InvalidObject, ValueError, TypeError, AttributeError, KeyError):
            return name, uid, None  # the cache logs and counts it; it resolves to nothing

    def _replace_hypernodes(self, objs: Sequence[Obj]) -> None:
        self.hypernodes = {}
        for obj in objs:
            self._upsert_hypernode(obj)
        self.synced["hypernodes"] = True
        self._dirty.set()

    def _upsert_hypernode(self, obj: Obj) -> None:
        name, uid, h = self._parsed(obj)
        before = self.hypernodes.get(name)
        if h is None:
            self.hypernodes.pop(name, None)
        else:
            self.hypernodes[name] = (uid, h)
        if self.hypernodes.get(name) != before:
            self._dirty.set()

    def _remove_hypernode(self, obj: Obj) -> None:
        if self.hypernodes.pop(str(_meta(obj).get("name") or ""), None) is not None:
            self._dirty.set()

    def _replace_nodes(self, objs: Sequence[Obj]) -> None:
        nodes = {str(_meta(o).get("name") or ""): _labels(o) for o in objs}
        nodes.pop("", None)
        if nodes != self.nodes or not self.synced["nodes"]:
            self.nodes = nodes
            self._dirty.set()
        self.synced["nodes"] = True

    def _upsert_node(self, obj: Obj) -> None:
        name = str(_meta(obj).get("name") or "")
        labels = _labels(obj)
        if name and self.nodes.get(name) != labels:  # a status heartbeat changes neither
            self.nodes[name] = labels
            self._dirty.set()

    def _remove_node(self, obj: Obj) -> None:
        if self.nodes.pop(str(_meta(obj).get("name") or ""), None) is not None:
            self._dirty.set()

    # --- the loop -------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return all(self.synced.values())

    async def sync_once(self) -> int:
        """Resolve what the watches show and record an Event per problem not reported yet; how many."""
        self.stats["passes"] += 1
        uids = {name: uid for name, (uid, _) in self.hypernodes.items()}
        hypernodes = [h for _, h in self.hypernodes.values()]
        labels = dict(self.nodes)
        if not hypernodes:
            current: list[Problem] = []
        else:
            current = await asyncio.to_thread(problems_of, hypernodes, labels)
        standing: set[tuple[str, Problem]] = set()
        recorded = 0
        for p in current:
            uid = uids.get(p.name, "") if p.kind == HYPERNODE else ""
            key = (uid or f"{p.kind}/{p.name}", p)
            standing.add(key)
            if key in self.reported:
                continue
            api_version = paths.HYPERNODES.api_version if p.kind == HYPERNODE else paths.NODES.api_version
            ref = Ref(api_version=api_version, kind=p.kind, name=p.name, namespace="", uid=uid)
            self.events.record(ref, type_="Warning", reason=p.reason, note=p.message, action=_ACTION)
            recorded += 1
        self.reported = standing
        self.stats["recorded"] += recorded
        return recorded

    async def run(self) -> None:
        while True:
            await self._dirty.wait()
            await asyncio.sleep(self.debounce)  # a burst of changes (a re-list, a rollout) costs one pass
            if not self.ready:
                continue  # the dirty mark stays: the pass comes once both watches have listed
            self._dirty.clear()
            try:
                await self.sync_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # one bad pass must not end the process: the next change retries
                self.stats["errors"] += 1
                log.exception("hypernode problems pass failed")
