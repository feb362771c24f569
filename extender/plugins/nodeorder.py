"""nodeorder: kube-scheduler-style node scores, each 0..100 times its weight (Volcano's defaults).

By request (cached per request vector, see :mod:`extender.framework.plugin`), cpu and memory only:

- ``leastrequested.weight`` (1), ``mostrequested.weight`` (0), ``balancedresource.weight`` (1).

By who the pod is (per placement, over its candidate nodes, normalised as kube-scheduler does; a pod
without preferences in a cluster without PreferNoSchedule taints or pods with inter-pod terms skips them):

- ``nodeaffinity.weight`` (2): preferred node affinity (:mod:`extender.core.prefer`);
- ``tainttoleration.weight`` (3): fewer intolerable PreferNoSchedule taints score higher;
- ``podaffinity.weight`` (2): preferred pod affinity/anti-affinity, both ways, and other pods' required
  affinity (:mod:`extender.core.interpod`);
- ``podtopologyspread.weight`` (2): ``ScheduleAnyway`` topology spread (:mod:`extender.core.spread`).

``imagelocality.weight`` and ``volumebinding.weight`` are accepted and have no effect: the cache holds
neither images nor volumes.

Enable with::

    - name: nodeorder
      arguments:
        leastrequested.weight: 1
        mostrequested.weight: 0
        balancedresource.weight: 1
        nodeaffinity.weight: 2
        podaffinity.weight: 2
        tainttoleration.weight: 3
        podtopologyspread.weight: 2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core import prefer
from extender.core.fit import Mask
from extender.core.model import Pod, PreferredNodeTerm, Toleration
from extender.core.resources import Vector
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session

# Volcano's argument names and defaults.
ARGUMENTS: Final = ArgumentTable(
    {
        "leastrequested.weight": (int, 1),
        "mostrequested.weight": (int, 0),
        "balancedresource.weight": (int, 1),
        "nodeaffinity.weight": (int, 2),
        "podaffinity.weight": (int, 2),
        "tainttoleration.weight": (int, 3),
        "imagelocality.weight": (int, 1),
        "podtopologyspread.weight": (int, 2),
        "volumebinding.weight": (int, 1),
    }
)


class NodeorderPlugin(Plugin):
    name = "nodeorder"
    argument_table = ARGUMENTS
    row_local_scores = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.least = args["leastrequested.weight"]
        self.most = args["mostrequested.weight"]
        self.balanced = args["balancedresource.weight"]
        self.node_affinity = args["nodeaffinity.weight"]
        self.pod_affinity = args["podaffinity.weight"]
        self.taints = args["tainttoleration.weight"]
        self.spread = args["podtopologyspread.weight"]

    def open(self, ssn: Session) -> None:
        # Raw per-node values of the spec-only preferences, per distinct spec (gang members share one).
        self._prefer_taints = bool(self.taints) and ssn.snapshot.prefer_taints
        self._node_weights: dict[tuple[PreferredNodeTerm, ...], npt.NDArray[np.int64]] = {}
        self._taint_counts: dict[tuple[Toleration, ...], npt.NDArray[np.int64]] = {}

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        a = pod.affinity
        rules = ssn.pod_rules(pod) if self.pod_affinity or self.spread else None
        if a is None and rules is None and not self._prefer_taints:
            return None  # the common case: nothing about this pod to prefer
        parts: list[tuple[int, Scores | None]] = []
        if self.node_affinity and a is not None and a.preferred_nodes:
            raw = self._node_weights.get(a.preferred_nodes)
            if raw is None:
                raw = prefer.preferred_node_weights(a.preferred_nodes, ssn.snapshot.nodes)
                self._node_weights[a.preferred_nodes] = raw
            parts.append((self.node_affinity, prefer.normalize(raw, candidates, reverse=False)))
        if self._prefer_taints:
            tol = pod.constraints.tolerations
            raw = self._taint_counts.get(tol)
            if raw is None:
                raw = self._taint_counts[tol] = prefer.intolerable_prefer_taints(tol, ssn.snapshot.nodes)
            parts.append((self.taints, prefer.normalize(raw, candidates, reverse=True)))
        if rules is not None:
            if self.pod_affinity:
                parts.append((self.pod_affinity, rules.affinity_scores(pod, candidates)))
            if self.spread:
                parts.append((self.spread, rules.spread_scores(pod, candidates)))
        total: Scores | None = None
        for weight, s in parts:
            if s is not None:
                total = weight * s if total is None else total + weight * s
        # Zeros, not None, when every part came out even over these candidates: None must mean "nothing
        # to prefer whatever the candidates" (see PodScorer), and adding zeros changes no choice.
        return np.zeros(len(candidates), dtype=np.float64) if total is None else total

    def node_score(
        self,
        ssn: Session,
        request: Vector,
        free: npt.NDArray[np.int64],
        rows: Rows | None = None,
    ) -> Scores | None:
        if not (self.least or self.most or self.balanced):
            return None
        # Each node's requested fraction of cpu and of memory with the pod on it (clipped to [0, 1]); the
        # mean of the two as their sum halved, which is what mean(axis=1) computes, in cheaper calls.
        cpu = ssn.fraction(request, free, rows, 0)
        mem = ssn.fraction(request, free, rows, 1)
        # Each term weight * value * 100, summed in this order, computed in place; the session adds the
        # plugins' scores from zero, so starting from the first term instead of zeros changes no sum.
        terms: list[Scores] = []
        if self.least:
            t = (1.0 - cpu) + (1.0 - mem)
            t /= 2.0
            terms.append(_weighted(self.least, t))
        if self.most:
            t = cpu + mem
            t /= 2.0
            terms.append(_weighted(self.most, t))
        if self.balanced:
            t = np.abs(cpu - mem)
            np.subtract(1.0, t, out=t)
            terms.append(_weighted(self.balanced, t))
        score = terms[0]
        for t in terms[1:]:
            score += t
        return score

    def node_score_row(self, ssn: Session, request: Vector, row: int) -> float | None:
        """:meth:`node_score` of node ``row`` alone in plain floats, step by step the same arithmetic
        (see :mod:`extender.framework.row_scores`)."""
        if not (self.least or self.most or self.balanced):
            return None
        cpu = ssn.nodes.row_fraction(request, row, 0)
        mem = ssn.nodes.row_fraction(request, row, 1)
        score: float | None = None
        if self.least:
            score = _weighted_one(self.least, ((1.0 - cpu) + (1.0 - mem)) / 2.0)
        if self.most:
            t = _weighted_one(self.most, (cpu + mem) / 2.0)
            score = t if score is None else score + t
        if self.balanced:
            t = _weighted_one(self.balanced, 1.0 - abs(cpu - mem))
            score = t if score is None else score + t
        return score


def _weighted_one(weight: int, value: float) -> float:
    """:func:`_weighted` of one value."""
    if weight != 1:
        value = weight * value
    return value * 100


def _weighted(weight: int, value: Scores) -> Scores:
    """``weight * value * 100``, in place (a weight of 1 changes no float: the default weights skip it)."""
    if weight != 1:
        np.multiply(weight, value, out=value)
    value *= 100
    return value
