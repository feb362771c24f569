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
(:func:`_place_run`); ``batch=False`` keeps the loop, which the tests compare against.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.hierarchy import parent_loop
from extender.core.model import GroupKey, Pod, PodGroup, PodUID, Queue, QueueState
from extender.core.resources import Vector
from extender.core.timestamps import epoch
from extender.framework.gangs import (
    admitted_by_queue,
    counts_toward_gang,
    gang_need,
    ordered_waiting,
    unplanned_waiting,
)
from extender.framework.lines import Line
from extender.framework.plugin import GangDomains, Rows, Scores
from extender.framework.reserve import reserve
from extender.framework.result import Unschedulable
from extender.framework.session import Session
from extender.framework.statement import Statement

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


def _place_one(ssn: Session, stmt_place: Callable[[PodUID, int], None], p: Pod) -> str | None:
    """Place ``p`` on the best feasible node; None on success, else why not."""
    req = ssn.vector(p.uid)
    smask = ssn.pod_mask(p)
    rules = ssn.pod_rules(p)
    allowed = rules.allowed(p) if rules is not None else None
    ok = smask if allowed is None else smask & allowed
    room = ssn.fit_mask(req)
    mask = ok & room
    qname = ssn.pod_queue(p)
    limit = None if qname is None else ssn.limit_mask(qname, req)
    if limit is not None:
        mask &= limit
    if not mask.any():
        if rules is not None and allowed is not None and smask.any() and not ok.any():
            return "no node satisfies its inter-pod rules: " + rules.explain(p, smask)
        held = ssn.reservation
        if held is not None and (held.rows & ssn.static_mask(p.constraints) & room).any():
            return held.describe()
        if qname is not None and (why := _queue_refuses(ssn, p, qname)) is not None:
            return why
        if qname is not None and limit is not None and (ok & room).any():
            return ssn.limit_reason(qname, req)
        refusal = ssn.fit_refusal(req, ok)
        if refusal is not None:
            return refusal
        short = fit.shortfall(ssn.free, req, ok, ssn.snapshot.index, ssn.snapshot.node_names)
        if short is None:
            return "no node can take it: " + fit.summarize_static(p.constraints, ssn.snapshot.nodes)
        if rules is not None and allowed is not None and (refused := smask & room & ~allowed).any():
            # The nodes with room are the ones the rules refuse: that is the part a user can change.
            return f"{short.describe()}; nodes with room refused by its inter-pod rules: " + rules.explain(
                p, refused
            )
        return short.describe()
    own = ssn.pod_fit(p, mask)
    if own is not None:
        if not (mask & own).any():
            return ssn.pod_fit_reason(p, mask)
        mask = mask & own
    scores = ssn.scores(req)
    bonus = ssn.queue_scores(qname)
    if bonus is not None:
        scores = scores + bonus  # (the same sum _best_nodes makes for a batch)
    extra = ssn.pod_scores(p, mask)
    if extra is not None:
        scores = scores + extra
    best = int(np.argmax(np.where(mask, scores, -np.inf)))
    stmt_place(p.uid, best)
    return None


def _queue_refuses(ssn: Session, p: Pod, qname: str) -> str | None:
    """Why the queue's node rules (``node_mask`` plugins) leave ``p`` no node its own constraints allow,
    or None when they do not decide it."""
    qm = ssn.queue_mask(qname)
    if qm is None:
        return None
    static = ssn.static_mask(p.constraints)
    if not static.any() or (static & qm).any():
        return None
    return ssn.queue_mask_reason(qname)


# Pods placed per step of a batch: bounds the hypothetical rows scored at once (at most its square).
_STEP: Final = 32
# Up to this many best nodes are found by repeated argmax; more by a partition of the candidates.
_ARGMAX_TOP: Final = 8


def _place_run(ssn: Session, stmt: Statement, queue: Queue, run: Sequence[Pod]) -> int | None:
    """Place the pods of ``run`` (one request vector, node constraints and refused nodes, no inter-pod
    rules) where :func:`_place_one` would put them one after the other; how many it placed, a prefix of
    ``run`` (the next one fits nowhere), or None when these pods cannot be batched: the session's plugins
    do not allow it, or ``queue`` may not take the whole run (the loop then finds the pod it stops at).

    Why the result is the same: placing a pod changes the free capacity, the fit and the score of one node
    only, so each step of the loop takes the best (highest score, then lowest row) among the nodes not yet
    used, at their first score, and the nodes already used, at the score they have with the copies they
    took. Only the ``len(run)`` best nodes at the start can ever be taken (a node further down the order
    has a better unused one ahead of it at every step), and each of them can take at most
    ``free // request`` copies; their scores with ``j`` more copies are the scores of hypothetical rows
    (``free - j * request``), bit-for-bit what the loop would compute (row-local scorers). A heap of those
    sequences then replays the loop's choices without rescoring the cluster after each pod. The capacity
    check is additive (see Plugin.additive_allocatable), so the run's total passing means every pod's
    own check would; and no per-pod score speaks for these pods (see PodScorer).
    """
    p = run[0]
    req = ssn.vector(p.uid)
    if not ssn.batchable or ssn.negative_request(p.uid) or ssn.pod_rules(p) is not None:
        return None
    if ssn.allocatable_reject(queue, len(run) * req) is not None:
        return None
    if ssn.limit_mask(queue.name, req) is not None:
        return None  # caps that follow each placement (node_limit): pod by pod
    static = ssn.pod_mask(p)
    if ssn.pod_scores(p, static) is not None:  # the same answer for every pod of the run (PodScorer)
        return None
    if ssn.pod_fit(p, np.zeros_like(static)) is not None:  # (over no node: whether it judges the pod)
        return None  # judged pod by pod (Plugin.pod_fit): the run too
    done = 0
    while done < len(run):
        step = run[done : done + _STEP]
        nodes = _best_nodes(ssn, req, static & ssn.fit_mask(req), len(step), ssn.queue_scores(queue.name))
        if nodes:
            stmt.place_run([q.uid for q in step[: len(nodes)]], nodes, queue.name)
        done += len(nodes)
        if len(nodes) < len(step):
            break
    return done


def _best_nodes(ssn: Session, req: Vector, mask: fit.Mask, b: int, bonus: Scores | None) -> list[int]:
    """The nodes (rows) ``b`` pods requesting ``req`` would take one after the other among ``mask``, by
    the session's scores plus the queue's (``bonus``; see :func:`_place_run`); fewer when the pods run out
    of room."""
    scores = ssn.scores(req)
    if bonus is not None:
        scores = scores + bonus
    top = _top(mask, scores, b)
    if not top:
        return []
    rows = np.asarray(top, dtype=np.intp)
    # The k-th best is taken the first time only once the k better ones have been: b - k at most.
    copies, most, grid = _ahead(ssn, req, rows, [b - k for k in range(len(top))])
    if most and ssn.fit_predicates:
        # A node predicate on free capacity (node_fit) may refuse a copy resources would allow: a node
        # takes copies up to the first it refuses (nothing else changes that node during the run).
        ok = ssn.fits_at(req, grid, rows.repeat(most)).reshape(len(top), most).tolist()
        for k, c in enumerate(copies):
            for j in range(1, c):
                if not ok[k][j - 1]:
                    copies[k] = j
                    break
    seq_scores = ssn.scores_at(req, grid, rows.repeat(most)) if most else None
    if seq_scores is not None and bonus is not None:
        seq_scores = seq_scores + bonus[rows.repeat(most)]
    seq = [] if seq_scores is None else seq_scores.tolist()
    return _replay(top, scores[rows].tolist(), copies, seq, most, b)


def _top(mask: fit.Mask, scores: Scores, b: int) -> list[int]:
    """The ``b`` best rows of ``mask`` by score, then lowest row (fewer if the mask has fewer)."""
    if not mask.any():
        return []  # (also a cluster without nodes, where argmax has nothing to look at)
    if b <= _ARGMAX_TOP:
        masked = np.where(mask, scores, -np.inf)
        top: list[int] = []
        for _ in range(b):
            k = int(masked.argmax())
            if not mask[k] or k in top:
                break
            top.append(k)
            masked[k] = -np.inf
        return top
    cand = np.flatnonzero(mask)
    if len(cand) > b:
        # The b best by score; equal scores at the cut are all kept, for the row order to decide.
        cand_scores = scores[cand]
        kth = np.partition(cand_scores, len(cand) - b)[len(cand) - b]
        cand = cand[cand_scores >= kth]
    out: list[int] = cand[np.lexsort((cand, -scores[cand]))[:b]].tolist()
    return out


def _ahead(
    ssn: Session, req: Vector, rows: Rows, caps: list[int]
) -> tuple[list[int], int, npt.NDArray[np.int64]]:
    """How many copies of ``req`` each of ``rows`` can take (what fits, at most its cap), and the
    hypothetical rows free - j * req (j = 1, 2, ...) to score each one with the copies before it on it:
    a full grid, ``most`` rows per node (the rows past a node's copies are scored and never read). A
    handful of nodes: plain ints are cheaper than arrays for the counts."""
    free = ssn.free[rows]
    asked = [(c, r) for c, r in enumerate(req.tolist()) if r > 0]
    copies = [min([cap, *(f[c] // r for c, r in asked)]) for cap, f in zip(caps, free.tolist(), strict=True)]
    most = max(copies) - 1
    steps: npt.NDArray[np.int64] = np.arange(1, most + 1, dtype=np.int64)[:, None] * req
    grid: npt.NDArray[np.int64] = free[:, None, :] - steps
    return copies, most, grid.reshape(-1, len(req))


def _replay(
    nodes: list[int], first: list[float], copies: list[int], seq: list[float], most: int, b: int
) -> list[int]:
    """The loop's choices, ``b`` of them at most: each time the best (score, then lowest row) of each
    candidate's next copy, its score with the copies before it being ``seq[k * most + j - 1]``."""
    heap = [(-s, n, k) for k, (s, n) in enumerate(zip(first, nodes, strict=True))]
    heapq.heapify(heap)
    out: list[int] = []
    taken = [0] * len(nodes)
    while heap and len(out) < b:
        _, n, k = heapq.heappop(heap)
        out.append(n)
        taken[k] += 1
        if taken[k] < copies[k]:
            heapq.heappush(heap, (-seq[k * most + taken[k] - 1], n, k))
    return out


def _changes_with_placements(p: Pod) -> bool:
    """Whether ``p`` may fit after more pods are placed although it does not now: required pod affinity
    (a matching pod arrives) and hard topology spread (other domains fill up). Every other rule only
    narrows as pods are placed."""
    a = p.affinity
    return a is not None and bool(a.required or a.hard_spread)


def _base_shape(ssn: Session, p: Pod) -> tuple[object, ...]:
    """What decides where ``p`` may go and how nodes score for it, inter-pod rules aside (its own scoring
    table too: a run's pods must all have none, or the same one, see PodScorer)."""
    return (
        ssn.vector(p.uid).tobytes(),
        p.constraints,
        ssn.snapshot.refused.get(p.uid, frozenset()),
        p.scoring,
        p.numa,
        p.gpu,
    )


def _shape(ssn: Session, p: Pod) -> tuple[object, ...]:
    """What decides whether ``p`` fits now: pods of one shape fit or fail alike."""
    base = _base_shape(ssn, p)
    if p.affinity is None and not ssn.rules_active:
        return base
    # Its own rules, and the namespace and labels other pods' terms select by.
    return (*base, p.affinity, p.namespace, tuple(sorted(p.labels.items())))


def _run(
    ssn: Session,
    pending: Sequence[Pod],
    i: int,
    failed: set[tuple[object, ...]],
    placed: int,
    need: int,
    left: dict[str, int],
    retrying: int,
) -> Sequence[Pod]:
    """``pending[i]`` and the pods after it that allocate_group's loop would try next, one after the other,
    were each of them placed: the same task, base shape and no inter-pod rules, and none of the loop's
    checks (gang complete, task complete, too few pods left, shape failed) stopping it first."""
    p = pending[i]
    base = _base_shape(ssn, p)
    task_left = left.get(p.task, 0)
    j = i + 1
    while j < len(pending):
        q = pending[j]
        done = placed + j - i  # placed once pods i..j-1 are
        task_left = max(0, task_left - 1)
        if q.task != p.task or q.affinity is not None or _base_shape(ssn, q) != base:
            break
        if done >= need and task_left == 0:
            break  # the gang, or this task's minimum, is complete: the loop stops or passes over it
        if done + len(pending) - j + retrying < need:
            break
        if ssn.rules_active and _shape(ssn, q) in failed:
            break  # (otherwise q's shape is p's, which has not failed)
        j += 1
    return pending[i:j]


def allocate_group(ssn: Session, g: PodGroup, queue: Queue) -> None:
    """Plan the gang minimum of ``g`` all at once, or nothing (recording why); inside one of the
    network topology domains a plugin names for it, when one does (:func:`_allocate_in_domains`)."""
    domains = ssn.gang_domains(g)
    if domains is None:
        _allocate_whole(ssn, g, queue)
    else:
        _allocate_in_domains(ssn, g, queue, domains)


def _allocate_in_domains(ssn: Session, g: PodGroup, queue: Queue, domains: GangDomains) -> None:
    """Volcano's HyperNode gradients: the gang inside each candidate in turn (its pods' node masks
    narrowed to the candidate's rows), the first that holds it committed; each failed try is discarded by
    :func:`_allocate_whole` itself. None holding it: placed anywhere (``spread``) or left waiting with the
    plugin's refusal and what the first try lacked."""
    tried: tuple[str, str] | None = None
    for name, rows in domains.candidates:
        ssn.domain = ssn.rows_mask(rows)
        try:
            _allocate_whole(ssn, g, queue)
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
        _allocate_whole(ssn, g, queue)
        return
    msg = domains.refusal if tried is None else f"{domains.refusal}; in {tried[0]}: {tried[1]}"
    ssn.result.unschedulable[g.key] = Unschedulable(NOT_ENOUGH_RESOURCES, msg)


def _allocate_whole(ssn: Session, g: PodGroup, queue: Queue) -> None:
    """Plan the gang minimum of ``g`` all at once, or nothing (recording why)."""
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
            shape = _shape(ssn, p)
            if not loosens and shape in failed:
                continue
            if ssn.batchable and p.affinity is None:
                run = _run(ssn, pending, i, failed, placed, need, left, len(retry))
                batched = _place_run(ssn, stmt, queue, run) if len(run) > 1 else None
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


class _Turns:
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
    turns = _Turns(ssn, admitted_by_queue(ssn, lambda g: unplanned_waiting(ssn, g)))
    several_queues = sum(q.state == QueueState.OPEN for q in snap.queues.values()) > 1
    while (qname := turns.queue()) is not None:
        queue = snap.queues[qname]
        overused = ssn.overused(queue)
        if overused is not None:
            for g in turns.drop(qname):
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
            allocate_group(ssn, g, queue)
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
        turns.rekey(qname)
    held = ssn.reservation
    if held is not None and (why := ssn.result.unschedulable.get(held.group)) is not None:
        ssn.result.unschedulable[held.group] = Unschedulable(why.reason, f"{why.message}; {held.describe()}")


def _gang_whole(ssn: Session, g: PodGroup) -> bool:
    members = [ssn.snapshot.pods[u] for u in ssn.snapshot.members.get(g.key, ())]
    need, task_need = gang_need(ssn, g, members)
    return not need and not task_need


def _place_extras(ssn: Session, g: PodGroup, queue: Queue, *, every: bool) -> bool:
    """Place the next waiting pod of whole gang ``g`` (``every``: all it can, alike pods as a batch);
    whether any was placed. Pods that fit nowhere or that the queue may not take are passed over."""
    snap = ssn.snapshot
    extras = ordered_waiting(ssn, [snap.pods[u] for u in snap.members.get(g.key, ())], {})
    placed = False
    failed: set[tuple[object, ...]] = set()
    i = -1
    while i + 1 < len(extras):
        i += 1
        p = extras[i]
        shape = _shape(ssn, p)
        if shape in failed:
            continue
        if every and ssn.batchable and p.affinity is None:
            run = _extras_run(ssn, extras, i)
            if len(run) > 1:
                stmt = ssn.statement()
                n = _place_run(ssn, stmt, queue, run)
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

        def place(uid: PodUID, node: int, stmt: Statement = stmt) -> None:
            stmt.place(uid, node, queue.name)

        if _place_one(ssn, place, p) is None:
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
        return any(
            snap.pods[u].waiting and u not in ssn.plans and not _requests_anything(snap.pods[u])
            for u in snap.members.get(g.key, ())
        )

    for qname, groups in sorted(admitted_by_queue(ssn, has_best_effort).items()):
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

                def place(uid: PodUID, node: int, stmt: Statement = stmt, q: str = qname) -> None:
                    stmt.place(uid, node, q)

                if _place_one(ssn, place, p) is None:
                    stmt.commit()


def _requests_anything(p: Pod) -> bool:
    return any(v for k, v in p.requests.items() if k != "pods")


def _extras_run(ssn: Session, extras: Sequence[Pod], i: int) -> Sequence[Pod]:
    """``extras[i]`` and the pods after it of the same base shape without inter-pod rules."""
    base = _base_shape(ssn, extras[i])
    j = i + 1
    while j < len(extras) and extras[j].affinity is None and _base_shape(ssn, extras[j]) == base:
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
