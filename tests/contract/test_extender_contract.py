"""The extender endpoints driven with the exact bodies kube-scheduler v1.24 sends (../shared/wire-samples)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from controllers.cache import ClusterCache
from controllers.executor import BindError
from controllers.scheduler import Scheduler
from extender.plugins.registry import load_conf
from extender.server.app import make_extender_app
from extender.server.metrics import Histogram

SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "wire-samples"
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"wire samples not found at {SAMPLES}")


def sample(name: str) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads((SAMPLES / name).read_bytes())
    return data


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


def make_scheduler(nodes: list[dict[str, Any]], executor: FakeExecutor | None = None) -> Scheduler:
    cache = ClusterCache(scheduler_names=frozenset({"volcano"}))
    cache.replace_nodes(nodes)
    cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
    return Scheduler(cache, load_conf(), executor or FakeExecutor())  # type: ignore[arg-type]


@pytest.fixture
def scheduler() -> Scheduler:
    return make_scheduler([node("node-a", "500m"), node("node-b"), node("node-c")])


@pytest.fixture
async def client(aiohttp_client: Any, scheduler: Scheduler) -> TestClient[Any, Any]:
    app = make_extender_app(scheduler, Histogram("t", "t"))
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
    client = await aiohttp_client(make_extender_app(sched, Histogram("t", "t")))
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


async def test_filter_says_cannot_decide_before_sync(
    client: TestClient[Any, Any], scheduler: Scheduler
) -> None:
    scheduler.ready_fn = lambda: False
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
    client = await aiohttp_client(make_extender_app(sched, Histogram("t", "t")))
    await post(client, "/filter", sample("extender-filter-request.json"))
    req = sample("extender-bind-request.json")
    status, body = await post(client, "/bind", req)
    assert status == 200 and body == {"Error": ""}
    assert ex.binds == [("vtest", "vpod-2", req["PodUID"], "node-c")]
    # The pod is assumed on node-c: its plan is gone and node-c's capacity is taken.
    assert req["PodUID"] not in sched.plans
    assert sched.cache.pods[req["PodUID"]].node_name == "node-c"


async def test_bind_failure_is_reported_and_releases_the_plan(aiohttp_client: Any) -> None:
    sched = make_scheduler([node("node-a"), node("node-b"), node("node-c")], FakeExecutor(fail=True))
    client = await aiohttp_client(make_extender_app(sched, Histogram("t", "t")))
    await post(client, "/filter", sample("extender-filter-request.json"))
    uid = sample("extender-bind-request.json")["PodUID"]
    assert uid in sched.plans
    status, body = await post(client, "/bind", sample("extender-bind-request.json"))
    assert status == 200 and "boom" in body["Error"]
    assert uid not in sched.plans


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
    req = copy.deepcopy(sample("extender-filter-request.json"))
    req["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    status, body = await post(client, "/filter", req)
    assert status == 400 and "spec.containers[0].resources.requests" in body


def _gang_pods(sched: Scheduler, n: int, node_name: str, group: str = "g") -> list[str]:
    sched.cache.upsert_podgroup(
        {
            "metadata": {"name": group, "namespace": "ns", "uid": "pg"},
            "spec": {"minMember": n},
            "status": {"phase": "Running"},
        }
    )
    uids = []
    for i in range(n):
        uid = f"{group}-{i}"
        sched.cache.upsert_pod(
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
    scheduler.cache.upsert_pod(running_pod("loner", "ns", "node-c"))
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
    scheduler.cache.upsert_pod(running_pod("dns", "kube-system", "node-b"))
    body = {
        "Pod": other_schedulers_pod(),
        "NodeNameToMetaVictims": {"node-b": {"Pods": [{"UID": "dns"}], "NumPDBViolations": 0}},
    }
    status, result = await post(client, "/preempt", body)
    assert status == 200 and result == {"NodeNameToMetaVictims": {}}
