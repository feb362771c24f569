"""Soft node preferences that depend only on the pod's spec and the node: kube-scheduler's NodeAffinity
score (preferred node affinity) and TaintToleration score (PreferNoSchedule taints).

Raw values are per node and fixed for a cycle, so a caller keeps them per distinct spec; normalisation
is over the candidate nodes of each placement, as kube-scheduler normalises over the nodes that passed
its filters:

- NodeAffinity: the sum of the weights of the preferred terms the node matches, scaled so the best
  candidate scores 100 (all 0 when none matches);
- TaintToleration: the count of the node's PreferNoSchedule taints not tolerated by the pod's tolerations
  whose effect is PreferNoSchedule or empty, reversed so the candidate with the fewest scores 100.

Integer arithmetic as upstream (``100 * s // max``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from extender.core.fit import node_term_matches
from extender.core.model import Node, PreferredNodeTerm, Toleration

Counts = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Scores = npt.NDArray[np.float64]

PREFER_NO_SCHEDULE = "PreferNoSchedule"


def preferred_node_weights(terms: tuple[PreferredNodeTerm, ...], nodes: Sequence[Node]) -> Counts:
    return np.fromiter(
        (sum(t.weight for t in terms if node_term_matches(t.requirements, n)) for n in nodes),
        dtype=np.int64,
        count=len(nodes),
    )


def intolerable_prefer_taints(tolerations: tuple[Toleration, ...], nodes: Sequence[Node]) -> Counts:
    soft = [t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE)]
    return np.fromiter(
        (
            sum(
                1
                for taint in n.taints
                if taint.effect == PREFER_NO_SCHEDULE and not any(t.tolerates(taint) for t in soft)
            )
            for n in nodes
        ),
        dtype=np.int64,
        count=len(nodes),
    )


def has_prefer_taints(nodes: Sequence[Node]) -> bool:
    """Whether any of ``nodes`` has a PreferNoSchedule taint (worked out once per node table: see
    extender.core.snapshot.NodeTable)."""
    return any(t.effect == PREFER_NO_SCHEDULE for n in nodes for t in n.taints)


def normalize(raw: Counts, candidates: Mask, *, reverse: bool) -> Scores | None:
    """kube-scheduler's default normalisation to 0..100 over ``candidates``; None when it comes out the
    same for every candidate (it cannot change a choice)."""
    if not candidates.any():
        return None
    top = int(raw[candidates].max())
    if top <= 0:
        return None  # all 0, or all 100 reversed
    out = 100 * raw // top
    if reverse:
        out = 100 - out
    return np.asarray(out, dtype=np.float64)
