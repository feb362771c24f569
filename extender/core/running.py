"""pumice's running pods by node and by group: whom preempt and reclaim may choose as victims.

Pure, and built only when a cycle has a group that preemption or reclaim could help: from the snapshot's
residents (every pod on a node), keeping pumice's pods that hold resources and are not already leaving.
A pod being deleted still holds its node until it is gone; its room is *releasing* (Volcano's word) and
a preemptor may wait for it without evicting anyone.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from extender.core import subgroups
from extender.core.model import GroupKey, Pod, PodGroup, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import Snapshot, implicit_group, pod_group_key


@dataclass(frozen=True, slots=True)
class Running:
    pod: Pod
    row: int
    group: GroupKey
    queue: str


class RunningIndex:
    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        self.by_uid: dict[PodUID, Running] = {}
        self.on_node: dict[int, list[Running]] = {}
        self.members: dict[GroupKey, list[Running]] = {}
        self._groups: dict[GroupKey, PodGroup] = {}
        self._vectors: dict[PodUID, Vector] = {}
        # Pods that may never be victims (``volcano.sh/preemptable: "false"``), usually none.
        self.protected: set[PodUID] = set()
        releasing: list[tuple[int, Pod]] = []
        for p, row in snap.residents.all():
            if not p.holds_resources:
                continue
            if p.deleting:
                releasing.append((row, p))
                continue
            if p.scheduler_name not in snap.scheduler_names:
                continue
            key = pod_group_key(p)
            g = snap.groups.get(key) or snap.other_groups.get(key)
            if g is None:
                if p.group_name:
                    continue  # its PodGroup is gone: not ours to judge
                g = implicit_group(p, snap.default_queue)
            self._groups[key] = g
            r = Running(pod=p, row=row, group=key, queue=g.queue)
            self.by_uid[p.uid] = r
            if not p.preemptable:
                self.protected.add(p.uid)
            self.on_node.setdefault(row, []).append(r)
            self.members.setdefault(key, []).append(r)
        # What pods already leaving will free, per node row, and who they are.
        self.releasing: npt.NDArray[np.int64] = np.zeros_like(snap.alloc)
        self.releasing_pods: dict[int, list[PodUID]] = {}
        for row, p in releasing:
            self.releasing[row] += snap.index.vector(p.requests)
            self.releasing_pods.setdefault(row, []).append(p.uid)

    def vector(self, pod: Pod) -> Vector:
        """The request vector of running ``pod`` (read-only; worked out once)."""
        v = self._vectors.get(pod.uid)
        if v is None:
            v = self._vectors[pod.uid] = self._snap.index.vector(pod.requests)
        return v

    def group(self, key: GroupKey) -> PodGroup:
        return self._groups[key]

    def spare(self, key: GroupKey) -> int:
        """How many running members group ``key`` can lose and keep its gang (``minMember``) whole."""
        g = self._groups[key]
        # Succeeded members count toward the gang (as allocate counts them); the PodGroup's status has
        # them, as the snapshot holds only the pods of groups with work.
        return max(0, len(self.members.get(key, ())) + g.succeeded - g.min_member)

    def alone(self, r: Running, gone: Container[PodUID], chosen: Container[PodUID] = frozenset()) -> bool:
        """Whether ``r`` may be evicted on its own, the members in ``gone`` (evicted already) or ``chosen``
        (as victims alongside) aside: its group keeps ``minMember`` without it and, with sub-groups, its
        policy's ``minSubGroups`` (:func:`extender.core.subgroups.may_lose`). Otherwise it goes only with
        the rest of its gang."""
        g = self._groups[r.group]
        members = self.members.get(r.group, ())
        spare = len(members) + g.succeeded - g.min_member
        if spare <= 0:
            return False  # (a gang at its minimum: no need to count who is gone)
        if spare - sum(m.pod.uid in gone or m.pod.uid in chosen for m in members) <= 0:
            return False
        if not g.sub_group_policy:
            return True
        there = [m.pod for m in members if m.pod.uid not in gone and m.pod.uid not in chosen]
        return subgroups.may_lose(g, there, r.pod)

    def group_priority(self, key: GroupKey) -> int:
        g = self._groups[key]
        pc = self._snap.priority_classes.get(g.priority_class)
        if pc is not None:
            return pc.value
        return max((r.pod.priority for r in self.members.get(key, ())), default=0)

    def queue_of(self, pods: Sequence[Pod]) -> Mapping[PodUID, str]:
        return {p.uid: self.by_uid[p.uid].queue for p in pods if p.uid in self.by_uid}
