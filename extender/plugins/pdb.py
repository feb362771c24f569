"""pdb: preempt and reclaim plan no eviction a PodDisruptionBudget would refuse.

A budget (policy/v1, see :mod:`extender.core.budgets`) allows ``status.disruptionsAllowed`` more
disruptions of the pods it selects. A candidate victim is allowed while every budget covering it has one
left after the victims this cycle already chose (the session's ``evicting``, whatever preemptor chose them)
and those allowed before it in the same answer; a pod the budget lists in ``status.disruptedPods`` costs
nothing (the Eviction API counted it when it let it go). The executor evicts through the Eviction API,
which would answer 429 to an eviction over budget and make the whole plan wait; this plugin keeps such
plans from being made, as Volcano's pdb plugin filters victims.

Deliberate differences from Volcano:

- The budget is spent across the cycle: Volcano starts every answer from the full ``disruptionsAllowed``,
  so two preemptors of one session may each take the last allowed disruption.
- A pod covered by more than one budget is no victim: the Eviction API refuses to evict such a pod
  (500, "more than one PodDisruptionBudget"); Volcano spends each budget once.
- An empty selector covers every pod of the namespace (policy/v1), as the Eviction API reads it.

It answers ``preemptable`` and ``reclaimable``; as for cdp, put it in the tier of the plugins that choose
victims, or it protects nothing.

Enable with::

    - name: pdb
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.core.budgets import DisruptionBudget
from extender.core.model import Pod, PodUID
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class PdbPlugin(Plugin):
    name = "pdb"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)
        # Per pod (by uid), the budgets covering it: worked out once a cycle.
        self._covering: dict[PodUID, tuple[DisruptionBudget, ...]] = {}

    def open(self, ssn: Session) -> None:
        self._covering = {}

    def preemptable(self, ssn: Session, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        return self._within_budgets(ssn, candidates)

    def reclaimable(self, ssn: Session, reclaimer: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        return self._within_budgets(ssn, candidates)

    def _covers(self, ssn: Session, pod: Pod) -> tuple[DisruptionBudget, ...]:
        out = self._covering.get(pod.uid)
        if out is None:
            budgets = ssn.snapshot.budgets.get(pod.namespace, ())
            out = self._covering[pod.uid] = tuple(b for b in budgets if b.covers(pod))
        return out

    def _within_budgets(self, ssn: Session, candidates: Sequence[Pod]) -> list[Pod]:
        budgets = ssn.snapshot.budgets
        if not budgets or not any(c.namespace in budgets for c in candidates):
            return list(candidates)
        # What the victims chosen so far this cycle spent, per budget (namespace, name).
        spent: dict[tuple[str, str], int] = {}
        running = ssn.running.by_uid
        for uid in ssn.evicting:
            r = running.get(uid)
            if r is not None and r.pod.namespace in budgets:
                for b in self._covers(ssn, r.pod):
                    if r.pod.name not in b.disrupted:
                        spent[b.namespace, b.name] = spent.get((b.namespace, b.name), 0) + 1
        out: list[Pod] = []
        for c in candidates:
            covering = self._covers(ssn, c) if c.namespace in budgets else ()
            if not covering:
                out.append(c)
                continue
            if len(covering) > 1:
                continue  # the Eviction API refuses a pod under two budgets
            b = covering[0]
            if c.name in b.disrupted:
                out.append(c)
                continue
            key = (b.namespace, b.name)
            if spent.get(key, 0) < b.disruptions_allowed:
                spent[key] = spent.get(key, 0) + 1
                out.append(c)
        return out
