"""numa-aware: place a pod asking for NUMA alignment only where the kubelet's topology manager will admit
it, and prefer nodes where its cpus span the fewest NUMA nodes.

Mirrors Volcano's ``numa-aware`` plugin (its cpu provider). A pod says
``volcano.sh/numa-topology-policy: best-effort | restricted | single-numa-node`` (a vcjob task's
``topologyPolicy`` becomes this annotation); a node's NUMA layout comes from its Numatopology object
(``nodeinfo.volcano.sh/v1alpha1``, see :mod:`extender.core.numa`). For such a pod, when it is Guaranteed:

- predicate (``pod_fit``): the node must have a Numatopology, the kubelet's cpu manager policy must be
  ``static`` and its topology manager policy the pod's; then, container by container, the topology
  manager's best hint for its whole cpus must be admitted by the policy (``single-numa-node``: one NUMA
  node with that many free cpus; ``restricted``: the fewest NUMA nodes that could hold them; a
  ``best-effort`` pod fits wherever the rest of it fits);
- score (a PodScorer): ``weight × (100 - 100 × NUMA nodes its cpus span / the most any candidate
  gives)``, so the node that keeps its cpus on fewer NUMA nodes wins.

Free cpus per NUMA node follow the cycle: each placement of such a pod takes its cpus from the cells its
decision chose, an undone placement gives them back (the plugin reconciles with the session's plans
before every decision), and pods planned in earlier cycles but not bound yet hold theirs from the start.
Bound pods' cpus are the exporter's to report (its ``numares`` allocatable is the kubelet's free pool).

When the cycle closes, every pod it placed gets the ``volcano.sh/topology-decision`` annotation Volcano
writes (``{"numa": {"0": {"cpu": "4"}}}``) in ``CycleResult.annotations``; the scheduler writes it on the
pod as soon as the plan is made and admits the planned node in the filter (or binds) only once it is there.

Deliberate differences from Volcano:

- a Guaranteed pod without a policy (or ``none``) is not judged (Volcano aligns it to the node's policy
  when the node has one): pumice leaves it to the kubelet, and such pods keep being placed in batches;
- free cpus are counted per NUMA node, not as cpusets: the kubelet picks the cpus (Volcano's picks are
  advisory too), and the reserved cpus are taken as the lowest-numbered ones;
- preempt and reclaim place such a pod only on nodes its NUMA rules allow as they are (what a victim
  would free per NUMA node is not known until the exporter reports it).

Enable with::

    - name: numa-aware
      arguments:
        weight: 10
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.fit import Mask
from extender.core.model import Pod, PodUID
from extender.core.numa import DECISION_ANNOTATION, Decision, NumaTopology, decide, decision_annotation
from extender.core.resources import Vector
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin, Rows, Scores
from extender.framework.session import Session

NAME: Final = "numa-aware"
_MAX_NODE_SCORE: Final = 100.0


ARGUMENTS: Final = ArgumentTable({"weight": (int, 1)})


class NumaAwarePlugin(Plugin):
    name = NAME
    argument_table = ARGUMENTS
    row_local_scores = True  # node_score has no opinion: its scores are per pod

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.weight: int = args["weight"]
        self._topo: dict[int, NumaTopology] = {}
        self._free: dict[int, list[int]] = {}
        self._held: dict[PodUID, tuple[int, tuple[int, ...]]] = {}
        self._asked: dict[PodUID, Pod] = {}
        self._version = 0
        self._memo: tuple[PodUID, int, dict[int, Decision]] | None = None
        # Decisions by what they depend on (policies, cells, free cpus, the request): nodes alike share one.
        self._by_state: dict[tuple[object, ...], Decision] = {}
        # The topology decision of each pod placed in this cycle (the annotation's value), by uid.
        self._decided: dict[PodUID, str] = {}

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        self._topo = {}
        self._free = {}
        for name, topo in snap.numatopologies.items():
            row = snap.node_pos.get(name)
            if row is not None:
                self._topo[row] = topo
                self._free[row] = [c.free for c in topo.cells]
        self._held = {}
        self._asked = {}
        self._version = 0
        self._memo = None
        self._by_state = {}
        self._decided = {}
        # Plans of earlier cycles not bound yet: the exporter does not count their cpus.
        for uid, node in sorted(snap.plans.items()):
            p = snap.pods.get(uid)
            row = snap.node_pos.get(node)
            if p is not None and p.numa is not None and not p.node_name and row is not None:
                self._take(p, row)

    def _take(self, p: Pod, row: int) -> None:
        """Hold the cpus ``p`` takes on node ``row`` as decided now (nothing, if the node refuses it)."""
        assert p.numa is not None
        topo = self._topo.get(row)
        free = self._free.get(row, [])
        d = decide(topo, free, p.numa)
        taken = d.taken or tuple(0 for _ in free)
        for i, t in enumerate(taken):
            free[i] -= t
        self._held[p.uid] = (row, taken)
        if topo is not None and d.taken is not None:
            self._decided[p.uid] = decision_annotation(topo, taken)
        self._version += 1

    def _sync(self, ssn: Session) -> None:
        """Follow the session's plans: placements undone give their cpus back, new ones take theirs."""
        plans = ssn.plans
        names = ssn.snapshot.node_names
        for uid, (row, taken) in list(self._held.items()):
            if plans.get(uid) != names[row]:
                free = self._free.get(row, [])
                for i, t in enumerate(taken):
                    free[i] += t
                del self._held[uid]
                self._decided.pop(uid, None)
                self._version += 1
        for uid, p in self._asked.items():
            node = plans.get(uid)
            if uid not in self._held and node is not None:
                at = ssn.snapshot.node_pos.get(node)
                if at is not None:
                    self._take(p, at)

    def close(self, ssn: Session) -> None:
        """The decision of every pod placed in this cycle, as the annotation to write before it binds."""
        placements = ssn.result.placements
        for uid, value in self.topology_decisions(ssn).items():
            if uid in placements:
                ssn.result.annotations.setdefault(uid, {})[DECISION_ANNOTATION] = value

    def topology_decisions(self, ssn: Session) -> dict[PodUID, str]:
        """The ``volcano.sh/topology-decision`` value of every pod judged by this plugin and placed so
        far in the cycle (tentative placements included), by uid."""
        self._sync(ssn)
        return dict(self._decided)

    def _decisions(self, ssn: Session, pod: Pod, candidates: Mask) -> dict[int, Decision]:
        """Per candidate row, where ``pod``'s cpus would go (memoized while nothing is placed)."""
        assert pod.numa is not None
        self._sync(ssn)
        self._asked[pod.uid] = pod
        memo = self._memo
        if memo is None or memo[0] != pod.uid or memo[1] != self._version:
            memo = self._memo = (pod.uid, self._version, {})
        known = memo[2]
        out: dict[int, Decision] = {}
        for row in np.flatnonzero(candidates).tolist():
            d = known.get(row)
            if d is None:
                d = known[row] = self._decide(row, pod)
            out[row] = d
        return out

    def _decide(self, row: int, pod: Pod) -> Decision:
        assert pod.numa is not None
        topo = self._topo.get(row)
        free = self._free.get(row, [])
        key = (
            None
            if topo is None
            else (
                topo.cpu_manager_policy,
                topo.topology_manager_policy,
                tuple(c.capacity for c in topo.cells),
            ),
            tuple(free),
            pod.numa,
        )
        d = self._by_state.get(key)
        if d is None:
            d = self._by_state[key] = decide(topo, free, pod.numa)
        return d

    def pod_fit(self, ssn: Session, pod: Pod, candidates: Mask) -> Mask | None:
        if pod.numa is None:
            return None
        out = np.zeros(len(candidates), dtype=np.bool_)
        for row, d in self._decisions(ssn, pod, candidates).items():
            out[row] = d.taken is not None
        return out

    def pod_fit_reason(self, ssn: Session, pod: Pod, candidates: Mask) -> str | None:
        if pod.numa is None:
            return None
        refused = {r: d for r, d in self._decisions(ssn, pod, candidates).items() if d.taken is None}
        if not refused:
            return None
        # The first node that has a Numatopology says the most; else the first node.
        row = next((r for r in refused if r in self._topo), next(iter(refused)))
        name = ssn.snapshot.node_names[row]
        more = f" (and {len(refused) - 1} more nodes)" if len(refused) > 1 else ""
        return f"numa-aware: node {name}: {refused[row].why}{more}"

    def node_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Scores | None:
        return None

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        if pod.numa is None or not self.weight:
            return None
        out = np.zeros(len(candidates), dtype=np.float64)
        spans = {r: d.spans for r, d in self._decisions(ssn, pod, candidates).items() if d.taken is not None}
        most = max(spans.values(), default=0)
        if most:
            for row, n in spans.items():
                out[row] = self.weight * (_MAX_NODE_SCORE - _MAX_NODE_SCORE * n / most)
        return out
