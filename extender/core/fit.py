"""Which nodes a pod may use, as boolean masks over the snapshot's node axis.

Mirrors the kube-scheduler filters that do not depend on other pods: NodeUnschedulable, NodeName-free
node selector and required node affinity (NodeAffinity), TaintToleration (NoSchedule/NoExecute), and
NodeResourcesFit (requests ≤ free, including extended resources and the ``pods`` slot). kube-scheduler
runs its own filters too; we evaluate the same ones so that a plan is one it will accept. The filters
that do depend on other pods (InterPodAffinity, PodTopologySpread) are in :mod:`extender.core.interpod`
and :mod:`extender.core.spread`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.model import Node, NodeConstraints, Requirement, Taint
from extender.core.quantity import human
from extender.core.resources import ResourceIndex, Vector
from extender.core.selector import requirement_holds
from extender.core.topology import TopologyIndex

Mask = npt.NDArray[np.bool_]

_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _requirement_matches(req: Requirement, node: Node) -> bool:
    if req.field:
        # matchFields supports only metadata.name.
        actual: str | None = node.name if req.key == "metadata.name" else None
    else:
        actual = node.labels.get(req.key)
    return requirement_holds(req, actual)


def node_term_matches(term: tuple[Requirement, ...], node: Node) -> bool:
    """One NodeSelectorTerm: all its requirements hold (an empty term matches nothing)."""
    return bool(term) and all(_requirement_matches(r, node) for r in term)


def node_affinity_reason(c: NodeConstraints, node: Node) -> str | None:
    """The pod's nodeSelector and required node affinity alone (what topology spread's
    ``nodeAffinityPolicy: Honor`` looks at), or None when the node satisfies both."""
    for k, v in c.node_selector:
        if node.labels.get(k) != v:
            return "node does not match the pod's nodeSelector"
    if c.affinity_terms is not None and not any(node_term_matches(t, node) for t in c.affinity_terms):
        return "node does not match the pod's required node affinity"
    return None


def untolerated_taint(c: NodeConstraints, node: Node) -> Taint | None:
    """The first NoSchedule/NoExecute taint of ``node`` the pod does not tolerate."""
    for taint in node.taints:
        if taint.effect in _BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in c.tolerations):
            return taint
    return None


def static_reason(c: NodeConstraints, node: Node) -> str | None:
    """Why ``node`` can never take a pod with constraints ``c`` (resources aside), or None."""
    if node.unschedulable:
        return "node is unschedulable (cordoned)"
    # The node affinity and taint checks inline (not via the helpers above): this runs per node.
    for k, v in c.node_selector:
        if node.labels.get(k) != v:
            return "node does not match the pod's nodeSelector"
    if c.affinity_terms is not None and not any(node_term_matches(t, node) for t in c.affinity_terms):
        return "node does not match the pod's required node affinity"
    for taint in node.taints:
        if taint.effect in _BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in c.tolerations):
            return f"node has taint {taint.key}={taint.value}:{taint.effect} the pod does not tolerate"
    return None


def static_mask(c: NodeConstraints, nodes: Sequence[Node], index: TopologyIndex | None = None) -> Mask:
    """Nodes for which :func:`static_reason` is None. With ``index`` (over the same nodes, in the same
    order) as array operations: each label requirement is decided once per distinct label value (with
    :func:`requirement_holds` itself, so the answer is the same) and spread over the nodes by their
    value ids; taints once per distinct taint list."""
    if index is None:
        return np.fromiter((static_reason(c, n) is None for n in nodes), dtype=np.bool_, count=len(nodes))
    ok: Mask = ~index.cordoned()
    for k, v in c.node_selector:
        ok &= _label_mask(index, Requirement(key=k, operator="In", values=(v,)))
    if c.affinity_terms is not None:
        any_term = np.zeros(len(nodes), dtype=np.bool_)
        for term in c.affinity_terms:
            if term:  # an empty term matches nothing
                this = np.ones(len(nodes), dtype=np.bool_)
                for req in term:
                    if req.field:
                        this &= np.fromiter(
                            (_requirement_matches(req, n) for n in nodes), np.bool_, len(nodes)
                        )
                    else:
                        this &= _label_mask(index, req)
                any_term |= this
        ok &= any_term
    for taints, rows in index.by_taints():
        if any(
            t.effect in _BLOCKING_EFFECTS and not any(tol.tolerates(t) for tol in c.tolerations)
            for t in taints
        ):
            ok[rows] = False
    return ok


def _label_mask(index: TopologyIndex, req: Requirement) -> Mask:
    """Nodes whose label ``req.key`` satisfies ``req`` (a missing label included, as None)."""
    d = index.domains(req.key)
    holds = [requirement_holds(req, v) for v in d.values]
    holds.append(requirement_holds(req, None))  # id -1: the nodes without the label
    out: Mask = np.asarray(holds, dtype=np.bool_)[d.ids]
    return out


def fits(free: npt.NDArray[np.int64], req: Vector) -> Mask:
    """Nodes (rows of ``free``) whose free vector covers ``req`` in every resource.

    Column by column: a reduction along rows of a handful of resources costs several times as much, and
    this runs for every placement."""
    out: Mask = free[:, 0] >= req[0]
    for c in range(1, free.shape[1]):
        out &= free[:, c] >= req[c]
    return out


@dataclass(frozen=True, slots=True)
class Shortfall:
    """The best a pod could get, for a reason message: the closest node and what it lacks."""

    node: str
    lacking: Mapping[str, tuple[int, int]]  # resource -> (needed, best node's free)

    def describe(self) -> str:
        needs = ", ".join(f"{r} {human(r, n)}" for r, (n, _) in sorted(self.lacking.items()))
        has = ", ".join(f"{r} {human(r, f)}" for r, (_, f) in sorted(self.lacking.items()))
        return f"needs {needs}, best node {self.node} has {has}"


def shortfall(
    free: npt.NDArray[np.int64], req: Vector, mask: Mask, index: ResourceIndex, names: Sequence[str]
) -> Shortfall | None:
    """The statically feasible node that comes closest to fitting ``req`` (fewest missing resources,
    then the smallest relative deficit, then the lowest row), or None when no node is statically feasible.

    Column by column over every node, the rows outside ``mask`` ruled out at the end (as :func:`fits`:
    reductions along rows of a handful of columns cost several times as much). Every pod that fits
    nowhere gets this reason, so a cycle with a long queue computes it for most of its groups."""
    if not mask.any():
        return None
    missing = np.zeros(len(free), dtype=np.int64)
    # The smallest of min(free, request) / request over the resources asked (1 when none is asked):
    # each quotient is computed as a whole-row pass would, and a minimum does not round.
    ratio = np.ones(len(free), dtype=np.float64)
    for r, need in enumerate(req.tolist()):
        col = free[:, r]
        missing += col < need
        if need > 0:
            np.minimum(ratio, np.minimum(col, need) / need, out=ratio)
    missing = np.where(mask, missing, np.iinfo(np.int64).max)
    fewest = missing.min()
    best = int(np.argmax(np.where(missing == fewest, ratio, -np.inf)))  # the first of the closest
    lacking = {
        index.names[r]: (int(req[r]), int(max(free[best, r], 0)))
        for r in range(len(index))
        if req[r] > free[best, r]
    }
    return Shortfall(names[best], lacking)


def summarize_static(c: NodeConstraints, nodes: Sequence[Node]) -> str:
    """``3 nodes: node is unschedulable; 2 nodes: taint ...`` for a pod no node can take statically."""
    counts: dict[str, int] = {}
    for n in nodes:
        r = static_reason(c, n)
        if r is not None:
            counts[r] = counts.get(r, 0) + 1
    if not counts:
        return "no nodes"
    return "; ".join(f"{k} ({v} nodes)" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
