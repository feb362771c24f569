"""PodDisruptionBudgets (policy/v1) as the scheduler reads them: which pods a budget covers and how many
more of them may be disrupted now.

The budget of a PDB is its ``status.disruptionsAllowed``, which the disruption controller keeps current; a
pod named in ``status.disruptedPods`` is already being disrupted and has been counted there, so evicting it
costs the budget nothing more (as the Eviction API and Volcano's pdb plugin read it).

Selection follows policy/v1: a PDB selects the pods of its namespace that its ``spec.selector`` matches; an
empty selector (``{}``) selects every pod of the namespace, a missing one none. (Volcano's pdb plugin lets
an empty selector match nothing, which was policy/v1beta1's reading; the Eviction API that carries out
pumice's plans uses policy/v1's.)
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.core.model import LabelSelector, Pod
from extender.core.selector import selector_matches


@dataclass(frozen=True, slots=True, kw_only=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None
    disruptions_allowed: int = 0
    # Names of pods the Eviction API already let go (``status.disruptedPods``).
    disrupted: frozenset[str] = frozenset()

    def covers(self, pod: Pod) -> bool:
        return pod.namespace == self.namespace and selector_matches(self.selector, pod.labels)
