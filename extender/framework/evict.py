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

The placements made this way wait for their victims (the result's ``pipelined``): the room is held for
them and given to nobody else, and they bind only once the victims are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.model import GroupKey, Pod, PodGroup, PodUID, Queue
from extender.core.quantity import human
from extender.core.resources import Vector
from extender.core.running import Running
from extender.core.timestamps import epoch
from extender.framework.gangs import admitted_by_queue, gang_need, ordered_waiting, startable
from extender.framework.result import Eviction, Unschedulable
from extender.framework.session import Session
from extender.framework.statement import Statement

PREEMPTED: Final = "Preempted"
RECLAIMED: Final = "Reclaimed"
# The condition reason of a group whose placement waits for its victims to leave.
WAITING_FOR_VICTIMS: Final = "WaitingForVictims"
# Nodes whose victim sets are compared for one pod: the best-scored ones that can make room at all; and
# how many nodes are looked at, at most, for one pod (the plugins may refuse the victims of many).
_CANDIDATE_NODES: Final = 16
_MAX_LOOKED_AT: Final = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class EvictArgs:
    """Arguments of preempt and reclaim (``configurations`` in the conf)."""

    min_runtime: float = 0.0  # seconds a pod must have existed before it may be a victim


@dataclass(frozen=True, slots=True)
class _Mode:
    reason: str  # the eviction's reason
    hook: Callable[[Session, Pod, Sequence[Pod]], list[Pod]]
    # Whether a running pod of ``queue`` (the victim's) may be a candidate for a pod of ``mine``.
    candidate_queue: Callable[[Session, str, str], bool]


def _same_queue(_ssn: Session, theirs: str, mine: str) -> bool:
    return theirs == mine


def _reclaimable_queue(ssn: Session, theirs: str, mine: str) -> bool:
    if theirs == mine:
        return False
    q = ssn.snapshot.queues.get(theirs)
    return q is None or q.reclaimable


_PREEMPT = _Mode(PREEMPTED, Session.preemptable, _same_queue)
_RECLAIM = _Mode(RECLAIMED, Session.reclaimable, _reclaimable_queue)


def preempt(ssn: Session, args: EvictArgs = EvictArgs()) -> None:
    _evict_for_waiting(ssn, _PREEMPT, args)


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
        ssn.touched_rows(rows)
        for row in rows:
            ssn.leaving.setdefault(row, set()).update(running.releasing_pods[row])


def _evict_for_waiting(ssn: Session, mode: _Mode, args: EvictArgs) -> None:
    by_queue = admitted_by_queue(ssn, lambda g: startable(ssn, g))
    if not by_queue:
        return
    _count_releasing(ssn)
    snap = ssn.snapshot
    failed: set[tuple[object, ...]] = set()
    for qname in sorted(by_queue, key=lambda n: ssn.queue_key(snap.queues[n])):
        queue = snap.queues[qname]
        if mode is _RECLAIM and ssn.overused(queue) is not None:
            continue
        for g in by_queue[qname]:
            members = [snap.pods[u] for u in snap.members.get(g.key, ())]
            need, task_need = gang_need(ssn, g, members)
            waiting = ordered_waiting(ssn, members, task_need)
            if need or task_need:
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
    mode: _Mode,
    args: EvictArgs,
    g: PodGroup,
    queue: Queue,
    waiting: list[Pod],
    need: int,
    task_need: dict[str, int],
    failed: set[tuple[object, ...]],
) -> bool:
    """Place ``g``'s gang minimum (``need`` pods, ``task_need`` per task) evicting what ``mode`` allows,
    inside the node ``rows`` when given; committed if whole, else nothing changes."""
    if rows is not None:
        ssn.domain = ssn.rows_mask(rows)
    try:
        stmt = ssn.statement()
        placed, left = 0, dict(task_need)
        for p in waiting:
            if placed >= need and not any(left.values()):
                break
            if placed >= need and left.get(p.task, 0) == 0:
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
    mode: _Mode,
    args: EvictArgs,
    g: PodGroup,
    queue: Queue,
    p: Pod,
    failed: set[tuple[object, ...]],
) -> bool:
    """Place ``p`` in ``stmt``, evicting what ``mode`` allows; False (and nothing changed) if it cannot."""
    req = ssn.vector(p.uid)
    shape = (
        queue.name,
        ssn.snapshot.group_priority(g),
        req.tobytes(),
        p.constraints,
        p.affinity is None,
        p.numa,
        p.gpu,
    )
    if p.affinity is None and shape in failed:
        return False
    if mode is _RECLAIM and ssn.preemptive_reject(queue, req) is not None:
        failed.add(shape)
        return False
    mask = ssn.pod_mask(p)
    rules = ssn.pod_rules(p)
    if rules is not None:
        allowed = rules.allowed(p)
        if allowed is not None:
            mask = mask & allowed
    limit = ssn.limit_mask(queue.name, req)
    if limit is not None:
        mask = mask & limit
    own = ssn.pod_fit(p, mask)
    # Whether the pod's own fit is asked again once victims are gone (GPU cards); else it is judged on
    # the nodes as they are (what a victim would free per NUMA node is not known).
    own_fit = own is not None and ssn.pod_fit_follows_evictions
    search = mask
    if own is not None:
        mask = mask & own
        if not own_fit:
            search = mask
    # Room that needs no victim (pods already leaving count): as allocate would place it.
    room = mask & ssn.fit_mask(req)
    if room.any() and ssn.allocatable_reject(queue, req) is None:
        best = int(np.argmax(np.where(room, _scores(ssn, req, queue), -np.inf)))
        stmt.place(p.uid, best, queue.name)
        return True
    choice = _cheapest_victims(ssn, mode, args, g, queue, p, req, search, own_fit)
    if choice is None:
        failed.add(shape)
        return False
    row, victims = choice
    sub = ssn.statement()
    message = _message(ssn, mode, g, queue, p, ssn.snapshot.node_names[row])
    for r in victims:
        sub.evict(r.pod, r.row, r.queue, Eviction(mode.reason, message, g.key))
    if (
        ssn.allocatable_reject(queue, req) is not None
        or not _fits(ssn, req, ssn.free[row], row)
        or (own is not None and not _pod_fits_at(ssn, p, row))
    ):
        sub.discard()
        failed.add(shape)
        return False
    sub.place(p.uid, row, queue.name)
    stmt.absorb(sub)
    return True


def _pod_fits_at(ssn: Session, p: Pod, row: int) -> bool:
    """Whether the ``pod_fit`` plugins let ``p`` onto node ``row`` as the session stands (the victims
    just evicted gone: the plugins that follow evictions count what they free, such as GPU cards)."""
    own = ssn.pod_fit(p, ssn.rows_mask(row))
    return own is None or bool(own[row])


def _pod_fits_without(ssn: Session, p: Pod, row: int, victims: list[Running]) -> bool:
    """:func:`_pod_fits_at` with ``victims`` evicted, on trial (undone before returning)."""
    if not victims:
        return _pod_fits_at(ssn, p, row)
    trial = ssn.statement()
    for r in victims:
        trial.evict(r.pod, r.row, r.queue, Eviction("Trial", "", GroupKey("")))
    try:
        return _pod_fits_at(ssn, p, row)
    finally:
        trial.discard()


@dataclass(frozen=True, slots=True)
class _Rooms:
    """For one mode and one preemptor queue: the nodes with candidate victims, their candidates, and what
    evicting all of them would free per node (an upper bound: the preemptor's own group and pods evicted
    since are filtered out when a node is looked at)."""

    rows: npt.NDArray[np.intp]
    room: npt.NDArray[np.int64]
    cands: dict[int, list[Running]]


def _rooms(ssn: Session, mode: _Mode, args: EvictArgs, queue: str) -> _Rooms:
    key = ("rooms", mode.reason, queue)
    cached = ssn.victim_rooms.get(key)
    if isinstance(cached, _Rooms):
        return cached
    running = ssn.running
    now = ssn.now
    allowed_queue: dict[str, bool] = {}
    cands: dict[int, list[Running]] = {}
    for row, on in running.on_node.items():
        for r in on:
            ok = allowed_queue.get(r.queue)
            if ok is None:
                ok = allowed_queue[r.queue] = mode.candidate_queue(ssn, r.queue, queue)
            if ok and (args.min_runtime <= 0 or now - epoch(r.pod.created) >= args.min_runtime):
                cands.setdefault(row, []).append(r)
    rank = _ranks(ssn)
    for row_cands in cands.values():
        row_cands.sort(key=lambda r: rank[r.pod.uid])
    rows = np.fromiter(sorted(cands), dtype=np.intp, count=len(cands))
    room = np.zeros((len(rows), len(ssn.snapshot.index)), dtype=np.int64)
    for i, row in enumerate(rows.tolist()):
        for r in cands[row]:
            room[i] += running.vector(r.pod)
    out = _Rooms(rows=rows, room=room, cands=cands)
    ssn.victim_rooms[key] = out
    return out


def _cheapest_victims(
    ssn: Session,
    mode: _Mode,
    args: EvictArgs,
    g: PodGroup,
    queue: Queue,
    p: Pod,
    req: Vector,
    mask: fit.Mask,
    own_fit: bool = False,
) -> tuple[int, list[Running]] | None:
    """The node and victims that make room for ``p`` at the least cost; with ``own_fit``, room also
    means the ``pod_fit`` plugins allow the node once the victims are gone (see _pod_fits_without)."""
    running = ssn.running
    rooms = _rooms(ssn, mode, args, queue.name)
    if not len(rooms.rows):
        return None
    could = mask[rooms.rows] & ssn.fits_at(req, ssn.free[rooms.rows] + rooms.room, rooms.rows)
    rows = rooms.rows[could]
    if not len(rows):
        return None
    scores = _scores(ssn, req, queue)[rows]
    order = rows[np.lexsort((rows, -scores))]
    best: tuple[tuple[int, int, int, int], int, list[Running]] | None = None
    key = g.key
    looked = 0
    for k, row in enumerate(order[:_MAX_LOOKED_AT].tolist()):
        cands = [r for r in rooms.cands[row] if r.group != key and r.pod.uid not in ssn.evicting]
        if not cands:
            continue
        picked = _victims_on(ssn, mode, p, req, row, cands, own_fit)
        if picked is None:
            continue
        victims, whole = picked
        cost = (whole, max(running.group_priority(r.group) for r in victims), len(victims), k)
        if best is None or cost < best[0]:
            best = (cost, row, victims)
        looked += 1
        if looked >= _CANDIDATE_NODES or cost[:3] == (0, best[0][1], 1):
            break  # enough to compare, or one victim of no gang: nothing can be cheaper but its priority
    return None if best is None else (best[1], best[2])


def _ranks(ssn: Session) -> dict[PodUID, int]:
    """Every running pod's place in victim order, worked out once a cycle: lowest job priority first,
    then lowest pod priority, then the youngest (least work lost), then by name."""
    cached = ssn.victim_rooms.get(("ranks",))
    if isinstance(cached, dict):
        return cached
    running = ssn.running
    everyone = list(running.by_uid.values())
    # Stable sorts, last key first: names, then newest first, then the priorities.
    everyone.sort(key=lambda r: r.pod.key)
    everyone.sort(key=lambda r: r.pod.created, reverse=True)
    everyone.sort(key=lambda r: (running.group_priority(r.group), r.pod.priority))
    out = {r.pod.uid: i for i, r in enumerate(everyone)}
    ssn.victim_rooms[("ranks",)] = out
    return out


def _victims_on(
    ssn: Session, mode: _Mode, p: Pod, req: Vector, row: int, cands: list[Running], own_fit: bool = False
) -> tuple[list[Running], int] | None:
    """The victims on node ``row`` that make room for ``p`` (with the gangs taken whole, on any node),
    and how many gangs go whole; None if the plugins' choice cannot make room."""

    def room(free: Vector, chosen: list[Running]) -> bool:
        return _fits(ssn, req, free, row) and (not own_fit or _pod_fits_without(ssn, p, row, chosen))

    running = ssn.running
    allowed_pods = mode.hook(ssn, p, [r.pod for r in cands])  # in victim order (see _rooms)
    if not allowed_pods:
        return None
    allowed = [running.by_uid[q.uid] for q in allowed_pods]
    free = ssn.free[row].copy()
    chosen: list[Running] = []
    chosen_uids: set[PodUID] = set()
    taken: dict[GroupKey, int] = {}
    whole = 0
    for r in allowed:
        if room(free, chosen):
            break
        if r.pod.uid in chosen_uids:
            continue
        already = sum(m.pod.uid in ssn.evicting for m in running.members.get(r.group, ()))
        if running.spare(r.group) - already - taken.get(r.group, 0) > 0:
            chosen.append(r)
            taken[r.group] = taken.get(r.group, 0) + 1
            free += ssn.snapshot.index.vector(r.pod.requests)
            continue
        # Taking it breaks its gang: the whole gang goes, or none of it.
        rest = [
            m for m in running.members.get(r.group, ()) if m.pod.uid not in ssn.evicting and m not in chosen
        ]
        trial = [m.pod for m in chosen] + [m.pod for m in rest]
        if len(mode.hook(ssn, p, trial)) < len(trial):
            continue
        chosen.extend(rest)
        chosen_uids.update(m.pod.uid for m in rest)
        whole += 1
        for m in rest:
            if m.row == row:
                free += running.vector(m.pod)
    if not chosen or not room(free, chosen):
        return None  # (no victim needed: the room is there, what refuses the pod is not room)
    if own_fit:
        # Victim order knows nothing of cards: drop each group of victims whose going the pod's card
        # does not need (the first victims may have freed the wrong card).
        for grp in list(dict.fromkeys(r.group for r in chosen)):
            rest = [m for m in chosen if m.group != grp]
            back = free.copy()
            for m in chosen:
                if m.group == grp and m.row == row:
                    back -= running.vector(m.pod)
            if rest and room(back, rest):
                chosen, free = rest, back
                if taken.pop(grp, 0) == 0:
                    whole -= 1
    return chosen, whole


def _scores(ssn: Session, req: Vector, queue: Queue) -> npt.NDArray[np.float64]:
    """Node scores for ``req`` plus the queue's own (as allocate sums them)."""
    bonus = ssn.queue_scores(queue.name)
    return ssn.scores(req) if bonus is None else ssn.scores(req) + bonus


def _fits(ssn: Session, req: Vector, free: Vector, row: int) -> bool:
    """Whether node ``row`` with ``free`` free may take ``req``: resources and the node_fit plugins."""
    return bool(ssn.fits_at(req, free[None, :], np.array([row], dtype=np.intp))[0])


def _message(ssn: Session, mode: _Mode, g: PodGroup, queue: Queue, p: Pod, node: str) -> str:
    asks = ", ".join(f"{k} {human(k, v)}" for k, v in sorted(p.requests.items()) if v and k != "pods")
    if mode is _PREEMPT:
        prio = ssn.snapshot.group_priority(g)
        return f"preempted by {g.key} (priority {prio}) in queue {queue.name}: {p.key} needs {asks} on {node}"
    return f"reclaimed by queue {queue.name} for {g.key}: {p.key} needs {asks} on {node}"
