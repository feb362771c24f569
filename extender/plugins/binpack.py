"""binpack: fill nodes before using empty ones, so large gangs still find whole nodes.

Score per node = weight × Σ_r w_r·(used_r + request_r)/allocatable_r / Σ_r w_r × 100, over the resources
the pod requests; a resource whose weight is not given counts with weight 0 unless it is cpu or memory.

Enable with::

    - name: binpack
      arguments:
        binpack.weight: 10
        binpack.cpu: 1
        binpack.memory: 1
        binpack.resources: nvidia.com/gpu
        binpack.resources.nvidia.com/gpu: 2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.errors import ConfigError
from extender.core.resources import Vector
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session

ARGUMENTS: Final = ArgumentTable(
    {
        "binpack.weight": (int, 1),
        "binpack.cpu": (int, 1),
        "binpack.memory": (int, 1),
        "binpack.resources": (str, ""),
    },
    prefixes={"binpack.resources.": int},
)


class BinpackPlugin(Plugin):
    name = "binpack"
    argument_table = ARGUMENTS
    row_local_scores = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.weight: int = args["binpack.weight"]
        self.weights: dict[str, int] = {"cpu": args["binpack.cpu"], "memory": args["binpack.memory"]}
        for name in (n.strip() for n in args["binpack.resources"].split(",")):
            if name:
                self.weights[name] = int(args.get(f"binpack.resources.{name}", 1))
        for key, w in args.items():
            if key.startswith("binpack.resources.") and key[len("binpack.resources.") :] not in self.weights:
                raise ConfigError(f"plugin binpack: {key} names a resource not listed in binpack.resources")
            if isinstance(w, int) and w < 0:
                raise ConfigError(f"plugin binpack: {key} must not be negative")

    def open(self, ssn: Session) -> None:
        # Per cycle, not per pod: the weighted columns (each node's fraction of one comes from the session,
        # shared with nodeorder within a scoring pass).
        names = ssn.snapshot.index.names
        self._weighted = [(i, float(self.weights[n])) for i, n in enumerate(names) if self.weights.get(n, 0)]
        # Per request vector (its bytes): the weighted columns it asks for and their weights' sum, asked
        # for every node scored (a cold cycle scores one changed node at a time thousands of times).
        self._asked: dict[bytes, tuple[list[tuple[int, float]], float]] = {}

    def _columns(self, request: Vector) -> tuple[list[tuple[int, float]], float]:
        key = request.tobytes()
        hit = self._asked.get(key)
        if hit is None:
            cols = [(i, w) for i, w in self._weighted if request[i] > 0]
            hit = self._asked[key] = (cols, sum(w for _, w in cols))
        return hit

    def node_score(
        self,
        ssn: Session,
        request: Vector,
        free: npt.NDArray[np.int64],
        rows: Rows | None = None,
    ) -> Scores | None:
        if not self.weight:
            return None
        cols, weights = self._columns(request)
        if not cols:
            return None
        # A weighted sum column by column (not a matrix product, whose rounding may depend on how many
        # rows there are), so one row's score is the same computed alone or with all the others.
        dot = ssn.fraction(request, free, rows, cols[0][0]) * cols[0][1]  # zeros + it: the same sum
        for i, w in cols[1:]:
            dot += ssn.fraction(request, free, rows, i) * w
        if self.weight != 1:  # 1 * x is x: the default weight skips a call
            np.multiply(self.weight, dot, out=dot)
        dot /= weights
        dot *= 100
        return dot

    def node_score_row(self, ssn: Session, request: Vector, row: int) -> float | None:
        """:meth:`node_score` of node ``row`` alone in plain floats, step by step the same arithmetic
        (see :mod:`extender.framework.row_scores`)."""
        if not self.weight:
            return None
        cols, weights = self._columns(request)
        if not cols:
            return None
        dot = ssn.nodes.row_fraction(request, row, cols[0][0]) * cols[0][1]
        for i, w in cols[1:]:
            dot += ssn.nodes.row_fraction(request, row, i) * w
        if self.weight != 1:
            dot = self.weight * dot
        dot /= weights
        return dot * 100
