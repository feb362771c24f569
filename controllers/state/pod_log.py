"""The cluster cache's pods in the order its map holds them, kept as chunks a snapshot can take without
copying every pod: :class:`PodLog`.

Why: a scheduling cycle's snapshot carries every pod on a node (inter-pod rules and the victims' index read
them, ``extender.core.residents``). Taken as one tuple of the cache's map, that is one copy of the whole
cluster on the event loop per cycle: 3.3 ms at 110 000 pods, one C call under the GIL, and the largest
share of kube-scheduler's filter p99 while cycles run. Chunks frozen once and rebuilt only when one of
their pods changed make the copy cost what changed.

Invariant: concatenating the chunks, in order, gives the pods in the order of the map this log mirrors,
``PodIndex.pods``: a pod stored again (a new version) moves to the end, as ``pop`` then insert does in a
dict, and a pod laid on a node (``replace``) keeps its place, as assigning an existing key does.
"""

from __future__ import annotations

from extender.core.model import Pod, PodUID
from extender.core.residents import PodChunks

CHUNK = 512  # pods a chunk holds at most: a rebuilt chunk costs ~15 us; a cycle changes a few


class PodLog:
    def __init__(self) -> None:
        self._chunks: list[dict[PodUID, Pod]] = []
        self._frozen: list[tuple[Pod, ...] | None] = []
        self._where: dict[PodUID, int] = {}  # the chunk of each pod

    def append(self, uid: PodUID, pod: Pod) -> None:
        """``uid`` (not held) stored last."""
        if not self._chunks or len(self._chunks[-1]) >= CHUNK:
            # Chunks emptied by removals are dropped only here, by compacting, so indexes stay put between.
            if len(self._chunks) > 2 * (len(self._where) // CHUNK) + 8:
                self._compact()
            self._chunks.append({})
            self._frozen.append(None)
        last = len(self._chunks) - 1
        self._chunks[last][uid] = pod
        self._frozen[last] = None
        self._where[uid] = last

    def remove(self, uid: PodUID) -> None:
        """``uid`` no longer held (nothing if it was not)."""
        i = self._where.pop(uid, None)
        if i is not None:
            del self._chunks[i][uid]
            self._frozen[i] = None

    def replace(self, uid: PodUID, pod: Pod) -> None:
        """``uid`` (held) is now ``pod``, in its place."""
        i = self._where[uid]
        self._chunks[i][uid] = pod
        self._frozen[i] = None

    def chunks(self) -> PodChunks:
        """Every pod held, in order, as immutable chunks (those unchanged since the last call are reused)."""
        frozen = self._frozen
        for i, f in enumerate(frozen):
            if f is None:
                frozen[i] = tuple(self._chunks[i].values())
        return PodChunks(tuple(f for f in frozen if f))  # empty chunks (emptied by removals) left out

    def _compact(self) -> None:
        pods = [(u, p) for chunk in self._chunks for u, p in chunk.items()]
        self._chunks, self._frozen, self._where = [], [], {}
        for start in range(0, len(pods), CHUNK):
            chunk = dict(pods[start : start + CHUNK])
            for u in chunk:
                self._where[u] = len(self._chunks)
            self._chunks.append(chunk)
            self._frozen.append(None)
