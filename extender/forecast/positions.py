"""Each waiting group's place in line: in its queue and in the cluster, in the order the scheduler takes
them.

Not a second ordering: a :class:`~extender.framework.session.Session` is opened on the snapshot with the
conf's own plugins, and the allocate action's :class:`~extender.framework.actions.Turns` (its queue
keys, its per-queue :class:`~extender.framework.lines.Line` of job keys, namespace order included) hand
out the turns. Where allocate would place a group's gang and account it on its queue (shares move, the
next fairest queue takes the next turn), this takes the group's gang minimum as placed: its queue's usage
(and its namespace's, for namespace order) grows by what the gang's first ``minMember`` waiting pods ask
(``minResources`` before its pods exist), and the keys are read again. A queue that reaches its deserved
share (``overused``) takes no more turns in a cycle: its remaining groups come after every other queue's,
in their line's order, as they wait for the next cycles.

Positions count from 1. Groups Pending (not admitted yet) are in line with the admitted ones: enqueue
admits by the same job order. A group whose queue is missing or not open has no position. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from extender.core.model import GroupKey, GroupPhase, PodGroup
from extender.core.snapshot import Snapshot
from extender.forecast.model import Position
from extender.framework.actions import Turns
from extender.framework.cycle import CycleConf
from extender.framework.gangs import gang_need, holds_gang_place, ordered_waiting
from extender.framework.hooks import build_hooks
from extender.framework.session import Session

AHEAD = 10  # groups named as ahead of one (the nearest); its position counts them all
_WAITING = frozenset({GroupPhase.PENDING, GroupPhase.INQUEUE})


def waiting_groups(snapshot: Snapshot) -> list[PodGroup]:
    """The groups whose gang has not started: Pending or Inqueue, and not whole already (the status writer
    turns a group Running a moment after its gang binds; a forecast taken in between must not count it in
    line, nor wait for it to start)."""
    return [g for g in snapshot.groups.values() if g.phase in _WAITING and not _whole(snapshot, g)]


def _whole(snapshot: Snapshot, g: PodGroup) -> bool:
    """Whether ``g``'s gang minimum (and each task's) is met by pods that hold their place in it
    (:func:`~extender.framework.gangs.holds_gang_place`: no cycle has planned anything yet)."""
    members = [snapshot.pods[u] for u in snapshot.members.get(g.key, ())]
    if not members:
        return False
    counted = [p for p in members if holds_gang_place(p)]
    if len(counted) < g.min_member:
        return False
    return all(sum(p.task == task for p in counted) >= need for task, need in g.min_task_member.items())


def positions(snapshot: Snapshot, conf: CycleConf, now: float) -> dict[GroupKey, Position]:
    """The position of every waiting group of an open queue in ``snapshot`` (see the module docstring)."""
    ssn = Session(snapshot, build_hooks(conf.tiers()), now=now)
    by_queue: dict[str, list[PodGroup]] = {}
    for g in waiting_groups(snapshot):
        q = snapshot.queues.get(g.queue)
        if q is not None and q.open:
            by_queue.setdefault(g.queue, []).append(g)
    turns = Turns(ssn, by_queue)
    order: list[PodGroup] = []
    later: list[PodGroup] = []
    while (name := turns.queue()) is not None:
        if ssn.overused(snapshot.queues[name]) is not None:
            line = turns.groups[name]
            while line:
                later.append(line.pop())
            turns.drop(name)
            continue
        g = turns.pop(name)
        order.append(g)
        _take(ssn, g)
        turns.rekey(name)
    return _numbered([*order, *later])


def _take(ssn: Session, g: PodGroup) -> None:
    """Account ``g``'s gang minimum on its queue (and namespace), as a placement of it would."""
    snap = ssn.snapshot
    members = [snap.pods[u] for u in snap.members.get(g.key, ())]
    need, task_need = gang_need(ssn, g, members)
    pods = ordered_waiting(ssn, members, task_need)[: max(need, sum(task_need.values()))]
    if pods:
        ask = sum((ssn.vector(p.uid) for p in pods[1:]), ssn.vector(pods[0].uid).copy())
    elif not members:
        ask = snap.index.vector(g.min_resources)
    else:
        return
    used = ssn.queue_used.get(g.queue)
    ssn.queue_used[g.queue] = ask if used is None else used + ask
    if ssn.namespace_ordered:
        delta = ssn.namespace_delta.get(g.namespace)
        ssn.namespace_delta[g.namespace] = ask if delta is None else delta + ask


def _numbered(order: Iterable[PodGroup]) -> dict[GroupKey, Position]:
    out: dict[GroupKey, Position] = {}
    ahead: dict[str, list[GroupKey]] = {}
    for i, g in enumerate(order, start=1):
        before = ahead.setdefault(g.queue, [])
        out[g.key] = Position(
            queue=g.queue, in_queue=len(before) + 1, in_cluster=i, ahead=tuple(before[-AHEAD:])
        )
        before.append(g.key)
    return out
