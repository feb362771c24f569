"""Rules that look at other pods, for one cycle: required inter-pod (anti-)affinity and hard topology
spread as node masks, and the inter-pod preference and soft spread scores.

:class:`PodsOnNodes` counts, per node, the pods on it that match each selector a rule has asked about:
the snapshot's residents (bound and planned pods) plus the cycle's own placements, tentative ones
included, so the members of one gang see each other. Counts are built once per distinct selector per
cycle and then kept current by :meth:`PodsOnNodes.add` / :meth:`PodsOnNodes.remove` (a statement's place
and discard); the topology → domain maps come from the snapshot. A pod with no such rules, in a cluster
whose pods have none, costs nothing here: the session never builds this object for it.

Counts are sparse (node row → pods) and selectors are indexed by their first ``matchLabels`` pair, so a
placement updates only the selectors that can match the pod's labels, and a cluster with thousands of
jobs, each with its own selector, costs per pod what that pod's rules cost, not what all of them do.

Mirrors kube-scheduler's InterPodAffinity filter:

- the incoming pod's required anti-affinity: a node is refused when, for any term, a matching pod is
  in the node's domain of the term's topology key;
- symmetry: a node is refused when a pod in its domain has a required anti-affinity term the incoming
  pod matches;
- the incoming pod's required affinity: a node must, for every term, have in its domain a pod matching
  *all* terms, and have the key. Exception: when no such pod exists anywhere and the pod matches all its
  own terms, any node will do (the first pod of a self-affine group);
- terms count pods being deleted, as kube-scheduler does until they are gone; except the residents a
  preemption in this cycle chose as victims to clear the way (:meth:`PodsOnNodes.lift`), which count as
  gone, as kube-scheduler's preemption judges a node with its victims removed.

and its score (before the ``podaffinity.weight``): per topology domain, the weights of the incoming pod's
preferred terms matched by pods there (anti-affinity subtracts), plus, for pods there, 1 for each of their
required affinity terms (kube-scheduler's default hardPodAffinityWeight) and the weight of each preferred
term the incoming pod matches; a node scores its domains' sum, normalised to 0..100 between the lowest
and the highest candidate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from extender.core import fit, spread
from extender.core.model import NodeConstraints, Pod, PodAffinityTerm, PodUID
from extender.core.selector import PodMatcher, describe_selector, term_matches
from extender.core.snapshot import Snapshot
from extender.core.topology import Counts, Mask, Sparse, dense

Scores = npt.NDArray[np.float64]
Exclusion = tuple[str, Mask]
HeldTerm = tuple[str, PodAffinityTerm, int]  # (kind, term, weight)

HARD_POD_AFFINITY_WEIGHT: Final = 1

K = TypeVar("K")

# Kinds of terms a placed pod holds, as they concern pods placed after it.
_ANTI: Final = "anti"
_REQUIRED: Final = "required"
_PREFERRED: Final = "preferred"
_PREFERRED_ANTI: Final = "preferred-anti"


def _held_terms(pod: Pod) -> Iterable[HeldTerm]:
    a = pod.affinity
    if a is None:
        return
    for t in a.required_anti:
        yield _ANTI, t, 0
    for t in a.required:
        yield _REQUIRED, t, HARD_POD_AFFINITY_WEIGHT
    for w in a.preferred:
        yield _PREFERRED, w.term, w.weight
    for w in a.preferred_anti:
        yield _PREFERRED_ANTI, w.term, w.weight


def _label_key(term: PodAffinityTerm) -> tuple[str, str] | None:
    """A label every pod ``term`` selects must carry (its first matchLabels pair), if it names one."""
    sel = term.selector
    return sel.match_labels[0] if sel is not None and sel.match_labels else None


class _LabelIndex(Generic[K]):
    """Keys (matchers, held terms) by the label a pod needs to match them; the rest in ``others``.
    Lookups keep the order keys were added in, so iteration is deterministic."""

    def __init__(self) -> None:
        self._order: dict[K, int] = {}
        self._by_label: dict[tuple[str, str], list[K]] = {}
        self._others: list[K] = []

    def add(self, key: K, label: tuple[str, str] | None) -> None:
        if key in self._order:
            return
        self._order[key] = len(self._order)
        if label is None:
            self._others.append(key)
        else:
            self._by_label.setdefault(label, []).append(key)

    def for_labels(self, labels: Mapping[str, str]) -> list[K]:
        found = list(self._others)
        for kv in labels.items():
            found.extend(self._by_label.get(kv, ()))
        if len(found) > 1:
            found.sort(key=self._order.__getitem__)
        return found


class PodsOnNodes:
    """Pods on nodes for one cycle, counted per selector and per held term (see the module docstring).
    Mutable: the session's statements add and remove the cycle's placements as they make and undo them."""

    def __init__(
        self,
        snapshot: Snapshot,
        placed: Iterable[tuple[Pod, int]] = (),
        gone: Iterable[PodUID] = (),
    ) -> None:
        """``placed``: pods the cycle placed before this was built (not among the snapshot's residents);
        ``gone``: residents the cycle evicted and counts as gone already (see :meth:`lift`)."""
        self._snap = snapshot
        self._gone: set[PodUID] = set(gone)
        self._n = len(snapshot.nodes)
        self._ns_labels = snapshot.namespace_labels
        # The cycle's own placements, indexed as the residents are (see _candidates).
        self._placed: dict[PodUID, tuple[Pod, int]] = {}
        self._placed_by_ns: dict[str, dict[PodUID, tuple[Pod, int]]] = {}
        self._placed_by_label: dict[tuple[str, str, str], dict[PodUID, tuple[Pod, int]]] = {}
        for p, r in placed:
            self._index(p, r)
        self._counts: dict[PodMatcher, dict[int, int]] = {}
        self._matchers: _LabelIndex[PodMatcher] = _LabelIndex()
        # Terms of pods on nodes, as (kind, term, weight) -> how many pods holding it sit on each node.
        self._held: dict[HeldTerm, dict[int, int]] = {}
        self._held_index: _LabelIndex[HeldTerm] = _LabelIndex()
        self._holders = 0  # pods on nodes holding any of them
        self._masks: dict[NodeConstraints, tuple[Mask, Mask]] = {}
        for p, r in snapshot.residents.with_terms():
            if p.uid not in self._gone:
                self._hold(p, r, 1)
        for p, r in self._placed.values():
            self._hold(p, r, 1)

    # --- keeping counts current -------------------------------------------------------------------
    def add(self, pod: Pod, row: int) -> None:
        self._index(pod, row)
        self._update(pod, row, 1)

    def remove(self, pod: Pod, row: int) -> None:
        del self._placed[pod.uid]
        del self._placed_by_ns[pod.namespace][pod.uid]
        for k, v in pod.labels.items():
            del self._placed_by_label[pod.namespace, k, v][pod.uid]
        self._update(pod, row, -1)

    def lift(self, pod: Pod, row: int, gone: bool) -> None:
        """Count resident ``pod`` (on ``row``) as gone (``gone``), or as there again: an eviction that
        clears the way for a preemptor, tried and undone (preempt's topology-aware mode)."""
        if gone == (pod.uid in self._gone):
            return
        if gone:
            self._gone.add(pod.uid)
        else:
            self._gone.discard(pod.uid)
        self._update(pod, row, -1 if gone else 1)

    def _index(self, pod: Pod, row: int) -> None:
        entry = (pod, row)
        self._placed[pod.uid] = entry
        self._placed_by_ns.setdefault(pod.namespace, {})[pod.uid] = entry
        for k, v in pod.labels.items():
            self._placed_by_label.setdefault((pod.namespace, k, v), {})[pod.uid] = entry

    def _update(self, pod: Pod, row: int, delta: int) -> None:
        for m in self._matchers.for_labels(pod.labels):
            if m.matches(pod, self._ns_labels):
                _bump(self._counts[m], row, delta)
        self._hold(pod, row, delta)

    def _hold(self, pod: Pod, row: int, delta: int) -> None:
        if pod.affinity is None or not pod.affinity.has_pod_terms:
            return
        self._holders += delta
        for key in _held_terms(pod):
            per_row = self._held.get(key)
            if per_row is None:
                per_row = self._held[key] = {}
                self._held_index.add(key, _label_key(key[1]))
            _bump(per_row, row, delta)

    @property
    def holds_terms(self) -> bool:
        """Whether any pod on a node has inter-pod terms (which then concern every incoming pod)."""
        return self._holders > 0

    def counts(self, m: PodMatcher) -> Sparse:
        """Pods matching ``m`` per node row (rows without any left out; read-only for callers)."""
        per_row = self._counts.get(m)
        if per_row is None:
            per_row = self._counts[m] = {}
            label = next((k for k in map(_label_key, m.terms) if k is not None), None)
            self._matchers.add(m, label)
            for _, r in self._candidates(m, label):
                _bump(per_row, r, 1)
        return per_row

    def _candidates(self, m: PodMatcher, label: tuple[str, str] | None) -> Iterable[tuple[Pod, int]]:
        """Pods on nodes (residents and the cycle's placements) matching ``m``, looking only where it can
        match: its namespaces, and the pods carrying its first matchLabels pair."""
        residents = self._snap.residents
        names = m.namespaces()
        if names is None:
            names = frozenset(residents.by_namespace()) | frozenset(self._placed_by_ns)
        for ns in sorted(names):
            if not m.namespace_ok(ns, self._ns_labels):
                continue
            if label is None:
                there = residents.by_namespace().get(ns, ())
                placed: Iterable[tuple[Pod, int]] = self._placed_by_ns.get(ns, {}).values()
            else:
                there = residents.by_label().get((ns, *label), ())
                placed = self._placed_by_label.get((ns, *label), {}).values()
            gone = self._gone
            yield from ((p, r) for p, r in there if m.labels_ok(p) and p.uid not in gone)
            yield from ((p, r) for p, r in placed if m.labels_ok(p))

    def _node_masks(self, c: NodeConstraints) -> tuple[Mask, Mask]:
        """(passes nodeSelector and required node affinity, has no untolerated hard taint) per node."""
        out = self._masks.get(c)
        if out is None:
            nodes = self._snap.nodes
            aff = np.fromiter((fit.node_affinity_reason(c, n) is None for n in nodes), np.bool_, len(nodes))
            taints = np.fromiter((fit.untolerated_taint(c, n) is None for n in nodes), np.bool_, len(nodes))
            out = self._masks[c] = (aff, taints)
        return out

    def _in_domain(self, term: PodAffinityTerm, per_row: Sparse) -> Mask:
        """Nodes whose domain of ``term``'s key holds at least one of ``per_row``'s pods."""
        d = self._snap.topology.domains(term.topology_key)
        return d.labelled & (d.to_nodes(d.sum_rows(per_row)) > 0)

    def _domain_sum(self, term: PodAffinityTerm, per_row: Sparse) -> Counts:
        d = self._snap.topology.domains(term.topology_key)
        return d.to_nodes(d.sum_rows(per_row))

    # --- filter -------------------------------------------------------------------------------------
    def exclusions(self, pod: Pod) -> list[Exclusion]:
        """Every (why, nodes refused) of the required rules concerning ``pod``: its own first, then
        other pods' anti-affinity to it."""
        out: list[Exclusion] = []
        a = pod.affinity
        if a is not None:
            for term in a.required_anti:
                why = f"pod anti-affinity {_describe(term)}"
                out.append((why, self._in_domain(term, self.counts(PodMatcher.of((term,))))))
            if a.required:
                # Permissive on an undecidable namespaceSelector: kube-scheduler refuses what we let through.
                matcher = PodMatcher.of(a.required, unknown=True)
                per_row = self.counts(matcher)
                ok = [self._in_domain(t, per_row) for t in a.required]
                # No matching pod anywhere and the pod matches its own terms: the first of a self-affine
                # group goes anywhere, or it would wait forever.
                if any(m.any() for m in ok) or not matcher.matches(pod, self._ns_labels):
                    for term, m in zip(a.required, ok, strict=True):
                        why = f"pod affinity {_describe(term)}: no matching pod in the node's domain"
                        out.append((why, ~m))
            hard = a.hard_spread
            if hard:
                aff, taints = self._node_masks(pod.constraints)
                out.extend(spread.exclusions(pod, hard, self._snap.topology, self.counts, aff, taints))
        for key in self._held_index.for_labels(pod.labels):
            kind, term, _ = key
            per_row = self._held[key]
            if (
                kind == _ANTI
                and per_row
                and term_matches(term, pod.namespace, pod.labels, self._ns_labels, unknown=False)
            ):
                why = f"anti-affinity of a pod there ({_describe(term)})"
                out.append((why, self._in_domain(term, per_row)))
        return out

    def allowed(self, pod: Pod) -> Mask | None:
        """Nodes the required rules leave ``pod``; None when no rule concerns it."""
        ex = self.exclusions(pod)
        if not ex:
            return None
        refused = ex[0][1].copy()
        for _, m in ex[1:]:
            refused |= m
        return ~refused

    def explain(self, pod: Pod, among: Mask) -> str:
        """``why (N nodes); ...`` over the nodes of ``among`` the required rules refuse, each node counted
        under the first rule that refuses it."""
        left = among.copy()
        counts: dict[str, int] = {}
        for why, m in self.exclusions(pod):
            n = int((left & m).sum())
            if n:
                counts[why] = counts.get(why, 0) + n
                left &= ~m
        if not counts:
            return "no node"
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return "; ".join(f"{k} ({v} nodes)" for k, v in ranked)

    # --- scores -------------------------------------------------------------------------------------
    def affinity_scores(self, pod: Pod, candidates: Mask) -> Scores | None:
        """The normalised 0..100 inter-pod preference score; None when nothing contributes."""
        raw = np.zeros(self._n, dtype=np.int64)
        touched = False
        a = pod.affinity
        if a is not None:
            for sign, terms in ((1, a.preferred), (-1, a.preferred_anti)):
                for w in terms:
                    raw += sign * w.weight * self._domain_sum(w.term, self.counts(PodMatcher.of((w.term,))))
                    touched = True
        for key in self._held_index.for_labels(pod.labels):
            kind, term, weight = key
            per_row = self._held[key]
            if kind == _ANTI or not per_row:
                continue
            if term_matches(term, pod.namespace, pod.labels, self._ns_labels, unknown=False):
                sign = -1 if kind == _PREFERRED_ANTI else 1
                raw += sign * weight * self._domain_sum(term, per_row)
                touched = True
        if not touched or not candidates.any():
            return None
        lo, hi = int(raw[candidates].min()), int(raw[candidates].max())
        if hi == lo:
            return None
        # int64(100 * (s - min) / (max - min)) as kube-scheduler: truncation of a non-negative float.
        return np.floor(100.0 * (raw - lo) / (hi - lo))

    def spread_scores(self, pod: Pod, candidates: Mask) -> Scores | None:
        a = pod.affinity
        if a is None:
            return None
        soft = a.soft_spread
        if not soft:
            return None
        aff, taints = self._node_masks(pod.constraints)
        return spread.scores(pod, soft, self._snap.topology, self.counts, candidates, aff, taints)

    def recount(self) -> dict[PodMatcher, tuple[Counts, Counts]]:
        """Every kept count beside the same counted afresh, dense (for tests: they must be equal)."""
        fresh = PodsOnNodes(self._snap, self._placed.values(), self._gone)
        return {
            m: (dense(kept, self._n), dense(fresh.counts(m), self._n)) for m, kept in self._counts.items()
        }


def _bump(per_row: dict[int, int], row: int, delta: int) -> None:
    c = per_row.get(row, 0) + delta
    if c:
        per_row[row] = c
    else:
        del per_row[row]


def _describe(term: PodAffinityTerm) -> str:
    return f"{describe_selector(term.selector)} per {term.topology_key}"
