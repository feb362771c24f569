"""The extender endpoints driven with the exact bodies kube-scheduler v1.24 sends (``wire_samples/``)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from controllers.scheduling.executor import BindError
from controllers.scheduling.scheduler import Scheduler, build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from controllers.state.ledger import State
from extender.core.model import PodUID
from extender.plugins.registry import load_conf
from extender.server.app import make_extender_app
from extender.server.metrics import Histogram
from tests.contract.samples import sample


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


class FakeExecutor:
    def __init__(self, fail: bool = False) -> None:
        self.binds: list[tuple[str, str, str, str]] = []
        self.fail = fail

    async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        if self.fail:
            raise BindError("pods/binding: HTTP 500: boom")
        self.binds.append((namespace, name, uid, node))

    async def touch_planned(self, namespace: str, name: str, node: str) -> None:
        pass

    async def lift_gate(self, namespace: str, name: str) -> None:
        pass

    async def annotate(self, namespace: str, name: str, annotations: dict[str, str]) -> None:
        pass

    async def evict(self, namespace: str, name: str, uid: str) -> str | None:
        return None

    async def mark_disrupted(self, namespace: str, name: str, reason: str, message: str, now: str) -> None:
        pass

    async def patch_status(
        self, path: str, status: dict[str, Any], *, subresource: bool, resource_version: str = ""
    ) -> None:
        pass


def make_scheduler(
    nodes: list[dict[str, Any]],
    executor: FakeExecutor | None = None,
    *,
    watched: bool = True,
    ready: bool = True,
) -> Scheduler:
    """A scheduler over ``nodes``; with ``watched`` its watch has already shown the sample request's pod
    (pumice reads pods from its watch, never from a request body)."""
    state = cluster_state(frozenset({"volcano"}))
    state.cache.replace_nodes(nodes)
    state.cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    if watched:
        state.cache.upsert_pod(sample("extender-filter-request.json")["Pod"])
    return build_scheduler(
        state,
        load_conf(),
        executor or FakeExecutor(),
        settings=LoopSettings(seen_timeout=0.05, resync=0.05),
        ready=lambda: ready,
    )


def app_for(sched: Scheduler, **kw: Any) -> web.Application:
    """The extender app with the scheduling loop running beside it, as ``pumice serve`` runs them."""
    app = make_extender_app(sched.verbs, Histogram("t", "t"), **kw)

    async def loop(_: web.Application) -> AsyncIterator[None]:
        task = asyncio.create_task(sched.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.cleanup_ctx.append(loop)
    return app


@pytest.fixture
def scheduler() -> Scheduler:
    return make_scheduler([node("node-a", "500m"), node("node-b"), node("node-c")])


@pytest.fixture
async def client(aiohttp_client: Any, scheduler: Scheduler) -> TestClient[Any, Any]:
    app = app_for(scheduler)
    c: TestClient[Any, Any] = await aiohttp_client(app)
    return c


async def post(client: TestClient[Any, Any], path: str, body: object) -> tuple[int, Any]:
    resp = await client.post(path, data=orjson.dumps(body), headers={"Content-Type": "application/json"})
    text = await resp.read()
    return resp.status, (orjson.loads(text) if resp.content_type == "application/json" else text.decode())


async def test_filter_pins_a_planned_pod_to_one_node(client: TestClient[Any, Any]) -> None:
    status, body = await post(client, "/filter", sample("extender-filter-request.json"))
    assert status == 200
    assert body["Error"] == ""
    # node-a has 0.5 cpu, the pod asks 1: the plan is one of the others and it is the only node returned.
    assert len(body["NodeNames"]) == 1 and body["NodeNames"][0] in ("node-b", "node-c")
    assert set(body) == {"NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}


async def test_filter_rejects_with_a_reason_per_node_when_nothing_fits(aiohttp_client: Any) -> None:
    sched = make_scheduler([node("node-a", "500m"), node("node-b", "500m"), node("node-c", "500m")])
    client = await aiohttp_client(app_for(sched))
    status, body = await post(client, "/filter", sample("extender-filter-request.json"))
    assert status == 200 and body["Error"] == ""
    assert body["NodeNames"] == []
    reasons = body["FailedAndUnresolvableNodes"]
    assert set(reasons) == {"node-a", "node-b", "node-c"}
    assert reasons["node-a"] == "gang 0/1 placeable: needs cpu 1, best node node-a has cpu 0.5"


async def test_filter_fast_path_for_other_schedulers(client: TestClient[Any, Any]) -> None:
    req = copy.deepcopy(sample("extender-filter-request.json"))
    req["Pod"]["spec"]["schedulerName"] = "default-scheduler"
    status, body = await post(client, "/filter", req)
    assert status == 200 and body["NodeNames"] == ["node-a", "node-b", "node-c"]


async def test_filter_says_cannot_decide_before_sync(aiohttp_client: Any) -> None:
    client = await aiohttp_client(app_for(make_scheduler([node("node-a")], ready=False)))
    status, body = await post(client, "/filter", sample("extender-filter-request.json"))
    assert status == 200 and "not synced" in body["Error"]


async def test_prioritize_favours_the_planned_node(client: TestClient[Any, Any]) -> None:
    _, filtered = await post(client, "/filter", sample("extender-filter-request.json"))
    planned = filtered["NodeNames"][0]
    status, body = await post(client, "/prioritize", sample("extender-prioritize-request.json"))
    assert status == 200
    assert {h["Host"]: h["Score"] for h in body} == {
        n: (10 if n == planned else 0) for n in ("node-b", "node-c")
    }


async def test_bind_binds_and_is_idempotent(aiohttp_client: Any) -> None:
    ex = FakeExecutor()
    sched = make_scheduler([node("node-a"), node("node-b"), node("node-c")], ex)
    client = await aiohttp_client(app_for(sched))
    planned = await _planned(client)
    req = _bind_args(Node=planned)
    status, body = await post(client, "/bind", req)
    assert status == 200 and body == {"Error": ""}
    assert ex.binds == [("vtest", "vpod-2", req["PodUID"], planned)]
    # The pod is assumed on its node: its plan is gone and the node's capacity is taken.
    assert req["PodUID"] not in sched.shared.ledger.plans()
    held = sched.shared.cache.pod(PodUID(req["PodUID"]))
    assert held is not None and held.node_name == planned
    status, body = await post(client, "/bind", req)  # a retried bind
    assert body == {"Error": ""} and len(ex.binds) == 1


async def test_bind_failure_is_reported_and_releases_the_plan(aiohttp_client: Any) -> None:
    sched = make_scheduler([node("node-a"), node("node-b"), node("node-c")], FakeExecutor(fail=True))
    client = await aiohttp_client(app_for(sched))
    planned = await _planned(client)
    uid = sample("extender-bind-request.json")["PodUID"]
    assert uid in sched.shared.ledger.plans()
    status, body = await post(client, "/bind", _bind_args(Node=planned))
    assert status == 200 and "boom" in body["Error"]
    assert uid not in sched.shared.ledger.plans()


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/filter", b"not json", "not JSON"),
        ("/filter", b"[]", "JSON object"),
        ("/filter", b'{"NodeNames": ["a"]}', "Pod is required"),
        ("/filter", b'{"Pod": {}, "NodeNames": "a"}', "NodeNames"),
        ("/bind", b'{"PodName": "x"}', "PodNamespace is required"),
        ("/preempt", b"{}", "Pod is required"),
    ],
)
async def test_malformed_bodies_get_400_with_a_reason(
    client: TestClient[Any, Any], path: str, body: bytes, needle: str
) -> None:
    resp = await client.post(path, data=body)
    assert resp.status == 400
    assert needle in await resp.text()


async def test_bad_pod_gets_400_naming_the_field(client: TestClient[Any, Any]) -> None:
    req = copy.deepcopy(sample("extender-prioritize-request.json"))
    req["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    status, body = await post(client, "/prioritize", req)
    assert status == 400 and "spec.containers[0].resources.requests" in body


async def test_filter_reads_the_watched_pod_not_the_body(aiohttp_client: Any) -> None:
    """An unreadable pod (as the watch shows it) is refused with the field named, whatever the body says."""
    sched = make_scheduler([node("node-b")], watched=False)
    bad = copy.deepcopy(sample("extender-filter-request.json")["Pod"])
    bad["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    sched.shared.cache.upsert_pod(bad)
    client = await aiohttp_client(app_for(sched))
    status, body = await post(client, "/filter", sample("extender-filter-request.json"))
    assert status == 200 and body["NodeNames"] == []
    assert "spec.containers[0].resources.requests" in body["FailedAndUnresolvableNodes"]["node-b"]


@pytest.mark.parametrize(
    ("path", "body", "needle"),
    [
        ("/filter", {"Pod": {"spec": "x"}, "NodeNames": []}, "Pod.spec must be a JSON object"),
        ("/filter", {"Pod": {"metadata": []}, "NodeNames": []}, "Pod.metadata must be a JSON object"),
        ("/filter", {"Pod": {"metadata": {"uid": 7}}, "NodeNames": []}, "metadata.uid must be a string"),
        ("/filter", {"Pod": {"spec": {"schedulerName": []}}, "NodeNames": []}, "schedulerName"),
        ("/filter", {"Pod": {}, "Nodes": {"items": "x"}}, "Nodes.items must be a list"),
        ("/filter", {"Pod": {}, "Nodes": {"items": [{"metadata": 1}]}}, "metadata must be a JSON object"),
        ("/filter", {"Pod": {}, "Nodes": []}, "Nodes must be a JSON object"),
        ("/prioritize", {"Pod": [], "NodeNames": []}, "Pod must be a JSON object"),
        ("/preempt", {"Pod": {}, "NodeNameToVictims": ["x"]}, "victims must be a JSON object"),
        ("/preempt", {"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": "x"}}}, "Pods must be a list"),
        ("/preempt", {"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 1}]}}}, "string UID"),
        ("/preempt", {"Pod": {}, "NodeNameToMetaVictims": {"n": {"NumPDBViolations": "1"}}}, "integer"),
        ("/preempt", {"Pod": {}, "NodeNameToVictims": {"n": {"Pods": [{"metadata": []}]}}}, "metadata"),
        ("/bind", {"PodName": "x", "PodNamespace": "ns", "PodUID": ["u"], "Node": "n"}, "PodUID"),
    ],
)
async def test_wrongly_typed_bodies_get_400_with_a_reason(
    client: TestClient[Any, Any], path: str, body: object, needle: str
) -> None:
    status, text = await post(client, path, body)
    assert status == 400, text
    assert needle in text


async def test_bodies_over_the_cap_get_413(aiohttp_client: Any, scheduler: Scheduler) -> None:
    client = await aiohttp_client(app_for(scheduler, max_body=1024))
    resp = await client.post("/filter", data=b'{"NodeNames": ["' + b"n" * 2048 + b'"]}')
    assert resp.status == 413


async def test_a_large_body_is_decoded_and_answered(client: TestClient[Any, Any]) -> None:
    """Above the off-loop threshold the body is decoded in a worker thread; the answer is the same."""
    req = copy.deepcopy(sample("extender-filter-request.json"))
    req["NodeNames"] = ["node-b", "node-c"] + [f"absent-{i:06d}" for i in range(40_000)]
    status, body = await post(client, "/filter", req)
    assert status == 200 and len(body["NodeNames"]) == 1


# --- /bind binds only what pumice reserved (the reproduction: any caller could bind any pod) ----


async def _planned(client: TestClient[Any, Any]) -> str:
    _, filtered = await post(client, "/filter", sample("extender-filter-request.json"))
    node: str = filtered["NodeNames"][0]
    return node


def _bind_args(**over: str) -> dict[str, str]:
    req: dict[str, str] = sample("extender-bind-request.json")
    return {**req, **over}


async def test_bind_refuses_a_pod_pumice_does_not_know(aiohttp_client: Any) -> None:
    ex = FakeExecutor()
    sched = make_scheduler([node("node-b")], ex)
    sched.shared.cache.upsert_pod(
        running_pod("victim", "kube-system", "node-b") | {"spec": {"containers": []}}
    )
    client = await aiohttp_client(app_for(sched))
    for args in (
        _bind_args(PodName="victim", PodNamespace="ns", PodUID="made-up", Node="node-b"),
        _bind_args(PodName="victim", PodNamespace="kube-system", PodUID="victim", Node="node-b"),
        _bind_args(PodName="victim", PodNamespace="kube-system", PodUID="victim", Node="no-such-node"),
    ):
        status, body = await post(client, "/bind", args)
        assert status == 200 and body["Error"], args
    assert ex.binds == []
    assert sched.shared.stats.binds_refused == 3


async def test_bind_refuses_our_pod_without_a_reservation_or_on_another_node(aiohttp_client: Any) -> None:
    ex = FakeExecutor()
    sched = make_scheduler([node("node-a"), node("node-b"), node("node-c")], ex)
    client = await aiohttp_client(app_for(sched))
    _, body = await post(client, "/bind", _bind_args())
    assert "no reservation" in body["Error"] and ex.binds == []  # not planned yet
    planned = await _planned(client)
    other = next(n for n in ("node-a", "node-b", "node-c") if n != planned)
    _, body = await post(client, "/bind", _bind_args(Node=other))
    assert f"planned on {planned}" in body["Error"] and ex.binds == []
    _, body = await post(client, "/bind", _bind_args(Node=planned))
    assert body == {"Error": ""} and len(ex.binds) == 1


async def test_bind_refusal_and_failure_echo_no_api_server_text(aiohttp_client: Any) -> None:
    class LeakyExecutor(FakeExecutor):
        async def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
            raise BindError(f"binding pod {namespace}/{name} to {node} failed: HTTP 409 Conflict")

    sched = make_scheduler([node("node-b")], LeakyExecutor())
    client = await aiohttp_client(app_for(sched))
    planned = await _planned(client)
    _, body = await post(client, "/bind", _bind_args(Node=planned))
    assert "HTTP 409" in body["Error"] and sample("extender-bind-request.json")["PodUID"] not in body["Error"]


async def test_phantom_pods_in_filter_bodies_take_no_capacity(aiohttp_client: Any) -> None:
    """Running pods that exist only in /filter bodies once blocked all gang scheduling until a restart."""
    sched = make_scheduler([node("node-b")])
    client = await aiohttp_client(app_for(sched))
    for i in range(3):
        phantom = copy.deepcopy(sample("extender-filter-request.json"))
        phantom["Pod"]["metadata"].update(name=f"phantom-{i}", uid=f"phantom-{i}")
        phantom["Pod"]["spec"]["nodeName"] = "node-b"
        phantom["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4"
        phantom["Pod"]["status"] = {"phase": "Running"}
        status, body = await post(client, "/filter", phantom)
        assert status == 200 and body["NodeNames"] == []
        assert "has not shown this pod" in body["FailedAndUnresolvableNodes"]["node-b"]
    assert not any(sched.shared.cache.knows(PodUID(f"phantom-{i}")) for i in range(3))
    assert all(r.state is State.PLANNED for r in sched.shared.ledger.entries().values())  # nothing held
    # The real pod still gets its node.
    assert await _planned(client) == "node-b"


async def test_a_pod_refused_before_the_watch_showed_it_is_touched_once_planned(aiohttp_client: Any) -> None:
    sched = make_scheduler([node("node-b")], watched=False)
    client = await aiohttp_client(app_for(sched))
    _, body = await post(client, "/filter", sample("extender-filter-request.json"))
    assert body["NodeNames"] == []
    pod = sample("extender-filter-request.json")["Pod"]
    sched.shared.cache.upsert_pod(pod)  # the watch catches up
    await asyncio.sleep(0.3)  # the loop plans it
    assert (
        pod["metadata"]["uid"] in sched.shared.rejected
        and sched.shared.ledger.planned_node(pod["metadata"]["uid"]) == "node-b"
    )


def _gang_pods(sched: Scheduler, n: int, node_name: str, group: str = "g") -> list[str]:
    sched.shared.cache.upsert_podgroup(
        {
            "metadata": {"name": group, "namespace": "ns", "uid": "pg"},
            "spec": {"minMember": n},
            "status": {"phase": "Running"},
        }
    )
    uids = []
    for i in range(n):
        uid = f"{group}-{i}"
        sched.shared.cache.upsert_pod(
            {
                "metadata": {
                    "name": uid,
                    "namespace": "ns",
                    "uid": uid,
                    "annotations": {"scheduling.k8s.io/group-name": group},
                },
                "spec": {"schedulerName": "volcano", "nodeName": node_name, "containers": []},
                "status": {"phase": "Running"},
            }
        )
        uids.append(uid)
    return uids


def running_pod(name: str, namespace: str, node: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace, "uid": name},
        "spec": {"schedulerName": "default-scheduler", "nodeName": node, "containers": []},
        "status": {"phase": "Running"},
    }


def other_schedulers_pod() -> dict[str, Any]:
    preemptor: dict[str, Any] = copy.deepcopy(sample("extender-filter-request.json")["Pod"])
    preemptor["spec"]["schedulerName"] = "default-scheduler"
    return preemptor


async def test_preempt_never_breaks_a_running_gang(
    client: TestClient[Any, Any], scheduler: Scheduler
) -> None:
    gang = _gang_pods(scheduler, 2, "node-b")
    scheduler.shared.cache.upsert_pod(running_pod("loner", "ns", "node-c"))
    body = {
        "Pod": other_schedulers_pod(),
        "NodeNameToMetaVictims": {
            "node-b": {"Pods": [{"UID": gang[0]}], "NumPDBViolations": 0},
            "node-c": {"Pods": [{"UID": "loner"}], "NumPDBViolations": 0},
        },
    }
    status, result = await post(client, "/preempt", body)
    assert status == 200
    assert list(result["NodeNameToMetaVictims"]) == ["node-c"]


async def test_preempt_for_our_own_pods_offers_nothing(client: TestClient[Any, Any]) -> None:
    body = {
        "Pod": sample("extender-filter-request.json")["Pod"],
        "NodeNameToMetaVictims": {"node-c": {"Pods": [], "NumPDBViolations": 0}},
    }
    status, result = await post(client, "/preempt", body)
    assert status == 200 and result == {"NodeNameToMetaVictims": {}}


async def test_preempt_never_offers_critical_system_pods(
    client: TestClient[Any, Any], scheduler: Scheduler
) -> None:
    scheduler.shared.cache.upsert_pod(running_pod("dns", "kube-system", "node-b"))
    body = {
        "Pod": other_schedulers_pod(),
        "NodeNameToMetaVictims": {"node-b": {"Pods": [{"UID": "dns"}], "NumPDBViolations": 0}},
    }
    status, result = await post(client, "/preempt", body)
    assert status == 200 and result == {"NodeNameToMetaVictims": {}}
