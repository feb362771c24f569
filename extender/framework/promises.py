"""What admitted groups are promised: Volcano's Inqueue reservation, the capacity enqueue must respect.

A group admitted (Inqueue) but not yet running is owed its ``minResources`` less what its pods already
hold or are planned (Volcano's enqueue reserves exactly that), so that enqueue does not admit more than
the cluster, or a queue, can start. :class:`Promises` keeps, for one cycle, the sum over the cluster
(``inqueue``) and per queue (``queue_inqueue``) of what is owed: every Inqueue group of the snapshot and
every group the snapshot leaves aside (:class:`extender.core.snapshot.Aside`) as the session opens, and
each group this cycle's enqueue admits. It also says what a group left waiting still weighs on its queue
as the cycle ends (:meth:`Promises.aside`), for a cache that leaves it out of later snapshots.

The other term of Volcano's enqueue check (capacity's and proportion's ``jobEnqueueable``) is also here:
what running groups hold beyond their ``minResources`` (Volcano's *elastic* resources,
``JobInfo.GetElasticResources``: per group, its allocated less its minResources where positive, a group
without minResources counting all it holds). Reclaim can take that back down to the gang's minimum, so
admission counts it as room: :meth:`Promises.elastic` sums it per queue over every pod of ours that holds
a node or is planned (those of running groups the snapshot leaves out included, from its residents), once
per cycle and only when asked (it walks every placed pod, unless the snapshot carries a cache's per-group
sums, kept from cycle to cycle: ``Snapshot.elastic``). Pods already being deleted are not counted
(Volcano's Releasing tasks are not allocated), so the figure never overstates what reclaim can free.

Invariants: ``inqueue`` is changed in place only and the entries of ``queue_inqueue`` replaced, never
modified (the session hands both objects to the plugins as its own); sums are integer vectors, so the
order in which groups are added does not matter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from extender.core.model import GroupKey, PodGroup, PodPhase
from extender.core.resources import Resources, Vector
from extender.core.snapshot import Aside, implicit_group, pod_group_key

if TYPE_CHECKING:
    from extender.framework.session import Session

_FINISHED: Final = (PodPhase.SUCCEEDED, PodPhase.FAILED)  # (Pod.terminal)


class Promises:
    """The session's promised capacity (``Session.inqueue``, ``Session.queue_inqueue``)."""

    def __init__(self, ssn: Session) -> None:
        """Opens with every Inqueue group of the snapshot and what the groups it leaves out are owed
        (``ssn.admitted`` and ``ssn.plans`` must be set)."""
        self._ssn = ssn
        self._elastic: dict[str, Vector] | None = None
        snapshot = ssn.snapshot
        # minResources of admitted groups not yet running: promised capacity enqueue must respect.
        self.inqueue = np.zeros(len(snapshot.index), dtype=np.int64)
        self.queue_inqueue: dict[str, Vector] = {}
        self.promise([snapshot.groups[k] for k in ssn.admitted if snapshot.groups[k].phase == "Inqueue"])
        # Groups the snapshot leaves out are still owed their promises.
        for q, v in snapshot.aside_owed.items():
            self.inqueue += v
            self.queue_inqueue[q] = v.copy() if q not in self.queue_inqueue else self.queue_inqueue[q] + v

    def promise(self, groups: Sequence[PodGroup]) -> None:
        """Add what ``groups`` are owed to ``inqueue`` and their queues' entries: Volcano reserves
        minResources less what a group already holds. All at once (integer sums: the order of the
        additions does not matter), as the session opens with every Inqueue group."""
        if not groups:
            return
        ssn = self._ssn
        snap = ssn.snapshot
        if len(groups) == 1:  # a group admitted by this cycle's enqueue: one vector is cheaper
            g = groups[0]
            v = self.owed(g)
            self.inqueue += v
            held = self.queue_inqueue.get(g.queue)
            self.queue_inqueue[g.queue] = v if held is None else held + v
            return
        owed = snap.index.matrix([g.min_resources for g in groups])
        for i, g in enumerate(groups):
            for uid in snap.members.get(g.key, ()):
                if snap.pods[uid].holds_resources or uid in ssn.plans:
                    owed[i] -= ssn.vector(uid)
        np.maximum(owed, 0, out=owed)
        self.inqueue += owed.sum(axis=0)
        by_queue: dict[str, list[int]] = {}
        for i, g in enumerate(groups):
            by_queue.setdefault(g.queue, []).append(i)
        for q, rows in by_queue.items():
            add = owed[rows].sum(axis=0)
            self.queue_inqueue[q] = add if q not in self.queue_inqueue else self.queue_inqueue[q] + add

    def owed(self, g: PodGroup) -> Vector:
        """What an admitted group is promised: its minResources less what its pods hold or are planned."""
        ssn = self._ssn
        snap = ssn.snapshot
        v = snap.index.vector(g.min_resources)
        for uid in snap.members.get(g.key, ()):
            if snap.pods[uid].holds_resources or uid in ssn.plans:
                v -= ssn.vector(uid)
        np.maximum(v, 0, out=v)
        return v

    def asides(self, keys: Sequence[GroupKey]) -> dict[GroupKey, Aside]:
        """:meth:`aside` of many groups at once: the same sums, made as three matrix additions over the
        snapshot's request rows rather than vectors group by group (a cold cycle leaves thousands out)."""
        if not keys:
            return {}
        ssn = self._ssn
        snap = ssn.snapshot
        index, plans, result = snap.index, ssn.plans, ssn.result
        groups = [snap.groups[k] for k in keys]
        waiting: tuple[list[int], list[int]] = ([], [])
        planned: tuple[list[int], list[int]] = ([], [])
        held: tuple[list[int], list[int]] = ([], [])
        pods, request_row = snap.pods, snap.request_row
        for i, key in enumerate(keys):
            for uid in snap.members.get(key, ()):
                p, row = pods[uid], request_row[uid]
                terminal = p.phase in _FINISHED  # (Pod.waiting and Pod.holds_resources written out)
                if not p.node_name and not terminal and not p.deleting:
                    waiting[0].append(row)
                    waiting[1].append(i)
                    if uid in plans:
                        planned[0].append(row)
                        planned[1].append(i)
                if (p.node_name and not terminal) or uid in plans:
                    held[0].append(row)
                    held[1].append(i)
        shape = (len(groups), len(index))

        def sums(rows: tuple[list[int], list[int]]) -> list[list[int]]:
            out = np.zeros(shape, dtype=np.int64)
            if rows[0]:
                np.add.at(
                    out, np.asarray(rows[1], dtype=np.intp), snap.requests[np.asarray(rows[0], dtype=np.intp)]
                )
            return out.tolist()

        owed = np.maximum(
            index.matrix([g.min_resources for g in groups]) - np.asarray(sums(held)), 0
        ).tolist()
        names = index.names
        out: dict[GroupKey, Aside] = {}
        for i, (g, w, pl) in enumerate(zip(groups, sums(waiting), sums(planned), strict=True)):
            promised = g.key in result.admitted or (g.key in ssn.admitted and g.phase == "Inqueue")
            out[g.key] = Aside(
                queue=g.queue,
                waiting={n: v for n, v in zip(names, w, strict=True) if v},
                owed={n: v for n, v in zip(names, owed[i], strict=True) if v} if promised else {},
                planned={n: v for n, v in zip(names, pl, strict=True) if v},
            )
        return out

    def elastic(self, queue: str) -> Vector | None:
        """What queue ``queue``'s groups hold beyond their minResources as the cycle opened (see above), or
        None when nothing. Fixed for the cycle, as Volcano's queue attribute is."""
        if self._elastic is None:
            kept = self._ssn.snapshot.elastic
            self._elastic = (
                _elastic_by_queue(self._ssn) if kept is None or not KEPT_ELASTIC else _elastic_kept(self._ssn)
            )
        return self._elastic.get(queue)

    def aside(self, key: GroupKey) -> Aside:
        """What group ``key`` weighs on its queue as the cycle ends, for a cache that leaves it out of later
        snapshots while nothing about it changes (see :class:`extender.core.snapshot.Aside`)."""
        ssn = self._ssn
        snap = ssn.snapshot
        g = snap.groups[key]
        names = snap.index.names
        waiting_uids = [u for u in snap.members.get(key, ()) if snap.pods[u].waiting]
        waiting = snap.request_sum(waiting_uids)
        planned = snap.request_sum([u for u in waiting_uids if u in ssn.plans])
        promised = key in ssn.result.admitted or (key in ssn.admitted and g.phase == "Inqueue")
        owed = self.owed(g) if promised else None
        return Aside(
            queue=g.queue,
            waiting={n: int(waiting[i]) for i, n in enumerate(names) if waiting[i]},
            owed={} if owed is None else {n: int(owed[i]) for i, n in enumerate(names) if owed[i]},
            planned={n: int(planned[i]) for i, n in enumerate(names) if planned[i]},
        )


# Whether a snapshot's ``elastic`` (a cache's sums, kept per group) is read instead of walking the
# residents: off, every cycle walks them (the tests compare whole runs both ways).
KEPT_ELASTIC = True


def _elastic_kept(ssn: Session) -> dict[str, Vector]:
    """:func:`_elastic_by_queue` from the sums a cache kept (``Snapshot.elastic``) over the snapshot's
    resource columns: every amount is positive, so a queue has a column past exactly when one of its
    groups does (see controllers.state.elastic_book)."""
    snap = ssn.snapshot
    out: dict[str, Vector] = {}
    for queue, past in (snap.elastic or {}).items():
        v = snap.index.vector(past)
        if v.any():
            out[queue] = v
    return out


def _elastic_by_queue(ssn: Session) -> dict[str, Vector]:
    """Per queue, what its groups hold beyond their minResources (see :meth:`Promises.elastic`). The walk
    over every placed pod only finds each pod's group; the sums are one matrix of requests added into
    one row per group (``np.add.at``): integers, so exactly the per-pod vector sums, at a fraction of the
    cost (this runs in every cycle whose enqueue meets a queue's capability)."""
    snap = ssn.snapshot
    row_of: dict[GroupKey, int] = {}
    groups: list[PodGroup] = []
    rows: list[int] = []
    # Pods of a task share one requests mapping (extender.core.parse), so the matrix is built over the
    # distinct mappings (by identity: all alive for the call) and gathered per pod.
    ask_of: dict[int, int] = {}
    distinct: list[Resources] = []
    asks: list[int] = []
    pods = snap.pods
    for p, _row in snap.residents.all():
        if p.scheduler_name not in snap.scheduler_names or p.deleting:
            continue
        key = pod_group_key(p)
        i = row_of.get(key)
        if i is None:
            found = snap.groups.get(key) or snap.other_groups.get(key)
            if found is None:
                if p.group_name:
                    continue  # its PodGroup is gone: no queue to count it in
                found = implicit_group(p, snap.default_queue)
            i = row_of[key] = len(groups)
            groups.append(found)
        rows.append(i)
        # The snapshot's own pod where it has one (its request row), else the resident as cached.
        ask = (pods.get(p.uid) or p).requests
        j = ask_of.get(id(ask))
        if j is None:
            j = ask_of[id(ask)] = len(distinct)
            distinct.append(ask)
        asks.append(j)
    out: dict[str, Vector] = {}
    if not groups:
        return out
    index = snap.index
    held = np.zeros((len(groups), len(index)), dtype=np.int64)
    np.add.at(held, np.asarray(rows, dtype=np.intp), index.matrix(distinct)[np.asarray(asks, dtype=np.intp)])
    past = np.maximum(held - index.matrix([g.min_resources for g in groups]), 0)
    for g, v, any_past in zip(groups, past, past.any(axis=1).tolist(), strict=True):
        if any_past:
            out[g.queue] = v.copy() if g.queue not in out else out[g.queue] + v
    return out
