"""The JobFlow and CronJob controllers against an in-memory API: what they create, write and delete, that a
restart creates no duplicate, and that HTTP/TCP probes really connect (to a local server)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, cast

import pytest

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.reconcilers.cronjobs import CronJobController
from controllers.reconcilers.flows import FlowController
from controllers.reconcilers.probes import ProbeRunner, probe_once
from extender.core.timestamps import epoch
from extender.flows.probes import ProbeRequest
from tests.flows.builders import entry, flow, template

Obj = dict[str, Any]
NS = "default"
JOBS = paths.JOBS.collection(NS)


def _merge(old: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(old, dict):
        return copy.deepcopy(patch)
    out = dict(old)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = _merge(out.get(k), v)
    return out


class FakeApi:
    """Objects by path; POST stores ``collection/name`` (409 if there); status patches check the RV."""

    def __init__(self) -> None:
        self.objects: dict[str, Obj] = {}
        self.calls: list[tuple[str, str]] = []
        self.rv = 10

    def put(self, path: str, obj: Obj) -> Obj:
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        obj["metadata"].setdefault("uid", f"uid-{obj['metadata']['name']}")
        obj["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        self.objects[path] = obj
        return obj

    async def post(self, path: str, body: Obj) -> Obj:
        self.calls.append(("POST", path))
        item = f"{path}/{body['metadata']['name']}"
        if item in self.objects:
            raise ApiError(409, {"message": "exists"}, "POST", path)
        return self.put(item, body)

    async def merge_patch(self, path: str, body: Obj) -> Obj:
        self.calls.append(("PATCH", path))
        item = path.removesuffix("/status")
        obj = self.objects[item]
        want = (body.get("metadata") or {}).get("resourceVersion")
        if want is not None and want != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, {"message": "conflict"}, "PATCH", path)
        merged = _merge(obj, {k: v for k, v in body.items() if k != "metadata"})
        return self.put(item, merged)

    async def request(self, method: str, path: str, body: Obj | None = None) -> Obj:
        self.calls.append((method, path))
        if self.objects.pop(path, None) is None:
            raise ApiError(404, {"message": "not found"}, method, path)
        return {}

    def jobs(self) -> dict[str, Obj]:
        return {p.rsplit("/", 1)[1]: o for p, o in self.objects.items() if p.startswith(JOBS + "/")}


EXAMPLE = (entry("a"), entry("b", "a"), entry("c", "b"), entry("d", "b"), entry("e", "c", "d"))


def controller(api: FakeApi) -> FlowController:
    c = FlowController(cast(KubeClient, api), clock=lambda: epoch("2026-01-01T01:00:00Z"))
    flows = [o for p, o in api.objects.items() if "/jobflows/" in p]
    c.handlers()["jobflows"].replace(flows)
    c.handlers()["jobtemplates"].replace([template(n) for n in "abcde"])
    c.handlers()["jobs"].replace(list(api.jobs().values()))
    c.handlers()["pods"].replace([])
    return c


def set_phase(api: FakeApi, c: FlowController, name: str, phase: str) -> None:
    path = f"{JOBS}/{name}"
    obj = copy.deepcopy(api.objects[path])
    obj["status"] = {"state": {"phase": phase}}
    c.handlers()["jobs"].upsert(api.put(path, obj))


async def test_flow_runs_in_order_and_a_restart_duplicates_nothing() -> None:
    api = FakeApi()
    api.put(paths.JOBFLOWS.item("test", namespace=NS), flow("test", *EXAMPLE))
    c = controller(api)
    await c.sync("default/test")
    assert sorted(api.jobs()) == ["test-a"]
    # pumice restarts: a new controller from what the API server holds creates nothing new.
    c = controller(api)
    await c.sync("default/test")
    assert sorted(api.jobs()) == ["test-a"]
    assert [m for m, p in api.calls if m == "POST"] == ["POST"]
    set_phase(api, c, "test-a", "Completed")
    await c.sync("default/test")
    assert sorted(api.jobs()) == ["test-a", "test-b"]
    for name in ("test-b", "test-c", "test-d", "test-e"):
        if f"{JOBS}/{name}" not in api.objects:
            await c.sync("default/test")
        set_phase(api, c, name, "Completed")
    await c.sync("default/test")
    stored = api.objects[paths.JOBFLOWS.item("test", namespace=NS)]
    assert stored["status"]["state"] == {"phase": "Succeed"}
    assert stored["status"]["completedJobs"] == [f"test-{x}" for x in "abcde"]
    owner = api.jobs()["test-e"]["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "JobFlow" and owner["uid"] == "flow-uid"


async def test_stale_flow_write_conflicts_and_a_deleted_flow_loses_its_jobs() -> None:
    api = FakeApi()
    stored = api.put(paths.JOBFLOWS.item("f", namespace=NS), flow("f", entry("a")))
    c = controller(api)
    # The flow changed on the server since the cache saw it: the status write must be refused.
    api.put(paths.JOBFLOWS.item("f", namespace=NS), stored)
    with pytest.raises(ApiError) as caught:
        await c.sync("default/f")
    assert caught.value.status == 409
    c = controller(api)
    await c.sync("default/f")
    assert list(api.jobs()) == ["f-a"]
    old_job = api.jobs()["f-a"]
    c.handlers()["jobflows"].remove(api.objects.pop(paths.JOBFLOWS.item("f", namespace=NS)))
    # Made again under the same name before the deletion was handled: the old flow's job is deleted
    # first, and the new flow makes its own once the watch shows the old one gone.
    again = flow("f", entry("a"), uid="flow-uid-2")
    c.handlers()["jobflows"].upsert(api.put(paths.JOBFLOWS.item("f", namespace=NS), again))
    await c.sync("default/f")
    assert api.jobs() == {}
    c.handlers()["jobs"].remove(old_job)
    await c.sync("default/f")
    new_job = api.jobs()["f-a"]
    assert new_job["metadata"]["ownerReferences"][0]["uid"] == "flow-uid-2"


async def test_cron_controller_creates_once_and_writes_status() -> None:
    api = FakeApi()
    cj = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "CronJob",
        "metadata": {"name": "cj", "namespace": NS, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {"spec": {"tasks": []}},
        },
    }
    api.put(paths.CRONJOBS.item("cj", namespace=NS), cj)
    now = [epoch("2026-01-01T00:01:10Z")]

    def make() -> CronJobController:
        c = CronJobController(cast(KubeClient, api), clock=lambda: now[0])
        c.handlers()["cronjobs"].replace([o for p, o in api.objects.items() if "/cronjobs/" in p])
        c.handlers()["jobs"].replace(list(api.jobs().values()))
        return c

    c = make()
    await c.sync("default/cj")
    name = f"cj-{int(epoch('2026-01-01T00:01:00Z') // 60)}"
    assert list(api.jobs()) == [name]
    status = api.objects[paths.CRONJOBS.item("cj", namespace=NS)]["status"]
    assert status["lastScheduleTime"] == "2026-01-01T00:01:00Z" and status["active"][0]["name"] == name
    now[0] = epoch("2026-01-01T00:02:10Z")  # next minute: Forbid, the first run is still active
    c = make()
    await c.sync("default/cj")
    assert list(api.jobs()) == [name]


async def test_probes_really_connect() -> None:
    async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        code = b"200 OK" if b"/ready" in line else b"503 Busy"
        writer.write(b"HTTP/1.0 " + code + b"\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        assert await probe_once(
            ProbeRequest(kind="httpGet", ip="127.0.0.1", port=port, path="/ready"), 1.0
        ) == (
            True,
            "HTTP 200",
        )
        assert await probe_once(ProbeRequest(kind="httpGet", ip="127.0.0.1", port=port, path="/x"), 1.0) == (
            False,
            "HTTP 503",
        )
        assert (await probe_once(ProbeRequest(kind="tcpSocket", ip="127.0.0.1", port=port), 1.0))[0]
    closed = await probe_once(ProbeRequest(kind="tcpSocket", ip="127.0.0.1", port=port), 1.0)
    assert closed[0] is False


async def test_probe_runner_bounds_concurrency() -> None:
    active, peak = 0, 0

    async def slow(req: ProbeRequest, limit: float) -> tuple[bool, str]:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return True, "ok"

    runner = ProbeRunner(concurrency=3, probe=slow, clock=lambda: 1.0)
    finished = asyncio.Event()
    done: list[int] = []

    def one() -> None:
        done.append(1)
        if len(done) == 20:
            finished.set()

    reqs = [ProbeRequest(kind="tcpSocket", ip="10.0.0.1", port=p) for p in range(1, 21)]
    runner.submit(reqs + reqs, one)  # duplicates are not queued twice
    async with asyncio.TaskGroup() as tg:
        workers = [tg.create_task(runner.work()) for _ in range(runner.concurrency)]
        await asyncio.wait_for(finished.wait(), 5)
        for w in workers:
            w.cancel()
    assert peak == 3 and len(runner.results) == 20 and runner.stats["probes"] == 20
