"""The ``preempt`` and ``reclaim`` actions: evict running pods so that a waiting gang can run.

- preempt: within a queue, a waiting group takes the room of running pods of other groups of that queue
  that the ``preemptable`` plugins allow (priority: lower-priority jobs only);
- reclaim: a queue that is not overused (proportion: below its deserved share) and that the ``preemptive``
  plugins let reclaim (capacity: not past its deserved share) takes back room from running pods of other
  queues that are ``reclaimable`` (``spec.reclaimable`` not false) and that the plugins allow (proportion,
  capacity: from queues above their deserved share, never below it).

Both work as allocate does, a group at a time in queue and job order, the gang minimum all or nothing in
a :class:`~extender.framework.statement.Statement`; the extra pods of a whole gang one at a time. For each
pod: a node where it fits once pods already leaving are gone needs no victim; else, over the nodes its
constraints allow, the victims the plugins permit are taken in victim order (lowest priority, then
youngest first) until the pod fits, and the node needing the least disruption wins (fewest gangs taken
whole, then the lowest victim priority, then the fewest victims, then the node's score).

Gangs are kept whole whatever the conf says (as allocate's all-or-nothing is): a running gang gives up
members only down to ``minMember``; past that a victim is taken only with the rest of its gang, every
member of which the plugins must allow. Volcano's gang plugin instead refuses any victim that would break
a gang, so a job whose ``minAvailable`` equals its replicas (MPI, most training) could never be preempted.

Nodes are chosen under the same predicates as allocate's: the pod's mask (its constraints and its queue's
node rules), the plugins' predicates on free capacity judged on a node's room once its victims are gone,
and per-queue caps (``node_limit``) as they stand.

Volcano's rules on who may preempt and who may be a victim, in both actions: a pod with
``volcano.sh/preemptable: "false"`` is never a victim (and a gang holding one is never taken whole); a pod
with ``preemptionPolicy: Never`` (its own or its PriorityClass's) evicts nobody, though it still takes room
that needs no victim. In preempt, a gang's pod that its queue refuses (``allocatable``: its capability, say)
evicts lower-priority pods of its queue until the queue takes it, node by node until one gets there
(Volcano's ``preemptorFitsOnNode``). With ``enableTopologyAwarePreemption: true`` (preempt only, off by
default as in Volcano) the inter-pod rules are judged with the victims gone, so a victim may be chosen to
clear a required pod anti-affinity conflict (either side's), and victims not needed are given back (see
:mod:`extender.framework.victim_search`).

What the switch does not change: a gang with a hard network topology always looks for its victims inside
one HyperNode at a time, in the plugin's order as allocate tries them. Volcano's preempt action passes
over jobs with a network topology altogether and leaves them to its ``gangpreempt``/``gangreclaim``
actions; pumice's preempt and reclaim serve them directly.

The placements made this way wait for their victims (the result's ``pipelined``): the room is held for
them and given to nobody else, and they bind only once the victims are gone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core.model import Pod, PodGroup, PodUID, Queue
from extender.core.quantity import human
from extender.framework.gangs import (
    admitted_by_queue,
    gang_need,
    ordered_waiting,
    startable,
    subgroups_short,
    with_waiting,
)
from extender.framework.result import Eviction, Unschedulable
from extender.framework.session import Session
from extender.framework.statement import Statement
from extender.framework.subgroup_allocate import PlacePods, Unit, fill, place_unit, plan
from extender.framework.victim_search import (
    Ask,
    Mode,
    cheapest_victims,
    fits_on,
    never_preempts,
    pod_fits_at,
    rules_allow,
    scores_for,
)

PREEMPTED: Final = "Preempted"
RECLAIMED: Final = "Reclaimed"
# The condition reason of a group whose placement waits for its victims to leave.
WAITING_FOR_VICTIMS: Final = "WaitingForVictims"


@dataclass(frozen=True, slots=True, kw_only=True)
class EvictArgs:
    """Arguments of preempt and reclaim (``configurations`` in the conf)."""

    min_runtime: float = 0.0  # seconds a pod must have existed before it may be a victim
    # preempt's enableTopologyAwarePreemption (Volcano's default false): inter-pod rules are judged with the
    # victims gone, so a victim may be chosen to clear a required anti-affinity conflict, and victims the
    # preemptor turns out not to need are given back (see extender.framework.victim_search).
    topology_aware: bool = False


def _same_queue(_ssn: Session, theirs: str, mine: str) -> bool:
    return theirs == mine


def _reclaimable_queue(ssn: Session, theirs: str, mine: str) -> bool:
    if theirs == mine:
        return False
    q = ssn.snapshot.queues.get(theirs)
    return q is None or q.reclaimable


_PREEMPT = Mode(PREEMPTED, Session.preemptable, _same_queue)
_RECLAIM = Mode(RECLAIMED, Session.reclaimable, _reclaimable_queue)


def preempt(ssn: Session, args: EvictArgs = EvictArgs()) -> None:
    # Only preempt's own evictions lift inter-pod rules: a later action (reclaim) judges as before.
    ssn.evictions_lift_rules = args.topology_aware
    try:
        _evict_for_waiting(ssn, _PREEMPT, args)
    finally:
        ssn.evictions_lift_rules = False


def reclaim(ssn: Session, args: EvictArgs = EvictArgs()) -> None:
    _evict_for_waiting(ssn, _RECLAIM, args)


# HyperNodes a hard-topology gang tries for victims, at most (each is a full preempt attempt).
_MAX_DOMAINS: Final = 32


def _count_releasing(ssn: Session) -> None:
    """Once per cycle: the room of pods already leaving counts as free, for placements that then wait
    for them (Volcano's FutureIdle)."""
    if ssn.releasing_counted:
        return
    ssn.releasing_counted = True
    running = ssn.running
    rows = sorted(running.releasing_pods)
    if rows:
        ssn.free[rows] += running.releasing[rows]
        ssn.nodes.touched_rows(rows)
        for row in rows:
            ssn.leaving.setdefault(row, set()).update(running.releasing_pods[row])


def _evict_for_waiting(ssn: Session, mode: Mode, args: EvictArgs) -> None:
    if ssn.fast_victims:
        by_queue = admitted_by_queue(ssn, lambda g: startable(ssn, g), with_waiting(ssn))
    else:
        by_queue = admitted_by_queue(ssn, lambda g: startable(ssn, g))
    if not by_queue:
        return
    _count_releasing(ssn)
    snap = ssn.snapshot
    failed: set[int] = set()
    for qname in sorted(by_queue, key=lambda n: ssn.queue_key(snap.queues[n])):
        queue = snap.queues[qname]
        if mode is _RECLAIM and ssn.overused(queue) is not None:
            continue
        for g in by_queue[qname]:
            members = [snap.pods[u] for u in snap.members.get(g.key, ())]
            need, task_need = gang_need(ssn, g, members)
            waiting = ordered_waiting(ssn, members, task_need)
            if need or task_need or subgroups_short(ssn, g, members):
                if len(waiting) < need:
                    continue  # waiting for pods to exist: evicting would not start it
                domains = ssn.gang_domains(g)
                if domains is not None and not domains.spread:
                    # A hard network topology: the gang and its victims inside one HyperNode, tried in
                    # the plugin's order (lowest tier, fullest first) as allocate does, each on its own
                    # (a shape that fails in one HyperNode may fit in the next).
                    if not any(
                        _gang_in(ssn, rows, mode, args, g, queue, waiting, need, task_need, set())
                        for _, rows in (domains.within or domains.candidates)[:_MAX_DOMAINS]
                    ):
                        continue
                elif not _gang_in(ssn, None, mode, args, g, queue, waiting, need, task_need, failed):
                    continue
                waiting = [p for p in waiting if p.uid not in ssn.plans]
            # The pods past the gang's minimum, each on its own, up to the queue's share (inside the
            # gang's HyperNode when its network topology is hard).
            if g.key in ssn.extras_wait:
                continue
            ssn.domain = ssn.gang_fence(g) if waiting else None
            ssn.placing_extras = True
            try:
                if g.sub_group_policy:
                    _subgroup_extras(ssn, mode, args, g, queue)
                    continue
                for p in waiting:
                    stmt = ssn.statement()
                    if not _make_room(ssn, stmt, mode, args, g, queue, p, failed):
                        stmt.discard()
                        break
                    _done(ssn, stmt, g)
            finally:
                ssn.placing_extras = False
                ssn.domain = None


def _gang_in(
    ssn: Session,
    rows: npt.NDArray[np.intp] | None,
    mode: Mode,
    args: EvictArgs,
    g: PodGroup,
    queue: Queue,
    waiting: list[Pod],
    need: int,
    task_need: dict[str, int],
    failed: set[int],
) -> bool:
    """Place ``g``'s gang minimum (``need`` pods, ``task_need`` per task) evicting what ``mode`` allows,
    inside the node ``rows`` when given; committed if whole, else nothing changes."""
    if rows is not None:
        ssn.domain = ssn.rows_mask(rows)
    try:
        stmt = ssn.statement()
        if g.sub_group_policy:
            # Sub-group by sub-group, each whole inside its own HyperNode (as allocate places them).
            whole, _ = fill(ssn, g, stmt, _evicting_pods(ssn, mode, args, g, queue), evicting=True)
            if not whole:
                stmt.discard()
                return False
            _done(ssn, stmt, g)
            return True
        placed, left = 0, dict(task_need)
        shapes = _shapes(ssn, queue)
        for p in waiting:
            if placed >= need and not any(left.values()):
                break
            if placed >= need and left.get(p.task, 0) == 0:
                continue
            if p.affinity is None and shapes.get(p.uid, -1) in failed:
                # What _make_room answers first, without the call: a gang of a full cluster whose shape
                # failed asks it for each of its pods (~20 000 asks a cycle at 5 000 nodes).
                continue
            if _make_room(ssn, stmt, mode, args, g, queue, p, failed):
                placed += 1
                if left.get(p.task, 0):
                    left[p.task] -= 1
        if placed < need or any(left.values()):
            stmt.discard()
            return False
        _done(ssn, stmt, g)
        return True
    finally:
        ssn.domain = None


def _evicting_pods(ssn: Session, mode: Mode, args: EvictArgs, g: PodGroup, queue: Queue) -> PlacePods:
    """Preempt's or reclaim's way of placing a sub-group's unit of pods: each with :func:`_make_room`
    (a failed shape is remembered only within the unit's try: another HyperNode may hold it)."""

    def place_pods(unit: Unit, stmt: Statement) -> str | None:
        failed: set[int] = set()
        placed = 0
        for i, p in enumerate(unit.pods):
            if placed >= unit.need or placed + len(unit.pods) - i < unit.need:
                break
            if _make_room(ssn, stmt, mode, args, g, queue, p, failed):
                placed += 1
        return None if placed >= unit.need else f"{placed}/{unit.need} placeable"

    return place_pods


def _subgroup_extras(ssn: Session, mode: Mode, args: EvictArgs, g: PodGroup, queue: Queue) -> None:
    """The units of a whole gang with sub-groups past its minimum, in order, each whole or not at all,
    until one cannot be placed."""
    members = [ssn.snapshot.pods[u] for u in ssn.snapshot.members.get(g.key, ())]
    place_pods = _evicting_pods(ssn, mode, args, g, queue)
    for unit in plan(ssn, g, members):
        stmt = ssn.statement()
        if place_unit(ssn, g, unit, stmt, place_pods, evicting=True) is not None:
            stmt.discard()
            return
        _done(ssn, stmt, g)


def _done(ssn: Session, stmt: Statement, g: PodGroup) -> None:
    victims = [pod.key for pod, _, _, _ in stmt.evicted]
    stmt.commit()
    ssn.result.ready.add(g.key)
    if victims:
        shown = ", ".join(victims[:5]) + (f" and {len(victims) - 5} more" if len(victims) > 5 else "")
        ssn.result.unschedulable[g.key] = Unschedulable(
            WAITING_FOR_VICTIMS, f"waiting for {len(victims)} pods to leave: {shown}"
        )
    else:
        ssn.result.unschedulable.pop(g.key, None)


def _make_room(
    ssn: Session,
    stmt: Statement,
    mode: Mode,
    args: EvictArgs,
    g: PodGroup,
    queue: Queue,
    p: Pod,
    failed: set[int],
) -> bool:
    """Place ``p`` in ``stmt``, evicting what ``mode`` allows; False (and nothing changed) if it cannot.
    A pod with ``preemptionPolicy: Never`` takes only room that needs no victim."""
    shape = _shape(ssn, g, queue, p)
    if p.affinity is None and shape in failed:
        return False
    req = ssn.vector(p.uid)
    if mode is _RECLAIM and ssn.preemptive_reject(queue, req) is not None:
        failed.add(shape)
        return False
    mask = ssn.pod_mask(p)
    rules = ssn.pod_rules(p)
    by_rules = None if rules is None else rules.allowed(p)
    limit = ssn.limit_mask(queue.name, req)
    if limit is not None:
        mask = mask & limit
    # Topology-aware preemption looks for victims on nodes the inter-pod rules refuse as they stand.
    lift = args.topology_aware and mode is _PREEMPT and by_rules is not None
    full = mask if by_rules is None else mask & by_rules
    own = ssn.pod_fit(p, mask if lift else full)
    # Whether the pod's own fit is asked again once victims are gone (GPU cards); else it is judged on
    # the nodes as they are (what a victim would free per NUMA node is not known).
    own_fit = own is not None and ssn.hooks.pod_fit_follows_evictions
    search = mask if lift else full
    if own is not None:
        full = full & own
        if not own_fit:
            search = search & own
    # Room that needs no victim (pods already leaving count): as allocate would place it.
    room = full & ssn.fit_mask(req)
    has_room = bool(room.any())
    queue_refuses = has_room and ssn.allocatable_reject(queue, req) is not None
    if has_room and not queue_refuses:
        best = int(np.argmax(np.where(room, scores_for(ssn, req, queue), -np.inf)))
        stmt.place(p.uid, best, queue.name)
        return True
    if never_preempts(ssn, p):
        failed.add(shape)
        return False
    # Victims of its own queue may bring it back under what the queue may hold: preempt for a gang's
    # minimum, as Volcano's preempt (for starving jobs) checks Allocatable after each victim; not reclaim
    # (its victims are other queues') nor extra pods (kept to the queue's share as before). The exact
    # search runs only once the queue is seen to refuse: with room and no victim, or after the usual one.
    queue_check = mode is _PREEMPT and not ssn.placing_extras
    ask = Ask(
        g=g,
        queue=queue,
        pod=p,
        req=req,
        mask=search,
        own_fit=own_fit or (own is not None and lift),
        queue_check=queue_check and queue_refuses,
        rules=lift,
    )
    while True:
        choice = cheapest_victims(ssn, mode, args.min_runtime, ask)
        if choice is None:
            break
        row, victims = choice
        sub = ssn.statement()
        message = _message(ssn, mode, g, queue, p, ssn.snapshot.node_names[row])
        for r in victims:
            sub.evict(r.pod, r.row, r.queue, Eviction(mode.reason, message, g.key))
        queue_ok = ssn.allocatable_reject(queue, req) is None
        if (
            queue_ok
            and fits_on(ssn, req, ssn.free[row], row)
            and (own is None or pod_fits_at(ssn, p, row))
            and (not lift or rules_allow(ssn, p, row))
        ):
            sub.place(p.uid, row, queue.name)
            stmt.absorb(sub)
            return True
        sub.discard()
        if queue_ok or ask.queue_check or not queue_check:
            break
        ask = replace(ask, queue_check=True)  # the queue refuses it on the cheapest node: look again
    failed.add(shape)
    return False


def _shapes(ssn: Session, queue: Queue) -> dict[PodUID, int]:
    """The shape numbers (:func:`_shape`) worked out so far for pods of ``queue``, by uid."""
    key = ("shapes of", queue.name)
    out = ssn.victim_rooms.get(key)
    if not isinstance(out, dict):
        out = ssn.victim_rooms[key] = {}
    return out


def _shape(ssn: Session, g: PodGroup, queue: Queue, p: Pod) -> int:
    """A number for what a failed placement of ``p`` is remembered by: its queue, its group's priority, its
    request and constraints, the same number for the same of these. Worked out once a cycle per pod (the
    gangs of a full cluster ask ~20 000 times, and a tuple holding the constraints hashes them anew)."""
    shapes = _shapes(ssn, queue)
    known = shapes.get(p.uid)
    if known is not None:
        return known
    numbers = ssn.victim_rooms.get(("shapes",))
    if not isinstance(numbers, dict):
        numbers = ssn.victim_rooms[("shapes",)] = {}
    shape = (
        queue.name,
        ssn.snapshot.group_priority(g),
        ssn.vector(p.uid).tobytes(),
        p.constraints,
        p.affinity is None,
        p.numa,
        p.gpu,
        p.preemption_policy,
        p.priority_class,
    )
    out: int = numbers.setdefault(shape, len(numbers))
    shapes[p.uid] = out
    return out


def _message(ssn: Session, mode: Mode, g: PodGroup, queue: Queue, p: Pod, node: str) -> str:
    asks = ", ".join(f"{k} {human(k, v)}" for k, v in sorted(p.requests.items()) if v and k != "pods")
    if mode is _PREEMPT:
        prio = ssn.snapshot.group_priority(g)
        return f"preempted by {g.key} (priority {prio}) in queue {queue.name}: {p.key} needs {asks} on {node}"
    return f"reclaimed by queue {queue.name} for {g.key}: {p.key} needs {asks} on {node}"
