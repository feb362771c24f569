"""proportion: queues share the cluster by weight; a queue never exceeds its capability.

Each cycle, every queue's ``deserved`` share is computed by water-filling: the cluster is divided by
weight among queues that still want more, a queue's share capped by what it asks for (held + waiting)
and by its ``capability``; an explicit ``spec.deserved`` overrides the weight share. Queues are served
lowest share (allocated / deserved) first. Admission and allocation are refused past ``capability``.

Enable with::

    - name: proportion
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.model import PodGroup, PodUID, Queue
from extender.core.quantity import human
from extender.core.resources import Vector
from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin
from extender.framework.session import Session

_UNLIMITED = np.iinfo(np.int64).max // 4


class ProportionPlugin(Plugin):
    name = "proportion"
    # A queue's share and its capability check read only its own usage (plus the request).
    local_queue_order = True
    additive_allocatable = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        parse_arguments(self.name, arguments, {})
        self.deserved: dict[str, Vector] = {}
        self.capability: dict[str, Vector] = {}
        self._shared: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._share_of: dict[str, tuple[npt.NDArray[np.intp], Vector]] = {}

    def _cap(self, ssn: Session, q: Queue) -> Vector:
        cap = np.full(len(ssn.snapshot.index), _UNLIMITED, dtype=np.int64)
        for name, amount in q.capability.items():
            if name in ssn.snapshot.index.names:
                cap[ssn.snapshot.index.names.index(name)] = amount
        return cap

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        r = len(snap.index)
        # A queue asks for what it holds plus what its pods wait for.
        request: dict[str, Vector] = {q: np.zeros(r, dtype=np.int64) for q in snap.queues}
        for qn, held in snap.queue_held.items():
            if qn in request:
                request[qn] += held
        waiting: dict[str, list[PodUID]] = {}
        for key, uids in snap.members.items():
            qn = snap.groups[key].queue
            if qn in request:
                waiting.setdefault(qn, []).extend(u for u in uids if snap.pods[u].waiting)
        for qn, us in waiting.items():
            request[qn] += snap.request_sum(us)
        for qn, v in snap.aside_waiting.items():  # groups the snapshot leaves out still ask
            if qn in request:
                request[qn] += v
        self.capability = {q.name: self._cap(ssn, q) for q in snap.queues.values()}
        want = {q: np.minimum(request[q], self.capability[q]).astype(np.float64) for q in request}
        deserved = {q: np.zeros(r, dtype=np.float64) for q in request}
        remaining = ssn.total.astype(np.float64)
        active = {q for q in request if want[q].any()}
        while active and remaining.any():
            weights = sum(snap.queues[q].weight for q in active) or 1
            given = np.zeros(r, dtype=np.float64)
            for q in list(active):
                share = remaining * snap.queues[q].weight / weights
                add = np.minimum(share, want[q] - deserved[q])
                deserved[q] += add
                given += add
                if (deserved[q] >= want[q]).all():
                    active.discard(q)
            remaining = remaining - given
            if given.sum() <= 1e-9:
                break
        self.deserved = {}
        for q, d in deserved.items():
            explicit = snap.queues[q].deserved
            vec = np.rint(d).astype(np.int64)  # water-filling converges from below: do not truncate
            for name, amount in explicit.items():
                if name in snap.index.names:
                    vec[snap.index.names.index(name)] = amount
            self.deserved[q] = vec
        # Shares are over cpu, memory and extended resources, not the pods slot (as Volcano's): per queue,
        # the columns its share is taken over (deserved > 0) and their deserved amounts, found once.
        self._shared = np.array([n != "pods" for n in snap.index.names], dtype=np.bool_)
        self._share_of = {}
        for q, amounts in self.deserved.items():
            cols = np.flatnonzero((amounts > 0) & self._shared)
            self._share_of[q] = (cols, amounts[cols])

    def queue_order(self, ssn: Session, queue: Queue) -> tuple[float]:
        share_of = self._share_of.get(queue.name)
        used = ssn.queue_used.get(queue.name)
        if share_of is None or used is None:
            return (0.0,)
        cols, deserved = share_of
        if not len(cols):
            return (0.0 if not used[self._shared].any() else 1.0,)
        return (float(np.maximum.reduce(used[cols] / deserved)),)

    def _over(self, ssn: Session, queue: Queue, total: Vector) -> str | None:
        cap = self.capability.get(queue.name)
        if cap is None:
            return None
        over = np.flatnonzero(total > cap)
        if not over.size:
            return None
        names = ssn.snapshot.index.names
        parts = ", ".join(
            f"{names[i]} {human(names[i], int(total[i]))}/{human(names[i], int(cap[i]))}" for i in over
        )
        return f"queue {queue.name}: {parts} over capability"

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        queue = ssn.snapshot.queues.get(group.queue)
        if queue is None:
            return None
        total = ssn.snapshot.index.vector(group.min_resources)
        for part in (ssn.queue_used.get(queue.name), ssn.queue_inqueue.get(queue.name)):
            if part is not None:
                total += part
        return self._over(ssn, queue, total)

    def allocatable(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        held = ssn.queue_used.get(queue.name)
        return self._over(ssn, queue, request if held is None else held + request)
