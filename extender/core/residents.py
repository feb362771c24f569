"""The pods on nodes that inter-pod rules count, for one snapshot: :class:`Residents`.

Inter-pod affinity, anti-affinity and topology spread (kube-scheduler's InterPodAffinity and
PodTopologySpread, which Volcano's predicates and nodeorder plugins call) count the pods on each node:
bound, unfinished pods of any scheduler, and pods of ours waiting with a live plan (a plan is a
reservation every later decision respects). The lists are worked out on first use and kept, like the
snapshot, unchanged for the cycle; the cycle's own placements are counted on top of them by
:class:`extender.core.interpod.PodsOnNodes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from extender.core.model import Pod, PodPhase, PodUID

_FINISHED: Final = (PodPhase.SUCCEEDED, PodPhase.FAILED)


@dataclass(frozen=True, slots=True)
class PodChunks:
    """Pods in order, as consecutive immutable chunks (a cache's, ``controllers.state.pod_log``): a cache
    that holds 100 000 pods hands a snapshot the chunks it already froze, rebuilding only those changed
    since, instead of copying every pod on the event loop each cycle. Iterating it is iterating the pods."""

    chunks: tuple[tuple[Pod, ...], ...]

    def __iter__(self) -> Iterator[Pod]:
        for chunk in self.chunks:
            yield from chunk


class Residents:
    """The pods on nodes, with their node rows: bound and unfinished (any scheduler's), or waiting with a
    live plan. Worked out on first use, and the pods with inter-pod terms separately from the rest: a
    cycle that places only pods without inter-pod rules walks the cluster's pods once, looking for terms
    that could match them, and never matches a selector against the others."""

    def __init__(
        self,
        pods: Iterable[Pod] | PodChunks,
        plans: Mapping[PodUID, str],
        node_pos: Mapping[str, int],
        termed: Iterable[Pod] | None = None,
    ) -> None:
        """``termed``: the pods of ``pods`` with inter-pod terms, in the same order, when the caller keeps
        them apart (a cache does): :meth:`with_terms` then never walks every pod."""
        # Kept in chunks and walked chunk by chunk (a plain loop, which lets the event loop's thread in
        # between pods): one tuple of every pod would be one copy, under the GIL, of the whole cluster.
        self._chunks = pods.chunks if isinstance(pods, PodChunks) else (tuple(pods),)
        self._termed = None if termed is None else tuple(termed)
        self._plans = plans
        self._node_pos = node_pos
        self._all: tuple[tuple[Pod, int], ...] | None = None
        self._with_terms: tuple[tuple[Pod, int], ...] | None = None
        self._by_namespace: dict[str, list[tuple[Pod, int]]] | None = None
        self._by_label: dict[tuple[str, str, str], list[tuple[Pod, int]]] | None = None

    def _row(self, p: Pod) -> int | None:
        if p.holds_resources:
            return self._node_pos.get(p.node_name)
        if p.waiting:
            node = self._plans.get(p.uid)
            return None if node is None else self._node_pos.get(node)
        return None

    def all(self) -> tuple[tuple[Pod, int], ...]:
        if self._all is None:
            # ``_row`` written out (this runs over every pod of the cluster): a finished pod has no row; a
            # bound one its node's; a waiting one (unbound, not being deleted) its plan's node's.
            node_pos, plans = self._node_pos, self._plans
            out: list[tuple[Pod, int]] = []
            for chunk in self._chunks:
                for p in chunk:
                    if p.phase in _FINISHED:
                        continue
                    if p.node_name:
                        r = node_pos.get(p.node_name)
                    elif p.deleting:
                        continue
                    else:
                        node = plans.get(p.uid)
                        if node is None:
                            continue
                        r = node_pos.get(node)
                    if r is not None:
                        out.append((p, r))
            self._all = tuple(out)
        return self._all

    def bound(self) -> tuple[list[Pod], list[int]]:
        """The pods of :meth:`all` bound to a node (``node_name`` set; being deleted or not) and their
        rows, in the same order: what the running index walks. One pass without a pair per pod when
        :meth:`all` has not been asked (preempt and reclaim at scale ask this first, over every pod)."""
        pods: list[Pod] = []
        rows: list[int] = []
        if self._all is not None:
            for p, r in self._all:
                if p.node_name:
                    pods.append(p)
                    rows.append(r)
            return pods, rows
        node_pos = self._node_pos
        keep_pod, keep_row = pods.append, rows.append
        for chunk in self._chunks:
            for p in chunk:
                # (all()'s test for a bound pod, written out)
                if not p.node_name or p.phase in _FINISHED:
                    continue
                row = node_pos.get(p.node_name)
                if row is not None:
                    keep_pod(p)
                    keep_row(row)
        return pods, rows

    def by_namespace(self) -> Mapping[str, list[tuple[Pod, int]]]:
        """The same, by namespace: most terms look in one namespace only."""
        if self._by_namespace is None:
            out: dict[str, list[tuple[Pod, int]]] = {}
            for p, r in self.all():
                out.setdefault(p.namespace, []).append((p, r))
            self._by_namespace = out
        return self._by_namespace

    def by_label(self) -> Mapping[tuple[str, str, str], list[tuple[Pod, int]]]:
        """The same by (namespace, label key, value): a selector's first ``matchLabels`` pair names the
        only pods it can match, whatever the cluster's size."""
        if self._by_label is None:
            out: dict[tuple[str, str, str], list[tuple[Pod, int]]] = {}
            for p, r in self.all():
                for k, v in p.labels.items():
                    out.setdefault((p.namespace, k, v), []).append((p, r))
            self._by_label = out
        return self._by_label

    def with_terms(self) -> tuple[tuple[Pod, int], ...]:
        """Those whose own inter-pod terms may concern an incoming pod (anti-affinity symmetry, scores)."""
        if self._with_terms is None:
            if self._all is not None:
                self._with_terms = tuple(
                    (p, r) for p, r in self._all if p.affinity is not None and p.affinity.has_pod_terms
                )
            else:
                every = (p for chunk in self._chunks for p in chunk)
                termed = (
                    (p for p in every if p.affinity is not None and p.affinity.has_pod_terms)
                    if self._termed is None
                    else self._termed
                )
                placed = ((p, self._row(p)) for p in termed)
                self._with_terms = tuple((p, r) for p, r in placed if r is not None)
        return self._with_terms
