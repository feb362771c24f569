"""A gang's members as the actions see them: what still counts toward ``minMember``, what it still needs
(its sub-groups' minimums included, see :mod:`extender.core.subgroups`), and its waiting pods in the order
they are placed."""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from typing import Final

from extender.core import subgroups
from extender.core.model import GroupKey, Pod, PodGroup, PodPhase, QueueState
from extender.framework.session import Session

_FINISHED: Final = (PodPhase.SUCCEEDED, PodPhase.FAILED)
# (A module constant: PodPhase.SUCCEEDED read through the enum class, per pod, costs more than the test.)
_SUCCEEDED: Final = PodPhase.SUCCEEDED


def task_order(p: Pod) -> tuple[int, str, str]:
    return (-p.priority, p.created, p.name)


def holds_gang_place(p: Pod) -> bool:
    """Succeeded, or bound and staying: what counts toward a gang without the cycle's plans. A pod being
    deleted (an evicted victim) does not count: a gang whose members are on their way out is not whole, and
    a replacement for one of them must wait for the whole minimum again rather than start alone beside pods
    that are leaving."""
    return p.phase == _SUCCEEDED or (bool(p.node_name) and not p.terminal and not p.deleting)


def counts_toward_gang(ssn: Session, p: Pod) -> bool:
    """:func:`holds_gang_place`, or planned in this cycle."""
    return holds_gang_place(p) or p.uid in ssn.plans


def gang_need(ssn: Session, g: PodGroup, members: list[Pod]) -> tuple[int, dict[str, int]]:
    plans = ssn.plans
    # (counts_toward_gang written out, in a plain loop: allocate, preempt and reclaim ask it of every
    # waiting gang, ~5 000 gangs a cycle at 5 000 nodes)
    have = 0
    for p in members:
        if (
            p.phase == _SUCCEEDED
            or (p.node_name and p.phase not in _FINISHED and not p.deleting)
            or p.uid in plans
        ):
            have += 1
    task_need: dict[str, int] = {}
    for task, minimum in g.min_task_member.items():
        got = sum(counts_toward_gang(ssn, p) for p in members if p.task == task)
        if minimum > got:
            task_need[task] = minimum - got
    return max(0, g.min_member - have), task_need


def subgroups_short(ssn: Session, g: PodGroup, members: Sequence[Pod]) -> list[str]:
    """Why ``g``'s sub-groups keep its gang from being whole (``subGroupPolicy`` short of
    ``minSubGroups``); empty when they do not, or it has none (the common case, at no cost)."""
    if not g.sub_group_policy:
        return []
    return subgroups.shortfall(g, subgroups.split(g, members), lambda p: counts_toward_gang(ssn, p))


def gang_whole(ssn: Session, g: PodGroup, members: list[Pod]) -> bool:
    """Whether ``g``'s gang is whole: ``minMember``, every ``minTaskMember`` and every sub-group
    minimum met by the pods that count (so only its extra pods are left to place)."""
    need, task_need = gang_need(ssn, g, members)
    return not need and not task_need and not subgroups_short(ssn, g, members)


def with_waiting(ssn: Session) -> Container[GroupKey]:
    """The groups with a waiting member (a pod that waits does so for the whole cycle), found once a
    cycle (kept beside the victim index, ``Session.victim_rooms``): the only ones :func:`unplanned_waiting`
    and :func:`startable` can say yes to, so the actions ask them only of these rather than walk every
    running group's pods."""
    cached = ssn.victim_rooms.get(("with waiting",))
    if isinstance(cached, frozenset):
        return cached
    snap = ssn.snapshot
    # (Pod.waiting, written out: most pods are bound, and the first test says so.)
    waiting = {u for u, p in snap.pods.items() if not p.node_name and not p.terminal and not p.deleting}
    out = frozenset(k for k, uids in snap.members.items() if not waiting.isdisjoint(uids))
    ssn.victim_rooms[("with waiting",)] = out
    return out


def unplanned_waiting(ssn: Session, g: PodGroup) -> bool:
    """Whether group ``g`` has a waiting pod without a plan."""
    pods, plans = ssn.snapshot.pods, ssn.plans
    # (Pod.waiting written out)
    return any(
        not (p := pods[u]).node_name and p.phase not in _FINISHED and not p.deleting and u not in plans
        for u in ssn.snapshot.members.get(g.key, ())
    )


def ordered_waiting(ssn: Session, members: Sequence[Pod], task_need: Mapping[str, int]) -> list[Pod]:
    """The waiting pods without a plan in the order they are placed: each task's pods up to what its
    ``minTaskMember`` still needs first, then the rest, each by priority and age (a task's extra pods must
    not take the room another task's minimum needs)."""
    plans = ssn.plans
    # (Pod.waiting written out)
    waiting = [
        p
        for p in members
        if not p.node_name and p.phase not in _FINISHED and not p.deleting and p.uid not in plans
    ]
    if ssn.hooks.task_order:
        # Plugins' keys (task-topology) between priority and age, as in Volcano's usual tiers.
        waiting.sort(key=lambda p: (-p.priority, *ssn.task_key(p), p.created, p.name))
    else:
        waiting.sort(key=task_order)
    if not task_need:
        return waiting
    quota = dict(task_need)
    first: list[Pod] = []
    rest: list[Pod] = []
    for p in waiting:
        if quota.get(p.task, 0) > 0:
            quota[p.task] -= 1
            first.append(p)
        else:
            rest.append(p)
    return first + rest


def admitted_by_queue(
    ssn: Session,
    wanted: Callable[[PodGroup], bool] | None = None,
    among: Container[GroupKey] | None = None,
) -> dict[str, list[PodGroup]]:
    """Admitted groups to place (those ``wanted`` says, if given, of those ``among``, if given), by queue,
    in job order."""
    by_queue: dict[str, list[PodGroup]] = {}
    for key in ssn.admitted:
        if among is not None and key not in among:
            continue
        g = ssn.snapshot.groups.get(key)
        if g is not None and g.queue in ssn.snapshot.queues and (wanted is None or wanted(g)):
            by_queue.setdefault(g.queue, []).append(g)
    for gs in by_queue.values():
        gs.sort(key=ssn.job_key)
    return by_queue


def startable(ssn: Session, g: PodGroup) -> bool:
    """Whether ``g`` has a waiting pod without a plan and its queue is open: what preempt, reclaim and
    the starvation guard may act for."""
    q = ssn.snapshot.queues.get(g.queue)
    return q is not None and q.state == QueueState.OPEN and unplanned_waiting(ssn, g)
