"""Topology spread constraints: kube-scheduler's PodTopologySpread filter (``DoNotSchedule``) and score
(``ScheduleAnyway``), over per-node counts of matching pods.

Semantics mirrored (kube-scheduler >= 1.27 defaults):

- matching pods: the constraint's selector (with ``matchLabelKeys`` merged at parse), in the incoming
  pod's namespace, not being deleted; bound, planned and tentatively placed pods all count;
- eligible nodes, whose domains exist and whose pods count: nodes with every constraint's topology key
  that pass the pod's nodeSelector and required node affinity (``nodeAffinityPolicy: Honor``, the
  default) and, with ``nodeTaintsPolicy: Honor``, have no untolerated NoSchedule/NoExecute taint;
- filter: a node without the key is refused; otherwise ``count(domain) + (1 if the pod matches its own
  selector) - min over eligible domains <= maxSkew``, the minimum taken as 0 while there are fewer
  eligible domains than ``minDomains``;
- score: per constraint ``count * log(domains + 2) + maxSkew - 1`` summed and rounded, where the domains
  are those of the candidate nodes and ``kubernetes.io/hostname`` counts the node's own pods; candidates
  lacking a key score 0; the rest are normalised so the emptiest domain scores 100.

The system-default soft constraints kube-scheduler derives from a pod's Services and ReplicaSets are not
applied: the cache holds neither.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

import numpy as np
import numpy.typing as npt

from extender.core.model import Pod, SpreadConstraint
from extender.core.selector import PodMatcher, describe_selector, selector_matches
from extender.core.topology import Mask, Sparse, TopologyIndex, dense

HOSTNAME: Final = "kubernetes.io/hostname"
# kube-scheduler's "no domain yet" minimum: any skew passes.
_NO_MINIMUM: Final = 2**31 - 1

Scores = npt.NDArray[np.float64]
CountsOf = Callable[[PodMatcher], Sparse]


def _all_keys(topo: TopologyIndex, constraints: tuple[SpreadConstraint, ...]) -> Mask:
    out = np.ones(len(topo), dtype=np.bool_)
    for c in constraints:
        out &= topo.domains(c.topology_key).labelled
    return out


def _eligible(c: SpreadConstraint, all_keys: Mask, affinity_ok: Mask, taints_ok: Mask) -> Mask:
    out = all_keys
    if c.honor_node_affinity:
        out = out & affinity_ok
    if c.honor_taints:
        out = out & taints_ok
    return out


def exclusions(
    pod: Pod,
    constraints: tuple[SpreadConstraint, ...],
    topo: TopologyIndex,
    counts: CountsOf,
    affinity_ok: Mask,
    taints_ok: Mask,
) -> list[tuple[str, Mask]]:
    """For each hard constraint, (why, the nodes it refuses)."""
    out: list[tuple[str, Mask]] = []
    all_keys = _all_keys(topo, constraints)
    for c in constraints:
        d = topo.domains(c.topology_key)
        eligible = _eligible(c, all_keys, affinity_ok, taints_ok)
        per_domain = d.sum_rows(counts(PodMatcher.spread(c.selector, pod.namespace)), eligible)
        present = d.present(eligible)
        n_present = int(present.sum())
        minimum = int(per_domain[present].min()) if n_present else _NO_MINIMUM
        if n_present < c.min_domains:
            minimum = 0
        own = 1 if selector_matches(c.selector, pod.labels) else 0
        over = d.labelled & (d.to_nodes(per_domain) + own - minimum > c.max_skew)
        out.append((f"node lacks the topology spread key {c.topology_key}", ~d.labelled))
        out.append(
            (
                f"topology spread over {c.topology_key} would exceed maxSkew {c.max_skew} "
                f"({describe_selector(c.selector)})",
                over,
            )
        )
    return out


def scores(
    pod: Pod,
    constraints: tuple[SpreadConstraint, ...],
    topo: TopologyIndex,
    counts: CountsOf,
    candidates: Mask,
    affinity_ok: Mask,
    taints_ok: Mask,
) -> Scores | None:
    """Normalised 0..100 scores of the soft constraints over ``candidates``; None when no candidate has
    every topology key (all would score 0)."""
    if not constraints:
        return None
    all_keys = _all_keys(topo, constraints)
    scored = candidates & all_keys
    if not scored.any():
        return None
    raw = np.zeros(len(topo), dtype=np.float64)
    for c in constraints:
        d = topo.domains(c.topology_key)
        per_row = counts(PodMatcher.spread(c.selector, pod.namespace))
        if c.topology_key == HOSTNAME:
            size = int(scored.sum())
            cnt = dense(per_row, len(topo))
        else:
            size = int(d.present(scored).sum())
            cnt = d.to_nodes(d.sum_rows(per_row, _eligible(c, all_keys, affinity_ok, taints_ok)))
        raw += cnt * math.log(size + 2) + (c.max_skew - 1)
    # Go's math.Round (half away from zero) on non-negative values, then integer arithmetic as upstream.
    whole = np.floor(raw + 0.5).astype(np.int64)
    lo, hi = int(whole[scored].min()), max(int(whole[scored].max()), 0)
    if hi == 0:
        return np.where(scored, 100.0, 0.0)
    return np.where(scored, 100 * (hi + lo - whole) // hi, 0).astype(np.float64)
