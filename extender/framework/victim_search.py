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
node is looked at, and so is a pod labelled or annotated ``volcano.sh/preemptable: "false"`` (Volcano's
task-level flag: never a victim, a gang holding one is never taken whole). A pod whose ``pod_fit`` plugins
follow evictions (GPU cards) is asked again with the victims gone, and victims its card does not need are
given back.

Two things make a node's search exact (:func:`_victims_exact`: each victim evicted on trial in a
statement, the node judged as every rule sees it, then everything undone), where the usual search adds up
resources only: a preemptor whose queue refuses it as things stand (``allocatable``, e.g. over its
``capability``): victims of its queue are taken until the queue takes it too, as Volcano's preempt checks
``Allocatable`` after each victim, and a node where that cannot happen is passed over for the next; and
preempt's ``enableTopologyAwarePreemption``: the preemptor's inter-pod rules are judged with the victims
gone (a victim may be chosen to clear a required anti-affinity conflict), and once the pod fits the victims
are given back, highest priority first, while it still fits (Volcano's reprieve; also done for a pod whose
cards decide its fit, as the usual search gives back victims its card does not need).
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
from extender.framework import victim_rooms
from extender.framework.plugin import Scores
from extender.framework.result import Eviction
from extender.framework.session import Session
from extender.framework.statement import Statement
from extender.framework.victim_memo import NodeVictims

# Nodes whose victim sets are compared for one pod: the best-scored ones that can make room at all; and
# how many nodes are looked at, at most, for one pod (the plugins may refuse the victims of many).
_CANDIDATE_NODES: Final = 16
_MAX_LOOKED_AT: Final = 64
# The reason of a trial eviction, never committed.
_TRIAL: Final = Eviction("Trial", "", GroupKey(""))


@dataclass(frozen=True, slots=True)
class Mode:
    """Preempt's or reclaim's rules for victims: the reason evictions carry, the plugins' tier-ruled
    choice (``Session.preemptable`` or ``Session.reclaimable``), and which queues' pods are candidates."""

    reason: str  # the eviction's reason
    hook: Callable[[Session, Pod, Sequence[Pod]], list[Pod]]
    # Whether a running pod of ``queue`` (the victim's) may be a candidate for a pod of ``mine``.
    candidate_queue: Callable[[Session, str, str], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """What room for one pod means: the pod, its group and queue, its request, the nodes to look at, and
    what a node must pass with the victims gone besides resources and the ``node_fit`` plugins."""

    g: PodGroup
    queue: Queue
    pod: Pod
    req: Vector
    mask: fit.Mask
    # The pod_fit plugins allow the node (asked again once the victims are gone: GPU cards).
    own_fit: bool = False
    # The queue's allocatable votes take the pod (victims of its queue lower what it holds).
    queue_check: bool = False
    # Inter-pod rules allow the node once the victims are gone (their eviction lifts them), and victims
    # not needed are given back (topology-aware preemption).
    rules: bool = False

    @property
    def exact(self) -> bool:
        return self.queue_check or self.rules


def never_preempts(ssn: Session, p: Pod) -> bool:
    """Whether ``p`` may evict nobody: ``preemptionPolicy: Never`` in its spec or, when the spec names
    none, in its PriorityClass (the API server copies the class's policy at creation; a pod made without
    it, as in a snapshot file, still follows its class)."""
    policy = p.preemption_policy
    if not policy and p.priority_class:
        pc = ssn.snapshot.priority_classes.get(p.priority_class)
        policy = "" if pc is None else pc.preemption_policy
    return policy == "Never"


def rules_allow(ssn: Session, p: Pod, row: int) -> bool:
    """Whether the inter-pod rules (as the session counts pods now) let ``p`` onto node ``row``."""
    rules = ssn.pod_rules(p)
    if rules is None:
        return True
    allowed = rules.allowed(p)
    return allowed is None or bool(allowed[row])


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
        trial.evict(r.pod, r.row, r.queue, _TRIAL)
    try:
        return pod_fits_at(ssn, p, row)
    finally:
        trial.discard()


def cheapest_victims(
    ssn: Session, mode: Mode, min_runtime: float, ask: Ask
) -> tuple[int, list[Running]] | None:
    """The node and victims that make room for ``ask.pod`` at the least cost (see :class:`Ask` for what
    room means)."""
    running = ssn.running
    rooms = victim_rooms.rooms(ssn, mode.reason, mode.candidate_queue, min_runtime, ask.queue.name)
    if not len(rooms.rows):
        return None
    req = ask.req
    if ssn.fast_victims:
        could = ask.mask[rooms.rows] & room_fits(ssn, rooms, req)
    else:
        could = ask.mask[rooms.rows] & ssn.nodes.fits_at(req, ssn.free[rooms.rows] + rooms.room, rooms.rows)
    rows = rooms.rows[could]
    if not len(rows):
        return None
    scores = scores_for(ssn, req, ask.queue)[rows]
    if ssn.fast_victims:
        order = best_first(rows, scores, _MAX_LOOKED_AT)
    else:
        order = rows[np.lexsort((rows, -scores))]
    best: tuple[tuple[int, int, int, int], int, list[Running]] | None = None
    key = ask.g.key
    looked = 0
    # A node's answer for an earlier pod of this kind, while nothing it read has changed (fast path only).
    memo = None
    if ssn.fast_victims and not ask.exact and not ask.own_fit:
        memo = NodeVictims(ssn, mode.reason, ask.queue.name, min_runtime, ask.g, ask.pod, req)
    window = order[:_MAX_LOOKED_AT]
    if ssn.fast_victims:
        looking = rooms.live.window(ssn, rooms, window)
    else:
        looking = ((k, row, _not_evicting(ssn, rooms, row)) for k, row in enumerate(window.tolist()))
    for k, row, live in looking:
        cands = [r for r in live if r.group != key]
        if not cands:
            continue
        found = None if memo is None else memo.get(row)
        if found is None:
            if memo is not None:
                memo.start()
            if ask.exact:
                picked = _victims_exact(ssn, mode, ask, row, cands)
            else:
                picked = _victims_or_alone(ssn, mode, ask, row, cands)
            # (each victim group's priority once: a gang taken whole is eight victims of one group)
            top = 0 if picked is None else max(map(running.group_priority, {r.group for r in picked[0]}))
            if memo is not None:
                memo.keep(row, (picked, top))
        else:
            picked, top = found
        if picked is None:
            continue
        victims, whole = picked
        cost = (whole, top, len(victims), k)
        if best is None or cost < best[0]:
            best = (cost, row, victims)
        looked += 1
        if looked >= _CANDIDATE_NODES or cost[:3] == (0, best[0][1], 1):
            break  # enough to compare, or one victim of no gang: nothing can be cheaper but its priority
    return None if best is None else (best[1], best[2])


def _not_evicting(ssn: Session, rooms: victim_rooms.Rooms, row: int) -> list[Running]:
    return [r for r in rooms.cands(row) if r.pod.uid not in ssn.evicting]


def _victims_or_alone(
    ssn: Session, mode: Mode, ask: Ask, row: int, cands: list[Running]
) -> tuple[list[Running], int] | None:
    """:func:`_victims_on`, tried again with only the pods that can go alone when it finds nothing."""
    picked = _victims_on(ssn, mode, ask.pod, ask.req, row, cands, ask.own_fit)
    if picked is None:
        # A pod the plugins allow but whose gang cannot go whole used up what they allow (its queue's
        # share): try again with only the pods that can go without breaking a gang.
        alone = _without_breaking(ssn, cands)
        if len(alone) < len(cands) and alone:
            picked = _victims_on(ssn, mode, ask.pod, ask.req, row, alone, ask.own_fit)
    return picked


def room_fits(ssn: Session, rooms: victim_rooms.Rooms, req: Vector) -> fit.Mask:
    """Per row of ``rooms.rows``: whether the node takes ``req`` with all its candidates gone (resources
    and the ``node_fit`` plugins, judged on its free capacity plus ``rooms.room``), read-only. Kept per
    request on ``rooms`` with the node cache's row clock and brought up to date by judging again only the
    rows changed since (``node_fit`` is row-local, as the node cache's fit masks rely on; ``rooms.room``
    is fixed for the cycle): always what judging every row afresh gives. Every pod of a gang asks it, and
    each of them changes a row or a few of thousands."""
    nodes = ssn.nodes
    key = req.tobytes()
    now = nodes.clock
    memo = rooms.fits.get(key)
    if memo is None:
        fits = nodes.fits_at(req, ssn.free[rooms.rows] + rooms.room, rooms.rows)
    else:
        fits, at = memo
        changed = nodes.changed_since(at)
        if len(changed):
            # The changed rows that are rows of ``rooms`` (both ascending), and where they are in it.
            pos = np.minimum(np.searchsorted(rooms.rows, changed), len(rooms.rows) - 1)
            there = rooms.rows[pos] == changed
            pos, changed = pos[there], changed[there]
            if len(pos):
                fits[pos] = nodes.fits_at(req, ssn.free[changed] + rooms.room[pos], changed)
    rooms.fits[key] = (fits, now)
    return fits


def best_first(rows: npt.NDArray[np.intp], scores: Scores, k: int) -> npt.NDArray[np.intp]:
    """The first ``k`` of ``rows`` (ascending) by highest score, then lowest row: what a full sort on
    (-score, row) begins with, found by partitioning (the search looks at a few dozen of thousands)."""
    n = len(rows)
    if n <= k:
        return rows[np.lexsort((rows, -scores))][:k]
    top = scores.max()
    if top != top:  # a NaN (max passes it on): the full sort's own order
        return rows[np.lexsort((rows, -scores))][:k]
    # Usually many nodes share the best score (nodes alike, filled alike): the first k rows scoring it.
    at_top = np.flatnonzero(scores == top)
    if len(at_top) >= k:
        out: npt.NDArray[np.intp] = rows[at_top[:k]]
        return out
    # The k-th highest score: every row above it is among the first k, and the lowest rows scoring it
    # fill the rest (rows ascending: the first ones met).
    kth = np.partition(scores, n - k)[n - k]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)[: k - len(above)]
    pick = np.concatenate((above, tied))
    return rows[pick[np.lexsort((rows[pick], -scores[pick]))]]


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
        if running.alone(r, ssn.evicting, chosen_uids):
            chosen.append(r)
            chosen_uids.add(r.pod.uid)
            taken[r.group] = taken.get(r.group, 0) + 1
            free += running.vector(r.pod)
            continue
        # Taking it breaks its gang: the whole gang goes, or none of it.
        rest = _rest_of_gang(ssn, r, chosen_uids)
        if rest is None:
            continue
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


def _rest_of_gang(ssn: Session, r: Running, chosen: set[PodUID]) -> list[Running] | None:
    """The members of ``r``'s gang still there (not evicting, not chosen), to be taken whole; None when
    one of them may never be a victim (``volcano.sh/preemptable: "false"``)."""
    rest = [
        m
        for m in ssn.running.members.get(r.group, ())
        if m.pod.uid not in ssn.evicting and m.pod.uid not in chosen
    ]
    protected = ssn.running.protected
    return None if protected and any(m.pod.uid in protected for m in rest) else rest


def _fits_now(ssn: Session, ask: Ask, row: int) -> bool:
    """Whether node ``row`` takes ``ask.pod`` as the session stands (trial evictions applied)."""
    return (
        fits_on(ssn, ask.req, ssn.free[row], row)
        and (not ask.queue_check or ssn.allocatable_reject(ask.queue, ask.req) is None)
        and (not ask.own_fit or pod_fits_at(ssn, ask.pod, row))
        and (not ask.rules or rules_allow(ssn, ask.pod, row))
    )


def _victims_exact(
    ssn: Session, mode: Mode, ask: Ask, row: int, cands: list[Running]
) -> tuple[list[Running], int] | None:
    """:func:`_victims_on` judged exactly: each victim (or gang, taken whole) evicted on trial until node
    ``row`` takes the pod by every check of ``ask``; with ``ask.rules``, the victims then given back,
    highest priority first, while it still does. Everything is undone before returning."""
    running = ssn.running
    allowed_pods = mode.hook(ssn, ask.pod, [r.pod for r in cands])
    if not allowed_pods:
        return None
    trial = ssn.statement()
    units: list[tuple[list[Running], bool]] = []  # (victims, a gang taken whole), in victim order
    chosen: set[PodUID] = set()
    try:
        fits = _fits_now(ssn, ask, row)
        for q in allowed_pods:
            if fits:
                break
            r = running.by_uid[q.uid]
            if r.pod.uid in chosen:
                continue
            if running.alone(r, ssn.evicting):
                unit, whole = [r], False
            else:
                rest = _rest_of_gang(ssn, r, chosen)
                if rest is None:
                    continue
                # (running.by_uid: a chosen victim of a settled group is not among the snapshot's pods)
                everyone = [running.by_uid[u].pod for u in chosen] + [m.pod for m in rest]
                if len(mode.hook(ssn, ask.pod, everyone)) < len(everyone):
                    continue
                unit, whole = rest, True
            for m in unit:
                trial.evict(m.pod, m.row, m.queue, _TRIAL)
                chosen.add(m.pod.uid)
            units.append((unit, whole))
            fits = _fits_now(ssn, ask, row)
        if not fits or not units:
            return None  # (no victim needed: what refuses the pod is not on this node)
        if ask.rules or ask.own_fit:
            # Victim order knows neither pod rules nor cards: the first victims may not be the ones needed.
            _reprieve(ssn, ask, row, trial, units)
        return [m for unit, _ in units for m in unit], sum(whole for _, whole in units)
    finally:
        trial.discard()


def _reprieve(
    ssn: Session, ask: Ask, row: int, trial: Statement, units: list[tuple[list[Running], bool]]
) -> None:
    """Give back the victims ``ask.pod`` does not need, highest priority first (Volcano's and
    kube-scheduler's reprieve). A pod taken alone stays a victim when a later gang of its group was taken
    whole (giving it back would leave it running without its gang)."""
    for i in range(len(units) - 1, -1, -1):
        unit, whole = units[i]
        if not whole and any(w and u[0].group == unit[0].group for u, w in units[i + 1 :]):
            continue
        for m in unit:
            trial.unevict(m.pod)
        if _fits_now(ssn, ask, row):
            del units[i]
        else:
            for m in unit:
                trial.evict(m.pod, m.row, m.queue, _TRIAL)


def scores_for(ssn: Session, req: Vector, queue: Queue) -> npt.NDArray[np.float64]:
    """Node scores for ``req`` plus the queue's own (as allocate sums them)."""
    bonus = ssn.queue_scores(queue.name)
    return ssn.scores(req) if bonus is None else ssn.scores(req) + bonus


def fits_on(ssn: Session, req: Vector, free: Vector, row: int) -> bool:
    """Whether node ``row`` with ``free`` free may take ``req``: resources and the node_fit plugins."""
    if not ssn.hooks.node_fit:
        return bool((free >= req).all())  # (fit.fits for one row: what fits_at is without plugins)
    return bool(ssn.nodes.fits_at(req, free[None, :], np.array([row], dtype=np.intp))[0])
