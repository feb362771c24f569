"""Placing pods on nodes as Volcano's per-task loop does: one pod on its best node, or a run of alike pods.

- :func:`place_one`: the best node for one pod among those its mask, its inter-pod rules, free capacity,
  the ``node_fit`` plugins, the queue's caps (``node_limit``) and its own per-pod filters (``pod_fit``)
  allow, by the summed node scores plus the queue's and the pod's own; or, when none, the reason a user
  can act on (which rule, which shortfall);
- :func:`place_run`: a run of a gang's identical pods (one request, one node mask, no inter-pod rules, no
  per-pod scores) placed as one batch that lands every pod where :func:`place_one`, called for each in
  turn, would (the argument is in its docstring); None when the session's plugins do not allow batches;
- :func:`base_shape` and :func:`shape`: what decides whether a pod fits, so that a pod alike to one that
  failed is not tried again within a statement (free capacity and queue usage only shrink there).

Ties between nodes break to the lowest row (the snapshot's node order), in both paths alike.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core import fit
from extender.core.model import Pod, PodUID, Queue
from extender.core.resources import Vector
from extender.framework.plugin import Scores
from extender.framework.session import Session
from extender.framework.statement import Statement


def place_one(ssn: Session, stmt_place: Callable[[PodUID, int], None], p: Pod) -> str | None:
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
        if held is not None and (held.rows & ssn.masks.static_mask(p.constraints) & room).any():
            return held.describe()
        if qname is not None and (why := _queue_refuses(ssn, p, qname)) is not None:
            return why
        if qname is not None and limit is not None and (ok & room).any():
            return ssn.masks.limit_reason(qname, req)
        refusal = ssn.nodes.fit_refusal(req, ok)
        if refusal is not None:
            return refusal
        short = ssn.nodes.shortfall(req, ok)
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
        narrowed = mask & own
        if not narrowed.any():
            return ssn.masks.pod_fit_reason(p, mask)
        mask = narrowed
    scores = ssn.scores(req)
    total: Scores | None = None  # (the session's cached scores are read-only: a sum is a new array)
    bonus = ssn.queue_scores(qname)
    if bonus is not None:
        total = scores + bonus  # (the same sum _best_nodes makes for a batch)
    extra = ssn.pod_scores(p, mask)
    if extra is not None:
        total = (scores if total is None else total) + extra
    if total is None:
        total = np.where(mask, scores, -np.inf)
    else:
        total[~mask] = -np.inf  # (what np.where(mask, total, -inf) gives, in fewer passes)
    best = int(np.argmax(total))
    stmt_place(p.uid, best)
    return None


def _queue_refuses(ssn: Session, p: Pod, qname: str) -> str | None:
    """Why the queue's node rules (``node_mask`` plugins) leave ``p`` no node its own constraints allow,
    or None when they do not decide it."""
    qm = ssn.masks.queue_mask(qname)
    if qm is None:
        return None
    static = ssn.masks.static_mask(p.constraints)
    if not static.any() or (static & qm).any():
        return None
    return ssn.masks.queue_mask_reason(qname)


# Pods placed per step of a batch: bounds the hypothetical rows scored at once (at most its square).
_STEP: Final = 32
# Up to this many best nodes are found by repeated argmax; more by a partition of the candidates.
_ARGMAX_TOP: Final = 8
# Up to this many pods a step, a node's score with copies on it is computed when the replay reads it, in
# plain floats (a few microseconds each, at most b - 1 of them); more, as one numpy grid (a pass costs
# about as much as five rows alone, whatever its size).
_LAZY_TOP: Final = 8


def place_run(ssn: Session, stmt: Statement, queue: Queue, run: Sequence[Pod]) -> int | None:
    """Place the pods of ``run`` (one request vector, node constraints and refused nodes, no inter-pod
    rules) where :func:`place_one` would put them one after the other; how many it placed, a prefix of
    ``run`` (the next one fits nowhere), or None when these pods cannot be batched: the session's plugins
    do not allow it, or ``queue`` may not take the whole run (the loop then finds the pod it stops at).

    Why the result is the same: placing a pod changes the free capacity, the fit and the score of one node
    only, so each step of the loop takes the best (highest score, then lowest row) among the nodes not yet
    used, at their first score, and the nodes already used, at the score they have with the copies they
    took. Only the ``len(run)`` best nodes at the start can ever be taken (a node further down the order
    has a better unused one ahead of it at every step), and each of them can take at most
    ``free // request`` copies; their scores with ``j`` more copies are the scores of hypothetical rows
    (``free - j * request``), bit-for-bit what the loop would compute (row-local scorers). A heap of those
    sequences then replays the loop's choices without rescoring the cluster after each pod; for steps of
    a few pods, when every scorer can score a row alone and no node_fit plugin takes part
    (``NodeCache.rows_alone``), the next best node is found and a node's score with copies on it computed
    only when the replay reaches them (:func:`_lazy_run`), else the best nodes and a grid of their
    scores are computed up front through numpy. The capacity
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
    if ssn.hooks.pod_fit and ssn.pod_fit(p, np.zeros_like(static)) is not None:
        return None  # judged pod by pod (Plugin.pod_fit; asked over no node: whether it judges the pod)
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
    the session's scores plus the queue's (``bonus``; see :func:`place_run`); fewer when the pods run out
    of room."""
    scores = ssn.scores(req)
    if bonus is not None:
        scores = scores + bonus
    if b <= _LAZY_TOP and ssn.nodes.rows_alone:
        return _lazy_run(ssn, req, mask, scores, b, bonus)
    top = _top(mask, scores, b)
    if not top:
        return []
    rows = np.asarray(top, dtype=np.intp)
    first = scores[rows].tolist()
    free = ssn.free[rows]
    # The k-th best is taken the first time only once the k better ones have been: b - k at most.
    copies = _copies(req, free.tolist(), [b - k for k in range(len(top))])
    most = max(copies) - 1
    grid_rows = rows.repeat(most) if most else None  # (grid row i is node grid_rows[i])
    grid = _grid(req, free, most)
    if grid_rows is not None and ssn.hooks.node_fit:
        # A node predicate on free capacity (node_fit) may refuse a copy resources would allow: a node
        # takes copies up to the first it refuses (nothing else changes that node during the run).
        ok = ssn.nodes.fits_at(req, grid, grid_rows).reshape(len(top), most).tolist()
        for k, c in enumerate(copies):
            for j in range(1, c):
                if not ok[k][j - 1]:
                    copies[k] = j
                    break
    seq_scores = ssn.scores_at(req, grid, grid_rows) if grid_rows is not None else None
    if seq_scores is not None and bonus is not None:
        seq_scores = seq_scores + bonus[grid_rows]
    seq = [] if seq_scores is None else seq_scores.tolist()
    return _replay(top, first, copies, lambda k, j: seq[k * most + j - 1], b)


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


def _copies(req: Vector, free: list[list[int]], caps: list[int]) -> list[int]:
    """How many copies of ``req`` each node (its free capacity in ``free``) can take: what fits, at
    most its cap. (A loop over plain ints, not min() over a generator: several times cheaper.)"""
    asked = [(c, r) for c, r in enumerate(req.tolist()) if r > 0]
    copies: list[int] = []
    for cap, f in zip(caps, free, strict=True):
        for c, r in asked:
            room = f[c] // r
            if room < cap:
                cap = room
        copies.append(cap)
    return copies


def _grid(req: Vector, free: npt.NDArray[np.int64], most: int) -> npt.NDArray[np.int64]:
    """The hypothetical rows free - j * req (j = 1 .. ``most``) of each node of ``free``, to score each
    one with the copies before it on it: a full grid, ``most`` rows per node (the rows past a node's
    copies are scored and never read)."""
    steps: npt.NDArray[np.int64] = np.arange(1, most + 1, dtype=np.int64)[:, None] * req
    grid: npt.NDArray[np.int64] = free[:, None, :] - steps
    return grid.reshape(-1, len(req))


def _lazy_run(
    ssn: Session, req: Vector, mask: fit.Mask, scores: Scores, b: int, bonus: Scores | None
) -> list[int]:
    """What :func:`_top` and :func:`_replay` over the grid give, with each number found only when the
    replay needs it (``b <= _ARGMAX_TOP`` and ``ssn.nodes.rows_alone``): the k-th best node comes into
    line when the (k-1)-th is first taken (until then it is behind it: a lower score, or the same and a
    higher row), found by the same argmax over the same masked scores as _top's, in the same order; a
    node's score with ``j`` copies on it is computed when the replay reaches it, its free capacity less
    ``j * req`` in ints scored alone in plain floats (the same floats as the grid's row, see
    ``RowScores.total_at``), plus the queue's ``bonus`` for it (one float addition, as the grid's).
    A gang stacking on its best node thus costs one argmax and b - 1 one-row scores, not b argmax and a
    numpy pass over the grid."""
    if not mask.any():
        return []
    masked = np.where(mask, scores, -np.inf)
    asked = req.tolist()
    wanted = [(c, r) for c, r in enumerate(asked) if r > 0]
    nodes: list[int] = []
    free: list[list[int]] = []
    copies: list[int] = []
    heap: list[tuple[float, int, int]] = []

    def enter() -> None:
        """The next best node of the mask into line (the k-th may take b - k copies at most), if any."""
        n = int(masked.argmax())
        if not mask[n] or n in nodes:
            return  # (as _top stops)
        masked[n] = -np.inf
        f = ssn.free[n].tolist()
        cap = b - len(nodes)
        for c, r in wanted:
            room = f[c] // r
            if room < cap:
                cap = room
        heapq.heappush(heap, (-float(scores[n]), n, len(nodes)))
        nodes.append(n)
        free.append(f)
        copies.append(cap)

    enter()
    out: list[int] = []
    taken: list[int] = []
    while heap and len(out) < b:
        _, n, k = heapq.heappop(heap)
        out.append(n)
        if k == len(taken):  # the last node in line, taken the first time: the next one comes in
            taken.append(1)
            if len(nodes) < b:
                enter()
        else:
            taken[k] += 1
        if taken[k] < copies[k] and len(out) < b:
            f, j = free[k], taken[k]
            s = ssn.nodes.one_row.total_at(req, n, [x - j * r for x, r in zip(f, asked, strict=True)])
            heapq.heappush(heap, (-(s if bonus is None else s + float(bonus[n])), n, k))
    return out


def _replay(
    nodes: list[int], first: list[float], copies: list[int], then: Callable[[int, int], float], b: int
) -> list[int]:
    """The loop's choices, ``b`` of them at most: each time the best (score, then lowest row) of each
    candidate's next copy, its score with ``j`` copies before it on it being ``then(k, j)``."""
    heap = [(-s, n, k) for k, (s, n) in enumerate(zip(first, nodes, strict=True))]
    heapq.heapify(heap)
    out: list[int] = []
    taken = [0] * len(nodes)
    while heap and len(out) < b:
        _, n, k = heapq.heappop(heap)
        out.append(n)
        taken[k] += 1
        if taken[k] < copies[k] and len(out) < b:
            heapq.heappush(heap, (-then(k, taken[k]), n, k))
    return out


def base_shape(ssn: Session, p: Pod) -> tuple[object, ...]:
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


def shape(ssn: Session, p: Pod) -> tuple[object, ...]:
    """What decides whether ``p`` fits now: pods of one shape fit or fail alike."""
    base = base_shape(ssn, p)
    if p.affinity is None and not ssn.rules_active:
        return base
    # Its own rules, and the namespace and labels other pods' terms select by.
    return (*base, p.affinity, p.namespace, tuple(sorted(p.labels.items())))
