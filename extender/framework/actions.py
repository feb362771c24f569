"""The actions of a cycle, in Volcano's names: ``enqueue``, ``allocate``, ``backfill``.

- enqueue: admit Pending groups (→ Inqueue) when every plugin permits (queue open and under capability,
  cluster not over-committed). Pods need not exist yet: a vcjob creates its pods after admission.
- allocate: for admitted groups, queue by queue (fairest queue first), plan ``minMember`` pods (and each
  task's ``minTaskMember``) at once; all or nothing.
- backfill: for groups whose gang is whole, plan the remaining (elastic) pods one by one where room is
  left, so extra replicas never take capacity a waiting gang's minimum needs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import numpy as np

from extender.core import fit
from extender.core.errors import ConfigError
from extender.core.hierarchy import parent_loop
from extender.core.model import GroupKey, Pod, PodGroup, PodPhase, PodUID, Queue, QueueState
from extender.framework.session import Session, Statement, Unschedulable

# Condition reasons (Volcano's where it has one).
NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
NOT_ENOUGH_PODS: Final = "NotEnoughTasks"
QUEUE_UNAVAILABLE: Final = "QueueUnavailable"
NOT_ADMITTED: Final = "NotEnqueued"


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


def enqueue(ssn: Session) -> None:
    snap = ssn.snapshot
    pending = [g for k, g in snap.groups.items() if k not in ssn.admitted]
    for g in sorted(pending, key=ssn.job_key):
        problem = _queue_problem(ssn, g)
        if problem is not None:
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, problem)
            continue
        reason = ssn.enqueue_reject(g)
        if reason is not None:
            ssn.result.unschedulable[g.key] = Unschedulable(NOT_ADMITTED, reason)
            continue
        ssn.admit(g)


def _task_order(p: Pod) -> tuple[int, str, str]:
    return (-p.priority, p.created, p.name)


def _counts_toward_gang(ssn: Session, p: Pod) -> bool:
    return p.phase == PodPhase.SUCCEEDED or (bool(p.node_name) and not p.terminal) or p.uid in ssn.plans


def _place_one(ssn: Session, stmt_place: Callable[[PodUID, int], None], p: Pod) -> str | None:
    """Place ``p`` on the best feasible node; None on success, else why not."""
    req = ssn.vector(p.uid)
    smask = ssn.pod_mask(p)
    rules = ssn.pod_rules(p)
    allowed = rules.allowed(p) if rules is not None else None
    ok = smask if allowed is None else smask & allowed
    room = ssn.fit_mask(req)
    mask = ok & room
    if not mask.any():
        if rules is not None and allowed is not None and smask.any() and not ok.any():
            return "no node satisfies its inter-pod rules: " + rules.explain(p, smask)
        short = fit.shortfall(ssn.free, req, ok, ssn.snapshot.index, ssn.snapshot.node_names)
        if short is None:
            return "no node can take it: " + fit.summarize_static(p.constraints, ssn.snapshot.nodes)
        if rules is not None and allowed is not None and (refused := smask & room & ~allowed).any():
            # The nodes with room are the ones the rules refuse: that is the part a user can change.
            return f"{short.describe()}; nodes with room refused by its inter-pod rules: " + rules.explain(
                p, refused
            )
        return short.describe()
    scores = ssn.scores(req)
    extra = ssn.pod_scores(p, mask)
    if extra is not None:
        scores = scores + extra
    best = int(np.argmax(np.where(mask, scores, -np.inf)))
    stmt_place(p.uid, best)
    return None


def _changes_with_placements(p: Pod) -> bool:
    """Whether ``p`` may fit after more pods are placed although it does not now: required pod affinity
    (a matching pod arrives) and hard topology spread (other domains fill up). Every other rule only
    narrows as pods are placed."""
    a = p.affinity
    return a is not None and bool(a.required or a.hard_spread)


def _shape(ssn: Session, p: Pod) -> tuple[object, ...]:
    """What decides whether ``p`` fits now: pods of one shape fit or fail alike."""
    base = (ssn.vector(p.uid).tobytes(), p.constraints, ssn.snapshot.refused.get(p.uid, frozenset()))
    if p.affinity is None and not ssn.rules_active:
        return base
    # Its own rules, and the namespace and labels other pods' terms select by.
    return (*base, p.affinity, p.namespace, tuple(sorted(p.labels.items())))


def _gang_need(ssn: Session, g: PodGroup, members: list[Pod]) -> tuple[int, dict[str, int]]:
    have = sum(_counts_toward_gang(ssn, p) for p in members)
    task_need: dict[str, int] = {}
    for task, minimum in g.min_task_member.items():
        got = sum(_counts_toward_gang(ssn, p) for p in members if p.task == task)
        if minimum > got:
            task_need[task] = minimum - got
    return max(0, g.min_member - have), task_need


def allocate_group(ssn: Session, g: PodGroup, queue: Queue) -> None:
    """Plan the gang minimum of ``g`` all at once, or nothing (recording why)."""
    snap = ssn.snapshot
    members = [snap.pods[u] for u in snap.members.get(g.key, ())]
    need, task_need = _gang_need(ssn, g, members)
    if need == 0 and not task_need:
        return
    waiting = sorted((p for p in members if p.waiting and p.uid not in ssn.plans), key=_task_order)
    if g.implicit and not waiting:
        return  # a plain pod that is bound, finished or going away: nothing to plan, nothing to report
    have = g.min_member - need
    problems: list[str] = []
    if len(waiting) < need:
        exist = have + len(waiting)
        problems.append(f"gang {exist}/{g.min_member}: waiting for {g.min_member - exist} more pods")
    for task, n in sorted(task_need.items()):
        task_exist = g.min_task_member[task] - n + sum(p.task == task for p in waiting)
        if task_exist < g.min_task_member[task]:
            problems.append(
                f"task {task}: {task_exist}/{g.min_task_member[task]} pods, "
                f"waiting for {g.min_task_member[task] - task_exist} more"
            )
    if problems:
        ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_PODS, "; ".join(problems))
        return
    # Each task's pods up to its minTaskMember first, then the rest, each by priority and age: a task's
    # extra pods must not take the room another task's minimum needs.
    quota = dict(task_need)
    first: list[Pod] = []
    rest: list[Pod] = []
    for p in waiting:
        if quota.get(p.task, 0) > 0:
            quota[p.task] -= 1
            first.append(p)
        else:
            rest.append(p)
    waiting = first + rest
    stmt = ssn.statement()
    placed = 0
    left = dict(task_need)

    def place(uid: PodUID, node: int) -> None:
        stmt.place(uid, node, g.queue)

    # Within the statement free capacity and queue usage only shrink: a pod just like one that failed
    # (same request, same node constraints, same inter-pod rules and labels) fails too, so it is not
    # tried again. A pod whose rules can loosen as others are placed is retried after any progress.
    failed: set[tuple[object, ...]] = set()
    why_not: dict[PodUID, str] = {}
    pending = waiting
    while pending:
        retry: list[Pod] = []
        progress = False
        for i, p in enumerate(pending):
            if placed >= need and not any(left.values()):
                break
            if placed >= need and left.get(p.task, 0) == 0:
                continue
            if placed + len(pending) - i + len(retry) < need:
                break  # too few pods left to make the gang
            loosens = p.affinity is not None and _changes_with_placements(p)
            shape = _shape(ssn, p)
            if not loosens and shape in failed:
                continue
            problem = ssn.allocatable_reject(queue, ssn.vector(p.uid))
            if problem is None:
                problem = _place_one(ssn, place, p)
            if problem is not None:
                if loosens:
                    retry.append(p)
                else:
                    failed.add(shape)
                why_not.setdefault(p.uid, problem)
                continue
            if why_not:
                why_not.pop(p.uid, None)
            progress = True
            placed += 1
            if left.get(p.task, 0) > 0:
                left[p.task] -= 1
        if not progress or (placed >= need and not any(left.values())):
            break
        pending = retry
    first_problem = next(iter(why_not.values()), None)
    if placed >= need and not any(left.values()):
        stmt.commit()
        ssn.result.ready.add(g.key)
        return
    stmt.discard()
    msg = f"gang {have + placed}/{g.min_member} placeable: {first_problem or 'no room'}"
    ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_RESOURCES, msg)


def _admitted_by_queue(ssn: Session) -> dict[str, list[PodGroup]]:
    """Admitted groups to place, by queue, in job order. Settled groups (see Snapshot.settled) are passed
    over: they place nothing, so leaving them out changes no share, no order and no outcome. A group
    admitted in this very cycle is never settled."""
    by_queue: dict[str, list[PodGroup]] = {}
    settled = ssn.snapshot.settled
    for key in ssn.admitted:
        if key in settled and key not in ssn.result.admitted:
            continue
        g = ssn.snapshot.groups.get(key)
        if g is not None and g.queue in ssn.snapshot.queues:
            by_queue.setdefault(g.queue, []).append(g)
    for gs in by_queue.values():
        gs.sort(key=ssn.job_key, reverse=True)  # pop() takes the first in job order
    return by_queue


def allocate(ssn: Session) -> None:
    by_queue = _admitted_by_queue(ssn)
    snap = ssn.snapshot
    for key in sorted(ssn.admitted):
        g = snap.groups.get(key)
        if g is not None and g.queue not in snap.queues and not _has_allocation(ssn, key):
            # Admitted, then its queue was deleted.
            ssn.result.unschedulable[key] = Unschedulable(
                QUEUE_UNAVAILABLE, f"queue {g.queue} does not exist"
            )
    # Fairest queue first, re-evaluated after every group, as Volcano's allocate loop does.
    while by_queue:
        qname = min(by_queue, key=lambda n: ssn.queue_key(snap.queues[n]))
        g = by_queue[qname].pop()
        if not by_queue[qname]:
            del by_queue[qname]
        queue = snap.queues[qname]
        if queue.state != QueueState.OPEN and not _has_allocation(ssn, g.key):
            # A closed queue keeps what runs but starts nothing new.
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, f"queue {qname} is closed")
            continue
        allocate_group(ssn, g, queue)


def _has_allocation(ssn: Session, key: GroupKey) -> bool:
    return any(_counts_toward_gang(ssn, ssn.snapshot.pods[u]) for u in ssn.snapshot.members.get(key, ()))


def backfill(ssn: Session) -> None:
    snap = ssn.snapshot
    for qname, groups in sorted(_admitted_by_queue(ssn).items()):
        queue = snap.queues[qname]
        if queue.state != QueueState.OPEN:
            continue  # a closed queue keeps what runs but starts nothing new, extras included
        for g in reversed(groups):
            members = [snap.pods[u] for u in snap.members.get(g.key, ())]
            need, task_need = _gang_need(ssn, g, members)
            if need or task_need:
                continue  # the gang itself is not whole: extras must not run
            for p in sorted((p for p in members if p.waiting and p.uid not in ssn.plans), key=_task_order):
                if ssn.allocatable_reject(queue, ssn.vector(p.uid)) is not None:
                    break
                stmt = ssn.statement()

                def place(uid: PodUID, node: int, stmt: Statement = stmt, q: str = qname) -> None:
                    stmt.place(uid, node, q)

                if _place_one(ssn, place, p) is None:
                    stmt.commit()


def admit_pending(ssn: Session) -> None:
    """What runs instead of enqueue when the conf has no enqueue action: Volcano's allocate then takes
    Pending jobs as Inqueue. Queues must still exist and be open."""
    for g in sorted((g for k, g in ssn.snapshot.groups.items() if k not in ssn.admitted), key=ssn.job_key):
        problem = _queue_problem(ssn, g)
        if problem is not None:
            ssn.result.unschedulable[g.key] = Unschedulable(QUEUE_UNAVAILABLE, problem)
        else:
            ssn.admit(g)


ACTIONS: Final[dict[str, Callable[[Session], None]]] = {
    "enqueue": enqueue,
    "allocate": allocate,
    "backfill": backfill,
}
# Volcano actions pumice does not run yet: named so a user's config fails with a clear message.
NOT_YET: Final = frozenset({"preempt", "reclaim", "shuffle"})


def resolve_actions(names: tuple[str, ...]) -> tuple[Callable[[Session], None], ...]:
    out = []
    for n in names:
        if n in NOT_YET:
            raise ConfigError(f"action {n!r} is a Volcano action pumice does not implement yet; remove it")
        if n not in ACTIONS:
            raise ConfigError(f"unknown action {n!r}; known actions: {', '.join(ACTIONS)}")
        out.append(ACTIONS[n])
    if "enqueue" not in names:
        out.insert(0, admit_pending)
    return tuple(out)
