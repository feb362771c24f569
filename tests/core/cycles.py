"""Cycles one after another over a small cluster, carried out as the cache, kube-scheduler and a job
controller would: placements bind, victims leave, an evicted pod of a job comes back as a new waiting pod
(a vcjob re-creates it), admitted groups turn Inqueue and groups whose gang was planned turn Running.

For tests that need what happens over several cycles (reclaim giving a share back, no ping-pong), not for
exact single-cycle outcomes (use :func:`tests.core.builders.run`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from extender.core.model import GroupKey, GroupPhase, Node, Pod, PodGroup, PodPhase, PodUID, Queue
from extender.core.snapshot import build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.result import CycleResult
from extender.plugins.registry import SchedulerConf


@dataclass(frozen=True, slots=True)
class Move:
    """One eviction: the victim, its group and the group that took its place."""

    pod: PodUID
    group: GroupKey
    by: GroupKey


@dataclass(slots=True)
class Cycles:
    nodes: list[Node]
    queues: list[Queue]
    conf: SchedulerConf
    now: float
    pods: dict[PodUID, Pod] = field(default_factory=dict)
    groups: dict[GroupKey, PodGroup] = field(default_factory=dict)
    moves: list[Move] = field(default_factory=list)
    results: list[CycleResult] = field(default_factory=list)
    _serial: int = 0

    def submit(self, groups: Iterable[PodGroup], pods: Iterable[Pod]) -> None:
        for g in groups:
            self.groups[g.key] = g
        for p in pods:
            self.pods[p.uid] = p

    def cycle(self) -> CycleResult:
        snap = build_snapshot(
            nodes=self.nodes, pods=self.pods.values(), podgroups=self.groups.values(), queues=self.queues
        )
        result = run_cycle(snap, self.conf, self.now)
        self.now += 10.0
        self.results.append(result)
        for uid, ev in sorted(result.evictions.items()):
            victim = self.pods.pop(uid)
            key = GroupKey(f"{victim.namespace}/{victim.group_name}")
            self.moves.append(Move(uid, key, ev.by))
            self._serial += 1
            again = PodUID(f"{victim.group_name}-r{self._serial}")
            self.pods[again] = replace(
                victim, uid=again, name=str(again), node_name="", phase=PodPhase.PENDING
            )
        for uid, node in sorted(result.placements.items()):
            if uid in self.pods:
                self.pods[uid] = replace(self.pods[uid], node_name=node, phase=PodPhase.RUNNING)
        for key in result.admitted:
            if self.groups[key].phase == GroupPhase.PENDING:
                self.groups[key] = replace(self.groups[key], phase=GroupPhase.INQUEUE)
        for key in result.ready:
            self.groups[key] = replace(self.groups[key], phase=GroupPhase.RUNNING)
        return result

    def run(self, n: int) -> None:
        for _ in range(n):
            self.cycle()

    def held(self, group: GroupKey, resource: str = "cpu") -> int:
        """What ``group``'s pods hold on nodes."""
        return sum(
            p.requests.get(resource, 0)
            for p in self.pods.values()
            if p.node_name and f"{p.namespace}/{p.group_name}" == group
        )

    def queue_held(self, queue: str, resource: str = "cpu") -> int:
        return sum(self.held(k, resource) for k, g in self.groups.items() if g.queue == queue)
