"""Running per-node resource totals, mirrored into a ``nodes x resources`` matrix on demand.

Only the rows of nodes that changed since the last call are rewritten, so a snapshot of a 5 000-node
cluster costs a copy, not 5 000 dict-to-vector conversions. The plan book (reservations) and the cache
(bound pods) each keep one.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from extender.core.node_table import NodeTable


class NodeUsage:
    def __init__(self) -> None:
        self.by_node: dict[str, dict[str, int]] = {}
        self._dirty: set[str] = set()
        self._table: NodeTable | None = None
        self._matrix: npt.NDArray[np.int64] | None = None

    def add(self, node: str, requests: Mapping[str, int], sign: int = 1) -> None:
        u = self.by_node.setdefault(node, {})
        for k, v in requests.items():
            u[k] = u.get(k, 0) + sign * v
        self._dirty.add(node)

    def clear(self) -> None:
        self.by_node = {}
        self._table = None

    def matrix(self, table: NodeTable) -> npt.NDArray[np.int64]:
        """A fresh matrix over ``table`` (the caller may modify it)."""
        if self._table is not table or self._matrix is None:
            m = np.zeros(table.alloc.shape, dtype=np.int64)
            for node, usage in self.by_node.items():
                row = table.node_pos.get(node)
                if row is not None:
                    m[row] = table.index.vector(usage)
            self._table, self._matrix = table, m
        else:
            for node in self._dirty:
                row = table.node_pos.get(node)
                if row is not None:
                    self._matrix[row] = table.index.vector(self.by_node.get(node, {}))
        self._dirty.clear()
        return self._matrix.copy()
