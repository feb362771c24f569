"""A plugin's per-pod decision reaches the pod before its bind: numa-aware's ``volcano.sh/topology-decision``
is written on the pod (a merge patch), then the pod is bound; a refused patch fails the bind."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from controllers.scheduling.executor import BindError
from controllers.scheduling.scheduler import Scheduler, build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from extender.core.model import PodUID
from extender.plugins.registry import load_conf
from tests.plugins.test_numaaware import numatopo

CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
- plugins:
  - name: predicates
  - name: nodeorder
  - name: numa-aware
"""
DECISION = "volcano.sh/topology-decision"


class OrderedExecutor:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []
        self.fail_annotate = False

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        if self.fail_annotate:
            raise BindError("annotating pod failed: HTTP 403 Forbidden")
        self.calls.append(("annotate", name, dict(annotations)))

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        self.calls.append(("bind", name, node))

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        pass

    async def lift_gate(self, namespace: str, name: str) -> None:
        pass

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        pass

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        pass


def _node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}},
    }


def _pod(name: str, policy: str | None) -> dict[str, Any]:
    res = {"cpu": "4", "memory": "1Gi"}
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": name, "annotations": {}}
    if policy:
        meta["annotations"]["volcano.sh/numa-topology-policy"] = policy
    spec = {
        "schedulerName": "volcano",
        "containers": [{"name": "c", "resources": {"requests": res, "limits": res}}],
    }
    return {"metadata": meta, "spec": spec, "status": {"phase": "Pending"}}


def _scheduler() -> tuple[Scheduler, OrderedExecutor]:
    state = cluster_state(frozenset({"volcano"}))
    state.cache.replace_nodes([_node("n1"), _node("n2")])
    state.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    topos = state.cache.handlers()["numatopologies"]
    topos.upsert(numatopo("n1", free="1-3,5-7"))  # 3 + 3 free: 4 cpus would span two NUMA nodes
    topos.upsert(numatopo("n2", free="4-7"))  # 4 free on NUMA node 1
    ex = OrderedExecutor()
    return build_scheduler(state, load_conf(CONF), ex, settings=LoopSettings(), gates=True), ex


async def settle(s: Scheduler) -> None:
    await asyncio.gather(*s.writes._tasks)


def filtered(s: Scheduler, name: str) -> Any:
    return s.verbs.filter(_pod(name, "single-numa-node"), ["n1", "n2"])


async def test_the_filter_admits_the_pod_once_the_decision_is_on_it() -> None:
    """Without a bind verb kube-scheduler binds after the filter: the filter holds the pod back until
    the decision is written (the write moves the pod back in kube-scheduler's line)."""
    s, ex = _scheduler()
    s.shared.cache.upsert_pod(_pod("p", "single-numa-node"))
    s.loop.cycle()
    assert s.shared.ledger.plans() == {"p": "n2"}
    held = filtered(s, "p")
    assert held["NodeNames"] == []
    assert "writing the placement decision" in held["FailedAndUnresolvableNodes"]["n2"]
    await settle(s)
    assert [c[0] for c in ex.calls] == ["annotate"]
    assert json.loads(ex.calls[0][2][DECISION]) == {"numa": {"1": {"cpu": "4"}}}
    assert filtered(s, "p")["NodeNames"] == ["n2"]
    assert s.shared.annotations == {}


async def test_with_a_bind_verb_the_decision_is_written_before_the_bind() -> None:
    s, ex = _scheduler()
    s.shared.cache.upsert_pod(_pod("p", "single-numa-node"))
    s.loop.cycle()
    assert await s.verbs.bind({"PodName": "p", "PodNamespace": "ns", "PodUID": "p", "Node": "n2"}) == ""
    await settle(s)
    kinds = [c[0] for c in ex.calls]
    assert kinds[0] == "annotate"
    assert kinds.index("bind") > 0
    assert s.shared.annotations == {}


async def test_pods_without_a_decision_are_bound_as_before() -> None:
    s, ex = _scheduler()
    s.shared.cache.upsert_pod(_pod("p", None))
    s.loop.cycle()
    node = s.shared.ledger.plans()[PodUID("p")]
    assert s.verbs.filter(_pod("p", None), ["n1", "n2"])["NodeNames"] == [node]
    assert await s.verbs.bind({"PodName": "p", "PodNamespace": "ns", "PodUID": "p", "Node": node}) == ""
    await settle(s)
    assert ex.calls == [("bind", "p", node)]


async def test_a_refused_decision_drops_the_plan() -> None:
    """The write fails (say, a webhook refuses it): the plan is dropped, the next cycle plans again; a
    bind meanwhile fails the same way."""
    s, ex = _scheduler()
    s.shared.cache.upsert_pod(_pod("p", "single-numa-node"))
    ex.fail_annotate = True
    s.loop.cycle()
    err = await s.verbs.bind({"PodName": "p", "PodNamespace": "ns", "PodUID": "p", "Node": "n2"})
    assert "403" in err
    await settle(s)
    assert ex.calls == []
    assert s.shared.ledger.plans() == {}
    assert s.shared.annotations == {}
    ex.fail_annotate = False
    s.loop.cycle()
    await settle(s)
    assert s.shared.ledger.plans() == {"p": "n2"}
    assert [c[0] for c in ex.calls] == ["annotate"]
