"""HyperNode problems become Warning Events on the HyperNode, written to an in-process API server: one per
distinct problem, none repeated while it persists, again after it went away and came back; odd objects
and node heartbeats change nothing; the loop waits for both watches and debounces."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from controllers.events import EventRecorder
from controllers.kube.client import KubeClient
from controllers.reconcilers.hypernode_problems import HyperNodeProblems
from controllers.state.indexes import watched_objects
from tests.core.test_hypernodes import exact, hn, regex
from tests.fakeapi import FakeApiServer

EVENTS = "/apis/events.k8s.io/v1"
Obj = dict[str, Any]


@pytest.fixture
def api(fake_api: FakeApiServer) -> FakeApiServer:
    return fake_api


@pytest.fixture
async def recorder(kube: KubeClient) -> AsyncIterator[EventRecorder]:
    events = EventRecorder(kube)
    task = asyncio.create_task(events.run())
    yield events
    task.cancel()


def problems(events: Any, **kw: Any) -> HyperNodeProblems:
    return HyperNodeProblems(events, watched_objects(frozenset({"volcano"})), **kw)


def with_uid(obj: Obj, uid: str) -> Obj:
    obj["metadata"]["uid"] = uid
    return obj


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}, "status": {"conditions": []}}


NODES = [node("n1"), node("n2"), node("n3")]


def broken() -> list[Obj]:
    return [
        with_uid(hn("s0", 1, regex("(bad"), exact("n1")), "u-s0"),
        with_uid(hn("s1", 1, exact("n2")), "u-s1"),
        with_uid(hn("s2", 1, exact("n2")), "u-s2"),  # n2 is in s1 too
        with_uid(hn("top", 2, exact("s0", "HyperNode"), exact("gone", "HyperNode")), "u-top"),
    ]


def events(api: FakeApiServer) -> list[Obj]:
    return [o for path, o in api.objects.items() if path.startswith(f"{EVENTS}/")]


async def flushed(rec: EventRecorder, api: FakeApiServer, writes: int) -> None:
    for _ in range(200):
        if rec.written >= writes:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{rec.written} Event writes, expected {writes}: {api.requests}")


async def test_one_event_per_problem_on_its_hypernode_and_no_repeats(
    api: FakeApiServer, recorder: EventRecorder
) -> None:
    c = problems(recorder)
    h = c.store.handlers()
    h["nodes"].replace(NODES)
    h["hypernodes"].replace(broken())
    assert await c.sync_once() == 3
    await flushed(recorder, api, 3)
    got = sorted(
        (e["regarding"]["kind"], e["regarding"]["name"], e["regarding"]["uid"], e["reason"], e["type"])
        for e in events(api)
    )
    assert got == [
        ("HyperNode", "s0", "u-s0", "InvalidMember", "Warning"),
        ("HyperNode", "s2", "u-s2", "OverlappingMember", "Warning"),
        ("HyperNode", "top", "u-top", "InvalidMember", "Warning"),
    ]
    notes = {e["regarding"]["name"]: e["note"] for e in events(api)}
    assert "regexMatch '(bad'" in notes["s0"] and "until the pattern is fixed" in notes["s0"]
    assert "node n2 is in both s1 and s2" in notes["s2"] and "remove it from one" in notes["s2"]
    assert "gone does not exist; create it or remove the member" in notes["top"]
    assert all(e["regarding"]["apiVersion"] == "topology.volcano.sh/v1alpha1" for e in events(api))

    # The same problems again (a re-list, another pass): nothing new is recorded or written.
    h["hypernodes"].replace(broken())
    assert await c.sync_once() == 0
    assert await c.sync_once() == 0
    await asyncio.sleep(0.05)
    assert recorder.written == 3 and len(events(api)) == 3


async def test_a_problem_that_goes_and_returns_is_reported_again(
    api: FakeApiServer, recorder: EventRecorder
) -> None:
    c = problems(recorder)
    h = c.store.handlers()
    h["nodes"].replace(NODES)
    h["hypernodes"].replace(broken())
    assert await c.sync_once() == 3
    await flushed(recorder, api, 3)
    s2 = broken()[2]
    h["hypernodes"].remove(s2)  # the overlap is fixed
    assert await c.sync_once() == 0
    h["hypernodes"].upsert(s2)  # and comes back
    assert await c.sync_once() == 1
    # Within the recorder's window a repeat is folded into the first Event's series (a PATCH, count 2).
    await flushed(recorder, api, 4)
    (patch,) = api.calls("PATCH")
    assert patch.path.startswith(f"{EVENTS}/namespaces/default/events/s2.")
    assert patch.body["series"]["count"] == 2


async def test_a_recreated_hypernode_is_a_new_object() -> None:
    recorded: list[tuple[str, str]] = []

    class Spy:
        def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
            recorded.append((ref.uid, reason))

    c = problems(Spy())
    h = c.store.handlers()
    h["nodes"].replace(NODES)
    h["hypernodes"].replace([with_uid(hn("s0", 1, regex("(bad")), "u1")])
    await c.sync_once()
    h["hypernodes"].upsert(with_uid(hn("s0", 1, regex("(bad")), "u2"))  # deleted and created again
    await c.sync_once()
    assert recorded == [("u1", "InvalidMember"), ("u2", "InvalidMember")]


async def test_odd_objects_never_stop_it_and_heartbeats_are_not_changes() -> None:
    recorded: list[str] = []

    class Spy:
        def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
            recorded.append(ref.name)

    c = problems(Spy(), debounce=0.01)
    h = c.store.handlers()
    odd: list[Any] = [
        {"metadata": "nope"},
        {"metadata": {"name": "t"}, "spec": {"tier": "x"}},
        {"metadata": {"name": "m"}, "spec": {"tier": 1, "members": [{"type": "Pod"}]}},
        {"metadata": {"name": "l", "labels": ["a"]}, "spec": {"tier": 1, "members": "no"}},
        {},
    ]
    h["hypernodes"].replace([*odd, with_uid(hn("s0", 1, regex("(bad")), "u")])
    assert not c.ready and c._dirty.is_set()
    task = asyncio.create_task(c.run())
    try:
        await asyncio.sleep(0.1)
        assert recorded == []  # the node watch has not listed yet: no pass
        h["nodes"].replace([*NODES, {"metadata": {"name": "n9", "labels": None}}, {"kind": "Node"}])
        for _ in range(100):
            if recorded:
                break
            await asyncio.sleep(0.01)
        assert recorded == ["s0"]
        passes = c.stats["passes"]
        # A status heartbeat (same labels) is no change: no pass; a label change is one.
        h["nodes"].upsert({**node("n1"), "status": {"conditions": [{"type": "Ready"}]}})
        await asyncio.sleep(0.1)
        assert c.stats["passes"] == passes
        h["nodes"].upsert(node("n1", rack="r1"))
        for _ in range(100):
            if c.stats["passes"] > passes:
                break
            await asyncio.sleep(0.01)
        assert c.stats["passes"] == passes + 1 and recorded == ["s0"] and c.stats["errors"] == 0
    finally:
        task.cancel()
