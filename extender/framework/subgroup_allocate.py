"""A gang with sub-groups (a PodGroup's ``subGroupPolicy``) placed sub-group by sub-group.

Volcano's allocate places such a job one SubJob at a time (``allocateForJob`` / ``allocateForSubJob`` in
``pkg/scheduler/actions/allocate/allocate.go``): each sub-group all or nothing, inside its own network
topology, until the job is ready; the job's statement commits only then. Here the same, as *units*
(:func:`plan`):

- a sub-group not yet whole is one unit: ``subGroupSize`` of its pods (less those already counting),
  placed together inside one HyperNode of its own ``networkTopology`` (the ``sub_group_domains`` plugins'
  candidates, lowest tier and fullest first, each tried in a statement discarded on failure; soft: anywhere
  when none holds it), and inside the gang's own HyperNode when the gang is being tried in one;
- every other waiting pod (of a whole sub-group, or of no sub-group) is a unit of one, inside its
  sub-group's HyperNode when that has a hard rule (the plugin pins it to where its sub-group runs);
- units go in this order: the sub-groups needed to reach each policy's ``minSubGroups`` (Volcano's
  required SubJobs), then units holding a pod of a task still short of ``minTaskMember``, then other
  sub-groups before single pods, then by pod priority, then in sub-group order
  (:func:`extender.core.subgroups.order`). Volcano leaves ties to a map's order; these are ours.

The gang minimum (:func:`allocate_subgroups`) takes units until the gang is whole
(:func:`extender.framework.gangs.gang_whole`: ``minMember``, ``minTaskMember`` and every policy's
``minSubGroups``), then commits; a unit that fails is passed over (another sub-group may do instead, as in
Volcano). Its extra pods (:func:`place_extras`) are placed a unit per turn. Preempt and reclaim place the
same units with victims (:func:`fill`, with their own way of placing a unit's pods).

A group left waiting gets a reason that names what kept it: e.g. ``gang 2/4 placeable; subGroupPolicy t0:
1 of minSubGroups 2 sub-groups whole; sub-group t0[volcano.sh/partition-id=1]: 0/2 placeable: network
topology hard, highestTierAllowed 1: no tier-1 HyperNode has room for 2 pods of cpu 4``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from extender.core import subgroups
from extender.core.model import Pod, PodGroup, PodUID, Queue
from extender.core.subgroups import SubGroupKey
from extender.framework import place
from extender.framework.gangs import counts_toward_gang, gang_need, gang_whole, ordered_waiting
from extender.framework.reasons import NOT_ENOUGH_PODS, NOT_ENOUGH_RESOURCES
from extender.framework.result import Unschedulable
from extender.framework.session import Session
from extender.framework.statement import Statement

# HyperNodes a sub-group tries when making room by eviction, at most (each is a full preempt attempt; as
# preempt and reclaim cap a gang's own HyperNode tries).
_MAX_EVICTING_TRIES: Final = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class Unit:
    """Pods placed together or not at all: ``need`` of ``pods`` (waiting, in the order tried)."""

    key: SubGroupKey | None  # the sub-group (None: a pod of no sub-group)
    pods: Sequence[Pod]
    need: int
    members: Sequence[Pod]  # every pod of its sub-group (where they run pins its HyperNode)
    required: bool = False  # needed for its policy's minSubGroups


# Places ``unit.need`` of ``unit.pods`` into the statement; None on success, else why not.
PlacePods = Callable[[Unit, Statement], "str | None"]


def plan(ssn: Session, g: PodGroup, members: list[Pod]) -> list[Unit]:
    """``g``'s waiting pods as units, in the order they are tried (see the module docstring)."""

    def counts(p: Pod) -> bool:
        return counts_toward_gang(ssn, p)

    _, task_need = gang_need(ssn, g, members)
    groups = subgroups.split(g, members)
    whole = subgroups.whole_counts(g, groups, counts)
    wanting = [max(0, policy.min_groups - whole[i]) for i, policy in enumerate(g.sub_group_policy)]
    required: list[Unit] = []
    others: list[tuple[tuple[object, ...], Unit]] = []
    for index, (key, pods) in enumerate(groups.items()):
        waiting = ordered_waiting(ssn, pods, task_need)
        if not waiting:
            continue
        have = sum(map(counts, pods))
        size = 1 if key is None else g.sub_group_policy[key[0]].size
        if key is None or have >= size:
            singles = [Unit(key=key, pods=(p,), need=1, members=pods) for p in waiting]
            others += [(_rank(u, task_need, True, index), u) for u in singles]
            continue
        if len(waiting) < size - have:
            continue  # it can never be whole until more of its pods exist
        unit = Unit(key=key, pods=waiting, need=size - have, members=pods)
        if wanting[key[0]] > 0:
            wanting[key[0]] -= 1
            required.append(Unit(key=key, pods=waiting, need=unit.need, members=pods, required=True))
        else:
            others.append((_rank(unit, task_need, False, index), unit))
    others.sort(key=lambda ru: ru[0])
    return required + [u for _, u in others]


def _rank(unit: Unit, task_need: dict[str, int], single: bool, index: int) -> tuple[object, ...]:
    helps = any(task_need.get(p.task, 0) for p in unit.pods[: unit.need])
    return (not helps, single, -max(p.priority for p in unit.pods), index)


def place_unit(
    ssn: Session, g: PodGroup, unit: Unit, stmt: Statement, place_pods: PlacePods, *, evicting: bool = False
) -> str | None:
    """Place ``unit`` into ``stmt``, inside a HyperNode of its sub-group's network topology when it has
    one (each candidate tried in turn, inside the gang's own domain under try; ``evicting``: every
    HyperNode within the limit, as preempt and reclaim make room); None on success."""
    policy = None if unit.key is None else g.sub_group_policy[unit.key[0]]
    topology = None if policy is None else policy.network_topology
    domains = None
    if topology is not None:
        domains = ssn.sub_group_domains(topology, unit.pods[: unit.need], unit.members)
    if domains is None:
        return _try(ssn, unit, stmt, place_pods)
    outer = ssn.domain
    first: str | None = None
    tries = (domains.within or domains.candidates)[:_MAX_EVICTING_TRIES] if evicting else domains.candidates
    for _, rows in tries:
        inside = ssn.rows_mask(rows) if outer is None else ssn.rows_mask(rows) & outer
        if not inside.any():
            continue
        ssn.domain = inside
        try:
            why = _try(ssn, unit, stmt, place_pods)
        finally:
            ssn.domain = outer
        if why is None:
            return None
        first = first or why
    if domains.spread:
        return _try(ssn, unit, stmt, place_pods)
    return domains.refusal if first is None else f"{domains.refusal}; {first}"


def _try(ssn: Session, unit: Unit, stmt: Statement, place_pods: PlacePods) -> str | None:
    sub = ssn.statement()
    why = place_pods(unit, sub)
    if why is None:
        stmt.absorb(sub)
    else:
        sub.discard()
    return why


def fill(
    ssn: Session, g: PodGroup, stmt: Statement, place_pods: PlacePods, *, evicting: bool = False
) -> tuple[bool, str | None]:
    """Units of ``g`` into ``stmt`` until its gang is whole (``evicting``: see :func:`place_unit`):
    whether it is, and the first unit's failure (naming its sub-group) when not."""
    members = [ssn.snapshot.pods[u] for u in ssn.snapshot.members.get(g.key, ())]
    first: str | None = None
    whole = gang_whole(ssn, g, members)
    progress = True
    while not whole and progress:
        # Again after a round that placed something: a sub-group made whole frees its other pods as
        # units of one (minMember may still need them).
        progress = False
        for unit in plan(ssn, g, members):
            why = place_unit(ssn, g, unit, stmt, place_pods, evicting=evicting)
            if why is None:
                progress = True
                whole = gang_whole(ssn, g, members)
                if whole:
                    break
            elif first is None:
                first = why if unit.key is None else f"{subgroups.describe(g, unit.key)}: {why}"
    return whole, first


def allocator(ssn: Session, queue: Queue) -> PlacePods:
    """Allocate's way of placing a unit's pods: each on its best node as the loop does (no victims)."""

    def place_pods(unit: Unit, stmt: Statement) -> str | None:
        def put(uid: PodUID, node: int) -> None:
            stmt.place(uid, node, queue.name)

        placed, why = 0, None
        for i, p in enumerate(unit.pods):
            if placed >= unit.need or placed + len(unit.pods) - i < unit.need:
                break
            problem = ssn.allocatable_reject(queue, ssn.vector(p.uid))
            if problem is None:
                problem = place.place_one(ssn, put, p)
            if problem is None:
                placed += 1
            elif why is None:
                why = problem
        if placed >= unit.need:
            return None
        return f"{placed}/{unit.need} placeable: {why or 'no room'}"

    return place_pods


def allocate_subgroups(ssn: Session, g: PodGroup, queue: Queue) -> None:
    """Plan the gang minimum of ``g`` (which has sub-groups) all at once, or nothing (recording why)."""
    snap = ssn.snapshot
    members = [snap.pods[u] for u in snap.members.get(g.key, ())]
    if gang_whole(ssn, g, members):
        return
    problems = _missing(ssn, g, members)
    if problems:
        ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_PODS, "; ".join(problems))
        return
    stmt = ssn.statement()
    whole, first = fill(ssn, g, stmt, allocator(ssn, queue))
    if whole:
        stmt.commit()
        ssn.result.ready.add(g.key)
        return
    have = sum(counts_toward_gang(ssn, p) for p in members)
    short = subgroups.shortfall(g, subgroups.split(g, members), lambda p: counts_toward_gang(ssn, p))
    stmt.discard()
    parts = [f"gang {have}/{g.min_member} placeable", *short]
    if first is not None:
        parts.append(first)
    ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_RESOURCES, "; ".join(parts))


def _missing(ssn: Session, g: PodGroup, members: list[Pod]) -> list[str]:
    """Why the gang cannot be whole until more pods exist: ``minMember``, a task's minimum, or a policy
    whose pods form too few sub-groups (Volcano's JobValid)."""
    need, task_need = gang_need(ssn, g, members)
    waiting = ordered_waiting(ssn, members, task_need)
    out: list[str] = []
    if len(waiting) < need:
        exist = g.min_member - need + len(waiting)
        out.append(f"gang {exist}/{g.min_member}: waiting for {g.min_member - exist} more pods")
    for task, n in sorted(task_need.items()):
        exist = g.min_task_member[task] - n + sum(p.task == task for p in waiting)
        if exist < g.min_task_member[task]:
            out.append(
                f"task {task}: {exist}/{g.min_task_member[task]} pods, "
                f"waiting for {g.min_task_member[task] - exist} more"
            )
    return out + subgroups.too_few(g, subgroups.split(g, members))


def place_extras(ssn: Session, g: PodGroup, queue: Queue) -> bool:
    """Place the next unit of whole gang ``g`` that fits (a sub-group whole, or one pod); whether one
    was placed."""
    members = [ssn.snapshot.pods[u] for u in ssn.snapshot.members.get(g.key, ())]
    place_pods = allocator(ssn, queue)
    for unit in plan(ssn, g, members):
        stmt = ssn.statement()
        if place_unit(ssn, g, unit, stmt, place_pods) is None:
            stmt.commit()
            return True
        stmt.discard()
    return False
