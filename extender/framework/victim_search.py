"""Which running pods to evict so that one waiting pod can run, for the ``preempt`` and ``reclaim`` actions.

For a pod that fits nowhere as the cluster stands, :func:`cheapest_victims` looks over the nodes where
evicting every candidate would make room (its node mask and the ``node_fit`` plugins judged on that room),
best-scored first, and on each takes the victims the plugins allow (``Mode.hook``, under the victim
hooks' tier rule) in victim order (lowest job priority, then lowest pod priority, then the youngest, then
by name) until the pod fits. Gangs are kept whole: a running gang gives up members only down to
``minMember``, past that a victim goes only with the rest of its gang, every member of which the plugins
must allow (Volcano's gang plugin instead refuses any victim that would break a gang; see
:mod:`extender.framework.evict`); when what the plugins allow was used up by such a pod that could not go
whole, the node is tried again with only the pods that can go alone. Of the nodes compared, the one
needing the least disruption wins, as Volcano's preempt prefers the node whose victims matter least:
fewest gangs taken whole, then the lowest victim priority, then the fewest victims, then the node's score.

Per cycle, the candidates by node and the victim order are worked out once (kept in
``Session.victim_rooms``); a candidate's own group and pods already being evicted are left out when a
node is looked at. A pod whose ``pod_fit`` plugins follow evictions (GPU cards) is asked again with the
victims gone, and victims its card does not need are given back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.model import GroupKey, Pod, PodGroup, PodUID, Queue
from extender.core.resources import Vector
from extender.core.running import Running
from extender.core.timestamps import epoch
from extender.framework.result import Eviction
from extender.framework.session import Session

# Nodes whose victim sets are compared for one pod: the best-scored ones that can make room at all; and
# how many nodes are looked at, at most, for one pod (the plugins may refuse the victims of many).
_CANDIDATE_NODES: Final = 16
_MAX_LOOKED_AT: Final = 64


@dataclass(frozen=True, slots=True)
class Mode:
    """Preempt's or reclaim's rules for victims: the reason evictions carry, the plugins' tier-ruled
    choice (``Session.preemptable`` or ``Session.reclaimable``), and which queues' pods are candidates."""

    reason: str  # the eviction's reason
    hook: Callable[[Session, Pod, Sequence[Pod]], list[Pod]]
    # Whether a running pod of ``queue`` (the victim's) may be a candidate for a pod of ``mine``.
    candidate_queue: Callable[[Session, str, str], bool]


def pod_fits_at(ssn: Session, p: Pod, row: int) -> bool:
    """Whether the ``pod_fit`` plugins let ``p`` onto node ``row`` as the session stands (the victims
    just evicted gone: the plugins that follow evictions count what they free, such as GPU cards)."""
    own = ssn.pod_fit(p, ssn.rows_mask(row))
    return own is None or bool(own[row])


def _pod_fits_without(ssn: Session, p: Pod, row: int, victims: list[Running]) -> bool:
    """:func:`pod_fits_at` with ``victims`` evicted, on trial (undone before returning)."""
    if not victims:
        return pod_fits_at(ssn, p, row)
    trial = ssn.statement()
    for r in victims:
        trial.evict(r.pod, r.row, r.queue, Eviction("Trial", "", GroupKey("")))
    try:
        return pod_fits_at(ssn, p, row)
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


def _rooms(ssn: Session, mode: Mode, min_runtime: float, queue: str) -> _Rooms:
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
            if ok and (min_runtime <= 0 or now - epoch(r.pod.created) >= min_runtime):
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


def cheapest_victims(
    ssn: Session,
    mode: Mode,
    min_runtime: float,
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
    rooms = _rooms(ssn, mode, min_runtime, queue.name)
    if not len(rooms.rows):
        return None
    could = mask[rooms.rows] & ssn.nodes.fits_at(req, ssn.free[rooms.rows] + rooms.room, rooms.rows)
    rows = rooms.rows[could]
    if not len(rows):
        return None
    scores = scores_for(ssn, req, queue)[rows]
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
            # A pod the plugins allow but whose gang cannot go whole used up what they allow (its
            # queue's share): try again with only the pods that can go without breaking a gang.
            alone = _without_breaking(ssn, cands)
            if len(alone) < len(cands) and alone:
                picked = _victims_on(ssn, mode, p, req, row, alone, own_fit)
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


def _without_breaking(ssn: Session, cands: list[Running]) -> list[Running]:
    """The candidates, in order, that can each go while their gang keeps ``minMember``."""
    running = ssn.running
    left: dict[GroupKey, int] = {}
    out: list[Running] = []
    for r in cands:
        if r.group not in left:
            already = sum(m.pod.uid in ssn.evicting for m in running.members.get(r.group, ()))
            left[r.group] = running.spare(r.group) - already
        if left[r.group] > 0:
            left[r.group] -= 1
            out.append(r)
    return out


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
    ssn: Session, mode: Mode, p: Pod, req: Vector, row: int, cands: list[Running], own_fit: bool = False
) -> tuple[list[Running], int] | None:
    """The victims on node ``row`` that make room for ``p`` (with the gangs taken whole, on any node),
    and how many gangs go whole; None if the plugins' choice cannot make room."""

    def room(free: Vector, chosen: list[Running]) -> bool:
        return fits_on(ssn, req, free, row) and (not own_fit or _pod_fits_without(ssn, p, row, chosen))

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


def scores_for(ssn: Session, req: Vector, queue: Queue) -> npt.NDArray[np.float64]:
    """Node scores for ``req`` plus the queue's own (as allocate sums them)."""
    bonus = ssn.queue_scores(queue.name)
    return ssn.scores(req) if bonus is None else ssn.scores(req) + bonus


def fits_on(ssn: Session, req: Vector, free: Vector, row: int) -> bool:
    """Whether node ``row`` with ``free`` free may take ``req``: resources and the node_fit plugins."""
    return bool(ssn.nodes.fits_at(req, free[None, :], np.array([row], dtype=np.intp))[0])
