"""Where a pod may go apart from free capacity: node constraints, the queue's node rules, per-pod filters.

:class:`NodeMasks` answers, for the session, the node predicates that do not follow free capacity:

- ``static_mask``: a pod's node constraints (selector, affinity, taints, cordons; kube-scheduler's own
  filters in :mod:`extender.core.fit`), cached per :class:`NodeConstraints` for the cycle;
- ``queue_mask`` and ``queue_scores``: the ``node_mask`` and ``queue_node_score`` plugins' answers for a
  queue (nodegroup's affinity), fixed for the cycle and asked once per queue; ``pod_mask`` folds the
  queue's mask into the static one, cached per (constraints, queue), then narrows it to the gang's
  HyperNode under try (``Session.domain``), keeps held nodes from pods the reservation does not admit,
  and drops the nodes kube-scheduler's own filters refused for the pod;
- ``limit_mask`` (``node_limit``: caps that follow what the queue took this cycle) and ``pod_fit``
  (``pod_fit``: per-pod filters such as numa-aware's and deviceshare's) are asked afresh every time and
  never cached, with their reasons for a pod they leave no node.

Invariants: every cached mask is shared and read-only; ``pod_mask`` copies before it narrows one. A cached
answer depends only on what is fixed for the cycle (node labels, queue specs), so it is exact.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from extender.core import fit
from extender.core.model import NodeConstraints, Pod
from extender.core.resources import Vector
from extender.framework.hooks import Hooks
from extender.framework.plugin import Scores

if TYPE_CHECKING:
    from extender.framework.session import Session


class NodeMasks:
    """The session's node masks and per-pod node predicates (the Session's methods of the same names call
    these)."""

    def __init__(self, ssn: Session, hooks: Hooks) -> None:
        self._ssn = ssn
        self._snapshot = ssn.snapshot
        self._maskers = hooks.node_mask
        self._limiters = hooks.node_limit
        self._pod_fitters = hooks.pod_fit
        self._queue_scorers = hooks.queue_node_score
        self._masks: dict[NodeConstraints, fit.Mask] = {}
        self._queue_masks: dict[str, fit.Mask | None] = {}
        self._queue_scores: dict[str, Scores | None] = {}
        self._queue_static: dict[tuple[NodeConstraints, str], fit.Mask] = {}

    def static_mask(self, c: NodeConstraints) -> fit.Mask:
        """The nodes constraints ``c`` allow (read-only)."""
        m = self._masks.get(c)
        if m is None:
            m = self._masks[c] = fit.static_mask(c, self._snapshot.nodes, self._snapshot.topology)
        return m

    def pod_mask(self, p: Pod) -> fit.Mask:
        """Nodes ``p`` may use apart from resources and other pods: its constraints, less the nodes
        kube-scheduler's own filters refused for it (ports, volumes, and what the core cannot decide, such
        as a namespaceSelector over namespace labels it was not given)."""
        ssn = self._ssn
        m = self.static_mask(p.constraints)
        if self._maskers:
            q = ssn.pod_queue(p)
            if q is not None:
                key = (p.constraints, q)
                both = self._queue_static.get(key)
                if both is None:
                    qm = self.queue_mask(q)
                    both = self._queue_static[key] = m if qm is None else m & qm
                m = both
        shared = True  # m is a cached mask: copy before writing to it
        held = ssn.reservation
        if held is not None and not held.admits(ssn, p):
            m = m & ~held.rows
            shared = False
        if ssn.domain is not None:  # a gang tried inside one HyperNode (see Plugin.gang_domains)
            m = m & ssn.domain
            shared = False
        refused = self._snapshot.refused.get(p.uid)
        if refused:
            m = m.copy() if shared else m
            for name in refused:
                row = self._snapshot.node_pos.get(name)
                if row is not None:
                    m[row] = False
        return m

    def queue_mask(self, qname: str) -> fit.Mask | None:
        """The nodes the ``node_mask`` plugins leave pods of queue ``qname``, or None (no opinion); once a
        cycle per queue (read-only)."""
        if qname in self._queue_masks:
            return self._queue_masks[qname]
        out: fit.Mask | None = None
        q = self._snapshot.queues.get(qname)
        if q is not None:
            for p in self._maskers:
                m = p.node_mask(self._ssn, q)
                if m is not None:
                    out = m.copy() if out is None else out & m
        self._queue_masks[qname] = out
        return out

    def queue_scores(self, qname: str | None) -> Scores | None:
        """The summed ``queue_node_score`` of queue ``qname`` per node, or None; once a cycle per queue
        (read-only). Added to ``Session.scores`` by every path that picks a node."""
        if qname is None or not self._queue_scorers:
            return None
        if qname in self._queue_scores:
            return self._queue_scores[qname]
        out: Scores | None = None
        q = self._snapshot.queues.get(qname)
        if q is not None:
            for p in self._queue_scorers:
                s = p.queue_node_score(self._ssn, q)
                if s is not None:
                    out = s + 0.0 if out is None else out + s
        self._queue_scores[qname] = out
        return out

    def queue_mask_reason(self, qname: str) -> str:
        """Why the ``node_mask`` plugins leave queue ``qname`` no node a pod could use."""
        q = self._snapshot.queues.get(qname)
        reasons = [r for p in self._maskers if q is not None and (r := p.node_mask_reason(self._ssn, q))]
        return "; ".join(reasons) or f"queue {qname} may use none of these nodes"

    def limit_mask(self, qname: str, request: Vector) -> fit.Mask | None:
        """The nodes the ``node_limit`` plugins let a pod of ``qname`` requesting ``request`` use now, or
        None: no limit applies to the queue (its pods may then be batched). Never cached."""
        if not self._limiters:
            return None
        q = self._snapshot.queues.get(qname)
        if q is None:
            return None
        out: fit.Mask | None = None
        for p in self._limiters:
            m = p.node_limit(self._ssn, q, request)
            if m is not None:
                out = m if out is None else out & m
        return out

    def limit_reason(self, qname: str, request: Vector) -> str:
        """Why the ``node_limit`` plugins leave a pod of ``qname`` requesting ``request`` no node."""
        q = self._snapshot.queues.get(qname)
        if q is None:
            return f"queue {qname} does not exist"
        reasons = [r for p in self._limiters if (r := p.node_limit_reason(self._ssn, q, request))]
        return "; ".join(reasons) or f"queue {qname} is at its limit on every node with room"

    def pod_fit(self, p: Pod, candidates: fit.Mask) -> fit.Mask | None:
        """The nodes the ``pod_fit`` plugins let ``p`` use now among ``candidates``, or None (no plugin
        judges this pod: it may be batched). Never cached."""
        out: fit.Mask | None = None
        for plugin in self._pod_fitters:
            m = plugin.pod_fit(self._ssn, p, candidates)
            if m is not None:
                out = m if out is None else out & m
        return out

    def pod_fit_reason(self, p: Pod, candidates: fit.Mask) -> str:
        """Why the ``pod_fit`` plugins leave ``p`` none of ``candidates``."""
        reasons = [
            r for plugin in self._pod_fitters if (r := plugin.pod_fit_reason(self._ssn, p, candidates))
        ]
        return "; ".join(reasons) or "no node with room passes its per-pod predicates"
