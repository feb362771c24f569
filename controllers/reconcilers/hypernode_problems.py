"""HyperNode problems as Warning Events on the HyperNode they concern.

The scheduler resolves HyperNode objects (``topology.volcano.sh/v1alpha1``) over the nodes and leaves out
what it cannot resolve (:mod:`extender.core.hypernodes`): a bad ``regexMatch`` pattern, a member HyperNode
that does not exist or is not at a lower tier, a cycle (reason ``InvalidMember``), a node in two HyperNodes
of one tier (``OverlappingMember``). Silently, on the scheduling path. This controller makes each of them
visible where a user looks (``kubectl describe hypernode``, ``kubectl get events``): one Warning Event per
distinct problem on the object it concerns, whose note says what to fix.

It reads HyperNodes and Nodes from the store of watched objects (:mod:`controllers.state.store`) and is
told of their changes. A change that can alter the result (a HyperNode as parsed, with its uid for the
Event's ``regarding``; a node added or removed; a node's labels) marks the set dirty; a node's status
heartbeat does not. After both watches have
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
from controllers.state.store import Change, ObjectStore, Stored, Subscription
from extender.core.errors import InvalidObject
from extender.core.hypernode_report import by_object
from extender.core.hypernodes import HYPERNODE, HyperNode, Problem, build_tree, parse_hypernode
from extender.core.model import Node

log = logging.getLogger(__name__)
Obj = Mapping[str, Any]

_ACTION: Final = "Resolve"


KINDS: Final = frozenset({"hypernodes", "nodes"})


def _parsed(s: Stored) -> tuple[str, HyperNode] | None:
    """A HyperNode as resolution reads it, with its uid; None when it cannot be parsed (the cache logs
    and counts it; it resolves to nothing)."""
    try:
        return s.meta.uid, parse_hypernode(s.obj)
    except (InvalidObject, ValueError, TypeError, AttributeError, KeyError):
        return None


def problems_of(hypernodes: Sequence[HyperNode], labels: Mapping[str, Mapping[str, str]]) -> list[Problem]:
    """What resolving ``hypernodes`` over nodes with these labels (by node name) leaves out, grouped by
    the object each concerns."""
    nodes = [Node(name=n, allocatable={}, labels=labels[n]) for n in sorted(labels)]
    tree = build_tree(hypernodes, nodes)
    return [p for ps in by_object(tree.issues).values() for p in ps]


class HyperNodeProblems:
    def __init__(self, events: EventRecorder, store: ObjectStore, *, debounce: float = 1.0) -> None:
        self.events = events
        self.store = store
        self.debounce = debounce
        # What was reported and still stands: (uid or kind/name, problem).
        self.reported: set[tuple[str, Problem]] = set()
        self.stats = {"passes": 0, "recorded": 0, "errors": 0}
        self._dirty = asyncio.Event()
        self._nodes_listed = False
        store.subscribe(Subscription(kinds=KINDS, changed=self._changed, listed=self._listed))

    # --- what the store tells ------------------------------------------------------------------------------
    def _changed(self, change: Change) -> None:
        old, new = change.old, change.new
        if change.kind == "hypernodes":
            if (_parsed(old) if old else None) != (_parsed(new) if new else None):
                self._dirty.set()
        elif change.key and (
            (old is None) != (new is None) or (old and new and old.meta.labels != new.meta.labels)
        ):
            self._dirty.set()  # a node came, went or was labelled; a status heartbeat changes neither

    def _listed(self, kind: str) -> None:
        # Every HyperNode list is a pass (as before the store); a node re-list only for what it changed.
        if kind == "hypernodes" or not self._nodes_listed:
            self._dirty.set()
        if kind == "nodes":
            self._nodes_listed = True

    # --- the loop -------------------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.store.listed(*KINDS)

    async def sync_once(self) -> int:
        """Resolve what the watches show and record an Event per problem not reported yet; how many."""
        self.stats["passes"] += 1
        parsed = {s.meta.name: h for s in self.store.all("hypernodes") if (h := _parsed(s)) is not None}
        uids = {name: uid for name, (uid, _) in parsed.items()}
        hypernodes = [h for _, h in parsed.values()]
        labels = {n.meta.name: dict(n.meta.labels) for n in self.store.all("nodes") if n.meta.name}
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
