"""deviceshare: GPU sharing and whole GPUs card by card, with the annotations Volcano's device plugins
read, written before the pod binds; and where GPU pods (and pods without GPUs) go so that the GPU left
stays usable by the pods that arrive.

Mirrors Volcano's ``deviceshare`` plugin for its NVIDIA families (see :mod:`extender.core.gpus` for the
resource names, the node and pod annotations and how cards are chosen):

- ``deviceshare.GPUSharingEnable``: pods asking ``volcano.sh/gpu-memory`` take that memory of one card;
- ``deviceshare.GPUNumberEnable``: pods asking ``volcano.sh/gpu-number`` take that many idle cards whole;
- ``deviceshare.VGPUEnable``: pods asking the ``volcano.sh/vgpu-*`` family take vGPU slices of the cards
  the node registers, never beyond a card's memory, cores or sharer count;
- ``deviceshare.SchedulePolicy``: which card a pod takes on a node, and with ``deviceshare.ScheduleWeight``
  the node score, weight × (0..100); a pod's ``hami.io/gpu-scheduler-policy`` (binpack or spread)
  overrides it for that pod:

  * ``fragmentation`` (the default): the node and card whose use raises the cluster's expected GPU
    fragmentation least, for the GPU pod shapes that arrive (:mod:`extender.core.gpu_frag`: a node's
    idle GPU that a shape cannot use, weighed by how often the shape arrives; a shape whose node
    constraints rule out a node's GPU model cannot use any of it, so pods go first to the models that
    fewer others may use). The shapes
    (whole cards or a share of one, cpu, memory, the GPU models a pod may use) are learned from the pods
    the plugin is asked about, in a histogram that halves every ``deviceshare.ShapeHalfLife`` pods, of
    which the most frequent shapes making up ``deviceshare.ShapeCoverage`` of it are weighed (1.0: every
    shape seen, up to the 256 most frequent). Rises within 0.04 of a card of
    each other count alike, and then the node left with the least idle GPU wins (so idle nodes stay whole
    for large asks); with ``deviceshare.ShareBestFit``, for a pod sharing a card, the card left with the
    least room wins instead (best fit: more GPU allocated on openb's share-heavy traces, see
    docs/src/benchmarks.md). With a weight, pods without GPUs are scored too, onto the nodes where the cpu and
    memory they take strand the least GPU (nodes without idle GPU first). vGPU pods take Volcano's
    default card order under this policy;
  * ``binpack``: the fuller the cards it would take, the better; ``spread``: idle cards win;
  * ``""`` (given explicitly): Volcano's default card order, lowest index first, and no node score;
- ``deviceshare.GPUModelLabel``: the node label naming a node's GPU model (``nvidia.com/gpu.product``).

As a predicate (``pod_fit``) it keeps a pod off nodes whose cards cannot take it; a pod it judges is
placed one by one, so a gang's pods each see the cards the ones before took (a gang's GPUs are planned
together and undone together: the plugin follows the session's plans). The cards a pod takes are
written on it when the cycle closes (``CycleResult.annotations``), and the scheduler admits the planned
node in the filter, or binds, only once they are there: the device plugin never starts a pod without its
cards, and no two pods are given the same card beyond its capacity, because pumice is the one writer.

Card use comes from the pods that hold cards (``Snapshot.device_holds``): bound pods by their
annotations, planned ones by their plan's decision, so a restart recounts every card from the API
server. It is kept across cycles in the snapshot's :class:`~extender.core.gpu_memo.CardMemo` and brought
up to each snapshot by the pods that changed, so a cycle costs what changed, not every held card; the
learned shapes live there too (a restart learns them again).

Deliberate differences from Volcano:

- gpushare memory and number can be on together (Volcano refuses that conf), and a card held whole
  (``gpu-number``) is never shared with a memory pod (Volcano counts only memory on it);
- the default policy is ``fragmentation`` (Volcano's: its card order, no score);
- ``deviceshare.NodeLockEnable`` is accepted and has no effect: there is no second scheduler to lock
  out, and the annotation write precedes the bind;
- vGPU's MIG geometries (``deviceshare.KnownGeometriesCMName``/``Namespace``) are accepted but not used:
  a MIG-mode node is treated as hami-core slicing by memory and cores;
- Volcano's Ascend NPU families (``deviceshare.AscendMindClusterVNPUEnable``,
  ``deviceshare.AscendHAMiVNPUEnable``) and exclusive-GPU rules (``deviceshare.GPUExclusiveRules``, a
  list of label sets) are accepted so a Volcano conf loads, and not implemented: NPU pods are counted by
  their nodes' extended resources only, without the annotations Ascend's device plugins read.

Enable with::

    - name: deviceshare
      arguments:
        deviceshare.GPUSharingEnable: true
        deviceshare.GPUNumberEnable: true
        deviceshare.VGPUEnable: true
        deviceshare.SchedulePolicy: fragmentation   # or binpack, spread
        deviceshare.ScheduleWeight: 10
        deviceshare.GPUModelLabel: nvidia.com/gpu.product
        deviceshare.ShapeHalfLife: 5000              # pods
        deviceshare.ShapeCoverage: 1.0
        deviceshare.ShareBestFit: false
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core import gpu_verdicts
from extender.core.fit import Mask
from extender.core.gpu_cards import CardUse, Choice, decide, device_annotations, share_hold
from extender.core.gpu_frag import Shape
from extender.core.gpu_memo import Applied, CardMemo, Held
from extender.core.gpus import MEMORY, NUMBER, SHARE, VGPU, GpuHold, GpuRequest, NodeGpus, pod_hold
from extender.core.model import Pod, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import pod_group_key
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session
from extender.plugins.deviceshare_args import ARGUMENTS, FRAGMENTATION, NAME, Args

Taken = tuple[tuple[int, int, int], ...]  # (card position, memory, cores) per card a pod takes


class DeviceSharePlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS
    row_local_scores = True  # node_score has no opinion: its scores are per pod
    fit_follows_evictions = True  # an evicted pod's cards are free (see _sync)
    fast_paths = True  # False: the plain computations the fast ones must equal (for the tests)

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.args = Args.parse(arguments)
        self._memo: CardMemo | None = None
        self._columns: tuple[int | None, int | None] = (None, None)  # cpu's and memory's in free

    def open(self, ssn: Session) -> None:
        # The cards load when the cycle first asks about a pod the plugin judges or scores (_load).
        self._memo = None
        self._owned = False
        # Held pods a plan or an eviction may move (those bound stay unless evicted), by row; rows a
        # placement was taken off since the last sync (only there can a plan be undone); pods evicted with
        # what they held (an undone eviction gives it back); pods asked about but holding nothing; the
        # annotations decided for pods placed in this cycle; vGPU decisions per ask while nothing changes.
        self._movable: dict[int, set[PodUID]] = {}
        self._undone: set[int] = set()
        self._evicted: dict[PodUID, tuple[Held, Applied]] = {}
        self._unplaced: dict[PodUID, Pod] = {}
        self._decided: dict[PodUID, tuple[NodeGpus, GpuRequest, Taken, str]] = {}  # annotated at close
        self._vgpu: dict[tuple[object, ...], tuple[Mask, Scores, dict[int, Choice]]] = {}
        self._vgpu_at = -1
        self._scorable: bool | None = None
        self._shapes: dict[PodUID, Shape] = {}  # pods' shapes (their models read once per cycle)
        self._last: tuple[Pod, tuple[int, ...] | None, Mask, Scores] | None = None  # (see _judge)

    def _judges(self, pod: Pod) -> GpuRequest | None:
        g = pod.gpu
        return g if g is not None and g.kind in self.args.kinds else None

    def _policy(self, request: GpuRequest) -> str:
        policy = request.policy or self.args.policy
        return "" if policy == FRAGMENTATION and request.family == VGPU else policy

    # --- the cards, from the memo ----------------------------------------------------------------------
    def _load(self, ssn: Session) -> CardMemo:
        snap = ssn.snapshot
        memo = snap.card_memo
        self._owned = memo is not None and memo.acquire(ssn.now)
        if memo is None or not self._owned:
            memo = CardMemo()  # another cycle has the cache's memo: this one starts from the holds
        cpu, mem = self._columns = _column(snap.index.names, "cpu"), _column(snap.index.names, "memory")
        free = ssn.free
        memo.sync(
            nodes=snap.nodes,
            node_pos=snap.node_pos,
            holds=snap.device_holds,
            at=snap.holds_at,
            cpu=free[:, cpu].copy() if cpu is not None else np.zeros(len(free), dtype=np.int64),
            memory=free[:, mem].copy() if mem is not None else np.zeros(len(free), dtype=np.int64),
            group_of=lambda uid: _group(snap.pods[uid]) if uid in snap.pods else "",
            model_label=self.args.model_label,
        )
        for uid in snap.plans:
            a = memo.applied.get(uid)
            if a is not None:
                self._movable.setdefault(a.row, set()).add(uid)  # planned, not bound: a re-plan may move it
        self._memo = memo
        return memo

    def _sync(self, ssn: Session) -> CardMemo:
        """Follow the session: placements undone and evictions give their cards back (an undone eviction
        takes them again), new placements of pods this plugin judged take theirs."""
        memo = self._memo or self._load(ssn)
        plans, names, evicting = ssn.plans, ssn.snapshot.node_names, ssn.evicting
        for uid in [u for u in self._evicted if u not in evicting] if self._evicted else ():
            memo.put(uid, *self._evicted.pop(uid))
        for uid in [u for u in evicting if u in memo.applied] if evicting else ():
            taken = memo.take_off(uid)
            if taken is not None:
                self._evicted[uid] = taken
            self._decided.pop(uid, None)
        undone = self._undone
        if undone:
            self._undone = set()
        for row in undone:
            for uid in [u for u in self._movable.get(row, ()) if plans.get(u) != names[row]]:
                memo.take_off(uid)
                self._decided.pop(uid, None)
                self._movable[row].discard(uid)
                p = ssn.snapshot.pods.get(uid)  # placed again later: it takes its cards again
                if p is not None and self._judges(p) is not None:
                    self._unplaced[uid] = p
        for uid, p in list(self._unplaced.items()):
            node = plans.get(uid)
            if node is None or uid in evicting:
                continue
            at = ssn.snapshot.node_pos.get(node)
            request = self._judges(p)
            gpus = memo.gpus.get(at) if at is not None else None
            if at is None or request is None or gpus is None:
                continue
            row = at
            choice = self._choose(ssn, memo, row, p, request)
            if choice.taken is None:  # placed where the cards refuse it (no predicate ran): hold nothing
                continue
            hold = _hold(gpus, request, choice.taken, node, ssn.now, self.fast_paths)
            if hold is None:
                continue
            whole = request.kind == NUMBER
            memo.put(uid, (node, hold), Applied(row, request.family, choice.taken, whole, _group(p)))
            self._movable.setdefault(row, set()).add(uid)
            del self._unplaced[uid]
            self._decided[uid] = (gpus, request, choice.taken, node)
        return memo

    def _choose(self, ssn: Session, memo: CardMemo, row: int, pod: Pod, request: GpuRequest) -> Choice:
        policy = self._policy(request)
        if request.family == VGPU:
            return decide(memo.gpus[row], memo.vgpu.get(row, []), request, policy, _group(pod))
        shape_of = lambda: _learn(ssn, memo, pod, request, self.args, self._shapes)  # noqa: E731
        return gpu_verdicts.choose(
            memo, row, request, policy, shape_of, fragmentation=policy == FRAGMENTATION, fast=self.fast_paths
        )

    def placed(self, ssn: Session, queue: str, request: Vector, row: int, count: int) -> None:
        memo = self._memo
        if memo is None:
            return  # (before the load, no placement of a pod holding cards exists; the load reads free)
        if count < 0:
            self._undone.add(row)
        cpu, mem = self._columns
        memo.set_free(
            row,
            int(ssn.free[row, cpu]) if cpu is not None else 0,
            int(ssn.free[row, mem]) if mem is not None else 0,
        )

    # --- judging ---------------------------------------------------------------------------------------
    def _judge(self, ssn: Session, pod: Pod, request: GpuRequest, candidates: Mask) -> tuple[Mask, Scores]:
        """Per node, whether ``pod``'s cards fit and its score there (0..100) by its policy; nodes outside
        ``candidates`` may be left unjudged (False)."""
        last = self._last
        if self.fast_paths and last is not None and last[0] is pod and last[1] is not None:  # noqa: SIM102
            if last[1] == _moment(ssn, self._memo, self._evicted, self._undone):
                return last[2], last[3]  # (pod_fit, then pod_score: nothing changed between, nothing to sync)
        memo = self._sync(ssn)
        if pod.uid not in memo.applied:
            self._unplaced[pod.uid] = pod
        policy = self._policy(request)
        if request.family == SHARE:
            shape_of = lambda: _learn(ssn, memo, pod, request, self.args, self._shapes)  # noqa: E731
            fit, score = gpu_verdicts.judge(
                memo, request, policy, shape_of, fragmentation=policy == FRAGMENTATION, fast=self.fast_paths
            )
            self._last = (pod, _moment(ssn, memo, self._evicted, self._undone), fit, score)
            return fit, score
        # vGPU: card by card in Python, on the candidates with vGPU cards only, memoized per ask while
        # nothing is placed (pods asking alike share it).
        if self._vgpu_at != memo.share.clock.clock:
            self._vgpu, self._vgpu_at = {}, memo.share.clock.clock
        group = _group(pod) if request.group_spread else ""
        key = (request, group, policy)
        seen = self._vgpu.get(key)
        if seen is None:
            n = len(candidates)
            seen = self._vgpu[key] = (np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.float64), {})
        fit, score, known = seen
        for row in memo.vgpu_rows[candidates[memo.vgpu_rows]].tolist():
            if row not in known:
                c = known[row] = decide(memo.gpus[row], memo.vgpu[row], request, policy, _group(pod))
                fit[row], score[row] = c.taken is not None, c.score
        return fit, score

    # --- hooks -----------------------------------------------------------------------------------------
    def pod_fit(self, ssn: Session, pod: Pod, candidates: Mask) -> Mask | None:
        request = self._judges(pod)
        if request is None:
            return None
        if request.problem:
            return np.zeros(len(candidates), dtype=np.bool_)
        fit, _ = self._judge(ssn, pod, request, candidates)
        return fit & candidates

    def pod_fit_reason(self, ssn: Session, pod: Pod, candidates: Mask) -> str | None:
        request = self._judges(pod)
        if request is None:
            return None
        if request.problem:
            return f"{NAME}: {request.problem}"
        fit, _ = self._judge(ssn, pod, request, candidates)
        refused = np.flatnonzero(candidates & ~fit).tolist()
        if not refused:
            return None
        return _refusal(ssn, self._sync(ssn), pod, request, self._policy(request), refused)

    def node_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Scores | None:
        return None

    def node_score_row(self, ssn: Session, request: Vector, row: int) -> float | None:
        return None  # (as node_score: see row_scores.RowScorer)

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        if not self.args.weight:
            return None
        request = self._judges(pod)
        if request is None:
            return self._cpu_score(ssn, pod, candidates) if pod.gpu is None else None
        if request.problem or not self._policy(request):
            return None
        fit, score = self._judge(ssn, pod, request, candidates)
        out: Scores = self.args.weight * score
        out[~(fit & candidates)] = 0.0  # (np.where(fit & candidates, out, 0.0), in fewer passes)
        return out

    def _cpu_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        """A pod without GPUs under the fragmentation policy: where its cpu and memory strand least GPU.
        No opinion until a GPU pod was seen, or on a cluster without shared cards (the common case)."""
        if self.args.policy != FRAGMENTATION or not self.args.kinds & {MEMORY, NUMBER}:
            return None
        if self._scorable is None:
            self._scorable = any(n.gpus is not None and n.gpus.share for n in ssn.snapshot.nodes)
        if not self._scorable:
            return None
        memo = self._sync(ssn)
        frag = memo.frag()
        if frag is None:
            return None
        out: Scores = np.where(candidates, self.args.weight * frag.rise(_shape(pod, None))[2], 0.0)
        return out

    def close(self, ssn: Session) -> None:
        """The cards of every pod placed in this cycle, as the annotations to write before it binds."""
        if self._memo is None:
            return  # no GPU pod was asked about
        self._sync(ssn)
        placements = ssn.result.placements
        for uid, (gpus, request, taken, node) in self._decided.items():
            if uid in placements:
                values = device_annotations(gpus, request, taken, node, ssn.now)
                ssn.result.annotations.setdefault(uid, {}).update(values)
        if self._owned:
            self._memo.release()
            self._owned = False

    def card_use(self, ssn: Session) -> dict[tuple[int, str], list[CardUse]]:
        """Every card's use as the session stands (for tests; the simulator reads the pods' annotations)."""
        memo = self._sync(ssn)
        out = {(row, SHARE): memo.share.use(row) for row, g in memo.gpus.items() if g.share}
        out.update({(row, VGPU): use for row, use in memo.vgpu.items()})
        return out


def _moment(ssn: Session, memo: CardMemo | None, evicted: object, undone: object) -> tuple[int, ...] | None:
    """Where the session and the cards stand: while it is the same, a pod's share verdict stands and
    _sync has nothing to do (plans change with the node clock; evictions and undos are left out)."""
    if memo is None or ssn.evicting or evicted or undone:
        return None
    version = memo.learner.version if memo.learner is not None else -1
    return (memo.share.clock.clock, version, ssn.nodes.clock, len(ssn.plans))


def _hold(
    gpus: NodeGpus, request: GpuRequest, taken: Taken, node: str, now: float, fast: bool
) -> GpuHold | None:
    """What a pod given ``taken`` holds, as its annotations will say (those are written at close)."""
    if fast and request.family == SHARE:
        return share_hold(gpus, request, taken)
    return pod_hold(device_annotations(gpus, request, taken, node, now), request)


def _column(names: tuple[str, ...], name: str) -> int | None:
    return names.index(name) if name in names else None


def _group(pod: Pod) -> str:
    return str(pod_group_key(pod)) if pod.group_name else ""


def _refusal(
    ssn: Session, memo: CardMemo, pod: Pod, request: GpuRequest, policy: str, refused: list[int]
) -> str:
    """Why the cards of the ``refused`` rows cannot take ``pod``: a node with cards of the family says
    the most; else the first node."""
    family = request.family
    has = memo.share.cards if family == SHARE else None
    row = next((r for r in refused if (has[r] if has is not None else r in memo.vgpu)), refused[0])
    gpus = memo.gpus.get(row)
    if family == SHARE and gpus is not None and gpus.share:
        why = memo.share.choose(row, request, "" if policy == FRAGMENTATION else policy).why
    else:
        why = decide(gpus, memo.vgpu.get(row, []), request, policy, _group(pod)).why
    problem = f" ({gpus.problem})" if gpus is not None and gpus.problem else ""
    more = f" (and {len(refused) - 1} more nodes)" if len(refused) > 1 else ""
    return f"{NAME}: node {ssn.snapshot.node_names[row]}: {why}{problem}{more}"


def _shape(pod: Pod, request: GpuRequest | None, models: tuple[str, ...] = ()) -> Shape:
    cpu, memory = pod.requests.get("cpu", 0), pod.requests.get("memory", 0)
    if request is None:
        return Shape(cpu=cpu, memory=memory, models=models)
    if request.kind == MEMORY:
        return Shape(share=request.amount, cpu=cpu, memory=memory, models=models)
    return Shape(cards=request.amount, cpu=cpu, memory=memory, models=models)


def _models(ssn: Session, memo: CardMemo, pod: Pod) -> tuple[str, ...]:
    """The GPU models the pod's node constraints allow (none: any)."""
    if not pod.constraints.node_selector and pod.constraints.affinity_terms is None:
        return ()
    allowed = ssn.masks.static_mask(pod.constraints)
    ids = np.unique(memo.model[allowed & (memo.model < len(memo.models))])
    if len(ids) == len(memo.models):
        return ()
    return tuple(memo.models[i] for i in ids.tolist())


def _learn(
    ssn: Session, memo: CardMemo, pod: Pod, request: GpuRequest, args: Args, shapes: dict[PodUID, Shape]
) -> Shape:
    """The pod's shape with the GPU models its node constraints allow (learned once per pod; ``shapes``
    keeps it for the cycle, whose snapshot fixes both)."""
    shape = shapes.get(pod.uid)
    if shape is None:
        shape = shapes[pod.uid] = _shape(pod, request, _models(ssn, memo, pod))
    if not memo.learned(pod.uid):
        memo.learn(pod.uid, shape, args.half_life, args.coverage, args.best_fit)
    return shape
