"""nodegroup: which node groups a queue's jobs may use and prefer, and how much of each group it may take.

Mirrors Volcano's ``nodegroup`` plugin. Nodes belong to the group their ``volcano.sh/nodegroup-name``
label names. A Queue's ``spec.affinity`` says where its pods go:

- ``nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution`` and
  ``...preferredDuringSchedulingIgnoredDuringExecution``: groups the queue may use (both lists admit);
- ``nodeGroupAntiAffinity.required...``: groups it may not use (this wins over the affinity lists);
  ``nodeGroupAntiAffinity.preferred...``: groups it may use, at a score below every other node.

As in Volcano, the plugin is strict by default (argument ``strict: true``): a node without the label
takes no pod, and a queue without affinity rules uses no grouped node, so every queue that should run
needs ``spec.affinity``. With ``strict: false`` a queue without rules may use the unlabelled nodes.

Scores (per node, for every pod of the queue, fixed for the cycle): 100 for a group of the required
affinity, plus 50 for a preferred one (with ``enablePreferredOrder: true``, ``50 × (n - i) / n`` for the
``i``-th of ``n`` preferred groups, earlier ones higher); -1 for a group of the preferred anti-affinity
whatever else; 0 for a node without the label.

With ``enableHierarchy: true`` on the plugin's conf entry, a queue without ``spec.affinity`` takes its
nearest ancestor's (``spec.parent``, up to ``root``), as Volcano does; a queue with an empty
``spec.affinity`` has rules of its own (none) and inherits nothing.

``volcano.sh/nodegroup-resource-limits`` on a Queue caps what the queue's pods may hold per group, as
JSON from group name to a ResourceList, e.g. ``{"a100": {"nvidia.com/gpu": "16", "cpu": "64"}}``: a pod
is refused on the nodes of a group where the queue's pods already placed there (running, bound or planned)
plus its request would pass the limit in a named resource. A bad annotation refuses the queue every node,
with the error in the reason, as Volcano does (admission refuses it first).

Hook contracts (:mod:`extender.framework.plugin`): the affinity part is a ``node_mask`` and a
``queue_node_score`` (queue and labels only, once per queue a cycle); the caps are a ``node_limit``
(what the queue holds per group, kept current through ``placed``), so a limited queue's pods are placed
one by one.

Enable with::

    - name: nodegroup
      enableHierarchy: true        # optional: inherit spec.affinity down the queue tree
      arguments:
        strict: true               # default
        enablePreferredOrder: false
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from extender.api import labels as L
from extender.core.errors import InvalidQuantity
from extender.core.hierarchy import QueueTree
from extender.core.model import NodeGroupAffinity, Queue
from extender.core.quantity import human
from extender.core.resources import Vector, parse_resource_list
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Mask, Plugin, Scores
from extender.framework.session import Session

NAME: Final = "nodegroup"
BASE_SCORE: Final = 100.0


@dataclass(frozen=True, slots=True)
class Rules:
    """A queue's effective affinity: its own, or (hierarchy) the nearest ancestor's, ``source`` naming it."""

    affinity: NodeGroupAffinity | None
    source: str

    @property
    def unset(self) -> bool:
        a = self.affinity
        return a is None or not (a.required or a.preferred or a.anti_required or a.anti_preferred)

    def admits(self, group: str) -> bool:
        """Volcano's order: listed in either affinity, unless in the required anti-affinity; a group in
        the preferred anti-affinity is admitted whatever the other lists say."""
        a = self.affinity
        if a is None:
            return False
        if group in a.anti_preferred:
            return True
        return (group in a.required or group in a.preferred) and group not in a.anti_required

    def score(self, group: str, preferred_order: bool) -> float:
        a = self.affinity
        if a is None:
            return 0.0
        if group in a.anti_preferred:
            return -1.0
        s = BASE_SCORE if group in a.required else 0.0
        if group in a.preferred:
            if preferred_order:
                n = len(dict.fromkeys(a.preferred))
                i = list(dict.fromkeys(a.preferred)).index(group)
                s += 0.5 * BASE_SCORE * (n - i) / n
            else:
                s += 0.5 * BASE_SCORE
        return s


def parse_limits(raw: str) -> dict[str, dict[str, int]]:
    """The ``volcano.sh/nodegroup-resource-limits`` annotation: group -> resource -> integer amount.
    Raises ValueError naming what is wrong."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{L.NODEGROUP_LIMITS_ANNOTATION} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{L.NODEGROUP_LIMITS_ANNOTATION} must map node group names to resource lists")
    out: dict[str, dict[str, int]] = {}
    for group, resources in doc.items():
        if not isinstance(resources, dict):
            raise ValueError(f"{L.NODEGROUP_LIMITS_ANNOTATION}[{group}] must be a resource list")
        try:
            out[str(group)] = parse_resource_list(resources)
        except InvalidQuantity as e:
            raise ValueError(f"{L.NODEGROUP_LIMITS_ANNOTATION}[{group}]: {e}") from None
    return out


ARGUMENTS: Final = ArgumentTable({"strict": (bool, True), "enablePreferredOrder": (bool, False)})


class NodegroupPlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.strict: bool = args["strict"]
        self.preferred_order: bool = args["enablePreferredOrder"]

    @property
    def hierarchy(self) -> bool:
        # A switch on the conf entry (Volcano's HierarchyEnabled), off unless set.
        return self.switches.get("enableHierarchy", False)

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        queues = snap.queues
        tree = QueueTree.of(queues) if self.hierarchy else None
        self._rules: dict[str, Rules] = {}
        for name, q in queues.items():
            rules = Rules(q.node_group_affinity, f"queue {name}")
            if q.node_group_affinity is None and tree is not None:
                for up in tree.ancestors(name):
                    if queues[up].node_group_affinity is not None:
                        rules = Rules(queues[up].node_group_affinity, f"queue {up}")
                        break
            self._rules[name] = rules
        # Each node's group id (-1: no label), and the group names.
        names: dict[str, int] = {}
        ids = np.full(len(snap.nodes), -1, dtype=np.intp)
        for row, n in enumerate(snap.nodes):
            g = n.labels.get(L.NODEGROUP_LABEL)
            if g is not None:
                ids[row] = names.setdefault(g, len(names))
        self._group_ids = ids
        self._groups = list(names)
        # Per-group caps: queue -> (group -> limit vector over the named resources), or the parse error.
        self._limits: dict[str, dict[int, tuple[Vector, Mask]]] = {}
        self._limit_errors: dict[str, str] = {}
        index = snap.index
        self._names = index.names
        for name, q in queues.items():
            if not q.node_group_limits:
                continue
            try:
                parsed = parse_limits(q.node_group_limits)
            except ValueError as e:
                self._limit_errors[name] = str(e)
                continue
            caps: dict[int, tuple[Vector, Mask]] = {}
            for group, res in parsed.items():
                gid = names.get(group)
                if gid is None or not res:
                    continue  # no node of that group: nothing to cap
                named = np.array([n in res for n in index.names], dtype=np.bool_)
                caps[gid] = (index.vector(res), named)
            if caps:
                self._limits[name] = caps
        # What each capped queue holds per group: its pods on nodes (running, bound, planned).
        self._held: dict[str, dict[int, Vector]] = {q: {} for q in self._limits}
        if self._limits:
            for p, row in snap.residents.all():
                gid = int(ids[row])
                key = snap.group_of(p.uid) if gid >= 0 else None
                pg = None if key is None else snap.groups.get(key)
                if pg is not None and pg.queue in self._held:
                    held = self._held[pg.queue]
                    v = index.vector(p.requests)
                    held[gid] = v if gid not in held else held[gid] + v

    # --- where a queue may go -----------------------------------------------------------------------
    def node_mask(self, ssn: Session, queue: Queue) -> Mask | None:
        ids = self._group_ids
        if queue.name in self._limit_errors:
            return np.zeros(len(ids), dtype=np.bool_)
        rules = self._rules.get(queue.name, Rules(None, f"queue {queue.name}"))
        labelled = ids >= 0
        if rules.unset:
            return ~labelled if not self.strict else np.zeros(len(ids), dtype=np.bool_)
        allowed = np.array([rules.admits(g) for g in self._groups], dtype=np.bool_)
        out: Mask = labelled & np.append(allowed, False)[ids]  # id -1 reads the appended False
        return out

    def node_mask_reason(self, ssn: Session, queue: Queue) -> str | None:
        error = self._limit_errors.get(queue.name)
        if error is not None:
            return f"queue {queue.name}: invalid {error} (nodegroup)"
        rules = self._rules.get(queue.name, Rules(None, f"queue {queue.name}"))
        if rules.unset:
            where = "no node" if self.strict else f"only nodes without a {L.NODEGROUP_LABEL} label"
            return f"queue {queue.name} has no node group affinity (spec.affinity): it may use {where}"
        a = rules.affinity
        assert a is not None
        groups = [g for g in sorted({*a.required, *a.preferred, *a.anti_preferred}) if rules.admits(g)]
        kinds = [
            k
            for k, names in (
                ("required nodeGroupAffinity", a.required),
                ("preferred nodeGroupAffinity", a.preferred),
                ("preferred nodeGroupAntiAffinity", a.anti_preferred),
            )
            if names
        ]
        inherited = "" if rules.source == f"queue {queue.name}" else f", inherited from {rules.source}"
        if not groups:
            why = ", ".join(kinds) or "required nodeGroupAntiAffinity"
            return f"queue {queue.name} may use no node group ({why}{inherited})"
        shown = ", ".join(groups)
        return f"queue {queue.name} may only use node group(s) {shown} ({', '.join(kinds)}{inherited})"

    def queue_node_score(self, ssn: Session, queue: Queue) -> Scores | None:
        rules = self._rules.get(queue.name)
        if rules is None or rules.affinity is None or not self._groups:
            return None
        per_group = [rules.score(g, self.preferred_order) for g in self._groups]
        out: Scores = np.append(np.asarray(per_group, dtype=np.float64), 0.0)[self._group_ids]
        return out

    # --- how much of each group ---------------------------------------------------------------------
    def node_limit(self, ssn: Session, queue: Queue, request: Vector) -> Mask | None:
        caps = self._limits.get(queue.name)
        if caps is None:
            return None
        over = self._over(queue.name, request)
        if not over:
            return np.ones(len(self._group_ids), dtype=np.bool_)
        out: Mask = ~np.isin(self._group_ids, list(over))
        return out

    def _over(self, qname: str, request: Vector) -> dict[int, list[str]]:
        """The groups where ``request`` more would pass the queue's cap, with the resources it passes."""
        out: dict[int, list[str]] = {}
        held = self._held.get(qname, {})
        for gid, (limit, named) in self._limits.get(qname, {}).items():
            used = held.get(gid)
            after = request if used is None else used + request
            bad = named & (after > limit)
            if bad.any():
                out[gid] = [self._names[i] for i in np.flatnonzero(bad).tolist()]
        return out

    def node_limit_reason(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        over = self._over(queue.name, request)
        if not over:
            return None
        held = self._held.get(queue.name, {})
        index = ssn.snapshot.index
        parts = []
        for gid, resources in sorted(over.items(), key=lambda kv: self._groups[kv[0]]):
            limit = self._limits[queue.name][gid][0]
            used = held.get(gid)
            amounts = []
            for r in resources:
                i = index.names.index(r)
                after = int(request[i]) + (0 if used is None else int(used[i]))
                amounts.append(f"{r} {human(r, after)} > {human(r, int(limit[i]))}")
            shown = ", ".join(amounts)
            parts.append(f"{self._groups[gid]} ({shown})")
        return (
            f"queue {queue.name} would pass its {L.NODEGROUP_LIMITS_ANNOTATION} in node group(s) "
            + "; ".join(parts)
        )

    def placed(self, ssn: Session, queue: str, request: Vector, row: int, count: int) -> None:
        held = self._held.get(queue)
        if held is None:
            return
        gid = int(self._group_ids[row])
        if gid < 0:
            return
        v = request if count == 1 else count * request
        held[gid] = v.copy() if gid not in held else held[gid] + v
