"""The nodes of a cluster as a table: sorted by name, with their allocatable matrix and what is derived from
the nodes alone (:class:`NodeTable`).

A cache rebuilds it only when a node (or the set of resource names) changes, so a snapshot of a large
cluster does not re-read every node; every snapshot until then shares the table's parts, read-only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core.model import Node
from extender.core.prefer import has_prefer_taints
from extender.core.resources import ResourceIndex, Vector
from extender.core.topology import TopologyIndex


@dataclass(frozen=True, slots=True)
class NodeTable:
    """Nodes sorted by name with their allocatable matrix and what is derived from the nodes alone: rebuilt
    only when nodes (or the set of resource names) change, so a snapshot of a large cluster does not re-read
    every node, and each cycle until then shares these (proportion, drf and overcommit read the total)."""

    nodes: tuple[Node, ...]
    index: ResourceIndex
    alloc: npt.NDArray[np.int64]
    total: Vector  # ``alloc`` summed over the nodes
    prefer_taints: bool  # any node has a PreferNoSchedule taint (nodeorder)
    node_pos: Mapping[str, int]
    node_names: tuple[str, ...]
    topology: TopologyIndex

    def covers(self, names: Iterable[str]) -> bool:
        return set(names) <= set(self.index.names)


def build_node_table(nodes: Iterable[Node], extra_names: Iterable[str] = ()) -> NodeTable:
    node_list = tuple(sorted(nodes, key=lambda n: n.name))
    names: set[str] = set(extra_names)
    for n in node_list:
        names.update(n.allocatable)
    index = ResourceIndex.of(names)
    alloc = index.matrix([n.allocatable for n in node_list])
    total: Vector = alloc.sum(axis=0)
    # Read-only: every snapshot until the next node change shares them, and ``total`` is ``alloc``'s sum: a
    # write into either would raise, not go unseen.
    alloc.setflags(write=False)
    total.setflags(write=False)
    return NodeTable(
        nodes=node_list,
        index=index,
        alloc=alloc,
        total=total,
        prefer_taints=has_prefer_taints(node_list),
        node_pos={n.name: i for i, n in enumerate(node_list)},
        node_names=tuple(n.name for n in node_list),
        topology=TopologyIndex(node_list),
    )
