"""nodeorder: kube-scheduler-style node scores: least requested, most requested, balanced allocation.

Scores are 0..100 per scorer, multiplied by the scorer's weight; cpu and memory only, as upstream.

Enable with::

    - name: nodeorder
      arguments:
        leastrequested.weight: 1
        mostrequested.weight: 0
        balancedresource.weight: 1
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.resources import Vector
from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session

_KNOWN = {
    "leastrequested.weight": (int, 1),
    "mostrequested.weight": (int, 0),
    "balancedresource.weight": (int, 1),
    "nodeaffinity.weight": (int, 1),
    "podaffinity.weight": (int, 1),
    "tainttoleration.weight": (int, 1),
    "imagelocality.weight": (int, 1),
    "podtopologyspread.weight": (int, 1),
    "volumebinding.weight": (int, 1),
}


class NodeorderPlugin(Plugin):
    name = "nodeorder"
    row_local_scores = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = parse_arguments(self.name, arguments, _KNOWN)
        self.least = args["leastrequested.weight"]
        self.most = args["mostrequested.weight"]
        self.balanced = args["balancedresource.weight"]

    def open(self, ssn: Session) -> None:
        # Per cycle, not per pod: cpu and memory allocatable as floats, and a divisor safe from zero.
        alloc = ssn.snapshot.alloc[:, :2].astype(np.float64)
        self._alloc = alloc
        self._safe = np.where(alloc > 0, alloc, 1.0)

    def node_score(
        self,
        ssn: Session,
        request: Vector,
        free: npt.NDArray[np.int64],
        rows: Rows | None = None,
    ) -> Scores | None:
        if not (self.least or self.most or self.balanced):
            return None
        if rows is None:
            alloc, safe, used = self._alloc, self._safe, free[:, :2]
        else:
            alloc, safe, used = self._alloc[rows], self._safe[rows], free[rows, :2]
        frac = np.clip((alloc - used + request[:2]) / safe, 0.0, 1.0)
        score = np.zeros(len(alloc), dtype=np.float64)
        if self.least:
            score += self.least * (1.0 - frac).mean(axis=1) * 100
        if self.most:
            score += self.most * frac.mean(axis=1) * 100
        if self.balanced:
            score += self.balanced * (1.0 - np.abs(frac[:, 0] - frac[:, 1])) * 100
        return score
