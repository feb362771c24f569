"""The JobFlow and CronJob controllers against the in-process API server (tests.fakeapi): what they create,
write and delete, that a restart creates no duplicate, and that HTTP/TCP probes really connect (to a local
server)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.reconcilers.cronjobs import CronJobController
from controllers.reconcilers.flows import FlowController
from controllers.reconcilers.probes import ProbeRunner, probe_once
from controllers.state.indexes import watched_objects
from extender.core.timestamps import epoch
from extender.flows.probes import ProbeRequest
from tests.fakeapi import FakeApiServer
from tests.flows.builders import entry, flow, template

Obj = dict[str, Any]
NS = "default"
JOBS = paths.JOBS.collection(NS)


def put(api: FakeApiServer, path: str, obj: Obj) -> Obj:
    """Store ``obj`` in the API server (created at the flows' epoch unless it says when)."""
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
    return api.seed(path, obj)


EXAMPLE = (entry("a"), entry("b", "a"), entry("c", "b"), entry("d", "b"), entry("e", "c", "d"))


def controller(api: FakeApiServer, kube: KubeClient) -> FlowController:
    store = watched_objects(frozenset({"volcano"}))
    c = FlowController(kube, store, clock=lambda: epoch("2026-01-01T01:00:00Z"))
    flows = [o for p, o in api.objects.items() if "/jobflows/" in p]
    store.handlers()["jobflows"].replace(flows)
    store.handlers()["jobtemplates"].replace([template(n) for n in "abcde"])
    store.handlers()["jobs"].replace(list(api.under(JOBS).values()))
    store.handlers()["pods"].replace([])
    return c


def set_phase(api: FakeApiServer, c: FlowController, name: str, phase: str) -> None:
    path = f"{JOBS}/{name}"
    obj = copy.deepcopy(api.objects[path])
    obj["status"] = {"state": {"phase": phase}}
    c.store.handlers()["jobs"].upsert(put(api, path, obj))


async def test_flow_runs_in_order_and_a_restart_duplicates_nothing(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = fake_api
    put(api, paths.JOBFLOWS.item("test", namespace=NS), flow("test", *EXAMPLE))
    c = controller(api, kube)
    await c.sync("default/test")
    assert sorted(api.under(JOBS)) == ["test-a"]
    # pumice restarts: a new controller from what the API server holds creates nothing new.
    c = controller(api, kube)
    await c.sync("default/test")
    assert sorted(api.under(JOBS)) == ["test-a"]
    assert [m for m, p in api.hits() if m == "POST"] == ["POST"]
    set_phase(api, c, "test-a", "Completed")
    await c.sync("default/test")
    assert sorted(api.under(JOBS)) == ["test-a", "test-b"]
    for name in ("test-b", "test-c", "test-d", "test-e"):
        if f"{JOBS}/{name}" not in api.objects:
            await c.sync("default/test")
        set_phase(api, c, name, "Completed")
    await c.sync("default/test")
    stored = api.objects[paths.JOBFLOWS.item("test", namespace=NS)]
    assert stored["status"]["state"] == {"phase": "Succeed"}
    assert stored["status"]["completedJobs"] == [f"test-{x}" for x in "abcde"]
    owner = api.under(JOBS)["test-e"]["metadata"]["ownerReferences"][0]
    assert owner["kind"] == "JobFlow" and owner["uid"] == "flow-uid"


async def test_stale_flow_write_conflicts_and_a_deleted_flow_loses_its_jobs(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = fake_api
    stored = put(api, paths.JOBFLOWS.item("f", namespace=NS), flow("f", entry("a")))
    c = controller(api, kube)
    # The flow changed on the server since the cache saw it: the status write must be refused.
    put(api, paths.JOBFLOWS.item("f", namespace=NS), stored)
    with pytest.raises(ApiError) as caught:
        await c.sync("default/f")
    assert caught.value.status == 409
    c = controller(api, kube)
    await c.sync("default/f")
    assert list(api.under(JOBS)) == ["f-a"]
    old_job = api.under(JOBS)["f-a"]
    c.store.handlers()["jobflows"].remove(api.objects.pop(paths.JOBFLOWS.item("f", namespace=NS)))
    # Made again under the same name before the deletion was handled: the old flow's job is deleted
    # first, and the new flow makes its own once the watch shows the old one gone.
    again = flow("f", entry("a"), uid="flow-uid-2")
    c.store.handlers()["jobflows"].upsert(put(api, paths.JOBFLOWS.item("f", namespace=NS), again))
    await c.sync("default/f")
    assert api.under(JOBS) == {}
    c.store.handlers()["jobs"].remove(old_job)
    await c.sync("default/f")
    new_job = api.under(JOBS)["f-a"]
    assert new_job["metadata"]["ownerReferences"][0]["uid"] == "flow-uid-2"


async def test_cron_controller_creates_once_and_writes_status(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = fake_api
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
    put(api, paths.CRONJOBS.item("cj", namespace=NS), cj)
    now = [epoch("2026-01-01T00:01:10Z")]

    def make() -> CronJobController:
        store = watched_objects(frozenset({"volcano"}))
        c = CronJobController(kube, store, clock=lambda: now[0])
        store.handlers()["cronjobs"].replace([o for p, o in api.objects.items() if "/cronjobs/" in p])
        store.handlers()["jobs"].replace(list(api.under(JOBS).values()))
        return c

    c = make()
    await c.sync("default/cj")
    name = f"cj-{int(epoch('2026-01-01T00:01:00Z') // 60)}"
    assert list(api.under(JOBS)) == [name]
    status = api.objects[paths.CRONJOBS.item("cj", namespace=NS)]["status"]
    assert status["lastScheduleTime"] == "2026-01-01T00:01:00Z" and status["active"][0]["name"] == name
    now[0] = epoch("2026-01-01T00:02:10Z")  # next minute: Forbid, the first run is still active
    c = make()
    await c.sync("default/cj")
    assert list(api.under(JOBS)) == [name]


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
