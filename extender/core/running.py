"""pumice's running pods by node and by group: whom preempt and reclaim may choose as victims.

Pure, and built only when a cycle has a group that preemption or reclaim could help: from the snapshot's
residents (every pod on a node), keeping pumice's pods that hold resources and are not already leaving.
A pod being deleted still holds its node until it is gone; its room is *releasing* (Volcano's word) and
a preemptor may wait for it without evicting anyone.

The index is one pass over the residents, and never changes afterwards (a cycle's evictions are the
session's, not the index's). That pass keeps each running pod's place (``Running.pos``, in the residents'
order) and parallel arrays over those places (node row, queue, group, request vector): what the victim
search adds up over thousands of nodes without a Python loop per pod. The lookups (``by_uid``,
``on_node``, ``members``) answer as dicts built in the residents' order would, but make a pod's
:class:`Running` and a node's or a group's list only when asked: a cycle looks at a few hundred nodes
and groups of tens of thousands.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from typing import NamedTuple, TypeVar, overload

import numpy as np
import numpy.typing as npt

from extender.core import subgroups
from extender.core.model import GroupKey, Pod, PodGroup, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import Snapshot, implicit_group

K = TypeVar("K")
_T = TypeVar("_T")


class Running(NamedTuple):
    """A running pod of pumice's: the pod, its node row, its group and that group's queue, and its place
    in the :class:`RunningIndex` (a tuple: cheap to make)."""

    pod: Pod
    row: int
    group: GroupKey
    queue: str
    pos: int = -1


class RunningIndex:
    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        # Pods that may never be victims (``volcano.sh/preemptable: "false"``), usually none.
        self.protected: set[PodUID] = set()
        releasing: list[tuple[int, Pod]] = []
        names = snap.scheduler_names
        # Per running pod, by place: the pod, its node row and its group's number. Per group met, by
        # number: its key, PodGroup and queue's number.
        pods: list[Pod] = []
        rows: list[int] = []
        gids: list[int] = []
        self._keys: list[GroupKey] = []
        self._gangs: list[PodGroup] = []
        queue_number: dict[str, int] = {}
        group_queue: list[int] = []
        # (namespace, group name) -> group number, and key -> number; a group whose PodGroup is gone is
        # looked up again for every pod naming it (never cached: an implicit group may own that key).
        by_name: dict[tuple[str, str], int] = {}
        by_key: dict[GroupKey, int] = {}
        keep_pod, keep_row, keep_gid = pods.append, rows.append, gids.append
        # (Residents.bound: the bound, unfinished pods of Residents.all, in its order.)
        for p, row in zip(*snap.residents.bound(), strict=True):
            if p.deleting:
                releasing.append((row, p))
                continue
            if p.scheduler_name not in names:
                continue
            gid = by_name.get((p.namespace, p.group_name or f"podgroup-{p.uid}"))
            if gid is None:
                gid = self._number(snap, p, by_name, by_key, queue_number, group_queue)
                if gid is None:
                    continue  # its PodGroup is gone: not ours to judge
            keep_pod(p)
            keep_row(row)
            keep_gid(gid)
        # (Built after the loop: one pass each, in C, over what the loop kept.)
        request_row = snap.request_row
        uids = [p.uid for p in pods]
        position: dict[PodUID, int] = dict(zip(uids, range(len(uids)), strict=True))
        sources = [request_row.get(u, -1) for u in uids]
        self.protected.update(p.uid for p in pods if not p.preemptable)
        self._groups: dict[GroupKey, PodGroup] = dict(zip(self._keys, self._gangs, strict=True))
        self._group_number = by_key
        self._priorities: dict[GroupKey, int] = {}
        self._uid_priorities: dict[PodUID, int] = {}
        # What pods already leaving will free, per node row, and who they are.
        self.releasing: npt.NDArray[np.int64] = np.zeros_like(snap.alloc)
        self.releasing_pods: dict[int, list[PodUID]] = {}
        for row, p in releasing:
            self.releasing[row] += snap.index.vector(p.requests)
            self.releasing_pods.setdefault(row, []).append(p.uid)
        # The running pods by place (``Running.pos``): the pods, their node rows, groups' numbers,
        # queues' numbers (into ``queue_names``) and request vectors (read-only; the snapshot's rows
        # where it has them).
        self.pod_at: list[Pod] = pods
        self.rows: npt.NDArray[np.intp] = np.array(rows, dtype=np.intp)
        self.groups: npt.NDArray[np.intp] = np.array(gids, dtype=np.intp)
        self.queue_names: tuple[str, ...] = tuple(queue_number)
        self.queues: npt.NDArray[np.intp] = np.array(group_queue, dtype=np.intp)[self.groups]
        self.requests: npt.NDArray[np.int64] = _requests(snap, pods, sources)
        self._made: list[Running | None] = [None] * len(pods)
        self.by_uid: Mapping[PodUID, Running] = _ByUid(self, position)
        self.on_node: Mapping[int, list[Running]] = _Grouped(self.at, self.rows, _same, _same)
        self.members: Mapping[GroupKey, list[Running]] = _Grouped(
            self.at, self.groups, self._group_number.get, self._keys.__getitem__
        )

    def _number(
        self,
        snap: Snapshot,
        p: Pod,
        by_name: dict[tuple[str, str], int],
        by_key: dict[GroupKey, int],
        queue_number: dict[str, int],
        group_queue: list[int],
    ) -> int | None:
        """The number of running pod ``p``'s group, met for the first time under this name (None: its
        PodGroup is gone)."""
        name = (p.namespace, p.group_name or f"podgroup-{p.uid}")
        key = GroupKey(f"{name[0]}/{name[1]}")  # pod_group_key
        gid = by_key.get(key)
        if gid is None:
            g = snap.groups.get(key) or snap.other_groups.get(key)
            if g is None:
                if p.group_name:
                    return None
                g = implicit_group(p, snap.default_queue)
            gid = by_key[key] = len(self._keys)
            self._keys.append(key)
            self._gangs.append(g)
            group_queue.append(queue_number.setdefault(g.queue, len(queue_number)))
        by_name[name] = gid
        return gid

    def at(self, pos: int) -> Running:
        """The running pod in place ``pos``."""
        r = self._made[pos]
        if r is None:
            gid = int(self.groups[pos])
            r = self._made[pos] = Running(
                self.pod_at[pos], int(self.rows[pos]), self._keys[gid], self._gangs[gid].queue, pos
            )
        return r

    def vector(self, pod: Pod) -> Vector:
        """The request vector of running ``pod`` (read-only)."""
        r = self.by_uid.get(pod.uid)
        if r is None:
            return self._snap.index.vector(pod.requests)
        out: Vector = self.requests[r.pos]
        return out

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
        """The priority of group ``key`` (its PriorityClass's, else its running pods' highest; fixed for
        the cycle, so worked out once per group)."""
        out = self._priorities.get(key)
        if out is None:
            g = self._groups[key]
            pc = self._snap.priority_classes.get(g.priority_class)
            if pc is not None:
                out = pc.value
            else:
                out = max((r.pod.priority for r in self.members.get(key, ())), default=0)
            self._priorities[key] = out
        return out

    def group_priority_of(self, uid: PodUID) -> int:
        """:meth:`group_priority` of running pod ``uid``'s group (kept by uid: the victim hooks ask it of
        every candidate on every node the search looks at)."""
        out = self._uid_priorities.get(uid)
        if out is None:
            out = self._uid_priorities[uid] = self.group_priority(self.by_uid[uid].group)
        return out

    def queue_of(self, pods: Sequence[Pod]) -> Mapping[PodUID, str]:
        return {p.uid: self.by_uid[p.uid].queue for p in pods if p.uid in self.by_uid}


def _requests(snap: Snapshot, pods: list[Pod], sources: list[int]) -> npt.NDArray[np.int64]:
    """The request vectors of ``pods``: the snapshot's rows ``sources`` where it has them (>= 0)."""
    source = np.array(sources, dtype=np.intp)
    there = source >= 0
    out = np.zeros((len(pods), len(snap.index)), dtype=np.int64)
    out[there] = snap.requests[source[there]]
    if not there.all():
        rest = np.flatnonzero(~there)
        out[rest] = snap.index.matrix([pods[i].requests for i in rest.tolist()])
    out.setflags(write=False)
    return out


class _ByUid(Mapping[PodUID, Running]):
    """uid -> :class:`Running`, in place order."""

    def __init__(self, index: RunningIndex, position: dict[PodUID, int]) -> None:
        self._index = index
        self._position = position

    def __getitem__(self, uid: PodUID) -> Running:
        return self._index.at(self._position[uid])

    @overload
    def get(self, uid: PodUID, /) -> Running | None: ...
    @overload
    def get(self, uid: PodUID, /, default: Running | _T) -> Running | _T: ...
    def get(self, uid: PodUID, /, default: object = None) -> object:
        pos = self._position.get(uid)
        return default if pos is None else self._index.at(pos)

    def __contains__(self, uid: object) -> bool:
        return uid in self._position

    def __iter__(self) -> Iterator[PodUID]:
        return iter(self._position)

    def __len__(self) -> int:
        return len(self._position)


class _Grouped(Mapping[K, list[Running]]):
    """A key (a node row, a group) -> its running pods in place order, keys in the order they first
    appear. ``labels`` numbers each pod's key; ``number`` gives a key's number (None: not a key) and
    ``key`` a number's key. A key's list is made when first asked for, from the places sorted by number."""

    def __init__(
        self,
        at: Callable[[int], Running],
        labels: npt.NDArray[np.intp],
        number: Callable[[K], int | None],
        key: Callable[[int], K],
    ) -> None:
        self._at = at
        self._labels = labels
        self._number = number
        self._key = key
        self._lists: dict[int, list[Running]] = {}
        self._sorted: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] | None = None

    def __getitem__(self, k: K) -> list[Running]:
        out = self._list(k)
        if out is None:
            raise KeyError(k)
        return out

    @overload
    def get(self, k: K, /) -> list[Running] | None: ...
    @overload
    def get(self, k: K, /, default: list[Running] | _T) -> list[Running] | _T: ...
    def get(self, k: K, /, default: object = None) -> object:
        # (Mapping.get goes through a KeyError for every key without pods: the preemptor's own group.)
        out = self._list(k)
        return default if out is None else out

    def _list(self, k: K) -> list[Running] | None:
        n = self._number(k)
        if n is None:
            return None
        out = self._lists.get(n)
        if out is None:
            if self._sorted is None:
                order = np.argsort(self._labels, kind="stable")  # (stable: place order within a key)
                self._sorted = (order, self._labels[order])
            order, labels = self._sorted
            lo, hi = np.searchsorted(labels, [n, n + 1]).tolist()
            if hi <= lo:
                return None
            out = self._lists[n] = [self._at(i) for i in order[lo:hi].tolist()]
        return out

    def __iter__(self) -> Iterator[K]:
        numbers, first = np.unique(self._labels, return_index=True)
        return iter([self._key(n) for n in numbers[np.argsort(first)].tolist()])

    def __len__(self) -> int:
        return len(np.unique(self._labels))


def _same(n: int) -> int:
    return n
