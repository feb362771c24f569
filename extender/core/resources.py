"""Resource lists as integer maps, and their projection onto numpy vectors.

A ``Resources`` maps a resource name to its accounted integer amount (see :mod:`extender.core.quantity`).
The snapshot fixes an ordered set of resource names (``ResourceIndex``) and every node and pod request
becomes an ``int64`` vector over it, so fit checks over all nodes are a single array comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core.quantity import format_units, human, to_units

Resources = Mapping[str, int]
Vector = npt.NDArray[np.int64]

# Always present, in this order, so the common columns have fixed positions.
BASE_RESOURCES: Final = ("cpu", "memory", "pods")


def parse_resource_list(raw: Mapping[str, object] | None) -> dict[str, int]:
    """Integer amounts of a Kubernetes ResourceList (raises InvalidQuantity on a bad value)."""
    if not raw:
        return {}
    return {str(name): to_units(str(name), value) for name, value in raw.items()}


def add(a: Resources, b: Resources) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def format_resource_list(res: Resources) -> dict[str, str]:
    """A Kubernetes ResourceList (quantity strings) for a status field."""
    return {k: format_units(k, v) for k, v in sorted(res.items())}


def describe(res: Resources) -> str:
    """``cpu 3, memory 4Gi`` for a reason message."""
    return ", ".join(f"{k} {human(k, v)}" for k, v in sorted(res.items()) if v)


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
