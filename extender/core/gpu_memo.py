"""What deviceshare keeps from one scheduling cycle to the next, so that a cycle costs what changed:
:class:`CardMemo`, and :class:`HoldLog`, the order in which pods' GPU holds changed.

A cluster's card use changes by a few pods between two cycles, but counting every held card anew is the
plugin's main cost on a large cluster. So one :class:`CardMemo` (the cache's, passed in every snapshot it
builds) holds the card use of the holds it last saw, and each cycle brings it up to its snapshot's
holds by the pods that changed (:meth:`CardMemo.sync`): those the cache's :class:`HoldLog` lists since the
position the memo last read (read up to the snapshot's position only, so what happened after the
snapshot is not seen), and the planned pods of both snapshots; without a log, by comparing every hold.
The cycle then puts its own placements on it and takes them off as the session undoes them (and takes off
what the pods it evicts hold), each pod's hold recorded as it will be listed once the plan stands; the
next sync looks at those pods again too, so it finds nothing to redo for a plan that stood and corrects
one that did not (a plan discarded, an eviction that did not happen yet).

The memo also learns the GPU pod shapes that arrive (:class:`~extender.core.gpu_frag.ShapeLearner`) and
keeps the fragmentation figures per row (:class:`~extender.core.gpu_frag_cache.FragCache`), both carried
across cycles like the card use; and the cpu and memory left on each node (from the snapshot, then from
the cycle's placements), which the measure reads. A change of those that no figure depends on (from
one plentiful amount to another, :meth:`~extender.core.gpu_frag_cache.FragCache.plenty`) is not counted
as a change of the row, so a placement on a roomy node costs its cards' change alone.

One cycle uses a memo at a time (:meth:`CardMemo.acquire`; a cycle that finds it taken works on a memo
of its own, built from its snapshot). A memo taken by a cycle that failed before its end is taken over
once that cycle is :data:`STALE` seconds old on the cycles' clock. Invariants: after :meth:`sync` the
card use is exactly that of the snapshot's holds (a property test compares it with a memo built afresh
over random clusters and event sequences); a hold is on the cards at most once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from extender.core.gpu_cards import CardUse, hold_positions, take
from extender.core.gpu_frag import FragMeasure, Mix, Shape, ShapeLearner
from extender.core.gpu_frag_cache import FragCache
from extender.core.gpu_share import ShareCards
from extender.core.gpus import SHARE, VGPU, GpuHold
from extender.core.model import Node, PodUID

STALE: Final = 600.0  # seconds on the cycles' clock after which a memo still taken is taken over
_LEARNED: Final = 65536  # pods remembered as already learned from (the oldest are forgotten first)

Held = tuple[str, GpuHold]  # (node, what the pod holds there), as Snapshot.device_holds lists it
Position = tuple[object, int]  # (a HoldLog's generation, how far into it)


class HoldLog:
    """The GPU holds of bound pods (``holds``), kept by one writer (the cache), with the order in which
    they changed: a reader that read up to one :attr:`position` learns what changed up to a later one
    from :meth:`changed`, without reading the rest. The log is started afresh (a new generation) when it
    grows past a few times the holds; a position of an older generation means: compare everything."""

    def __init__(self) -> None:
        self.holds: dict[PodUID, Held] = {}
        self._log: list[PodUID] = []
        self._generation = object()

    def set(self, uid: PodUID, held: Held | None) -> None:
        if self.holds.get(uid) == held:
            return
        if held is None:
            del self.holds[uid]
        else:
            self.holds[uid] = held
        if len(self._log) > 4 * len(self.holds) + 4096:
            self._log, self._generation = [], object()
        self._log.append(uid)

    @property
    def position(self) -> Position:
        return (self._generation, len(self._log))

    def changed(self, since: Position, upto: Position) -> list[PodUID] | None:
        """The pods whose hold changed between the two positions (None: not of this generation)."""
        if since[0] is not self._generation or upto[0] is not self._generation or since[1] > upto[1]:
            return None
        return self._log[since[1] : upto[1]]


@dataclass(frozen=True, slots=True)
class HoldsAt:
    """Where a snapshot's holds stand in its cache's :class:`HoldLog`, and which of them are planned
    (held by a plan's decided cards, not listed in the log)."""

    log: HoldLog
    position: Position
    planned: frozenset[PodUID]


class Applied(NamedTuple):
    """A hold as it sits on the cards: its row, family, (position, memory, cores) per card, whether held
    whole, and the pod's group (vGPU ``group_spread``). (A named tuple: one is made per hold counted in,
    tens of thousands on a cold start, and a tuple is several times cheaper to make than a frozen
    dataclass.)"""

    row: int
    family: str
    taken: tuple[tuple[int, int, int], ...]
    whole: bool
    group: str


class CardMemo:
    """Card use, learned shapes and fragmentation figures across cycles (see the module docstring)."""

    fast_paths = True  # False: every change of cpu or memory left counts (for the tests)

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._taken_at: float | None = None
        self._nodes: tuple[Node, ...] | None = None
        self.model_label = ""
        self._reset(())
        self.learner: ShapeLearner | None = None
        self.best_fit = False
        self._learned: dict[PodUID, None] = {}
        self._frag: FragCache | None = None
        self._frag_key: tuple[object, ...] = ()
        self._frag_mix: tuple[tuple[Shape, float], ...] = ()  # the shapes the figures weigh
        self._batch: list[tuple[int, tuple[tuple[int, int, int], ...], bool, int]] | None = None
        self._moved: set[PodUID] = set()  # put on or taken off by a cycle since the last sync

    def _reset(self, nodes: Sequence[Node]) -> None:
        self._nodes = tuple(nodes)
        self.gpus = {row: n.gpus for row, n in enumerate(nodes) if n.gpus is not None}
        self.share = ShareCards(len(nodes), {r: g for r, g in self.gpus.items() if g.share})
        self.vgpu: dict[int, list[CardUse]] = {
            r: [CardUse() for _ in g.vgpu] for r, g in self.gpus.items() if g.vgpu
        }
        self.vgpu_rows: npt.NDArray[np.intp] = np.asarray(sorted(self.vgpu), dtype=np.intp)
        self._keys: dict[tuple[int, str], dict[str, int]] = {}
        self.seen: dict[PodUID, Held] = {}
        self.applied: dict[PodUID, Applied] = {}
        self._log: HoldLog | None = None
        self._position: Position | None = None
        self._planned: frozenset[PodUID] = frozenset()
        self.cpu = np.zeros(len(nodes), dtype=np.int64)
        self.memory = np.zeros(len(nodes), dtype=np.int64)
        models = [str(n.labels.get(self.model_label, "")) if n.gpus is not None else "" for n in nodes]
        self.models = tuple(sorted({m for m in models if m}))
        pos = {m: i for i, m in enumerate(self.models)}
        self.model = np.fromiter(
            (pos.get(m, len(self.models)) for m in models), dtype=np.intp, count=len(nodes)
        )
        self._frag = None

    # --- who uses it ---------------------------------------------------------------------------------
    def acquire(self, now: float) -> bool:
        """Take the memo for a cycle at ``now``; False when another cycle has it."""
        if self._lock.acquire(blocking=False):
            self._taken_at = now
            return True
        taken = self._taken_at
        if taken is not None and now - taken > STALE:  # its cycle failed and never gave it back
            self._taken_at = now
            return True
        return False

    def release(self) -> None:
        self._taken_at = None
        if self._lock.locked():
            self._lock.release()

    # --- following the snapshots -----------------------------------------------------------------------
    def sync(
        self,
        *,
        nodes: Sequence[Node],
        node_pos: Mapping[str, int],
        holds: Mapping[PodUID, Held],
        at: HoldsAt | None,
        cpu: npt.NDArray[np.int64],
        memory: npt.NDArray[np.int64],
        group_of: Callable[[PodUID], str],
        model_label: str,
    ) -> None:
        """Bring the memo to a snapshot's nodes, holds (with their place in the log, when known) and
        cpu and memory left per node."""
        if nodes is not self._nodes or model_label != self.model_label:
            same = (
                self._nodes is not None
                and model_label == self.model_label
                and len(nodes) == len(self._nodes)
                and all(
                    a.name == b.name and a.gpus == b.gpus and a.labels == b.labels
                    for a, b in zip(nodes, self._nodes, strict=True)
                )
            )
            if same:
                self._nodes = tuple(nodes)
            else:
                self.model_label = model_label
                self._reset(nodes)
        uids: set[PodUID] | list[PodUID] | None = None
        if at is not None and at.log is self._log and self._position is not None:
            logged = at.log.changed(self._position, at.position)
            if logged is not None:
                uids = {*logged, *self._planned, *at.planned, *self._moved}
        if uids is None:
            uids = [*holds, *(u for u in self.seen if u not in holds)]
        self._batch = []  # gpushare changes, put on the matrices at once below
        for uid in uids:
            new, old = holds.get(uid), self.seen.get(uid)
            if new != old:
                if old is not None:
                    self._take_off(uid)
                if new is not None:
                    self._put_on(uid, new, node_pos, group_of(uid))
        self._moved = set()
        batch, self._batch = self._batch, None
        if batch:
            self.share.add_many(batch)
        if at is not None:
            self._log, self._position, self._planned = at.log, at.position, at.planned
        else:
            self._log, self._position, self._planned = None, None, frozenset()
        changed = np.flatnonzero((self.cpu != cpu) | (self.memory != memory))
        if len(changed):
            frag, old_cpu, old_memory = self._frag, self.cpu[changed], self.memory[changed]
            self.cpu[changed], self.memory[changed] = cpu[changed], memory[changed]
            if self.fast_paths and frag is None:  # (see set_free)
                changed = changed[:0]
            elif self.fast_paths and frag is not None:
                need_cpu, need_memory = frag.plenty()
                enough = np.minimum(old_cpu, cpu[changed]) >= need_cpu
                enough &= np.minimum(old_memory, memory[changed]) >= need_memory
                changed = changed[~enough]
            if len(changed):
                self.share.clock.touch(changed)

    def _keymap(self, row: int, family: str) -> dict[str, int]:
        keys = self._keys.get((row, family))
        if keys is None:
            keys = self._keys[(row, family)] = {c.key: i for i, c in enumerate(self.gpus[row].cards(family))}
        return keys

    def _put_on(self, uid: PodUID, held: Held, node_pos: Mapping[str, int], group: str) -> None:
        self.seen[uid] = held
        node, hold = held
        row = node_pos.get(node)
        if row is None or row not in self.gpus or not self.gpus[row].cards(hold.family):
            return  # on a node that is gone or has no cards of its family (any more): it holds nothing here
        taken = hold_positions(self._keymap(row, hold.family), hold)
        # What put does, less what it undoes: sync took the pod off first (so it holds nothing here) and
        # forgets the pods moved once it is done.
        a = Applied(row=row, family=hold.family, taken=taken, whole=hold.whole, group=group)
        self.applied[uid] = a
        self._apply(a, 1)

    def _take_off(self, uid: PodUID) -> None:
        self.seen.pop(uid, None)
        a = self.applied.pop(uid, None)
        if a is not None:
            self._apply(a, -1)

    def _apply(self, a: Applied, sign: int) -> None:
        if a.family == SHARE:
            if self._batch is not None:
                self._batch.append((a.row, a.taken, a.whole, sign))
            else:
                self.share.add(a.row, a.taken, a.whole, sign)
        elif a.family == VGPU:
            take(self.vgpu[a.row], a.taken, a.whole, a.group, sign)
            self.share.clock.touch(a.row)

    # --- the cycle's own placements --------------------------------------------------------------------
    def put(self, uid: PodUID, held: Held, applied: Applied) -> None:
        """``uid`` holds ``applied`` (listed as ``held`` once its plan stands)."""
        self._moved.add(uid)
        self._take_off(uid)
        self.seen[uid] = held
        self.applied[uid] = applied
        self._apply(applied, 1)

    def take_off(self, uid: PodUID) -> tuple[Held, Applied] | None:
        """``uid`` holds nothing any more; what it held, to put back with :meth:`put`."""
        held, a = self.seen.get(uid), self.applied.get(uid)
        self._moved.add(uid)
        self._take_off(uid)
        return None if held is None or a is None else (held, a)

    def set_free(self, row: int, cpu: int, memory: int) -> None:
        """The cpu and memory left on ``row`` changed (a placement of the cycle)."""
        old_cpu, old_memory = int(self.cpu[row]), int(self.memory[row])
        if old_cpu != cpu or old_memory != memory:
            self.cpu[row], self.memory[row] = cpu, memory
            frag = self._frag
            if self.fast_paths:
                # Only the fragmentation figures read cpu and memory (binpack's and spread's judging and
                # vGPU's never do; figures made later start from every row), and not plentiful amounts
                # (FragCache.plenty): otherwise the row's figures stand.
                if frag is None:
                    return
                need_cpu, need_memory = frag.plenty()
                if min(old_cpu, cpu) >= need_cpu and min(old_memory, memory) >= need_memory:
                    return
            self.share.clock.touch(row)

    # --- shapes and fragmentation ----------------------------------------------------------------------
    def learned(self, uid: PodUID) -> bool:
        """Whether pod ``uid``'s shape was counted already."""
        return uid in self._learned

    def learn(
        self, uid: PodUID, shape: Shape, half_life: int, coverage: float, best_fit: bool = False
    ) -> None:
        """Count pod ``uid``'s shape (once per pod); ``best_fit``: how the figures break ties (see frag)."""
        self.best_fit = best_fit
        if self.learner is None or (self.learner.half_life, self.learner.coverage) != (half_life, coverage):
            self.learner = ShapeLearner(half_life, coverage)
            self._learned = {}
        if uid in self._learned:
            return
        self._learned[uid] = None
        if len(self._learned) > _LEARNED:
            del self._learned[next(iter(self._learned))]
        self.learner.see(shape)

    def frag(self) -> FragCache | None:
        """The fragmentation figures for the mix learned so far (None before any GPU pod was seen).

        The mix weighs every shape on every node, a shape barred from a node's GPU model finding all its
        idle GPU fragmented (the paper's "no access"), rather than per model: unconstrained pods then go
        first to the models the constrained ones may not use. On openb's model-constrained traces that
        allocates far more GPU by the time 100 % has arrived (docs/src/benchmarks.md has the figures).
        Ties break as the last :meth:`learn` said (:func:`~extender.core.gpu_frag.tie_break`)."""
        learner = self.learner
        if learner is None or not learner.mix():
            return None
        key = (learner.version, self.share, self.best_fit)
        if self._frag is None or self._frag_key != key:
            shapes = learner.mix()
            if self._frag is not None and self._frag_key[1:] == key[1:] and shapes == self._frag_mix:
                self._frag_key = key  # rebuilt alike (one shape, or weights that did not move): same figures
                return self._frag
            self._frag_mix = shapes
            mix = Mix(shapes, self.models, per_model=False)
            self._frag = FragCache(
                FragMeasure(mix),
                self.share.clock,
                lambda rows: self.share.frag_cards(rows, self.cpu, self.memory, self.model),
                width=self.share.memory.shape[1],
                states=lambda rows: self.share.frag_states(rows, self.cpu, self.memory, self.model),
                state=self.share.frag_state(self.cpu, self.memory, self.model),
                best_fit=self.best_fit,
            )
            self._frag_key = key
        return self._frag
