"""Rules and scores that look at who a pod is, not only at what it requests, for one session.

Rules that look at other pods (inter-pod affinity and anti-affinity, topology spread) and scores that
depend on the pod itself (:class:`~extender.framework.hooks.PodScorer`) are evaluated per pod and never
cached per request vector. :class:`PodRules` answers them for the session:

- ``interpod``: the cycle's pods-on-nodes counts (:class:`~extender.core.interpod.PodsOnNodes`), built
  the first time a pod with such rules is placed, or a pod on a node has terms that could concern any
  pod, with the placements made so far; until then a cycle pays nothing for them;
- ``pod_rules``: that state when any rule can concern a pod, None on the fast path (no such rule);
- ``placed`` and ``lift``: what keeps the counts current once they exist, told by every
  :class:`~extender.framework.statement.Statement` place and undo, and by every eviction while
  ``Session.evictions_lift_rules`` is set (preempt's enableTopologyAwarePreemption: a victim is taken out
  of the rules, so it may be chosen to clear an anti-affinity conflict; ``Session.lifted`` holds those);
- ``pod_scores``: the ``PodScorer`` plugins' scores over a pod's candidates, summed.

Invariants: the counts are built at most once a cycle, and from then on ``Session.rules_active`` is True
and they equal a fresh count of the snapshot's residents (less ``Session.lifted``) plus the session's
plans (the tests recount them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from extender.core import fit
from extender.core.interpod import PodsOnNodes
from extender.core.model import Pod, PodUID
from extender.framework.hooks import Hooks
from extender.framework.plugin import Scores

if TYPE_CHECKING:
    from extender.framework.session import Session


class PodRules:
    """The session's inter-pod state and per-pod scores (``Session.pod_rules`` and ``Session.pod_scores``
    are these methods)."""

    def __init__(self, ssn: Session, hooks: Hooks) -> None:
        """``ssn.lifted`` must be set."""
        self._ssn = ssn
        self._snapshot = ssn.snapshot
        self._scorers = hooks.pod_score
        self._lifted = ssn.lifted
        self._interpod: PodsOnNodes | None = None
        self._terms_on_nodes: bool | None = None  # whether a resident has inter-pod terms (found once)

    @property
    def interpod(self) -> PodsOnNodes:
        """The cycle's pods-on-nodes counts (built on first use, with the placements made so far)."""
        if self._interpod is None:
            snap = self._snapshot
            placed = [
                (snap.pods[uid], snap.node_pos[node])
                for uid, node in self._ssn.plans.items()
                if uid not in snap.plans
            ]
            self._interpod = PodsOnNodes(snap, placed, gone=self._lifted)
            self._ssn.rules_active = True
        return self._interpod

    def pod_rules(self, p: Pod) -> PodsOnNodes | None:
        """The inter-pod state when any rule can concern ``p``: its own rules, or terms of pods on nodes.
        None is the fast path: no such rule exists in this cycle."""
        if p.affinity is None or not p.affinity.looks_at_pods:
            if self._interpod is None:
                if self._terms_on_nodes is None:
                    self._terms_on_nodes = bool(self._snapshot.residents.with_terms())
                if not self._terms_on_nodes:
                    return None
            elif not self._interpod.holds_terms:
                return None
        return self.interpod

    def placed(self, uid: PodUID, node: int, delta: int) -> None:
        """Keep the inter-pod counts current: pod ``uid`` placed on row ``node`` (``delta`` 1) or taken
        off it (-1)."""
        if self._interpod is not None:
            pod = self._snapshot.pods[uid]
            if delta > 0:
                self._interpod.add(pod, node)
            else:
                self._interpod.remove(pod, node)

    def lift(self, pod: Pod, row: int, lift: bool) -> None:
        """Take an evicted ``pod`` (on ``row``) out of the inter-pod rules (``lift``), or put it back (its
        eviction undone); see ``Session.evictions_lift_rules``."""
        if lift:
            self._lifted.add(pod.uid)
        else:
            self._lifted.discard(pod.uid)
        if self._interpod is not None:
            self._interpod.lift(pod, row, lift)

    def pod_scores(self, p: Pod, candidates: fit.Mask) -> Scores | None:
        """Summed :class:`~extender.framework.hooks.PodScorer` scores for placing ``p`` among
        ``candidates``, or None."""
        total: Scores | None = None
        for scorer in self._scorers:
            s = scorer.pod_score(self._ssn, p, candidates)
            if s is not None:
                total = s if total is None else total + s
        return total
