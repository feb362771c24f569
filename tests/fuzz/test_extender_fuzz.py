"""Malformed and adversarial bodies at every extender verb: never a 5xx, never a changed cluster view.

The bodies are generated (hypothesis, derandomized so CI is repeatable): arbitrary JSON, the wire
vocabulary with values of every type, and the captured kube-scheduler requests with one part replaced by
something else. After every request pumice's state is what it was: no pod, usage, assumption or bind
came from a request body (the issue's phantom pods and unplanned binds).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controllers.scheduling.scheduler import build_scheduler
from controllers.scheduling.shared import LoopSettings
from controllers.state.cluster import cluster_state
from controllers.state.ledger import State
from extender.plugins.registry import load_conf
from extender.server.app import make_extender_app
from extender.server.metrics import Histogram
from tests.contract.samples import sample
from tests.fuzz.strategies import paths

PER_VERB = 1250  # x 4 verbs = 5 000 requests
FUZZ = settings(
    max_examples=PER_VERB,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


class Recorder:
    def __init__(self) -> None:
        self.binds: list[tuple[str, ...]] = []

    async def bind(self, *args: str) -> None:
        self.binds.append(args)

    async def touch_planned(self, *args: str) -> None:
        pass

    async def lift_gate(self, *args: str) -> None:
        pass

    async def annotate(self, *args: Any) -> None:
        pass

    async def evict(self, *args: str) -> str | None:
        return None

    async def mark_disrupted(self, *args: str) -> None:
        pass

    async def patch_status(self, *args: Any, subresource: bool, resource_version: str = "") -> None:
        pass


class Harness:
    """One scheduler and test client on a private event loop, driven from hypothesis' sync tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        state = cluster_state(frozenset({"volcano"}))
        cache = state.cache
        cache.replace_nodes(
            [
                {
                    "metadata": {"name": n},
                    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
                }
                for n in ("node-a", "node-b", "node-c")
            ]
        )
        cache.replace_queues([{"metadata": {"name": "default"}, "spec": {"weight": 1}}])
        cache.upsert_pod(sample("extender-filter-request.json")["Pod"])
        self.executor = Recorder()
        self.sched = build_scheduler(
            state,
            load_conf(),
            self.executor,
            settings=LoopSettings(seen_timeout=0.0, plan_timeout=0.0),
        )
        self.sched.loop.ensure_fresh()
        app = make_extender_app(self.sched.verbs, Histogram("t", "t"), max_body=256 * 1024)
        self.client: TestClient[Any, Any] = TestClient(TestServer(app), loop=self.loop)
        self.loop.run_until_complete(self.client.start_server())

    def state(self) -> tuple[object, ...]:
        """What no request body may change. Plans are left out on purpose: a filter whose node list leaves
        out a pod's planned node is kube-scheduler saying its own filters refused that node, and pumice
        re-plans the gang, by protocol (callers are authenticated by mTLS where that matters)."""
        return (
            sorted(self.sched.shared.cache.full_snapshot().pods),
            {u: r for u, r in self.sched.shared.ledger.entries().items() if r.state is not State.PLANNED},
            len(self.executor.binds),
        )

    def post(self, path: str, body: bytes) -> tuple[int, bytes, str]:
        async def go() -> tuple[int, bytes, str]:
            resp = await self.client.post(path, data=body, headers={"Content-Type": "application/json"})
            return resp.status, await resp.read(), resp.content_type

        return self.loop.run_until_complete(go())

    def close(self) -> None:
        self.loop.run_until_complete(self.client.close())
        self.loop.close()


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.close()


# orjson writes 64-bit integers; larger numbers are sent as raw bodies below.
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
WIRE_KEYS = ["Pod", "Nodes", "NodeNames", "NodeNameToVictims", "NodeNameToMetaVictims", "PodName",
             "PodNamespace", "PodUID", "Node", "metadata", "spec", "items", "Pods", "UID", "uid",
             "schedulerName", "containers", "resources", "requests", "NumPDBViolations"]  # fmt: skip
wire_like = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(WIRE_KEYS), inner, max_size=5)
    ),
    max_leaves=20,
)
SAMPLE_FOR = {
    "/filter": "extender-filter-request.json",
    "/prioritize": "extender-prioritize-request.json",
    "/preempt": "extender-filter-request.json",
    "/bind": "extender-bind-request.json",
}


def _replace(obj: Any, path: tuple[object, ...], value: object) -> Any:
    out = copy.deepcopy(obj)
    cur = out
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return out


@st.composite
def mutatedsample(draw: st.DrawFn, verb: str) -> bytes:
    base = sample(SAMPLE_FOR[verb])
    if verb == "/preempt":
        base = {
            "Pod": base["Pod"],
            "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "x"}], "NumPDBViolations": 0}},
        }
    candidates = paths(base)
    for _ in range(draw(st.integers(1, 3))):
        base = _replace(base, draw(st.sampled_from(candidates)), draw(json_values))
        candidates = paths(base)
    return orjson.dumps(base)


def bodies(verb: str) -> st.SearchStrategy[bytes]:
    return st.one_of(
        mutatedsample(verb),
        wire_like.map(orjson.dumps),
        json_values.map(orjson.dumps),
        st.binary(max_size=64),
        st.just(b'{"Pod": {"spec": "x"}}'),
        st.just(b"[" * 2000),
        st.just(b"{" + b'"a":' * 5 + b"}"),
        st.just(b'{"Pod": {"metadata": {"uid": 1e400}}, "NodeNames": [1e999999]}'),
        st.just(
            b'{"PodName": "a", "PodNamespace": "b", "PodUID": "c", "Node": 123456789012345678901234567890}'
        ),
    )


def check(h: Harness, verb: str, body: bytes) -> None:
    before = h.state()
    status, raw, ctype = h.post(verb, body)
    assert status in (200, 400, 413), (verb, status, raw[:300])
    if status == 200:
        assert ctype == "application/json"
        answer = orjson.loads(raw)
        if verb == "/filter":
            assert set(answer) == {"NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}
        elif verb == "/prioritize":
            assert isinstance(answer, list)
        elif verb == "/preempt":
            assert set(answer) == {"NodeNameToMetaVictims"}
        else:
            assert set(answer) == {"Error"}
    else:
        assert raw, "a refusal carries a reason"
    assert h.state() == before, f"{verb} changed pumice's state"


@FUZZ
@given(body=bodies("/filter"))
def test_filter(harness: Harness, body: bytes) -> None:
    check(harness, "/filter", body)


@FUZZ
@given(body=bodies("/prioritize"))
def test_prioritize(harness: Harness, body: bytes) -> None:
    check(harness, "/prioritize", body)


@FUZZ
@given(body=bodies("/preempt"))
def test_preempt(harness: Harness, body: bytes) -> None:
    check(harness, "/preempt", body)


@FUZZ
@given(body=bodies("/bind"))
def test_bind(harness: Harness, body: bytes) -> None:
    check(harness, "/bind", body)


def test_the_harness_sees_a_change() -> None:
    """The state comparison is not vacuous: a real bind of the planned pod changes it. A harness of its
    own: after the fuzzing, kube-scheduler's filters may (by protocol) have refused every node for the
    sample pod, which then has no plan to bind."""
    harness = Harness()
    try:
        _bind_changes_state(harness)
    finally:
        harness.close()


def _bind_changes_state(harness: Harness) -> None:
    harness.sched.loop.ensure_fresh()
    before = harness.state()
    uid = sample("extender-bind-request.json")["PodUID"]
    node = harness.sched.shared.ledger.planned_node(uid)
    assert node is not None
    req = {**sample("extender-bind-request.json"), "Node": node}
    status, raw, _ = harness.post("/bind", orjson.dumps(req))
    assert status == 200 and orjson.loads(raw) == {"Error": ""}
    assert harness.state() != before
