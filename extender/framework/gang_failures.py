"""The allocate action's memory of gangs that failed: a gang minimum alike to one that could not be placed
fails again, without a placement attempt, while nothing it reads has moved since.

Within one allocate action the session's working state (free capacity, queue usage, plans, the ``placed``
listeners' state) changes only by committed statements: a gang that fails discards its statement, which
puts every part back exactly (integer vectors, see :mod:`extender.framework.statement`). So between two
commits the state each attempt starts from is the same, and two gangs that ask the same questions of it
get the same answers: the same pods placed in the same order, the same first refusal, the same
``Unschedulable`` (its message reads only the gang's counts and that refusal). A backlog of alike gangs
behind a full cluster then costs one attempt per shape and commit, not one per group: the live cycle, the
simulator and the forecast (whose every step is a cycle) alike.

A gang's *shape* (``GangFailures._shape``) is what :func:`extender.framework.gang_allocate._allocate_whole`
reads of it: its queue (capacity and share checks, queue node masks and limits, queue scores),
``minMember``, what still counts toward it, each task's minimum and what it still needs, and its waiting
pods in the order they are tried, each by task and :func:`extender.framework.place.shape` (request vector,
node constraints, nodes kube-scheduler refused for it, its own scoring table, NUMA and GPU asks).

Where it applies (:func:`applies` for the session, ``GangFailures._shape`` for the group), and why only
there, since these read more of a pod or group than its shape:

- no ``pod_fit`` plugin (``deviceshare`` tracks which pod holds which card, ``numaaware`` the cells taken,
  beyond the request); ``pod_score`` plugins only ``nodeorder`` and ``resource-strategy-fit``, which read
  the pod's affinity, tolerations and scoring table (in its shape; ``task-topology`` reads where the rest of
  the job runs); ``allocatable`` plugins only ``proportion`` and ``capacity``, which read the queue, the
  request and the queue usage (``placing_extras`` is off while a gang minimum is placed);
- no starvation reservation (it admits nodes to one group: ``Reservation.admits``), no gang tried inside a
  network-topology domain (``gang_domains``, ``ssn.domain``), no sub-groups.

Inter-pod rules need no exception: who is placed changes by placements, which last only by a commit (a
discard takes each out of the inter-pod counts again), and what the rules read of a pod itself (its
affinity, namespace and labels) is in its :func:`~extender.framework.place.shape` whenever the rules are in
play. A key computed before they were (without labels) only misses later ones computed with them.

``task_order`` plugins may order the pods as they like: the order tried is part of the shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from extender.core.model import Pod, PodGroup
from extender.framework import place
from extender.framework.result import Unschedulable
from extender.framework.session import Session

# pod_score plugins that read of a pod only what its shape holds (see the module docstring).
_SHAPE_ONLY_POD_SCORE = frozenset({"nodeorder", "resource-strategy-fit"})
# allocatable plugins that read only the queue, the request and the session's queue usage.
_SHAPE_ONLY_ALLOCATABLE = frozenset({"proportion", "capacity"})

Shape = tuple[object, ...]


def applies(ssn: Session) -> bool:
    """Whether the session's plugins let a gang's outcome be told by its shape (see the module docstring)."""
    hooks = ssn.hooks
    if not ssn.remember_failures or hooks.pod_fit or ssn.reservation is not None:
        return False
    if any(getattr(p, "name", None) not in _SHAPE_ONLY_POD_SCORE for p in hooks.pod_score):
        return False
    return all(p.name in _SHAPE_ONLY_ALLOCATABLE for p in hooks.allocatable)


class GangFailures:
    """The gangs that failed since the last commit, by shape, with why (one allocate action's). A gang's
    shape is made only while some failure is remembered, so gangs that fit pay nothing for it."""

    def __init__(self, ssn: Session) -> None:
        self._ssn = ssn
        self.on = applies(ssn)
        self._failed: dict[Shape, Unschedulable] = {}
        self._at = -1  # ssn.commits when the failures in _failed were remembered

    def recall(
        self, g: PodGroup, need: int, task_need: Mapping[str, int], waiting: Sequence[Pod]
    ) -> Unschedulable | None:
        """Why a gang of ``g``'s shape failed, when one did since the last commit (``waiting``: its waiting
        pods in the order they are tried)."""
        if not self._failed or self._at != self._ssn.commits:
            return None
        shape = self._shape(g, need, task_need, waiting)
        return None if shape is None else self._failed.get(shape)

    def remember(
        self, g: PodGroup, need: int, task_need: Mapping[str, int], waiting: Sequence[Pod], why: Unschedulable
    ) -> None:
        """``g`` failed with ``why`` (asked of the state the attempt started from, which its discard has put
        back). A shape made now may tell more than one made before the attempt (the inter-pod rules may
        have come into play): a key more precise than needed only keeps later gangs from matching it."""
        shape = self._shape(g, need, task_need, waiting)
        if shape is None:
            return
        if self._at != self._ssn.commits:
            self._failed.clear()
            self._at = self._ssn.commits
        self._failed[shape] = why

    def _shape(
        self, g: PodGroup, need: int, task_need: Mapping[str, int], waiting: Sequence[Pod]
    ) -> Shape | None:
        """What ``g``'s attempt reads of it; None when that is not all it reads (see the module docstring)."""
        ssn = self._ssn
        if not self.on or g.sub_group_policy or ssn.domain is not None or ssn.reservation is not None:
            return None
        return (
            g.queue,
            g.min_member,
            need,
            tuple(sorted(g.min_task_member.items())),
            tuple(sorted(task_need.items())),
            tuple((p.task, place.shape(ssn, p)) for p in waiting),
        )
