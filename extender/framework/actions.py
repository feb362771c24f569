"""The actions of a cycle, in Volcano's names: ``enqueue``, ``allocate``, ``backfill``.

- enqueue: admit Pending groups (→ Inqueue) when every plugin permits (queue open and under capability,
  cluster not over-committed). Pods need not exist yet: a vcjob creates its pods after admission.
- allocate: for admitted groups, queue by queue (fairest queue first), plan ``minMember`` pods (and each
  task's ``minTaskMember``) at once; all or nothing.
- backfill: for groups whose gang is whole, plan the remaining (elastic) pods one by one where room is
  left, so extra replicas never take capacity a waiting gang's minimum needs.

Pods are placed one after the other, each on the best node for it as the pods before it left the
cluster (Volcano's per-task loop). A run of a gang's identical pods (one request, one node mask, no
inter-pod rules, no per-pod scores) is placed as a batch that lands every pod where that loop would
(:func:`extender.framework.place.place_run`); ``batch=False`` keeps the loop, which the tests compare
against. A gang's minimum is placed by :func:`extender.framework.gang_allocate.allocate_group`; this
module holds the turns between queues and groups (:class:`Turns`, which the forecast's queue positions
take too: :mod:`extender.forecast.positions`), the extra pods of whole gangs, and the actions' entry
points.

Invariants: a queue that is overused takes no turn; a closed queue keeps what runs and starts nothing;
a group's extra pods never go before another group's gang minimum in the same queue.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from extender.core.hierarchy import parent_loop
from extender.core.model import GroupKey, Pod, PodGroup, PodUID, Queue, QueueState
from extender.core.timestamps import epoch
from extender.framework import place
from extender.framework.gang_allocate import allocate_group
from extender.framework.gang_failures import GangFailures
from extender.framework.gangs import (
    admitted_by_queue,
    counts_toward_gang,
    gang_whole,
    ordered_waiting,
    unplanned_waiting,
    with_waiting,
)
from extender.framework.lines import Line
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES, QUEUE_UNAVAILABLE
from extender.framework.reserve import reserve
from extender.framework.result import Unschedulable
from extender.framework.session import Session
from extender.framework.statement import Statement
from extender.framework.subgroup_allocate import place_extras as place_subgroup_extras


def _queue_problem(ssn: Session, g: PodGroup) -> str | None:
    q = ssn.snapshot.queues.get(g.queue)
    if q is None:
        return f"queue {g.queue} does not exist"
    if q.state != QueueState.OPEN:
        return f"queue {g.queue} is {q.state.value}"
    loop = parent_loop(ssn.snapshot.queues, g.queue)
    if loop is not None:
        return (
            f"queue {g.queue}: spec.parent forms a loop ({' -> '.join(loop)}); "
            "set spec.parent of one of them to a queue outside the loop"
        )
    return None


# Plugins whose enqueue vote reads of a group only its queue and minResources, and of the session only
# what an admission changes (usage, promises, the elastic figure fixed for the cycle): see _by_shape.
SHAPE_ONLY_ENQUEUE = frozenset({"proportion", "overcommit", "capacity"})


def _by_shape(ssn: Session) -> bool:
    """Whether enqueue may give a group the refusal an earlier group of the same queue and minResources
    got in this cycle, with no admission between them, without asking again: every enqueue voter reads
    only those of a group (nothing else, no side effects) and no plugin permits (a permit may read more).
    Between two admissions the votes' other inputs do not move, so the same question gets the same
    answer, message included. A backlog of refused groups (a queue at its capability) then costs a vote
    per shape, not per group."""
    hooks = ssn.hooks
    return not any(hooks.enqueue_permit) and all(
        p.name in SHAPE_ONLY_ENQUEUE for tier in hooks.enqueue for p in tier
    )


def enqueue(ssn: Session) -> None:
    snap = ssn.snapshot
    pending = [g for k, g in snap.groups.items() if k not in ssn.admitted]
    # Groups a cache left out, pods and all, that this cycle votes for again (extender.framework.capped).
    pending += [g for k, g in snap.revote.items() if k not in ssn.admitted and k not in snap.groups]
    refused: dict[tuple[str, tuple[tuple[str, int], ...]], str] | None = {} if _by_shape(ssn) else None
    for g in sorted(pending, key=ssn.job_key):
        problem = _queue_problem(ssn, g)
        if problem is not None:
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, problem)
            continue
        shape = (g.queue, tuple(sorted(g.min_resources.items())))
        reason = refused.get(shape) if refused is not None else None
        if reason is None:
            reason = ssn.enqueue_reject(g)
        if reason is not None:
            if refused is not None:
                refused[shape] = reason
            ssn.result.unschedulable[g.key] = Unschedulable(NOT_ADMITTED, reason)
            continue
        ssn.admit(g)
        if refused is not None:
            refused.clear()  # what the votes read moved


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocateArgs:
    """Arguments of allocate (``configurations`` in the conf)."""

    # Seconds a PodGroup's extra pods (past its gang minimum) wait after it is created, when more than one
    # queue has work: jobs submitted together then share by weight from the start, as in Volcano's
    # one-second sessions, instead of the first one seen taking what reclaim would later evict.
    fair_window: float = 2.0
    # Seconds an admitted group whose gang cannot be placed waits before nodes are held for it (0: never;
    # see extender.framework.reserve).
    reserve_after: float = 0.0


class Turns:
    """Whose turn it is: the fairest queue that is not overused, then its first group in job order, as
    Volcano's allocate loop takes them (queue keys re-read after every turn; a group goes back in line
    after its gang minimum and after each extra pod, so queues take extras by turns, by share). Within a
    queue, groups whose gang is not whole go first whatever the conf (as the gang plugin orders them):
    no group's extra pods take the room another group's minimum needs."""

    def __init__(self, ssn: Session, by_queue: dict[str, list[PodGroup]]) -> None:
        self.ssn = ssn
        self._seq = 0
        self.groups: dict[str, Line] = {}
        for q, gs in by_queue.items():
            self.groups[q] = Line(ssn, [((_gang_whole(ssn, g), ssn.job_key(g)), self._next(), g) for g in gs])
        self.keys = {n: ssn.queue_key(ssn.snapshot.queues[n]) for n in self.groups}

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def queue(self) -> str | None:
        return min(self.keys, key=self.keys.__getitem__) if self.keys else None

    def pop(self, qname: str) -> PodGroup:
        return self.groups[qname].pop()

    def push(self, g: PodGroup) -> None:
        key = (_gang_whole(self.ssn, g), self.ssn.job_key(g))
        self.groups[g.queue].push((key, self._next(), g))

    def drop(self, qname: str) -> list[PodGroup]:
        """Take ``qname`` out of line with the groups still in it."""
        del self.keys[qname]
        return self.groups.pop(qname).groups()

    def rekey(self, qname: str) -> None:
        """After ``qname`` took a turn: its key (or every key, when keys read more than their queue)."""
        if qname in self.groups and not self.groups[qname]:
            self.drop(qname)
        ssn = self.ssn
        if not ssn.local_queue_order:
            self.keys = {n: ssn.queue_key(ssn.snapshot.queues[n]) for n in self.groups}
        elif qname in self.groups:
            self.keys[qname] = ssn.queue_key(ssn.snapshot.queues[qname])


def allocate(ssn: Session, args: AllocateArgs = AllocateArgs()) -> None:
    """Every admitted group's waiting pods, fairest queue first: a group's gang minimum all at once or
    nothing (:func:`allocate_group`), its other pods one per turn (a run at once when no other queue is
    waiting). A queue that is overused (at its deserved share) takes no turn."""
    snap = ssn.snapshot
    for key in sorted(ssn.admitted):
        g = snap.groups.get(key)
        if g is not None and g.queue not in snap.queues and not _has_allocation(ssn, key):
            # Admitted, then its queue was deleted.
            ssn.result.unschedulable[key] = Unschedulable(
                QUEUE_UNAVAILABLE, f"queue {g.queue} does not exist"
            )
    if args.reserve_after > 0:
        ssn.reservation = reserve(ssn, args.reserve_after)
    turns = Turns(ssn, admitted_by_queue(ssn, lambda g: unplanned_waiting(ssn, g), with_waiting(ssn)))
    failures = GangFailures(ssn)
    several_queues = sum(q.state == QueueState.OPEN for q in snap.queues.values()) > 1
    while (qname := turns.queue()) is not None:
        queue = snap.queues[qname]
        overused = ssn.overused(queue)
        if overused is not None:
            for g in turns.drop(qname):
                ssn.result.turns.append((g.key, len(ssn.result.placements)))
                if not _gang_whole(ssn, g) and g.key not in ssn.result.unschedulable:
                    ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_RESOURCES, overused)
            continue
        g = turns.pop(qname)
        if queue.state != QueueState.OPEN and not _has_allocation(ssn, g.key):
            # A closed queue keeps what runs but starts nothing new.
            closed = f"queue {qname} is {queue.state.value}"
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, closed)
        elif queue.state != QueueState.OPEN:
            pass  # nor does it add extra pods to what runs
        elif not _gang_whole(ssn, g):
            allocate_group(ssn, g, queue, failures)
            if g.key in ssn.result.ready and unplanned_waiting(ssn, g):
                turns.push(g)
        elif several_queues and ssn.now - epoch(g.created) < args.fair_window:
            ssn.retry_at(epoch(g.created) + args.fair_window)
            ssn.extras_wait.add(g.key)
        else:
            alone = len(turns.groups) == 1 and not turns.groups[qname]
            ssn.placing_extras = True
            ssn.domain = ssn.gang_fence(g)  # a hard network topology keeps extras in the gang's HyperNode
            try:
                more = _place_extras(ssn, g, queue, every=alone) and unplanned_waiting(ssn, g)
            finally:
                ssn.placing_extras = False
                ssn.domain = None
            if more:
                turns.push(g)
        ssn.result.turns.append((g.key, len(ssn.result.placements)))
        turns.rekey(qname)
    held = ssn.reservation
    if held is not None and (why := ssn.result.unschedulable.get(held.group)) is not None:
        ssn.result.unschedulable[held.group] = Unschedulable(why.reason, f"{why.message}; {held.describe()}")


def _gang_whole(ssn: Session, g: PodGroup) -> bool:
    return gang_whole(ssn, g, [ssn.snapshot.pods[u] for u in ssn.snapshot.members.get(g.key, ())])


def _place_extras(ssn: Session, g: PodGroup, queue: Queue, *, every: bool) -> bool:
    """Place the next waiting pod of whole gang ``g`` (``every``: all it can, alike pods as a batch);
    whether any was placed. Pods that fit nowhere or that the queue may not take are passed over."""
    if g.sub_group_policy:
        return place_subgroup_extras(ssn, g, queue)  # a whole sub-group at a time, in its HyperNode
    snap = ssn.snapshot
    extras = ordered_waiting(ssn, [snap.pods[u] for u in snap.members.get(g.key, ())], {})
    placed = False
    failed: set[tuple[object, ...]] = set()
    i = -1
    while i + 1 < len(extras):
        i += 1
        p = extras[i]
        shape = place.shape(ssn, p)
        if shape in failed:
            continue
        if every and ssn.batchable and p.affinity is None:
            run = _extras_run(ssn, extras, i)
            if len(run) > 1:
                stmt = ssn.statement()
                n = place.place_run(ssn, stmt, queue, run)
                if n is not None:
                    stmt.commit()
                    placed |= n > 0
                    # The rest of the run fits nowhere, as each of them would find in turn.
                    if n < len(run):
                        failed.add(shape)
                    i += len(run) - 1
                    continue
        if ssn.allocatable_reject(queue, ssn.vector(p.uid)) is not None:
            failed.add(shape)
            continue
        stmt = ssn.statement()

        def put(uid: PodUID, node: int, stmt: Statement = stmt) -> None:
            stmt.place(uid, node, queue.name)

        if place.place_one(ssn, put, p) is None:
            stmt.commit()
            placed = True
            if not every:
                return True
        else:
            failed.add(shape)
    return placed


def _has_allocation(ssn: Session, key: GroupKey) -> bool:
    return any(counts_toward_gang(ssn, ssn.snapshot.pods[u]) for u in ssn.snapshot.members.get(key, ()))


def backfill(ssn: Session) -> None:
    """Pods that request nothing (BestEffort) of whole gangs, wherever a node has a pod slot: they take
    no share of any queue, so no queue's turn is spent on them (Volcano's backfill)."""
    snap = ssn.snapshot

    def has_best_effort(g: PodGroup) -> bool:
        # (a loop, not any() over a generator: asked of every admitted group with a waiting pod; the plan
        # asked first, since after allocate most waiting pods hold one)
        pods, plans = snap.pods, ssn.plans
        for u in snap.members.get(g.key, ()):
            if u not in plans:
                p = pods[u]
                if p.waiting and not _requests_anything(p):
                    return True
        return False

    for qname, groups in sorted(admitted_by_queue(ssn, has_best_effort, with_waiting(ssn)).items()):
        queue = snap.queues[qname]
        if queue.state != QueueState.OPEN:
            continue  # a closed queue keeps what runs but starts nothing new
        for g in groups:
            if not _gang_whole(ssn, g):
                continue  # the gang itself is not whole: extras must not run
            members = [snap.pods[u] for u in snap.members.get(g.key, ())]
            for p in ordered_waiting(ssn, members, {}):
                if _requests_anything(p):
                    continue
                stmt = ssn.statement()

                def put(uid: PodUID, node: int, stmt: Statement = stmt, q: str = qname) -> None:
                    stmt.place(uid, node, q)

                if place.place_one(ssn, put, p) is None:
                    stmt.commit()


def _requests_anything(p: Pod) -> bool:
    return any(v for k, v in p.requests.items() if k != "pods")


def _extras_run(ssn: Session, extras: Sequence[Pod], i: int) -> Sequence[Pod]:
    """``extras[i]`` and the pods after it of the same base shape without inter-pod rules."""
    base = place.base_shape(ssn, extras[i])
    j = i + 1
    while j < len(extras) and extras[j].affinity is None and place.base_shape(ssn, extras[j]) == base:
        j += 1
    return extras[i:j]


def admit_pending(ssn: Session) -> None:
    """What runs instead of enqueue when the conf has no enqueue action: Volcano's allocate then takes
    Pending jobs as Inqueue. Queues must still exist and be open."""
    for g in sorted((g for k, g in ssn.snapshot.groups.items() if k not in ssn.admitted), key=ssn.job_key):
        problem = _queue_problem(ssn, g)
        if problem is not None:
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, problem)
        else:
            ssn.admit(g)
