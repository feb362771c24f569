"""The runtime contains bad objects and bad answers (the Hardening issue's reproductions, below e2e).

Each test is the reproduction: before the fix it crashed the process, deleted work, or left a zombie.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
import pytest

from controllers.events import EventRecorder
from controllers.kube import paths
from controllers.kube.client import KubeClient, UnreadableResponse
from controllers.kube.informer import Handler, Informer
from controllers.liveness import Liveness
from controllers.reconcilers.jobs import JOBS_PATH, JobController
from controllers.scheduling.scheduler import build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from controllers.state.indexes import watched_objects
from extender.plugins.registry import load_conf
from tests.fakeapi import FakeApiServer, serving

Obj = dict[str, Any]


def job(name: str, ns: str = "ns") -> Obj:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "7"},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "w",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                }
            ],
        },
    }


def job_pod(jobname: str, ns: str = "ns") -> Obj:
    return {
        "metadata": {
            "name": f"{jobname}-w-0",
            "namespace": ns,
            "uid": f"pod-{jobname}",
            "resourceVersion": "5",
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": jobname,
                    "uid": f"uid-{jobname}",
                    "controller": True,
                }
            ],
            "annotations": {"volcano.sh/task-spec": "w", "volcano.sh/job-name": jobname},
            "labels": {"volcano.sh/job-name": jobname, "volcano.sh/task-spec": "w"},
        },
        "spec": {"schedulerName": "volcano", "nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"},
    }


def deep_bytes(obj: Obj, levels: int) -> bytes:
    """``obj`` with a value nested ``levels`` deep, encoded by hand: kube-apiserver stores it, orjson will
    neither encode nor decode past 1024 levels."""
    body = orjson.dumps(obj)
    inner = b'{"a":' * levels + b'"x"' + b"}" * levels
    return body[:-1] + b',"spec":{"deep":' + inner + b"}}"


def put(fake: FakeApiServer, obj: Obj, raw: bytes | None = None) -> Obj:
    """Store a job in the API server (``raw``: the bytes it serves for it instead)."""
    meta = obj["metadata"]
    return fake.seed(paths.JOBS.item(meta["name"], namespace=meta["namespace"]), obj, raw)


def kube(fake: FakeApiServer) -> contextlib.AbstractAsyncContextManager[KubeClient]:
    return serving(fake)


class Collect:
    def __init__(self) -> None:
        self.replaced: list[list[Obj]] = []
        self.unreadable: list[list[Obj]] = []
        self.upserts: list[Obj] = []

    def handler(self, *, explode_on: str = "") -> Handler:
        def upsert(obj: Obj) -> None:
            if obj["metadata"]["name"] == explode_on:
                raise RuntimeError("boom")
            self.upserts.append(obj)

        return Handler(lambda objs: self.replaced.append(list(objs)), upsert, lambda _o: None,
                       lambda metas: self.unreadable.append(list(metas)))  # fmt: skip


async def _until(cond: Any, limit: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while not cond():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.01)


async def test_an_undecodable_list_is_never_an_empty_one() -> None:
    """A job nested > 1024 levels made the jobs LIST undecodable; the client turned it into {} and the
    job controller then deleted the pods of healthy jobs. Now: the fallback lists one by one."""
    fake = FakeApiServer()
    put(fake, job("good-1"))
    put(fake, job("good-2"))
    put(fake, job("deep"), deep_bytes(job("deep"), 1500))
    async with kube(fake) as client:
        with pytest.raises(UnreadableResponse):
            await client.get(JOBS_PATH)
        got = Collect()
        inf = Informer(client, JOBS_PATH, got.handler(), name="jobs")
        task = asyncio.create_task(inf.run())
        await _until(inf.synced.is_set)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert sorted(o["metadata"]["name"] for o in got.replaced[0]) == ["good-1", "good-2"]
    assert [m["metadata"]["name"] for m in got.unreadable[0]] == ["deep"]
    assert inf.unreadable == 1


async def test_a_handler_that_raises_on_one_object_does_not_stop_the_stream() -> None:
    fake = FakeApiServer()
    fake.watch_lines = [
        orjson.dumps({"type": "ADDED", "object": job("poison")}),
        orjson.dumps({"type": "ADDED", "object": job("fine")}),
    ]
    async with kube(fake) as client:
        got = Collect()
        inf = Informer(client, JOBS_PATH, got.handler(explode_on="poison"), name="jobs")
        task = asyncio.create_task(inf.run())
        await _until(lambda: bool(got.upserts))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert [o["metadata"]["name"] for o in got.upserts] == ["fine"]
    assert inf.handler_errors == 1


async def test_an_undecodable_watch_event_relists() -> None:
    fake = FakeApiServer()
    put(fake, job("a"))
    fake.watch_lines = [b'{"type": "ADDED", "object": ' + b"[" * 1500]
    async with kube(fake) as client:
        got = Collect()
        inf = Informer(client, JOBS_PATH, got.handler(), name="jobs")
        task = asyncio.create_task(inf.run())
        await _until(lambda: len(got.replaced) >= 2, limit=10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert inf.list_errors >= 1 and [o["metadata"]["name"] for o in got.replaced[1]] == ["a"]


def _controller(client: KubeClient, **kw: Any) -> JobController:
    store = watched_objects(frozenset({"volcano"}))
    jc = JobController(client, store, scheduler_names=frozenset({"volcano"}), workers=2, **kw)
    for h in ("commands", "podgroups"):
        store.handlers()[h].replace([])
    return jc


async def _drain(jc: JobController) -> None:
    """Run the controller until its queue has nothing queued or in hand (a fixed sleep flaked under load)."""
    task = asyncio.create_task(jc.run())
    await _until(lambda: jc.queue.idle, limit=10.0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _pod_deletes(fake: FakeApiServer) -> list[str]:
    return [p for m, p in fake.hits() if m == "DELETE" and "/pods/" in p]


async def test_a_job_missing_from_a_list_keeps_its_pods_unless_the_api_says_it_is_gone() -> None:
    fake = FakeApiServer()
    put(fake, job("alive"))  # exists, though the LIST below does not show it
    async with kube(fake) as client:
        jc = _controller(client)
        jc.store.handlers()["jobs"].replace([job("alive")])
        jc.store.handlers()["pods"].replace([job_pod("gone")])
        jc.store.handlers()["jobs"].replace([])  # a re-list that lost "alive" (cut short, or unreadable)
        await _drain(jc)
    # "alive" was confirmed by a GET and kept; "gone" answered 404 and only then were its pods cleaned up.
    assert ("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/alive") in fake.hits()
    assert ("GET", "/apis/batch.volcano.sh/v1alpha1/namespaces/ns/jobs/gone") in fake.hits()
    assert _pod_deletes(fake) == ["/api/v1/namespaces/ns/pods/gone-w-0"]
    assert "ns/alive" in jc.jobs and jc.stats["pods_deleted"] == 1


async def test_an_unreadable_job_is_left_alone_and_reported() -> None:
    fake = FakeApiServer()
    put(fake, job("deep"), deep_bytes(job("deep"), 1500))
    async with kube(fake) as client:
        events = EventRecorder(client)
        jc = _controller(client, events=events)
        jc.store.handlers()["pods"].replace([job_pod("deep")])
        jc.store.handlers()["jobs"].replace([])  # as if the list lost it: the GET cannot be read either
        await _drain(jc)
        ev = asyncio.create_task(events.run())
        jc.store.handlers()["jobs"].unreadable([{"metadata": {"name": "deep", "namespace": "ns"}}])
        await _until(lambda: events.written >= 1)
        ev.cancel()
    assert _pod_deletes(fake) == [] and "ns/deep" in jc.unreadable
    assert any(b["reason"] == "Unreadable" for _, b in fake.posted())


async def test_a_job_whose_sync_raises_is_retried_and_the_others_carry_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import controllers.reconcilers.jobs as jobs_module
    from extender.jobs.reconcile import reconcile as real  # what the job controller calls

    def reconcile(world: Any) -> Any:
        if world.job.name == "poison":
            raise RuntimeError("unexpected")
        return real(world)

    monkeypatch.setattr(jobs_module, "reconcile", reconcile)
    fake = FakeApiServer()
    for name in ("poison", "fine"):
        put(fake, job(name))
    async with kube(fake) as client:
        events = EventRecorder(client)
        jc = _controller(client, events=events)
        jc.store.handlers()["pods"].replace([])
        jc.store.handlers()["jobs"].replace(list(fake.objects.values()))
        ev = asyncio.create_task(events.run())
        await _drain(jc)
        await _until(lambda: events.written >= 1)
        ev.cancel()
    assert jc.stats["errors"] >= 1 and jc.queue.failures.get("ns/poison", 0) >= 1
    assert "ns/fine" not in jc.queue.failures
    assert any(p.endswith("/podgroups") for p, _ in fake.posted()), "the healthy job got its PodGroup"
    notes = [b["note"] for _, b in fake.posted() if b.get("reason") == "SyncFailed"]
    assert notes and "RuntimeError: unexpected" in notes[0]


async def test_an_invalid_job_gets_a_reason_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeApiServer()
    bad = job("bad")
    bad["spec"]["tasks"][0]["replicas"] = "many"
    put(fake, bad)
    async with kube(fake) as client:
        jc = _controller(client, validate=lambda obj: ["spec.tasks[0].replicas: must be an integer"])
        jc.store.handlers()["pods"].replace([])
        jc.store.handlers()["jobs"].replace([bad])
        await _drain(jc)
    stored = fake.objects[paths.JOBS.item("bad", namespace="ns")]
    state = stored["status"]["state"]
    assert {k: state[k] for k in ("phase", "reason", "message")} == {
        "phase": "Pending",
        "reason": "InvalidSpec",
        "message": "spec.tasks[0].replicas: must be an integer",
    }
    assert not any(p.endswith(("/pods", "/podgroups")) for p, _ in fake.posted())


def test_a_podgroup_with_an_absurd_quantity_is_skipped_and_reported() -> None:
    """minResources.cpu: 1e400 once crash-looped pumice: the skip path's log call itself raised."""
    cache = cluster_state(frozenset({"volcano"})).cache
    cache.upsert_podgroup(
        {"metadata": {"name": "pg", "namespace": "ns"}, "spec": {"minResources": {"cpu": "1e400"}}}
    )
    cache.upsert_podgroup({"metadata": {"name": "pg2", "namespace": "ns"}, "spec": {"minMember": "x"}})
    assert set(cache.unreadable()) == {("PodGroup", "ns/pg"), ("PodGroup", "ns/pg2")}
    assert cache.podgroup("ns", "pg") is None and cache.podgroup("ns", "pg2") is None


async def test_the_scheduling_loop_honours_cancellation_and_beats() -> None:
    liveness = Liveness()
    beat = liveness.expect("scheduling loop", 60)
    sched = build_scheduler(
        cluster_state(frozenset({"volcano"})),
        load_conf(),
        None,  # type: ignore[arg-type]  # no executor: nothing here is ever written
        settings=LoopSettings(resync=0.01),
        heartbeat=beat,
    )
    for _ in range(20):  # cancel at many points of the loop, waits and wake-ups included
        task = asyncio.create_task(sched.run())
        await asyncio.sleep(0.005)
        sched.shared.pending.wakeup.set()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert liveness.problems() == []


async def test_a_dead_root_task_makes_healthz_unhealthy_and_fires_once() -> None:
    liveness = Liveness()
    deaths: list[str] = []
    liveness.on_death = deaths.append

    async def crashes() -> None:
        raise RuntimeError("x")

    task = asyncio.create_task(crashes(), name="scheduler")
    liveness.watch(task)
    with contextlib.suppress(RuntimeError):
        await task
    await asyncio.sleep(0)
    assert deaths == ["scheduler"] and liveness.problems() == ["root task scheduler has ended"]


def test_a_stalled_loop_is_reported() -> None:
    now = [0.0]
    liveness = Liveness(clock=lambda: now[0])
    beat = liveness.expect("status writer", 120)
    now[0] = 100
    beat()
    now[0] = 221
    assert liveness.problems() == ["status writer has not made progress for 121s (limit 120s)"]
