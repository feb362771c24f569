"""The starvation guard: nodes held for a large job that has waited too long (EASY backfill).

Off unless the conf turns it on (``configurations: [{name: allocate, arguments: {reserveAfter: 30m}}]``).
When an admitted group whose gang minimum cannot be placed has waited longer than that, the first such
group in job order gets a reservation: the nodes it may use that are expected to free up soonest, as many
as its minimum needs on their whole allocatable. The expected end of a running pod is its creation time
plus its ``pumice.dev/expected-runtime`` annotation; a pod without one may run forever, so nodes holding
such pods come last. Until the group is placed, other pods may use reserved nodes only if they say they
will be done before the reservation's nodes are expected to be free (EASY backfill: small jobs run
around a large one without delaying it); everything else goes elsewhere or waits.

Volcano has no such guard (its users report large jobs starving behind streams of small ones); the
design follows the 360 write-up's reservation of the nodes that free up first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from extender.core import fit
from extender.core.model import GroupKey, Pod
from extender.core.snapshot import pod_group_key
from extender.core.timestamps import epoch, rfc3339
from extender.framework.gangs import admitted_by_queue, gang_need, ordered_waiting, startable
from extender.framework.session import Session


@dataclass(frozen=True, slots=True)
class Reservation:
    group: GroupKey
    rows: fit.Mask  # the nodes held
    nodes: tuple[str, ...]
    until: float  # when they are expected to be free (inf: some pod there did not say)

    def admits(self, ssn: Session, p: Pod) -> bool:
        """Whether ``p`` may use the held nodes: it is of the group, or done before they free up."""
        if pod_group_key(p) == self.group:
            return True
        return p.expected_runtime is not None and ssn.now + p.expected_runtime <= self.until

    def describe(self) -> str:
        shown = ", ".join(self.nodes[:5]) + (
            f" and {len(self.nodes) - 5} more" if len(self.nodes) > 5 else ""
        )
        when = "when their pods finish" if math.isinf(self.until) else f"by about {rfc3339(self.until)}"
        return f"node(s) {shown} reserved for starving job {self.group}, expected free {when}"


def reserve(ssn: Session, after: float) -> Reservation | None:
    """The reservation for the first group in job order that has starved ``after`` seconds, or None."""

    snap = ssn.snapshot
    starving = []
    for g in (g for gs in admitted_by_queue(ssn, lambda g: startable(ssn, g)).values() for g in gs):
        created = epoch(g.created)
        if created <= 0:
            continue
        if ssn.now - created < after:
            ssn.retry_at(created + after)  # it may starve then, with nothing else changing
            continue
        members = [snap.pods[u] for u in snap.members.get(g.key, ())]
        need, task_need = gang_need(ssn, g, members)
        if need or task_need:
            starving.append((g, ordered_waiting(ssn, members, task_need)[: max(need, 1)], need))
    if not starving:
        return None
    g, pods, need = min(starving, key=lambda t: ssn.job_key(t[0]))
    if len(pods) < need:
        return None  # its pods do not all exist yet: nothing to hold room for
    ends = np.zeros(len(snap.nodes), dtype=np.float64)
    for p, row in snap.residents.all():
        if p.holds_resources:
            end = math.inf if p.expected_runtime is None else epoch(p.created) + p.expected_runtime
            ends[row] = max(ends[row], end)
    allowed = ssn.masks.static_mask(pods[0].constraints)
    if (qm := ssn.masks.queue_mask(g.queue)) is not None:
        allowed = allowed & qm  # never hold nodes the queue's node rules keep it off
    rows = np.flatnonzero(allowed)
    order = rows[np.lexsort((rows, ends[rows]))]
    caps: list[np.ndarray] = []
    chosen: list[int] = []
    left = [ssn.vector(p.uid) for p in pods]
    for row in order.tolist():
        chosen.append(row)
        caps.append(snap.alloc[row].copy())
        still = []
        for v in left:  # first fit on the held nodes' whole allocatable
            for cap in caps:
                if (cap >= v).all():
                    cap -= v
                    break
            else:
                still.append(v)
        if not still:
            mask = np.zeros(len(snap.nodes), dtype=np.bool_)
            mask[chosen] = True
            until = max(ssn.now, float(ends[chosen].max()))
            return Reservation(g.key, mask, tuple(snap.node_names[r] for r in chosen), until)
        caps = [snap.alloc[r].copy() for r in chosen]
    return None
