"""The capacity plugin's queue limits, fixed when a cycle opens: real capability, deserved share, the tree.

:class:`QueueLimits` holds, per queue, what :mod:`extender.plugins.capacity` checks usage against (its
docstring says how the checks use them, and where pumice departs from Volcano):

- ``capability``: the queue's ``spec.capability`` (unlimited where unset; a ``cpu`` or ``memory`` of 0
  counts as unset, as in Volcano), under the hierarchy a child's unset resource its parent's, with
  ``cap_from`` naming the queue whose spec sets each resource's limit (for the reasons);
- ``real``: Volcano's realCapability, the capability lowered so that the other queues' guarantees stay
  free. Flat: at most the cluster total less every other queue's guarantee. Under the hierarchy: at most
  the parent's real capability less the siblings' guarantees; the top (Volcano's root) is bounded by its
  own capability only, not by the cluster as it is now, so jobs may wait for nodes to come;
- ``deserved``: ``spec.deserved`` (unset: 0) kept within ``guarantee <= deserved <= real``, and
  ``share_of``, the resources it names (with their amounts) that a share is taken over;
- the tree's shape (one queue each without the hierarchy): ``levels`` (the queue then its ancestors,
  nearest first), ``members`` (its subtree, whose usage counts as its own), ``path`` (the queues its
  order key reads, top first, the root left out as it tells no two queues apart) and ``children`` (queues
  with child queues: jobs run in leaves only).

Invariants: built once per cycle from the snapshot's queues and never changed; every vector is over the
snapshot's resource index, ``_UNLIMITED`` standing for no limit (far above any real amount, far below
overflow when usage is added to it); shares and limits are over cpu, memory and extended resources, not
the ``pods`` slot (``shared``), as Volcano's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from extender.api import labels as L
from extender.core.hierarchy import QueueTree
from extender.core.quantity import human
from extender.core.resources import ResourceIndex, Vector
from extender.framework.session import Session

# Far above any real amount, far below overflow when usage is added to it.
_UNLIMITED = np.iinfo(np.int64).max // 4
# Volcano reads these two at zero as "not set" in a capability (a queue cannot be limited to no cpu).
_UNSET_AT_ZERO = ("cpu", "memory")


def _limits(index: ResourceIndex, amounts: Mapping[str, int]) -> tuple[Vector, npt.NDArray[np.bool_]]:
    """A capability as a vector (unlimited where unset) and the mask of the resources it sets."""
    cap = np.full(len(index), _UNLIMITED, dtype=np.int64)
    named = np.zeros(len(index), dtype=np.bool_)
    for name, amount in amounts.items():
        if name not in index.names or (name in _UNSET_AT_ZERO and amount <= 0):
            continue
        i = index.names.index(name)
        cap[i], named[i] = amount, True
    return cap, named


def _no_resources() -> npt.NDArray[np.bool_]:
    return np.zeros(0, dtype=np.bool_)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueLimits:
    """Every queue's limits and place in the tree for one cycle (see the module docstring); empty until
    the plugin opens."""

    names: tuple[str, ...] = ()  # the resource index's names
    real: dict[str, Vector] = field(default_factory=dict)
    capability: dict[str, Vector] = field(default_factory=dict)
    cap_from: dict[str, tuple[str, ...]] = field(default_factory=dict)  # "" when no spec sets it
    deserved: dict[str, Vector] = field(default_factory=dict)
    shared: npt.NDArray[np.bool_] = field(default_factory=_no_resources)
    share_of: dict[str, tuple[npt.NDArray[np.intp], Vector]] = field(default_factory=dict)
    levels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    members: dict[str, tuple[str, ...]] = field(default_factory=dict)
    path: dict[str, tuple[str, ...]] = field(default_factory=dict)
    children: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, ssn: Session, *, hierarchy: bool) -> QueueLimits:
        """The limits of the snapshot's queues; with ``hierarchy``, as a tree through ``spec.parent``."""
        snap = ssn.snapshot
        index, queues = snap.index, snap.queues
        zero = np.zeros(len(index), dtype=np.int64)
        shared = np.array([n != "pods" for n in index.names], dtype=np.bool_)
        guarantee = {n: index.vector(q.guarantee) for n, q in queues.items()}
        limits = {n: _limits(index, q.capability) for n, q in queues.items()}
        real: dict[str, Vector] = {}
        capability: dict[str, Vector] = {}
        cap_from: dict[str, tuple[str, ...]] = {}
        if hierarchy:
            tree = QueueTree.of(queues)
            for n in tree.top_down():
                cap, named = limits[n]
                up = tree.parent[n]
                if up is None:
                    capability[n] = real[n] = cap
                    cap_from[n] = tuple(n if m else "" for m in named.tolist())
                    continue
                own = capability[n] = np.where(named, cap, capability[up])
                cap_from[n] = tuple(
                    n if m else inherited for m, inherited in zip(named.tolist(), cap_from[up], strict=True)
                )
                siblings = sum((guarantee[s] for s in tree.children[up]), zero)
                above = real[up]
                room = np.where(
                    above >= _UNLIMITED, _UNLIMITED, np.maximum(above - siblings, 0) + guarantee[n]
                )
                real[n] = np.minimum(own, room)
            levels = {n: (n, *tree.ancestors(n)) for n in queues}
            children = {n: kids for n, kids in tree.children.items() if kids}
            members = {n: tree.subtree(n) for n in queues}
            path = {n: tuple(a for a in reversed(levels[n]) if a == n or a != L.ROOT_QUEUE) for n in queues}
        else:
            all_guaranteed = sum(guarantee.values(), zero)
            spare = np.maximum(ssn.total - all_guaranteed, 0)
            for n in queues:
                capability[n] = limits[n][0]
                cap_from[n] = tuple(n if m else "" for m in limits[n][1].tolist())
                real[n] = np.minimum(limits[n][0], spare + guarantee[n])
            levels = members = path = {n: (n,) for n in queues}
            children = {}
        deserved = {
            n: np.maximum(np.minimum(index.vector(q.deserved), real[n]), guarantee[n])
            for n, q in queues.items()
        }
        share_of: dict[str, tuple[npt.NDArray[np.intp], Vector]] = {}
        for n, amounts in deserved.items():
            cols = np.flatnonzero((amounts > 0) & shared)
            share_of[n] = (cols, amounts[cols])
        return cls(
            names=index.names,
            real=real,
            capability=capability,
            cap_from=cap_from,
            deserved=deserved,
            shared=shared,
            share_of=share_of,
            levels=levels,
            members=members,
            path=path,
            children=children,
        )

    def over(self, name: str, level: str, total: Vector, asked: npt.NDArray[np.bool_]) -> str | None:
        """Why ``total`` (what queue ``name``'s ``level``, itself or an ancestor, would hold) is refused:
        past ``level``'s real capability in a resource ``asked``; None when it is within."""
        real = self.real[level]
        over = np.flatnonzero(asked & (total > real))
        if not over.size:
            return None
        names = self.names
        parts = ", ".join(
            f"{names[i]} {human(names[i], int(total[i]))}/{human(names[i], int(real[i]))}" for i in over
        )
        what = "capability"
        inherited = sorted({self.cap_from[level][i] for i in over.tolist()} - {"", level})
        if inherited:
            what += f" inherited from queue {', '.join(inherited)}"
        if (real[over] < self.capability[level][over]).any():
            what += " less other queues' guarantees"
        where = f"queue {name}" if level == name else f"queue {name}: ancestor queue {level}"
        return f"{where}: {parts} over {what}"

    def not_a_leaf(self, name: str) -> str | None:
        """Why queue ``name`` takes no job: it has child queues (under the hierarchy); None for a leaf."""
        kids = self.children.get(name)
        if not kids:
            return None
        shown = ", ".join(kids[:5]) + (f" and {len(kids) - 5} more" if len(kids) > 5 else "")
        return (
            f"queue {name} is not a leaf queue (it has child queues {shown}): with capacity's"
            " enableHierarchy jobs run in leaf queues only"
        )
