"""proportion: queues share the cluster by weight; a queue takes up to its deserved share.

Each cycle, every queue's ``deserved`` share is computed by water-filling: the cluster is divided by
weight among queues that still want more, a queue's share capped by what it asks for (held + waiting)
and by its real capability (``capability``, less what other queues' ``guarantee`` keeps for them), and
raised to its ``guarantee``; an explicit ``spec.deserved`` overrides the weight share. Queues are served
by ``spec.priority`` (higher first), then lowest share (allocated / deserved) first. Allocation stops at
a queue's deserved share (a queue there is *overused* and takes no turn); admission is refused past the
real capability, counting what the queue's running groups hold beyond their ``minResources`` as room
(Volcano's elastic resources: ``minResources + allocated + inqueue − elastic``; see
:meth:`extender.framework.promises.Promises.elastic`). ``reclaim`` takes back from queues above their
deserved share, never below it, and a queue reclaims only while what it would hold stays within its
deserved share in every resource the pod asks for (``preemptive``, Volcano's: its allocatable check), so
it never takes more than its share and becomes the next victim of the queue it took from.

Enable with::

    - name: proportion
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.model import Pod, PodGroup, PodUID, Queue
from extender.core.quantity import human
from extender.core.resources import ResourceIndex, Vector
from extender.framework.gangs import with_waiting
from extender.framework.plugin import Plugin
from extender.framework.session import Session
from extender.framework.shares import above_deserved

_UNLIMITED = np.iinfo(np.int64).max // 4


def _water_fill(
    total: npt.NDArray[np.float64],
    want: Mapping[str, npt.NDArray[np.float64]],
    weights: Mapping[str, int],
    floors: Mapping[str, npt.NDArray[np.float64]],
) -> dict[str, npt.NDArray[np.float64]]:
    """Per resource, ``total`` divided by weight among the queues that want more, none above what it
    wants; a queue whose share comes out below its floor (guarantee) gets the floor, and the others
    share what is left (Volcano: deserved is at least the guarantee, the guarantee is not on top).

    Worked out in plain floats, column by column, with numpy's operations written out in the order and
    with the ties numpy gives them (``np.maximum`` keeps its second operand on a tie, ``np.clip`` its
    first, a sum over queues starts from zero): a handful of queues and resources made every numpy call
    cost more than its arithmetic, every cycle. ``tests/plugins/test_proportion_fill.py`` holds it to the
    array formula it replaced, bit for bit."""
    r = len(total)
    cols = range(r)
    tot: list[float] = total.tolist()
    wants: dict[str, list[float]] = {q: w.tolist() for q, w in want.items()}
    floor: dict[str, list[float]] = {q: floors[q].tolist() for q in want}
    fixed: dict[str, list[float]] = {q: [0.0] * r for q in want}
    pinned: dict[str, list[bool]] = {q: [False] * r for q in want}
    while True:
        held = [0.0] * r
        for q in want:
            fq, pq = fixed[q], pinned[q]
            held = [held[i] + (fq[i] if pq[i] else 0.0) for i in cols]
        left = [x if x > 0.0 else 0.0 for x in (tot[i] - held[i] for i in cols)]
        share = {q: [fixed[q][i] if pinned[q][i] else 0.0 for i in cols] for q in want}
        active = {q for q in want if any(wants[q][i] > 0 and not pinned[q][i] for i in cols)}
        while active and any(left):
            wsum = [0.0] * r
            for q in active:
                wq, sq, aq, pq = weights[q], share[q], wants[q], pinned[q]
                wsum = [wsum[i] + (0.0 if pq[i] or sq[i] >= aq[i] else wq) for i in cols]
            given = [0.0] * r
            for q in list(active):
                wq, sq, aq, pq = weights[q], share[q], wants[q], pinned[q]
                for i in cols:
                    part = left[i] * wq / wsum[i] if wsum[i] > 0 else 0.0
                    d = aq[i] - sq[i]
                    m = d if d >= 0.0 else 0.0
                    add = 0.0 if pq[i] else (m if m <= part else part)
                    sq[i] += add
                    given[i] += add
                if all(sq[i] >= aq[i] or pq[i] for i in cols):
                    active.discard(q)
            left = [left[i] - given[i] for i in cols]
            if np.sum(given) <= 1e-9:  # (numpy's sum: its order of additions)
                break
        below = {q: [share[q][i] < floor[q][i] and not pinned[q][i] for i in cols] for q in want}
        if not any(any(b) for b in below.values()):
            return {q: np.maximum(np.array(share[q]), floors[q]) for q in want}
        for q, b in below.items():
            fixed[q] = [floor[q][i] if b[i] else fixed[q][i] for i in cols]
            pinned[q] = [pinned[q][i] or b[i] for i in cols]


@dataclass(frozen=True, slots=True)
class _QueueTerms:
    """What the shares are worked out from that depends on the queues and the cluster's size alone, the
    same every cycle until a queue or a node changes: per queue its real capability (``capability``,
    unlimited where unset, and where other queues hold a ``guarantee``, at most the cluster less their
    guarantees: else the cluster's size is not a limit here, overcommit decides admission past it and a pod
    too big for the nodes is told so by placement), its guarantee, and its floor in the water-filling (the
    guarantee within the capability); and the columns shares are taken over (not the pods slot, as
    Volcano's). Its arrays are read-only: every cycle until the next change shares them."""

    queues: tuple[Queue, ...]
    names: tuple[str, ...]
    total: Vector
    capability: dict[str, Vector]
    guarantee: dict[str, Vector]
    floors: dict[str, npt.NDArray[np.float64]]
    shared: npt.NDArray[np.bool_]


# The last terms worked out (one scheduler's cycles ask about equal queues and totals until one changes).
_last_terms: _QueueTerms | None = None


def _frozen(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.setflags(write=False)
    return a


def _queue_terms(queues: Mapping[str, Queue], index: ResourceIndex, total: Vector) -> _QueueTerms:
    """The :class:`_QueueTerms` of ``queues`` over a cluster of ``total``: the last ones when equal."""
    global _last_terms
    listed = tuple(queues.values())
    last = _last_terms  # (one read: a concurrent cycle may replace it, never half of it)
    if (
        last is not None
        and last.names == index.names
        and last.queues == listed
        and np.array_equal(last.total, total)
    ):
        return last
    names = index.names
    guarantee = {q.name: _frozen(index.vector(q.guarantee)) for q in listed}
    guaranteed = sum(guarantee.values(), np.zeros(len(names), np.int64))
    capability: dict[str, Vector] = {}
    for q in listed:
        cap = np.full(len(names), _UNLIMITED, dtype=np.int64)
        for name, amount in q.capability.items():
            if name in names:
                cap[names.index(name)] = amount
        others = guaranteed - guarantee[q.name]
        capability[q.name] = _frozen(
            np.where(others > 0, np.minimum(cap, np.maximum(total - others, 0)), cap)
        )
    terms = _QueueTerms(
        queues=listed,
        names=names,
        total=_frozen(total.copy()),
        capability=capability,
        guarantee=guarantee,
        floors={q: _frozen(np.minimum(guarantee[q], capability[q]).astype(np.float64)) for q in queues},
        shared=_frozen(np.array([n != "pods" for n in names], dtype=np.bool_)),
    )
    _last_terms = terms
    return terms


def _terms(name: str, i: int, terms: Sequence[tuple[str, Vector]]) -> str:
    """``used 3 + promised 2 + minResources 4 − elastic 1``: a negative term is subtracted, shown only
    when it is not zero."""
    out = ""
    for label, v in terms:
        amount = int(v[i])
        if amount < 0:
            out += f" − {label} {human(name, -amount)}"
        elif label != "elastic":
            out += f"{' + ' if out else ''}{label} {human(name, amount)}"
    return out


class ProportionPlugin(Plugin):
    name = "proportion"
    # A queue's share and its capability check read only its own usage (plus the request).
    local_queue_order = True
    additive_allocatable = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)
        self.deserved: dict[str, Vector] = {}
        self.capability: dict[str, Vector] = {}
        self._shared: npt.NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
        self._share_of: dict[str, tuple[npt.NDArray[np.intp], Vector]] = {}
        self._contended = False

    @property
    def real_capability(self) -> dict[str, Vector]:
        """Per queue, the most it may hold (Volcano's realCapability): its capability, less what other
        queues' guarantees keep; unlimited resources at a huge value. Read by the metrics."""
        return self.capability

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        r = len(snap.index)
        # A queue asks for what it holds plus what its pods wait for.
        request: dict[str, Vector] = {q: np.zeros(r, dtype=np.int64) for q in snap.queues}
        for qn, held in snap.queue_held.items():
            if qn in request:
                request[qn] += held
        waiting: dict[str, list[PodUID]] = {}
        groups_waiting = with_waiting(ssn)
        for key, uids in snap.members.items():
            if key not in groups_waiting:
                continue  # (no waiting pod to add: most groups of a busy cluster run)
            qn = snap.groups[key].queue
            if qn in request:
                waiting.setdefault(qn, []).extend(u for u in uids if snap.pods[u].waiting)
        for qn, us in waiting.items():
            request[qn] += snap.request_sum(us)
        for qn, v in snap.aside_waiting.items():  # groups the snapshot leaves out still ask
            if qn in request:
                request[qn] += v
        total = ssn.total  # (a sum over every node: once)
        terms = _queue_terms(snap.queues, snap.index, total)
        self.capability = terms.capability
        want = {q: np.minimum(request[q], self.capability[q]).astype(np.float64) for q in request}
        floors = terms.floors
        weights = {q: snap.queues[q].weight for q in request}
        deserved = _water_fill(total.astype(np.float64), want, weights, floors)
        # With one queue asking, shares decide nothing: its deserved share is all it can get anyway, and
        # a pod that does not fit is better told which node comes closest than that it passes a share.
        self._contended = sum(bool(want[q].any()) for q in request) > 1
        self.deserved = {}
        for q, d in deserved.items():
            explicit = snap.queues[q].deserved
            vec = np.rint(d).astype(np.int64)  # water-filling converges from below: do not truncate
            for name, amount in explicit.items():
                if name in snap.index.names:
                    vec[snap.index.names.index(name)] = amount
            self.deserved[q] = np.maximum(vec, terms.guarantee[q])
        self._shared = terms.shared
        self._share_of = {}
        for q, amounts in self.deserved.items():
            cols = np.flatnonzero((amounts > 0) & self._shared)
            self._share_of[q] = (cols, amounts[cols])

    def queue_order(self, ssn: Session, queue: Queue) -> tuple[int, float]:
        return (-queue.priority, self.share(ssn, queue.name))

    def share(self, ssn: Session, name: str) -> float:
        """What queue ``name`` holds over what it deserves, on the resource where that is largest."""
        share_of = self._share_of.get(name)
        used = ssn.queue_used.get(name)
        if share_of is None or used is None:
            return 0.0
        cols, deserved = share_of
        if not len(cols):
            return 0.0 if not used[self._shared].any() else 1.0
        return float(np.maximum.reduce(used[cols] / deserved))

    def overused(self, ssn: Session, queue: Queue) -> str | None:
        deserved = self.deserved.get(queue.name)
        used = ssn.queue_used.get(queue.name)
        if not self._contended or deserved is None or used is None:
            return None
        if (used[self._shared] < deserved[self._shared]).any():
            return None
        return (
            f"queue {queue.name}: at its deserved share ({self._amounts(ssn, used, deserved, deserved > 0)})"
        )

    def reclaimable(self, ssn: Session, reclaimer: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        return above_deserved(ssn, candidates, self.deserved.get, self._shared)

    def preemptive(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        # Volcano's PreemptiveFn is the allocatable check: a queue reclaims only while what it would hold
        # stays within its deserved share in every resource the pod asks for. Without it a queue reclaims
        # past its share and becomes the next victim of the queue it took from (pods evicted back and forth).
        deserved = self.deserved.get(queue.name)
        if deserved is None:
            return None
        held = ssn.queue_used.get(queue.name)
        total = request if held is None else held + request
        past = (total > deserved) & (request > 0) & self._shared
        if not past.any():
            return None
        amounts = self._amounts(ssn, total, deserved, past)
        return f"queue {queue.name}: reclaiming would pass its deserved share ({amounts})"

    def _over(
        self, ssn: Session, queue: Queue, total: Vector, terms: Sequence[tuple[str, Vector]] = ()
    ) -> str | None:
        """Why ``total`` passes the queue's capability, or None; ``terms`` name what ``total`` sums, so the
        message shows them (``cpu 9/8 over capability (cpu: used 3 + promised 2 + minResources 4)``)."""
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
        sums = "; ".join(f"{names[i]}: {_terms(names[i], int(i), terms)}" for i in over)
        return f"queue {queue.name}: {parts} over capability" + (f" ({sums})" if terms else "")

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        queue = ssn.snapshot.queues.get(group.queue)
        if queue is None:
            return None
        want = ssn.snapshot.index.vector(group.min_resources)
        terms = [
            (label, part)
            for label, part in (
                ("used", ssn.queue_used.get(queue.name)),
                ("promised", ssn.queue_inqueue.get(queue.name)),
            )
            if part is not None
        ]
        total = want + sum((part for _, part in terms), np.zeros_like(want))
        terms.append(("minResources", want))
        cap = self.capability.get(queue.name)
        if cap is None or not (total > cap).any():  # (the message is made only for a refusal)
            return None
        # Volcano's jobEnqueueable: what running groups hold beyond their minimum is room, since reclaim
        # can take it back (asked only past the capability: it walks every placed pod).
        elastic = ssn.promises.elastic(queue.name)
        if elastic is not None:
            total = total - elastic
            terms.append(("elastic", -elastic))
        return self._over(ssn, queue, total, terms)

    def allocatable(self, ssn: Session, queue: Queue, request: Vector) -> str | None:
        held = ssn.queue_used.get(queue.name)
        total = request if held is None else held + request
        over = self._over(ssn, queue, total)
        if over is not None:
            return over
        deserved = self.deserved.get(queue.name)
        if not self._contended or deserved is None or not ssn.placing_extras:
            # A gang's minimum is held back by ``overused`` only: Volcano checks every pod against the
            # deserved share, so a job larger than its queue's share never starts on an idle cluster.
            return None
        # Volcano's LessEqualWithDimension: only what the pod asks for is compared.
        past = (total > deserved) & (request > 0) & self._shared
        if not past.any():
            return None
        return f"queue {queue.name}: {self._amounts(ssn, total, deserved, past)} past its deserved share"

    @staticmethod
    def _amounts(ssn: Session, used: Vector, limit: Vector, which: npt.NDArray[np.bool_]) -> str:
        names = ssn.snapshot.index.names
        return ", ".join(
            f"{names[i]} {human(names[i], int(used[i]))}/{human(names[i], int(limit[i]))}"
            for i in np.flatnonzero(which)
        )
