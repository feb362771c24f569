"""Resource lists projected onto numpy vectors.

A ``Resources`` maps a resource name to its accounted integer amount (:mod:`extender.core.resource_maps`,
where the maps are parsed, added and formatted; re-exported here for the modules that read them from here).
The snapshot fixes an ordered set of resource names (``ResourceIndex``) and every node and pod request
becomes an ``int64`` vector over it, so fit checks over all nodes are a single array comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core.resource_maps import Resources, add, describe, format_resource_list, parse_resource_list

__all__ = [
    "BASE_RESOURCES",
    "ResourceIndex",
    "Resources",
    "Vector",
    "add",
    "describe",
    "format_resource_list",
    "parse_resource_list",
]

Vector = npt.NDArray[np.int64]

# Always present, in this order, so the common columns have fixed positions.
BASE_RESOURCES: Final = ("cpu", "memory", "pods")


@dataclass(frozen=True, slots=True)
class ResourceIndex:
    """The ordered resource names of one snapshot: column ``i`` of every matrix is ``names[i]``."""

    names: tuple[str, ...]

    @staticmethod
    def of(extra: Iterable[str]) -> ResourceIndex:
        rest = sorted(set(extra) - set(BASE_RESOURCES))
        return ResourceIndex((*BASE_RESOURCES, *rest))

    def vector(self, res: Resources) -> Vector:
        """The vector of ``res``; names outside the index are dropped (callers check them separately)."""
        return np.array([res.get(n, 0) for n in self.names], dtype=np.int64)

    def matrix(self, maps: Sequence[Resources]) -> npt.NDArray[np.int64]:
        """The vectors of ``maps`` as the rows of one matrix, filled a column at a time (one pass per
        resource name rather than an array per map: snapshots hold thousands of pods and nodes)."""
        out = np.zeros((len(maps), len(self.names)), dtype=np.int64)
        for c, name in enumerate(self.names):
            out[:, c] = np.fromiter((m.get(name, 0) for m in maps), dtype=np.int64, count=len(maps))
        return out

    def to_map(self, vec: Vector) -> dict[str, int]:
        return {n: int(v) for n, v in zip(self.names, vec.tolist(), strict=True) if v}

    def __len__(self) -> int:
        return len(self.names)
