"""The vote, victim and domain hooks combined by their tier rules (see :mod:`extender.framework.plugin`).

- vote hooks (``allocatable``, ``overused``, ``preemptive``, ``victim``): the first rejection, in tier and
  plugin order, rejects with that plugin's reason;
- ``enqueue`` (Volcano's JobEnqueueableFn): tier by tier, any rejection rejects; a permit
  (``enqueue_permit``, Volcano's Permit vote) and no rejection in a tier admits without asking later tiers;
- victim hooks (``preemptable``, ``reclaimable``): within a tier the victims every answering plugin allows
  (the intersection, in the candidates' order); the first tier where a plugin answers decides, an empty
  answer included (where Volcano would pass an empty intersection on to the next tier). Every victim also
  passes the ``victim`` vetoes, whatever the tiers say;
- ``gang_domains`` and ``sub_group_domains``: the first plugin that answers decides.

A pod's veto is asked once a cycle (it depends on the pod, not on what the cycle placed). Nothing else is
cached: the other answers may change with every placement. A victim answer decided by tiers of plugins
that all set ``static_victims`` is not (see :mod:`extender.framework.plugin`): ``changing_victim_answers``
counts the others, so a caller can tell whether what it worked out from them may be kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from extender.core import fit
from extender.core.model import NetworkTopology, Pod, PodGroup, PodUID, Queue
from extender.core.resources import Vector
from extender.framework.hooks import Hooks, Tiered
from extender.framework.plugin import GangDomains

if TYPE_CHECKING:
    from extender.framework.session import Session


class Votes:
    """The session's combined votes (the Session's methods of the same names call these)."""

    def __init__(self, ssn: Session, hooks: Hooks) -> None:
        self._ssn = ssn
        self._hooks = hooks
        self._vetoes: dict[PodUID, str | None] = {}
        # Victim answers so far that came from a tier holding a plugin without ``static_victims``; and per
        # victim hook, per tier, whether that tier and every one before it are all such plugins.
        self.changing_victim_answers = 0
        self._static_through = {
            hook: _static_through(getattr(hooks, hook)) for hook in ("preemptable", "reclaimable")
        }

    def enqueue_reject(self, g: PodGroup) -> str | None:
        """Why ``g`` may not be admitted now, or None: tier by tier, any rejection rejects; a permit (and
        no rejection) in a tier admits without asking later tiers."""
        ssn = self._ssn
        for tier, voters, permitters in zip(
            self._hooks.tiers, self._hooks.enqueue, self._hooks.enqueue_permit, strict=True
        ):
            if not voters and not permitters:
                continue
            permitted = False
            for p in tier:  # each plugin's vote then its permit, in the conf's order
                if p in voters:
                    reason = p.enqueue(ssn, g)
                    if reason is not None:
                        return reason
                if p in permitters and p.enqueue_permit(ssn, g):
                    permitted = True
            if permitted:
                return None
        return None

    def allocatable_reject(self, q: Queue, request: Vector) -> str | None:
        """Why ``q`` may not take ``request`` more now (any plugin's answer), or None."""
        for p in self._hooks.allocatable:
            reason = p.allocatable(self._ssn, q, request)
            if reason is not None:
                return reason
        return None

    def victim_reject(self, pod: Pod) -> str | None:
        """Why ``pod`` must not be evicted (any plugin's veto), or None; asked once per pod a cycle."""
        if pod.uid in self._vetoes:
            return self._vetoes[pod.uid]
        out = None
        for p in self._hooks.victim:
            out = p.victim(self._ssn, pod)
            if out is not None:
                break
        self._vetoes[pod.uid] = out
        return out

    def overused(self, q: Queue) -> str | None:
        """Why ``q`` may take nothing more this cycle (any plugin's answer), or None."""
        for p in self._hooks.overused:
            reason = p.overused(self._ssn, q)
            if reason is not None:
                return reason
        return None

    def preemptive_reject(self, q: Queue, request: Vector) -> str | None:
        """Why ``q`` may not reclaim ``request`` from other queues (any plugin's veto), or None."""
        for p in self._hooks.preemptive:
            reason = p.preemptive(self._ssn, q, request)
            if reason is not None:
                return reason
        return None

    def preemptable(self, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        """The candidates ``preemptor`` may evict within its queue, by the tier rule of victim hooks."""
        return self._victims(self._hooks.preemptable, "preemptable", preemptor, candidates)

    def reclaimable(self, reclaimer: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        """The candidates ``reclaimer`` may evict from other queues, by the tier rule of victim hooks."""
        return self._victims(self._hooks.reclaimable, "reclaimable", reclaimer, candidates)

    def _victims(self, tiers: Tiered, hook: str, pod: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        # Every victim also passes the ``victim`` vetoes (conformance: system pods), whatever the tiers say.
        allowed = [c for c in candidates if self.victim_reject(c) is None]
        static = self._static_through[hook]
        for i, tier in enumerate(tiers):
            chosen: set[PodUID] | None = None
            for p in tier:
                answer = getattr(p, hook)(self._ssn, pod, allowed)
                if answer is None:
                    continue
                uids = {c.uid for c in answer}
                chosen = uids if chosen is None else chosen & uids
            if chosen is not None:
                if not static[i]:
                    self.changing_victim_answers += 1
                return [c for c in allowed if c.uid in chosen]
        if static and not static[-1]:
            self.changing_victim_answers += 1
        return []

    def gang_domains(self, g: PodGroup) -> GangDomains | None:
        """Where the gang minimum of ``g`` may be placed whole: the first plugin's answer, or None."""
        for p in self._hooks.gang_domains:
            out = p.gang_domains(self._ssn, g)
            if out is not None:
                return out
        return None

    def sub_group_domains(
        self, topology: NetworkTopology, pods: Sequence[Pod], members: Sequence[Pod]
    ) -> GangDomains | None:
        """Where one sub-group's ``pods`` may be placed whole: the first plugin's answer, or None."""
        for p in self._hooks.sub_group_domains:
            out = p.sub_group_domains(self._ssn, topology, pods, members)
            if out is not None:
                return out
        return None

    def gang_fence(self, g: PodGroup) -> fit.Mask | None:
        """For ``g`` whose gang minimum is placed: the node rows its extra pods must stay inside (the one
        candidate ``gang_domains`` names when the gang may not spread), or None (anywhere)."""
        if not self._hooks.gang_domains:
            return None
        domains = self.gang_domains(g)
        if domains is None or domains.spread or not domains.candidates:
            return None
        return self._ssn.rows_mask(domains.candidates[0][1])


def _static_through(tiers: Tiered) -> list[bool]:
    """Per tier: whether every plugin of it and of the tiers before it sets ``static_victims``."""
    out: list[bool] = []
    for tier in tiers:
        out.append((not out or out[-1]) and all(p.static_victims for p in tier))
    return out
