"""capacity: every queue has an explicit ``deserved`` share, a ``capability`` limit and a ``guarantee``.

Volcano's ``capacity`` plugin, the alternative to ``proportion`` for clusters that set each queue's share
by hand rather than by weight. Per queue, fixed when the cycle opens (and held, with the queue tree
below, by :class:`extender.plugins.capacity_tree.QueueLimits`):

- ``realCapability``: its ``capability`` (unset: unlimited; a ``cpu`` or ``memory`` of 0 counts as unset,
  as in Volcano), lowered so that every other queue's ``guarantee`` stays free: at most the cluster total
  less the other queues' guarantees;
- ``deserved``: ``spec.deserved`` (unset: 0) kept within ``guarantee <= deserved <= realCapability``.

A queue may hold up to its real capability (it borrows idle room beyond its deserved share): admission
(``enqueue``: held + promised to admitted groups + the group's ``minResources`` − elastic) and
``allocatable`` refuse past it, in the resources the request asks for. *Elastic* is what the queue's
running groups hold beyond their ``minResources`` (Volcano's ``GetElasticResources``, a group without
``minResources`` counting all it holds; see :meth:`extender.framework.promises.Promises.elastic`):
reclaim can take it back, so admission counts it as room, as Volcano's ``jobEnqueueable`` does; allocation
does not (the borrowed pods still hold the nodes), and reclaim then takes the borrower back toward its
share for the admitted group. Queues of higher ``spec.priority`` are served first, then lowest share
(held / deserved, the largest over the resources ``deserved`` names) first; a queue without a deserved
share is best effort and comes after every queue below its share. Reclaim gives back borrowed room: a queue
may reclaim (``preemptive``) while what it would hold stays within its real capability and within its
deserved share in some resource it asks for (Volcano's rule); it reclaims only from queues above their
deserved share, and a victim is allowed only if its queue keeps its deserved share (``reclaimable``). Like
Volcano's, the plugin has no ``overused`` answer: a queue at its deserved share is not done, it may still
borrow idle room in allocate (``overused`` would end its turns there); ``preemptive`` is what keeps it
from reclaiming.

With ``enableHierarchy: true`` the queues form a tree through ``spec.parent`` (the ``root`` queue, or an
implicit unlimited root, at the top; see :class:`extender.core.hierarchy.QueueTree`). A queue's usage is
then that of its whole subtree, its own pods included, and so is its elastic part; a child's unset
capability is its parent's; the real capability of a child is its parent's less its siblings' guarantees;
every ancestor's limit binds admission and allocation; queues are ordered by the shares along their path
from the top, so siblings compete by share and a subtree's share decides against other subtrees. Jobs run
in leaf queues only, as in Volcano: a group in a queue with child queues is neither admitted nor given room,
and says so (``queue p is not a leaf queue (it has child queues a, b) ...``); pods it already runs stay and
count toward the subtree. On reclaim a victim's queue and each of its ancestors that is not also the
reclaimer's keep their deserved shares; with ``ancestorReclaimLevel: N`` (Volcano's argument, docs/design/
hierarchical-queue-on-capacity-plugin.md) only the victim's queue and its ancestors up to N levels above
it (0: the queue alone), an ancestor within N levels (not the root) below its own share in something the
pod asks for lets a queue past its own reclaim, and a reclaimer whose queue's share names nothing it asks
takes no victim that frees nothing its queue's share names from a queue it shares an ancestor with within
N levels (Volcano's contention gate). Without the switch ``spec.parent`` is ignored, as in Volcano.

Deliberate differences from Volcano, and why:

- a victim is allowed only when its queue (and the ancestors above) stays at or above its deserved share
  in every resource the victim frees that the share names. Volcano lets a queue above its share in one
  resource lose a pod that takes it below its share in that or another resource, which invites the
  victim's queue to reclaim it straight back;
- without ``ancestorReclaimLevel`` every ancestor the reclaimer does not share keeps its share (Volcano's
  default, 0, keeps none: it kept its old behaviour; pumice keeps its own, the safer one). An ancestor
  the reclaimer shares is never checked, whatever its depth (Volcano compares the ancestors at the same
  depth of both queues, and so checks a shared one in an unbalanced tree): a reclaim inside it changes
  nothing it holds;
- a queue whose parent is missing or whose ``spec.parent`` chain forms a loop is hung flat below the top
  (the allocate action refuses a queue in a loop); Volcano rejects every job of the cycle then, and also
  when any job sits in a parent queue. One queue's problem stays that queue's;
- the ``pods`` slot is no budget here (Volcano's resource type keeps it out of these checks too);
  ``capacity.DynamicResourceAllocationEnable`` and ``capacity.DRAConsumableCapacityEnable`` are accepted,
  and device classes in a queue's capability are not counted (pumice does not model DRA claims).

Enable with::

    - name: capacity
      enableHierarchy: true   # optional: honour spec.parent
      arguments:
        ancestorReclaimLevel: 1   # optional: how many ancestors of a victim keep their share
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.api import labels as L
from extender.core.model import Pod, PodGroup, Queue
from extender.core.quantity import human
from extender.core.resources import Vector
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin
from extender.framework.session import Session
from extender.plugins.capacity_tree import QueueLimits

ARGUMENTS: Final = ArgumentTable(
    {
        "ancestorReclaimLevel": (int, None),
        # Dynamic Resource Allocation quotas (device classes in capability): accepted, not counted.
        "capacity.DynamicResourceAllocationEnable": (bool, False),
        "capacity.DRAConsumableCapacityEnable": (bool, False),
    }
)


class CapacityPlugin(Plugin):
    name = "capacity"
    argument_table = ARGUMENTS
    # Usage plus request against fixed limits, resource by resource: monotone and additive. Under the
    # hierarchy an ancestor's subtree grows by the same request, so that holds there too.
    additive_allocatable = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        level = args["ancestorReclaimLevel"]
        if level is not None and level < 0:
            raise ValueError(f"plugin capacity: ancestorReclaimLevel {level} must be 0 or more")
        # None: every ancestor the reclaimer does not share keeps its share (pumice's default); a number:
        # Volcano's ancestorReclaimLevel (see the module docstring).
        self.ancestor_levels: int | None = level
        # Every queue's real capability, deserved share and place in the tree, fixed at open.
        self._limits = QueueLimits()
        self.deserved: dict[str, Vector] = {}
        # Subtree usage per queue with the usage arrays it was summed from (the session replaces a
        # queue's array on every change, never writes into one, so identity says it is current).
        self._sums: dict[str, tuple[tuple[Vector | None, ...], Vector]] = {}
        self._zero: Vector = np.zeros(0, dtype=np.int64)

    @property
    def real_capability(self) -> dict[str, Vector]:
        """Per queue, the most it may hold (Volcano's realCapability): its capability within its parent's
        and the cluster less others' guarantees; unlimited resources at a huge value. Read by the metrics."""
        return self._limits.real

    @property
    def hierarchy(self) -> bool:
        return self.switches.get("enableHierarchy", False)

    @property
    def local_queue_order(self) -> bool:  # type: ignore[override]  # per conf, not per class
        # Under the hierarchy a key reads the usage of the queue's ancestors' subtrees.
        return not self.hierarchy

    def open(self, ssn: Session) -> None:
        self._zero = np.zeros(len(ssn.snapshot.index), dtype=np.int64)
        self._limits = QueueLimits.of(ssn, hierarchy=self.hierarchy)
        self.deserved = self._limits.deserved
        self._sums = {}

    # --- usage -------------------------------------------------------------------------------------
    def _used(self, ssn: Session, name: str) -> Vector:
        """What queue ``name`` holds now: its own usage, or its subtree's under the hierarchy."""
        members = self._limits.members[name]
        if len(members) == 1:
            own = ssn.queue_used.get(name)
            return self._zero if own is None else own
        arrays = tuple(ssn.queue_used.get(m) for m in members)
        cached = self._sums.get(name)
        if cached is not None and all(a is b for a, b in zip(cached[0], arrays, strict=True)):
            return cached[1]
        total = sum((a for a in arrays if a is not None), self._zero)
        self._sums[name] = (arrays, total)
        return total

    def _promised(self, ssn: Session, name: str) -> Vector:
        return sum((ssn.queue_inqueue.get(m, self._zero) for m in self._limits.members[name]), self._zero)

    def _elastic(self, ssn: Session, name: str) -> Vector:
        """What the groups of ``name`` (its subtree under the hierarchy) hold beyond their minimum."""
        found = (ssn.promises.elastic(m) for m in self._limits.members[name])
        return sum((v for v in found if v is not None), self._zero)

    def _share(self, ssn: Session, name: str) -> tuple[float, int]:
        """The share of ``name`` and 1 for a best-effort queue (no deserved share), which goes after a
        queue with a share at the same value (Volcano's tie-break)."""
        cols, deserved = self._limits.share_of[name]
        if not len(cols):
            return (1.0, 1)
        return (float(np.maximum.reduce(self._used(ssn, name)[cols] / deserved)), 0)

    # --- hooks ---------------------------------------------------------------------------------------
    def queue_order(self, ssn: Session, queue: Queue) -> tuple[int, tuple[tuple[float, int], ...]] | None:
        path = self._limits.path.get(queue.name)
        if path is None:
            return None
        # One element for the whole path: keys of different depths stay comparable with what follows.
        return (-queue.priority, tuple(self._share(ssn, n) for n in path))

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        levels = self._limits.levels.get(group.queue)
        if levels is None:
            return None
        parent = self._limits.not_a_leaf(group.queue)
        if parent is not None:
            return parent
        need = ssn.snapshot.index.vector(group.min_resources)
        asked = (need > 0) & self._limits.shared
        if not asked.any():
            return None
        for level in levels:
            used, promised = self._used(ssn, level), self._promised(ssn, level)
            total = used + promised + need
            if not (asked & (total > self._limits.real[level])).any():
                continue
            # Volcano's jobEnqueueable: what running groups hold beyond their minimum is room, since
            # reclaim can take it back (asked only past the limit: it walks every placed pod).
            elastic = self._elastic(ssn, level)
            total = total - elastic
            reason = self._limits.over(group.queue, level, total, asked)
            if reason is not None:
                # The sum's terms for each resource over, so the figure can be checked.
                names = ssn.snapshot.index.names
                terms = "; ".join(
                    f"{names[i]}: used {human(names[i], int(used[i]))} + promised "
                    f"{human(names[i], int(promised[i]))} + minResources {human(names[i], int(need[i]))}"
                    + (f" − elastic {human(names[i], int(elastic[i]))}" if elastic[i] else "")
                    for i in np.flatnonzero(asked & (total > self._limits.real[level]))
                )
                return f"{reason}, counting what admitted groups are promised ({terms})"
        return None

    def allocatable(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        levels = self._limits.levels.get(queue.name)
        if levels is None:
            return None
        parent = self._limits.not_a_leaf(queue.name)
        if parent is not None:
            return parent
        asked = (request > 0) & self._limits.shared
        if not asked.any():
            return None
        for level in levels:
            reason = self._limits.over(queue.name, level, self._used(ssn, level) + request, asked)
            if reason is not None:
                return reason
        return None

    def preemptive(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        if queue.name not in self.deserved:
            return None
        asked = (request > 0) & self._limits.shared
        future = self._used(ssn, queue.name) + request
        # The queue's own limit only (Volcano's): reclaiming from a sibling leaves their parent's usage
        # as it was, and allocatable checks every ancestor once the victims are gone.
        over = self._limits.over(queue.name, queue.name, future, asked)
        if over is not None:
            return over
        deserved = self.deserved[queue.name]
        if (asked & (future <= deserved)).any():
            return None
        # Volcano's ancestorReclaimLevel: an ancestor within that many levels (not the root) below its
        # own share in something the pod asks for lets the queue reclaim too (case1 of its tests: a
        # best-effort child of a queue with a share).
        for level in self._ancestors_within(queue.name):
            if (asked & (self._used(ssn, level) + request <= self.deserved[level])).any():
                return None
        names = ssn.snapshot.index.names
        parts = ", ".join(
            f"{names[i]} {human(names[i], int(future[i]))}/{human(names[i], int(deserved[i]))}"
            for i in np.flatnonzero(asked)
        )
        return f"queue {queue.name}: reclaiming would pass its deserved share in all it asks for ({parts})"

    def _ancestors_within(self, name: str) -> tuple[str, ...]:
        """``name``'s ancestors within ``ancestorReclaimLevel`` levels, nearest first, the root left out
        (none without the argument or the hierarchy)."""
        if not self.ancestor_levels or not self.hierarchy:
            return ()
        return tuple(a for a in self._limits.levels[name][1 : 1 + self.ancestor_levels] if a != L.ROOT_QUEUE)

    def reclaimable(self, ssn: Session, reclaimer: Pod, candidates: Sequence[Pod]) -> Sequence[Pod]:
        snap = ssn.snapshot
        key = snap.group_of(reclaimer.uid)
        group = None if key is None else snap.groups.get(key)
        if group is None or group.queue not in self._limits.levels:
            return []
        # The reclaimer's queue and its ancestors: taking from below them moves nothing out of them.
        mine = set(self._limits.levels[group.queue])
        want = (
            snap.index.vector(reclaimer.requests)
            if reclaimer.uid not in snap.pods
            else ssn.vector(reclaimer.uid)
        )
        wanted = (want > 0) & self._limits.shared
        # Volcano's contention gate (ancestorReclaimLevel > 0): a reclaimer whose own queue's share names
        # nothing it asks for takes no victim that frees nothing its queue's share names from a queue it
        # shares an ancestor with within the levels: there is no contention at the leaves.
        near = set(self._ancestors_within(group.queue))
        gated = bool(near) and not (wanted & (self.deserved[group.queue] > 0)).any()
        running = ssn.running
        # What the victims allowed so far in this call take from each queue they count toward.
        taken: dict[str, Vector] = {}
        allowed: list[Pod] = []
        for c in candidates:
            r = running.by_uid.get(c.uid)
            theirs = None if r is None else snap.queues.get(r.queue)
            if theirs is None or not theirs.reclaimable or theirs.name not in self._limits.levels:
                continue
            v = snap.index.vector(c.requests)
            frees = (v > 0) & self._limits.shared
            if not (frees & wanted).any():
                continue  # it frees nothing the reclaimer asks for (Volcano skips it too)
            if (
                gated
                and near & set(self._ancestors_within(theirs.name))
                and not (frees & (self.deserved[theirs.name] > 0)).any()
            ):
                continue
            levels = [lv for lv in self._limits.levels[theirs.name] if lv not in mine]
            if self.ancestor_levels is not None:
                levels = levels[: 1 + self.ancestor_levels]
            if all(self._may_give(ssn, lv, v, frees, taken.get(lv)) for lv in levels):
                for lv in levels:
                    taken[lv] = v if lv not in taken else taken[lv] + v
                allowed.append(c)
        return allowed

    def _may_give(
        self, ssn: Session, level: str, v: Vector, frees: npt.NDArray[np.bool_], taken: Vector | None
    ) -> bool:
        """Whether queue ``level`` may lose ``v`` after ``taken``: it is above its deserved share in
        something ``v`` frees, and stays at or above it in everything ``v`` frees that the share names.
        (A share at least covers the guarantee, so the guarantee is kept too.) A victim that frees only
        what the share does not name is the queue's to lose, as in Volcano."""
        held = self._used(ssn, level)
        if taken is not None:
            held = held - taken
        deserved = self.deserved[level]
        named = frees & (deserved > 0)
        if not named.any():
            return True
        if not (held[named] > deserved[named]).any():
            return False
        return bool((held[named] - v[named] >= deserved[named]).all())
