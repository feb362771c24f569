"""deviceshare: GPU sharing and whole GPUs card by card, with the annotations Volcano's device plugins
read, written before the pod binds.

Mirrors Volcano's ``deviceshare`` plugin for its NVIDIA families (see :mod:`extender.core.gpus` for the
resource names, the node and pod annotations and how cards are chosen):

- ``deviceshare.GPUSharingEnable``: pods asking ``volcano.sh/gpu-memory`` take that memory of one card;
- ``deviceshare.GPUNumberEnable``: pods asking ``volcano.sh/gpu-number`` take that many idle cards whole;
- ``deviceshare.VGPUEnable``: pods asking the ``volcano.sh/vgpu-*`` family take vGPU slices of the cards
  the node registers, never beyond a card's memory, cores or sharer count;
- ``deviceshare.SchedulePolicy`` (``binpack`` or ``spread``; a pod's ``hami.io/gpu-scheduler-policy``
  overrides it): which card a pod takes on a node, and the node score, ``deviceshare.ScheduleWeight`` ×
  (0..100) (``binpack``: the fuller the cards it would take, the better; ``spread``: idle cards win).

As a predicate (``pod_fit``) it keeps a pod off nodes whose cards cannot take it; a pod it judges is
placed one by one, so a gang's pods each see the cards the ones before took (a gang's GPUs are planned
together and undone together: the plugin follows the session's plans). The cards a pod takes are
written on it when the cycle closes (``CycleResult.annotations``), and the scheduler admits the planned
node in the filter, or binds, only once they are there: the device plugin never starts a pod without its
cards, and no two pods are given the same card beyond its capacity, because pumice is the one writer.

Card use comes from the pods that hold cards (``Snapshot.device_holds``): bound pods by their
annotations, planned ones by their plan's decision, so a restart recounts every card from the API
server.

Deliberate differences from Volcano:

- gpushare memory and number can be on together (Volcano refuses that conf), and a card held whole
  (``gpu-number``) is never shared with a memory pod (Volcano counts only memory on it);
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
        deviceshare.SchedulePolicy: binpack
        deviceshare.ScheduleWeight: 10
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.errors import ConfigError
from extender.core.fit import Mask
from extender.core.gpu_cards import (
    CardUse,
    Choice,
    ShareMatrix,
    decide,
    device_annotations,
    hold_positions,
    take,
)
from extender.core.gpus import MEMORY, NUMBER, POLICIES, SHARE, VGPU, GpuRequest, NodeGpus
from extender.core.model import Pod, PodUID
from extender.core.resources import Vector
from extender.core.snapshot import pod_group_key
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session

NAME: Final = "deviceshare"

# What a pod holds: its node row, (card position, memory, cores) per card, whether whole, the card
# family and its group.
_Taken = tuple[int, tuple[tuple[int, int, int], ...], bool, str, str]


ARGUMENTS: Final = ArgumentTable(
    {
        "deviceshare.GPUSharingEnable": (bool, False),
        "deviceshare.GPUNumberEnable": (bool, False),
        "deviceshare.VGPUEnable": (bool, False),
        "deviceshare.NodeLockEnable": (bool, False),
        "deviceshare.SchedulePolicy": (str, ""),
        "deviceshare.ScheduleWeight": (int, 0),
        "deviceshare.KnownGeometriesCMName": (str, ""),
        "deviceshare.KnownGeometriesCMNamespace": (str, ""),
        # Volcano's Ascend NPU families and exclusive-GPU rules: accepted, not implemented (see above).
        "deviceshare.AscendMindClusterVNPUEnable": (bool, False),
        "deviceshare.AscendHAMiVNPUEnable": (bool, False),
        "deviceshare.GPUExclusiveRules": (list, []),
    }
)


class DeviceSharePlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS
    row_local_scores = True  # node_score has no opinion: its scores are per pod
    fit_follows_evictions = True  # an evicted pod's cards are free (see _sync)

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.kinds = frozenset(
            kind
            for kind, key in (
                (MEMORY, "deviceshare.GPUSharingEnable"),
                (NUMBER, "deviceshare.GPUNumberEnable"),
                (VGPU, "deviceshare.VGPUEnable"),
            )
            if args[key]
        )
        self.policy: str = args["deviceshare.SchedulePolicy"]
        if self.policy not in POLICIES:
            raise ConfigError(
                f"plugin {NAME}: deviceshare.SchedulePolicy must be binpack or spread, got {self.policy!r}"
            )
        self.weight: int = args["deviceshare.ScheduleWeight"]
        self._loaded = False
        self._clear({}, 0)

    def _clear(self, gpus: dict[int, NodeGpus], rows: int) -> None:
        """The working state of a cycle over nodes with ``gpus`` (by row), no card used yet."""
        self._gpus = gpus
        self._use: dict[tuple[int, str], list[CardUse]] = {
            (row, family): [CardUse() for _ in g.cards(family)]
            for row, g in gpus.items()
            for family in (SHARE, VGPU)
        }
        self._share = ShareMatrix(rows, {r: g for r, g in gpus.items() if g.share})
        self._vgpu_rows: npt.NDArray[np.intp] = np.asarray(
            sorted(r for r, g in gpus.items() if g.vgpu), dtype=np.intp
        )
        self._held: dict[PodUID, _Taken] = {}
        # Held pods a plan or an eviction may move (those bound stay unless evicted), those evicted with
        # what they held (an undone eviction gives it back), and pods asked about but holding nothing.
        self._movable: dict[int, set[PodUID]] = {}
        # Rows a placement was taken off since the last sync (``placed``): only there can a plan be undone.
        self._undone: set[int] = set()
        self._evicted: dict[PodUID, _Taken] = {}
        self._unplaced: dict[PodUID, Pod] = {}
        self._version = 0
        self._memo: dict[tuple[object, ...], tuple[Mask, Scores, dict[int, Choice]]] = {}
        self._memo_version = -1
        self._decided: dict[PodUID, dict[str, str]] = {}

    def _judges(self, pod: Pod) -> GpuRequest | None:
        g = pod.gpu
        return g if g is not None and g.kind in self.kinds else None

    def open(self, ssn: Session) -> None:
        self._loaded = False  # the cards load when the cycle first asks about a GPU pod (_load)

    def _load(self, ssn: Session) -> None:
        """The cards and their use, built when the cycle first asks about a GPU pod (most cycles have
        none, and counting every held card of a large cluster is the plugin's main cost)."""
        self._loaded = True
        snap = ssn.snapshot
        self._clear({row: n.gpus for row, n in enumerate(snap.nodes) if n.gpus is not None}, len(snap.nodes))
        if not self.kinds:
            return
        keys: dict[tuple[int, str], dict[str, int]] = {}
        for uid, (node, hold) in sorted(snap.device_holds.items()):
            at = snap.node_pos.get(node)
            on = self._gpus.get(at) if at is not None else None
            if at is None or on is None:
                continue
            where = keys.get((at, hold.family))
            if where is None:
                where = keys[(at, hold.family)] = {c.key: i for i, c in enumerate(on.cards(hold.family))}
            p = snap.pods.get(uid)
            held = (at, hold_positions(where, hold), hold.whole, hold.family, _group(p) if p else "")
            take(self._use[(at, hold.family)], held[1], hold.whole, held[4], 1)
            self._held[uid] = held
            if uid in snap.plans:
                self._movable.setdefault(at, set()).add(uid)  # planned, not bound: a re-plan may move it
        for at, family in keys:
            if family == SHARE:
                self._share.update(at, self._use[(at, SHARE)])

    # --- following the session's placements -------------------------------------------------------
    def _apply(self, held: _Taken, sign: int) -> None:
        row, taken, whole, family, group = held
        use = self._use[(row, family)]
        take(use, taken, whole, group, sign)
        if family == SHARE:
            self._share.update(row, use)
        self._version += 1

    def _hold(self, uid: PodUID, held: _Taken) -> None:
        self._apply(held, 1)
        self._held[uid] = held

    def _release(self, uid: PodUID) -> _Taken:
        held = self._held.pop(uid)
        self._apply(held, -1)
        self._decided.pop(uid, None)
        return held

    def _sync(self, ssn: Session) -> None:
        """Follow the session: placements undone and evictions give their cards back (an undone eviction
        takes them again), new placements of pods this plugin judged take theirs."""
        if not self._loaded:
            self._load(ssn)
        plans, names, evicting = ssn.plans, ssn.snapshot.node_names, ssn.evicting
        for uid in [u for u in self._evicted if u not in evicting]:
            self._hold(uid, self._evicted.pop(uid))
        for uid in [u for u in evicting if u in self._held]:
            self._evicted[uid] = self._release(uid)
        undone, self._undone = self._undone, set()
        for row in undone:
            for uid in [u for u in self._movable.get(row, ()) if plans.get(u) != names[row]]:
                self._release(uid)
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
            gpus = self._gpus.get(at) if at is not None else None
            if at is None or request is None or gpus is None:
                continue
            group = _group(p)
            choice = decide(gpus, self._use[(at, request.family)], request, self._policy(request), group)
            if choice.taken is None:  # placed where the cards refuse it (no predicate ran): hold nothing
                continue
            self._hold(uid, (at, choice.taken, request.kind == NUMBER, request.family, group))
            self._movable.setdefault(at, set()).add(uid)
            del self._unplaced[uid]
            self._decided[uid] = device_annotations(gpus, request, choice.taken, node, ssn.now)

    def placed(self, ssn: Session, queue: str, request: Vector, row: int, count: int) -> None:
        if count < 0 and self._loaded:  # (before the load, no placement of a pod holding cards exists)
            self._undone.add(row)

    def _policy(self, request: GpuRequest) -> str:
        return request.policy or self.policy

    def _judge(self, ssn: Session, pod: Pod, request: GpuRequest, candidates: Mask) -> tuple[Mask, Scores]:
        """Per node, whether ``pod``'s cards fit and its score there; nodes outside ``candidates`` may be
        left unjudged (False). Memoized per ask while nothing is placed: pods asking alike share it."""
        self._sync(ssn)
        if pod.uid not in self._held:
            self._unplaced[pod.uid] = pod
        if self._memo_version != self._version:
            self._memo, self._memo_version = {}, self._version
        group = _group(pod) if request.group_spread else ""
        policy = self._policy(request)
        key = (request, group, policy)
        memo = self._memo.get(key)
        if memo is None:
            n = len(candidates)
            if request.family == SHARE:
                fit, score = self._share.judge(request, policy)
            else:
                fit, score = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.float64)
            memo = self._memo[key] = (fit, score, {})
        fit, score, known = memo
        if request.family == VGPU:  # card by card in Python, on the candidates with vGPU cards only
            for row in self._vgpu_rows[candidates[self._vgpu_rows]].tolist():
                if row not in known:
                    c = known[row] = decide(
                        self._gpus[row], self._use[(row, VGPU)], request, policy, _group(pod)
                    )
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
        # A node with cards of the family says the most; else the first node.
        row = next((r for r in refused if self._use.get((r, request.family))), refused[0])
        gpus = self._gpus.get(row)
        why = decide(
            gpus, self._use.get((row, request.family), []), request, self._policy(request), _group(pod)
        ).why
        problem = f" ({gpus.problem})" if gpus is not None and gpus.problem else ""
        more = f" (and {len(refused) - 1} more nodes)" if len(refused) > 1 else ""
        return f"{NAME}: node {ssn.snapshot.node_names[row]}: {why}{problem}{more}"

    def node_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Scores | None:
        return None

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        request = self._judges(pod)
        if request is None or request.problem or not self.weight or not self._policy(request):
            return None
        fit, score = self._judge(ssn, pod, request, candidates)
        out: Scores = np.where(fit & candidates, self.weight * score, 0.0)
        return out

    def close(self, ssn: Session) -> None:
        """The cards of every pod placed in this cycle, as the annotations to write before it binds."""
        if not self._loaded:
            return  # no GPU pod was asked about
        self._sync(ssn)
        placements = ssn.result.placements
        for uid, values in self._decided.items():
            if uid in placements:
                ssn.result.annotations.setdefault(uid, {}).update(values)

    def card_use(self, ssn: Session) -> dict[tuple[int, str], list[CardUse]]:
        """Every card's use as the session stands (for tests; the simulator reads the pods' annotations)."""
        self._sync(ssn)
        return self._use


def _group(pod: Pod) -> str:
    return str(pod_group_key(pod)) if pod.group_name else ""
