"""A gang's minimum placed all at once or not at all: the heart of the allocate action.

:func:`allocate_group` plans the ``minMember`` pods of a group (and each task's ``minTaskMember``) in one
:class:`~extender.framework.statement.Statement`, committed when the gang is whole and discarded
otherwise, so a gang never holds part of the cluster it cannot use (Volcano's gang plugin and statement).
Pods are tried in task order (:func:`extender.framework.gangs.ordered_waiting`); a pod alike to one that
failed is not tried again (within the statement free capacity and queue usage only shrink), except one
whose inter-pod rules may loosen as others are placed, retried after any progress. Runs of identical pods
go through :func:`extender.framework.place.place_run`, landing where the loop would. Across gangs, one alike
to a gang that failed since the last commit fails the same way without an attempt
(:mod:`extender.framework.gang_failures`, where it applies).

When a plugin names network-topology domains for the gang (``gang_domains``, Volcano's HyperNode
gradients), the gang is tried inside each candidate in turn and the first that holds it is kept.

A group left unplaced gets a reason: ``NotEnoughTasks`` when pods are missing, ``NotEnoughResources``
with the first pod's problem otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from extender.core.model import Pod, PodGroup, PodUID, Queue
from extender.framework import place
from extender.framework.gang_failures import GangFailures
from extender.framework.gangs import gang_need, ordered_waiting
from extender.framework.plugin import GangDomains
from extender.framework.reasons import NOT_ENOUGH_PODS, NOT_ENOUGH_RESOURCES
from extender.framework.result import Unschedulable
from extender.framework.session import Session
from extender.framework.subgroup_allocate import allocate_subgroups


def _changes_with_placements(p: Pod) -> bool:
    """Whether ``p`` may fit after more pods are placed although it does not now: required pod affinity
    (a matching pod arrives) and hard topology spread (other domains fill up). Every other rule only
    narrows as pods are placed."""
    a = p.affinity
    return a is not None and bool(a.required or a.hard_spread)


def _run(
    ssn: Session,
    pending: Sequence[Pod],
    i: int,
    failed: set[tuple[object, ...]],
    placed: int,
    need: int,
    left: dict[str, int],
    retrying: int,
    bases: dict[PodUID, tuple[object, ...]],
) -> Sequence[Pod]:
    """``pending[i]`` and the pods after it that allocate_group's loop would try next, one after the other,
    were each of them placed: the same task, base shape and no inter-pod rules, and none of the loop's
    checks (gang complete, task complete, too few pods left, shape failed) stopping it first. ``bases``
    keeps the pods' base shapes (fixed for the cycle) across the calls for one group: a gang whose pods
    are placed one by one asks for the run at each pod, which would otherwise cost the square of its size."""
    p = pending[i]
    base = _base_shape(ssn, p, bases)
    task_left = left.get(p.task, 0)
    j = i + 1
    while j < len(pending):
        q = pending[j]
        done = placed + j - i  # placed once pods i..j-1 are
        task_left = max(0, task_left - 1)
        if q.task != p.task or q.affinity is not None or _base_shape(ssn, q, bases) != base:
            break
        if done >= need and task_left == 0:
            break  # the gang, or this task's minimum, is complete: the loop stops or passes over it
        if done + len(pending) - j + retrying < need:
            break
        if ssn.rules_active and place.shape(ssn, q) in failed:
            break  # (otherwise q's shape is p's, which has not failed)
        j += 1
    return pending[i:j]


def _base_shape(ssn: Session, p: Pod, bases: dict[PodUID, tuple[object, ...]]) -> tuple[object, ...]:
    base = bases.get(p.uid)
    if base is None:
        base = bases[p.uid] = place.base_shape(ssn, p)
    return base


def allocate_group(ssn: Session, g: PodGroup, queue: Queue, failures: GangFailures | None = None) -> None:
    """Plan the gang minimum of ``g`` all at once, or nothing (recording why); inside one of the
    network topology domains a plugin names for it, when one does (:func:`_allocate_in_domains`); sub-group
    by sub-group when it has a ``subGroupPolicy`` (:mod:`extender.framework.subgroup_allocate`).
    ``failures``: the action's memory of gangs that failed since the last commit (a gang alike to one of
    them fails again without an attempt; :mod:`extender.framework.gang_failures`)."""
    whole = allocate_subgroups if g.sub_group_policy else _allocate_whole
    domains = ssn.gang_domains(g)
    if domains is not None:
        _allocate_in_domains(ssn, g, queue, domains, whole)
    elif g.sub_group_policy:
        allocate_subgroups(ssn, g, queue)
    else:
        _allocate_whole(ssn, g, queue, failures)


def _allocate_in_domains(
    ssn: Session,
    g: PodGroup,
    queue: Queue,
    domains: GangDomains,
    whole: Callable[[Session, PodGroup, Queue], None],
) -> None:
    """Volcano's HyperNode gradients: the gang inside each candidate in turn (its pods' node masks
    narrowed to the candidate's rows), the first that holds it committed; each failed try is discarded by
    ``whole`` itself. None holding it: placed anywhere (``spread``) or left waiting with the plugin's
    refusal and what the first try lacked."""
    tried: tuple[str, str] | None = None
    for name, rows in domains.candidates:
        ssn.domain = ssn.rows_mask(rows)
        try:
            whole(ssn, g, queue)
        finally:
            ssn.domain = None
        if g.key in ssn.result.ready:
            return
        why = ssn.result.unschedulable.get(g.key)
        if why is None or why.reason != NOT_ENOUGH_RESOURCES:
            return  # nothing to place, or pods missing: no domain changes that
        del ssn.result.unschedulable[g.key]
        if tried is None:
            tried = (name, why.message)
    if domains.spread:
        whole(ssn, g, queue)
        return
    msg = domains.refusal if tried is None else f"{domains.refusal}; in {tried[0]}: {tried[1]}"
    ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_RESOURCES, msg)


def _allocate_whole(ssn: Session, g: PodGroup, queue: Queue, failures: GangFailures | None = None) -> None:
    """Plan the gang minimum of ``g`` all at once, or nothing (recording why, and remembering it in
    ``failures`` when given)."""
    snap = ssn.snapshot
    members = [snap.pods[u] for u in snap.members.get(g.key, ())]
    need, task_need = gang_need(ssn, g, members)
    if need == 0 and not task_need:
        return
    waiting = ordered_waiting(ssn, members, task_need)
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
    known = failures.recall(g, need, task_need, waiting) if failures is not None else None
    if known is not None:
        ssn.result.unschedulable[g.key] = known  # as the attempt below would end (see gang_failures)
        return
    stmt = ssn.statement()
    placed = 0
    left = dict(task_need)

    def put(uid: PodUID, node: int) -> None:
        stmt.place(uid, node, g.queue)

    # Within the statement free capacity and queue usage only shrink: a pod just like one that failed
    # (same request, same node constraints, same inter-pod rules and labels) fails too, so it is not
    # tried again. A pod whose rules can loosen as others are placed is retried after any progress.
    failed: set[tuple[object, ...]] = set()
    bases: dict[PodUID, tuple[object, ...]] = {}  # (see _run)
    why_not: dict[PodUID, str] = {}
    pending = waiting
    while pending:
        retry: list[Pod] = []
        progress = False
        i = -1
        while i + 1 < len(pending):
            i += 1
            p = pending[i]
            if placed >= need and not any(left.values()):
                break
            if placed >= need and left.get(p.task, 0) == 0:
                continue
            if placed + len(pending) - i + len(retry) < need:
                break  # too few pods left to make the gang
            loosens = p.affinity is not None and _changes_with_placements(p)
            shape = place.shape(ssn, p)
            if not loosens and shape in failed:
                continue
            if ssn.batchable and p.affinity is None:
                run = _run(ssn, pending, i, failed, placed, need, left, len(retry), bases)
                batched = place.place_run(ssn, stmt, queue, run) if len(run) > 1 else None
                if batched:
                    # As the loop below would have, pod by pod; the next pod (if any of the run is left,
                    # one that fits nowhere) goes through the loop for its reason.
                    if why_not:
                        for q in run[:batched]:
                            why_not.pop(q.uid, None)
                    progress = True
                    placed += batched
                    if left.get(p.task, 0) > 0:
                        left[p.task] = max(0, left[p.task] - batched)
                    i += batched - 1
                    continue
            problem = ssn.allocatable_reject(queue, ssn.vector(p.uid))
            if problem is None:
                problem = place.place_one(ssn, put, p)
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
    why = Unschedulable(NOT_ENOUGH_RESOURCES, msg)
    ssn.result.unschedulable[g.key] = why
    if failures is not None:
        failures.remember(g, need, task_need, waiting, why)
