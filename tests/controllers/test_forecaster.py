"""The forecast in serve: runtimes learned from the jobs watch, the input taken from the cache, the
forecaster's pacing (only when something changed, off the event loop), and who may read what."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any, cast

import pytest

from controllers.forecast.access import AccessUnavailable, KubeAccess
from controllers.forecast.finished import finished_job, runtime_handler
from controllers.forecast.inputs import forecast_input
from controllers.forecast.runner import COST_RATIO, Forecaster
from controllers.kube.client import ApiError, KubeClient
from controllers.scheduling.scheduler import build_scheduler
from controllers.simulate import forecast as engine
from controllers.state.cluster import cluster_state
from extender.core.model import GroupKey
from extender.forecast.model import Outlook
from extender.forecast.runtimes import ANNOTATION, JOB_NAME, Finished, RuntimeBook
from extender.plugins.registry import load_conf
from tests.controllers.test_scheduler import RecordingExecutor
from tests.core.builders import gang, node, queue


def vcjob(name: str, phase: str, conditions: list[tuple[str, str]], uid: str = "u1") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "team", "uid": uid},
        "spec": {"queue": "research"},
        "status": {
            "state": {"phase": phase},
            "conditions": [{"status": s, "lastTransitionTime": t} for s, t in conditions],
        },
    }


def test_a_completed_job_ran_from_its_last_running_condition() -> None:
    job = vcjob(
        "train-28571430",
        "Completed",
        [
            ("Pending", "2026-01-01T00:00:00Z"),
            ("Running", "2026-01-01T00:01:00Z"),
            ("Restarting", "2026-01-01T00:02:00Z"),
            ("Running", "2026-01-01T00:03:00Z"),
            ("Completed", "2026-01-01T00:13:00Z"),
        ],
    )
    run = finished_job(job, "default")
    assert run is not None and (run.seconds, run.queue, run.namespace) == (600.0, "research", "team")
    assert finished_job(vcjob("x", "Failed", [("Running", "2026-01-01T00:01:00Z")]), "default") is None
    assert finished_job(vcjob("x", "Completed", [("Completed", "2026-01-01T00:01:00Z")]), "default") is None
    book = RuntimeBook()
    handler = runtime_handler(book, "default")
    handler.replace([job, vcjob("y", "Running", [])])
    handler.upsert(job)  # seen again: counted once
    est = book.estimate(queue="research", namespace="team", name="train-28571490", now=0)
    assert est is not None and (est.basis, est.seconds, est.samples) == (JOB_NAME, 600.0, 1)
    # A LIST page by page counts as its pages arrive (the informer keeps no page for it).
    paged = RuntimeBook()
    listing = runtime_handler(paged, "default").begin()
    listing.page([vcjob("y", "Running", [])])
    listing.page([job])
    est = paged.estimate(queue="research", namespace="team", name="train-28571490", now=0)
    assert est is not None and est.samples == 1
    listing.done()
    listing.page([job])  # seen again: counted once
    est = paged.estimate(queue="research", namespace="team", name="train-28571490", now=0)
    assert est is not None and est.samples == 1


def state_with(*objects: dict[str, Any]) -> Any:
    state = cluster_state(frozenset({"volcano"}))
    handlers = state.cache.handlers()
    for o in objects:
        kind = o["kind"]
        plural = {"Node": "nodes", "Pod": "pods", "PodGroup": "podgroups", "Queue": "queues"}[kind]
        handlers[plural].upsert(o)
    return state


def scenario() -> list[dict[str, Any]]:
    big, big_pods = gang("big", 1, cpu="4", phase="Running", node="n")
    big_pods[0]["status"]["phase"] = "Running"
    big_pods[0]["metadata"]["annotations"]["pumice.dev/expected-runtime"] = "10m"
    big["status"]["conditions"] = [
        {"type": "Scheduled", "status": "True", "lastTransitionTime": "2024-01-01T00:30:00Z"}
    ]
    wait, wait_pods = gang("wait", 2, cpu="2")
    return [node("n", cpu="4"), queue("default"), big, *big_pods, wait, *wait_pods]


def test_the_input_carries_runtimes_and_starts() -> None:
    state = state_with(*scenario())
    s = build_scheduler(state, load_conf(), RecordingExecutor())
    s.loop.cycle()
    inp = forecast_input(state.cache, s.shared, RuntimeBook(), now=1704069000.0)
    big = GroupKey("default/big")
    assert inp.runtimes[big].basis == ANNOTATION and inp.runtimes[big].seconds == 600.0
    assert inp.started == {big: 1704069000.0}  # its Scheduled condition
    assert GroupKey("default/wait") not in inp.runtimes  # nothing declared, nothing learned
    assert GroupKey("default/wait") in inp.settled  # the live loop settled it: the forecast leaves it so


async def test_the_forecaster_runs_off_the_loop_and_only_when_something_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = state_with(*scenario())
    s = build_scheduler(state, load_conf(), RecordingExecutor())
    threads: list[str] = []
    real = engine.forecast

    def spy(*args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr("controllers.forecast.runner.forecast", spy)
    f = Forecaster(state.cache, s.shared, RuntimeBook(), interval=1.0, clock=lambda: 1704069000.0)
    assert not await f.once()  # no cycle yet: phases are not decided
    s.loop.cycle()
    s.shared.decided += 1
    assert await f.once()
    assert threads and threads[0] != threading.main_thread().name
    g = f.forecast().groups[GroupKey("default/wait")]
    # big started at 00:30 and runs 10 minutes: wait starts at 00:40.
    assert (g.outlook, g.start) == (Outlook.ESTIMATED, 1704069600.0)
    assert not await f.once()  # nothing changed
    f.book.observe(Finished(uid="x", queue="default", namespace="default", name="wait", seconds=60.0, at=0.0))
    assert await f.once() and f.runs == 2

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("broken")

    monkeypatch.setattr("controllers.forecast.runner.forecast", boom)
    state.cache.upsert_node(node("n2", cpu="1"))
    assert not await f.once()
    assert f.errors == 1 and f.runs == 2 and f.forecast().groups  # the last good one stays


async def test_a_costly_forecast_waits_longer_before_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forecast shares the interpreter with the cycle: the next waits COST_RATIO times what the last
    one cost when that is longer than the interval, so forecasting never takes more than a slice of a core."""
    state = state_with(*scenario())
    s = build_scheduler(state, load_conf(), RecordingExecutor())
    real = engine.forecast

    def costly(*args: Any, **kwargs: Any) -> Any:
        return dataclasses.replace(real(*args, **kwargs), cpu_seconds=2.5)

    f = Forecaster(state.cache, s.shared, RuntimeBook(), interval=30.0, clock=lambda: 1704069000.0)
    assert f.next_wait() == 30.0
    s.loop.cycle()
    s.shared.decided += 1
    monkeypatch.setattr("controllers.forecast.runner.forecast", costly)
    assert await f.once()
    assert f.next_wait() == COST_RATIO * 2.5 > 30.0
    monkeypatch.setattr("controllers.forecast.runner.forecast", real)
    f.book.observe(Finished(uid="x", queue="default", namespace="default", name="wait", seconds=60.0, at=0.0))
    assert await f.once()
    assert f.next_wait() == 30.0  # a cheap one: the interval again


class Reviews:
    """A stand-in for the API server's review endpoints."""

    def __init__(self, users: dict[str, str], grants: dict[str, set[str]]) -> None:
        self.users, self.grants = users, grants
        self.calls: list[str] = []
        self.down = False

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append(path.rsplit("/", 1)[1])
        if self.down:
            raise ApiError(500, {"message": "etcd"}, "POST", path)
        if path.endswith("tokenreviews"):
            user = self.users.get(body["spec"]["token"])
            if user is None:
                return {"status": {"authenticated": False}}
            return {"status": {"authenticated": True, "user": {"username": user, "groups": ["g"]}}}
        attrs = body["spec"]["resourceAttributes"]
        assert (attrs["verb"], attrs["group"], attrs["resource"]) == (
            "get",
            "scheduling.volcano.sh",
            "podgroups",
        )
        return {"status": {"allowed": attrs["namespace"] in self.grants.get(body["spec"]["user"], set())}}


async def test_the_api_server_says_who_reads_which_namespace() -> None:
    api = Reviews({"t-alice": "alice", "t-root": "root"}, {"alice": {"a"}, "root": {""}})
    access = KubeAccess(cast(KubeClient, api))
    assert await access.readable("t-alice", ["a", "b"]) == ("alice", frozenset({"a"}))
    assert await access.readable("t-root", ["a", "b"]) == ("root", frozenset({"a", "b"}))
    assert await access.readable("nope", ["a"]) == (None, frozenset())
    calls = len(api.calls)
    assert await access.readable("t-alice", ["a", "b"]) == ("alice", frozenset({"a"}))
    assert len(api.calls) == calls  # remembered
    api.down = True
    with pytest.raises(AccessUnavailable):
        await access.readable("t-other", ["a"])
