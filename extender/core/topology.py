"""Topology domains: for a node label key, which domain (label value) each node is in.

Inter-pod affinity and topology spread count pods per domain, so every such rule starts from the
node → domain map of its ``topologyKey``. It is built once per key, when a rule first asks, and kept with
the node table: it changes only when nodes do, not per snapshot or per pod. Domain ids follow the sorted
label values, so counts and tie-breaks do not depend on node order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.model import Node, Taint

Counts = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
# Pods per node row, for the rows that have any: rules select few pods, so counts stay small.
Sparse = Mapping[int, int]


def dense(per_row: Sparse, n: int) -> Counts:
    out = np.zeros(n, dtype=np.int64)
    for r, c in per_row.items():
        out[r] = c
    return out


@dataclass(frozen=True, slots=True)
class Domains:
    """The domains of one key: ``ids[node]`` (-1 where the node lacks the label) and their values."""

    key: str
    ids: npt.NDArray[np.intp]
    values: tuple[str, ...]
    labelled: Mask

    def sum_rows(self, per_row: Sparse, where: Mask | None = None) -> Counts:
        """Pods per domain from per-row counts, only rows in ``where`` if given (cost: the rows with pods,
        not the nodes)."""
        out = np.zeros(len(self.values), dtype=np.int64)
        ids = self.ids
        for r, c in per_row.items():
            i = ids[r]
            if c and i >= 0 and (where is None or where[r]):
                out[i] += c
        return out

    def present(self, where: Mask) -> Mask:
        """Domains with at least one node in ``where``."""
        out = np.zeros(len(self.values), dtype=np.bool_)
        out[self.ids[self.labelled & where]] = True
        return out

    def to_nodes(self, per_domain: Counts) -> Counts:
        """Each node's domain's value (0 for nodes without the label)."""
        if not len(self.values):
            return np.zeros(len(self.ids), dtype=np.int64)
        out: Counts = np.where(self.labelled, per_domain[np.maximum(self.ids, 0)], 0)
        return out


class TopologyIndex:
    """Lazily built :class:`Domains` per key over a fixed node list (the snapshot's node order), and the
    other node facts the static filters read as arrays (cordoned nodes, nodes by their taints): a node
    selector is a domain lookup, so a pod's node mask costs array operations, not a pass over the nodes.

    Filled on first use and never changed after: a snapshot's readers see the same answer whichever
    asks first.
    """

    def __init__(self, nodes: Sequence[Node]) -> None:
        self._nodes = tuple(nodes)
        self._by_key: dict[str, Domains] = {}
        self._cordoned: Mask | None = None
        self._by_taints: tuple[tuple[tuple[Taint, ...], npt.NDArray[np.intp]], ...] | None = None

    def __len__(self) -> int:
        return len(self._nodes)

    def cordoned(self) -> Mask:
        """Nodes marked unschedulable (read-only for callers)."""
        if self._cordoned is None:
            self._cordoned = np.fromiter((n.unschedulable for n in self._nodes), np.bool_, len(self._nodes))
        return self._cordoned

    def by_taints(self) -> tuple[tuple[tuple[Taint, ...], npt.NDArray[np.intp]], ...]:
        """The distinct taint lists of tainted nodes, each with its node rows (most nodes have none)."""
        if self._by_taints is None:
            groups: dict[tuple[Taint, ...], list[int]] = {}
            for i, n in enumerate(self._nodes):
                if n.taints:
                    groups.setdefault(n.taints, []).append(i)
            self._by_taints = tuple((t, np.asarray(rows, dtype=np.intp)) for t, rows in groups.items())
        return self._by_taints

    def domains(self, key: str) -> Domains:
        d = self._by_key.get(key)
        if d is None:
            raw = [n.labels.get(key) for n in self._nodes]
            values = tuple(sorted({v for v in raw if v is not None}))
            pos = {v: i for i, v in enumerate(values)}
            ids = np.fromiter((-1 if v is None else pos[v] for v in raw), dtype=np.intp, count=len(raw))
            d = self._by_key[key] = Domains(key=key, ids=ids, values=values, labelled=ids >= 0)
        return d
