"""Preempt and reclaim in the scheduling loop: victims evicted through the executor and marked, the
preemptor's reservation waiting for them (holding the room, refused at filter and bind) until the watch
shows them gone, and given up when an eviction is refused or the victims do not leave in time."""

from __future__ import annotations

import asyncio
from typing import Any

from controllers.scheduling.scheduler import Scheduler, build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from controllers.state.ledger import State
from extender.core.model import PodUID
from extender.plugins.registry import load_conf
from tests.controllers.test_scheduler import node, pod, podgroup
from tests.core.builders import VOLCANO_CI_CONF

PREEMPT_CONF = """\
actions: "enqueue, allocate, preempt, reclaim"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: predicates
  - name: proportion
"""


class EvictingExecutor:
    def __init__(self) -> None:
        self.evicted: list[str] = []
        self.marked: list[tuple[str, str, str]] = []
        self.refuse: str | None = None

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        pass

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        pass

    async def lift_gate(self, namespace: str, name: str) -> None:
        pass

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        if self.refuse is not None:
            return self.refuse
        self.evicted.append(name)
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        self.marked.append((name, reason, message))

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        pass

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        pass


class Events:
    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str]] = []

    def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
        self.recorded.append((ref.name, reason, note))


def running(name: str, group: str, node_name: str, priority: int = 0) -> dict[str, Any]:
    raw = pod(name, group)
    raw["spec"]["nodeName"] = node_name
    raw["spec"]["priority"] = priority
    raw["status"]["phase"] = "Running"
    return raw


def prioritized(name: str, group: str, priority: int) -> dict[str, Any]:
    raw = pod(name, group)
    raw["spec"]["priority"] = priority
    return raw


def setup(conf: str = PREEMPT_CONF, **settings: Any) -> tuple[Scheduler, EvictingExecutor, Events]:
    state = cluster_state(frozenset({"volcano"}))
    state.cache.replace_nodes([node("n1", "2")])
    state.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    ex, ev = EvictingExecutor(), Events()
    s = build_scheduler(state, load_conf(conf), ex, settings=LoopSettings(**settings), events=ev)
    s.shared.cache.upsert_podgroup(podgroup("low", 1))
    for i in range(2):
        s.shared.cache.upsert_pod(running(f"low-{i}", "low", "n1", priority=1))
    s.shared.cache.upsert_podgroup(podgroup("high", 2))
    for i in range(2):
        s.shared.cache.upsert_pod(prioritized(f"high-{i}", "high", priority=100))
    return s, ex, ev


async def settle(s: Scheduler) -> None:
    await asyncio.gather(*s.writes._tasks)


def gone(s: Scheduler, name: str) -> None:
    s.shared.cache.remove_pod({"metadata": {"name": name, "namespace": "ns", "uid": name}})


async def test_victims_are_marked_evicted_and_the_preemptor_waits_for_them() -> None:
    s, ex, ev = setup()
    s.loop.cycle()
    await settle(s)
    assert sorted(ex.evicted) == ["low-0", "low-1"]
    assert all(reason == "Preempted" and "preempted by ns/high" in msg for _, reason, msg in ex.marked)
    assert {(n, r) for n, r, _ in ev.recorded} == {
        ("low-0", "Preempted"),
        ("low-1", "Preempted"),
        ("high", "GangPlanned"),  # on the preemptor's PodGroup
    }
    note = "2 pods planned (minMember 2) on n1; 2 of them once evicted pods have left"
    assert ("high", "GangPlanned", note) in ev.recorded
    assert s.shared.stats.evictions == 2
    r = s.shared.ledger.get(PodUID("high-0"))
    assert r is not None and r.state is State.WAITING and r.victims == {"low-0", "low-1"}
    # The room is held: nobody else is planned into it, and kube-scheduler is told to wait.
    answer = s.verbs.filter(prioritized("high-0", "high", 100), ["n1"])
    assert answer["NodeNames"] == [] and "waiting for 2 pods to leave node n1" in str(answer)
    refusal = s.verbs.bind_refusal(
        {"PodName": "high-0", "PodNamespace": "ns", "PodUID": "high-0", "Node": "n1"}
    )
    assert refusal is not None and "still holds the pods it waits for" in refusal
    # A second cycle evicts nobody else.
    s.shared.cache.upsert_pod(
        {
            **running("low-0", "low", "n1", 1),
            "metadata": {
                **running("low-0", "low", "n1", 1)["metadata"],
                "deletionTimestamp": "2026-01-01T00:00:01Z",
            },
        }
    )
    s.loop.cycle()
    await settle(s)
    assert sorted(ex.evicted) == ["low-0", "low-1"]
    gone(s, "low-0")
    held = s.shared.ledger.get(PodUID("high-0"))
    assert held is not None and held.state is State.WAITING
    gone(s, "low-1")
    held = s.shared.ledger.get(PodUID("high-0"))
    assert held is not None and held.state is State.PLANNED
    assert s.verbs.filter(prioritized("high-0", "high", 100), ["n1"])["NodeNames"] == ["n1"]


async def test_a_refused_eviction_gives_up_the_waiting_reservation() -> None:
    s, ex, ev = setup()
    ex.refuse = "HTTP 429 Too Many Requests"
    s.loop.cycle()
    await settle(s)
    assert ex.evicted == [] and s.shared.stats.eviction_errors == 2
    assert ("low-0", "EvictionRefused") in {(n, r) for n, r, _ in ev.recorded}
    assert s.shared.ledger.get(PodUID("high-0")) is None  # released, to be planned again


async def test_victims_that_do_not_leave_in_time_release_the_reservation() -> None:
    s, _, _ = setup(victims_timeout=0.0)
    s.loop.cycle()
    await settle(s)
    assert s.shared.ledger.get(PodUID("high-0")) is not None
    s.loop._work()  # the next cycle's bookkeeping finds it overdue
    assert s.shared.ledger.get(PodUID("high-0")) is None


async def test_the_volcano_ci_conf_loads_and_preempts() -> None:
    s, ex, _ = setup(VOLCANO_CI_CONF)
    s.loop.cycle()
    await settle(s)
    assert sorted(ex.evicted) == ["low-0", "low-1"]
