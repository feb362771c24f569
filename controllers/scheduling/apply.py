"""Applying one cycle's decisions to the shared state, on the event loop, after its pure part ran.

The cycle's placements become plans in the ledger (the verbs answer from them), with the writes they need
asked of :class:`~controllers.scheduling.writes.Writes`: touches for pods kube-scheduler holds as
unschedulable or gated, a plugin's decision annotations, evictions for preempt and reclaim. Admitted groups
turn Inqueue in the cache (the status writer persists it); each group's reason to wait, and what a settled
group weighs on its queue while it is left out of snapshots, are kept for the next cycle.

Invariants:
- a group is applied whole or not at all: a group one of whose placements a newer event made stale
  (:func:`stale_groups`) is dropped whole, its evictions too, and the next cycle plans it again;
- nothing here performs I/O or waits: writes are handed to ``Writes`` as background tasks;
- groups the cycle did not look at (left out as settled) keep the reasons an earlier cycle gave them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controllers.scheduling.shared import SchedulingState
from controllers.scheduling.writes import Writes
from extender.core.model import GroupKey, GroupPhase, PodUID
from extender.core.snapshot import Snapshot, pod_group_key
from extender.framework.result import CycleResult


def stale_groups(shared: SchedulingState, snap: Snapshot, result: CycleResult) -> set[GroupKey]:
    """Groups whose placements must not be applied: one of their pods changed or went since the
    snapshot, a node they use changed or went, or a node would be over capacity with what happened
    meanwhile (pods bound by others, other reservations; the victims they wait for count as gone).
    Dropped whole, so a gang stays whole; the next cycle plans them again."""
    cache, ledger = shared.cache, shared.ledger
    stale: set[GroupKey] = set()
    by_node: dict[str, list[PodUID]] = {}
    leaving: dict[str, dict[str, int]] = {}
    for victim in set().union(*result.pipelined.values()) if result.pipelined else ():
        pod = cache.pod(victim)
        if pod is not None and pod.holds_resources:
            acc = leaving.setdefault(pod.node_name, {})
            for k, v in pod.requests.items():
                acc[k] = acc.get(k, 0) + v
    for uid, node in result.placements.items():
        key = pod_group_key(snap.pods[uid])
        if cache.pod(uid) is not snap.pods[uid] or ledger.get(uid) is not None:
            stale.add(key)
        by_node.setdefault(node, []).append(uid)
    for node, uids in by_node.items():
        current = cache.node(node)
        if current is None or current is not snap.nodes[snap.node_pos[node]]:
            stale.update(pod_group_key(snap.pods[u]) for u in uids)
            continue
        need: dict[str, int] = {}
        for u in uids:
            for k, v in snap.pods[u].requests.items():
                need[k] = need.get(k, 0) + v
        held = ledger.on_node(node)
        gone = leaving.get(node, {})
        if any(held.get(k, 0) - gone.get(k, 0) + v > current.allocatable.get(k, 0) for k, v in need.items()):
            stale.update(pod_group_key(snap.pods[u]) for u in uids)
    return stale


@dataclass(frozen=True, slots=True)
class Applied:
    """What applying a cycle did, for the loop's counters and its log line."""

    planned: int  # pods given a plan
    # Groups newly waiting, or waiting for another kind of reason than before, as "group:reason".
    waits: list[str]


class Applier:
    def __init__(
        self,
        shared: SchedulingState,
        writes: Writes,
        *,
        admitted: Callable[[GroupKey], None],
        due_at: Callable[[float], None],
    ) -> None:
        self.shared = shared
        self.writes = writes
        # Told when a cycle admits a group in memory (before its status write reaches the API).
        self._admitted = admitted
        # Asked for a cycle at a time (epoch seconds) though nothing changes: a rule waits for time to pass.
        self._due_at = due_at

    def apply(
        self, snap: Snapshot, left_out: frozenset[GroupKey], result: CycleResult, stale: set[GroupKey]
    ) -> Applied:
        s = self.shared
        planned = 0
        nodes: dict[GroupKey, list[str]] = {}
        now = s.clock()
        for uid, node in result.placements.items():
            pod = snap.pods[uid]
            key = pod_group_key(pod)
            if key in stale:
                continue
            planned += 1
            victims = result.pipelined.get(uid, frozenset())
            nodes.setdefault(key, []).append(f"{node}+" if victims else node)
            s.ledger.plan(
                uid,
                node,
                pod.requests,
                s.cache.pod_queue(pod),
                key,
                victims=victims,
                now=now,
                decided=result.annotations.get(uid),
            )
            if uid in result.annotations:
                self.writes.annotate(pod, result.annotations[uid])
            else:
                s.annotations.pop(uid, None)
            if (uid in s.rejected or pod.gated) and s.touched.get(uid) != node:
                self.writes.touch(pod, node)
        for key in sorted(result.ready & nodes.keys()):
            self.writes.gang_planned(key, nodes[key])
        for key in result.admitted:
            if s.cache.set_group_phase(key, GroupPhase.INQUEUE):
                self._admitted(key)
        s.pending.status_changed(nodes.keys() | result.admitted)
        for uid, why in result.evictions.items():
            victim = s.cache.pod(uid)
            if why.by in stale or victim is None or uid in s.evicted:
                continue
            self.writes.evict(victim, why)
        if result.retry_at is not None:
            self._due_at(result.retry_at)
        previous = s.reasons
        # Groups left out were not looked at: their reasons stand as the earlier cycle gave them.
        reasons = {k: u for k, u in s.reasons.items() if k in left_out}
        reasons.update(result.unschedulable)
        s.reasons = reasons
        # (Groups voted on again without their pods got a reason too: extender.framework.capped.)
        s.pending.status_changed(snap.groups.keys() | snap.revote.keys() | (previous.keys() - reasons.keys()))
        s.pending.after_cycle(snap.groups, result.aside, result.placed, stale)
        # By kind of reason only: the figures in a message move with every pod.
        waits = sorted(
            f"{k}:{u.reason}"
            for k, u in result.unschedulable.items()
            if k not in previous or previous[k].reason != u.reason
        )
        return Applied(planned=planned, waits=waits)
