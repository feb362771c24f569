"""API-server faults end no informer and delete nothing (controllers.kube.informer, issue #23 item 6).

What once ended pumice (a watch stream cut mid-chunk, raised as aiohttp's ClientPayloadError out of the
informer, took every root task with it) and its relatives, against the in-process API server: a cut stream
is watched again from the same resourceVersion (nothing listed again, nothing removed); an expired version
(410) is listed again; throttling (429) waits as long as the server asks; 5xx answers and a server that
went away are retried; the liveness check stays healthy meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from controllers.kube import paths
from controllers.kube.client import ConnectionLost, KubeClient
from controllers.kube.informer import Handler, Informer
from controllers.liveness import Liveness
from tests.fakeapi import FakeApiServer, serving

Obj = dict[str, Any]
NODES = paths.NODES.collection()


class Seen:
    def __init__(self) -> None:
        self.held: dict[str, Obj] = {}
        self.lists = 0
        self.removed: list[str] = []

    def handler(self) -> Handler:
        def replace(objs: Any) -> None:
            self.lists += 1
            self.held = {o["metadata"]["name"]: o for o in objs}

        def upsert(obj: Obj) -> None:
            self.held[obj["metadata"]["name"]] = obj

        def remove(obj: Obj) -> None:
            self.removed.append(obj["metadata"]["name"])
            self.held.pop(obj["metadata"]["name"], None)

        return Handler(replace, upsert, remove)


def node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


async def until(check: Callable[[], bool], within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def informer(fake: FakeApiServer) -> AsyncIterator[tuple[Informer, Seen, asyncio.Task[None]]]:
    async with serving(fake) as client:
        seen = Seen()
        inf = Informer(client, NODES, seen.handler(), name="nodes")
        task = asyncio.get_running_loop().create_task(inf.run())
        try:
            yield inf, seen, task
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_a_stream_cut_mid_chunk_is_watched_again_from_where_it_was() -> None:
    fake = FakeApiServer()
    fake.seed(f"{NODES}/a", node("a"))
    async with informer(fake) as (inf, seen, task):
        await until(inf.synced.is_set)
        fake.cut_watches = 3  # three watches in a row cut mid-event, as a stopping kube-apiserver does
        fake.drop_watches()
        await until(lambda: fake.cut_watches == 0)
        fake.seed(f"{NODES}/b", node("b"))
        await until(lambda: "b" in seen.held)
        assert not task.done()
        assert seen.lists == 1 and seen.removed == []  # watched again, never listed again or emptied
        assert inf.connection_errors >= 3 and inf.broken_since is None
        watches = [r.query.get("resourceVersion") for r in fake.requests if r.query.get("watch") == "true"]
        assert all(watches), watches  # every re-watch resumed from a resourceVersion


async def test_a_cut_stream_is_a_connection_error_for_every_caller() -> None:
    fake = FakeApiServer()
    fake.cut_watches = 1
    async with serving(fake) as client:
        with pytest.raises(ConnectionLost, match="ClientPayloadError"):
            async for _ in client.watch(NODES, []):
                pass
    assert issubclass(ConnectionLost, OSError)  # what the reconcilers already retry with backoff


async def test_an_expired_watch_lists_again_and_keeps_what_still_exists() -> None:
    fake = FakeApiServer()
    fake.seed(f"{NODES}/a", node("a"))
    async with informer(fake) as (inf, seen, _):
        await until(inf.synced.is_set)
        fake.seed(f"{NODES}/b", node("b"))
        fake.compact()
        fake.drop_watches()  # watched again from before the compaction: 410 Gone
        await until(lambda: seen.lists >= 2)
        await until(lambda: set(seen.held) == {"a", "b"})
        assert seen.removed == []


async def test_throttling_waits_as_the_server_asks_and_5xx_is_retried() -> None:
    fake = FakeApiServer()
    fake.seed(f"{NODES}/a", node("a"))
    fake.fail[NODES] = 429
    async with informer(fake) as (inf, seen, task):
        await asyncio.sleep(1.5)
        tries = len([r for r in fake.requests if r.path == NODES])
        assert 1 <= tries <= 3, tries  # Retry-After: 1 s between tries, not a hot loop
        assert not inf.synced.is_set() and not task.done()
        fake.fail[NODES] = 500
        await asyncio.sleep(1.0)
        del fake.fail[NODES]
        await until(inf.synced.is_set)
        assert set(seen.held) == {"a"} and inf.connection_errors >= 2


async def test_an_api_server_that_goes_away_and_comes_back() -> None:
    """The server stops (every request refused, the stream cut), then returns: the informer resumes within
    seconds, nothing is removed meanwhile, and liveness never turns unhealthy."""
    fake = FakeApiServer()
    fake.seed(f"{NODES}/a", node("a"))
    liveness = Liveness()
    async with informer(fake) as (inf, seen, task):
        liveness.watch(task)
        await until(inf.synced.is_set)
        fake.cut_watches = 1000
        fake.fail[NODES] = 503
        fake.drop_watches()
        await asyncio.sleep(3.0)
        assert liveness.problems() == [] and not task.done()
        assert inf.broken_since is not None and seen.held.keys() == {"a"}
        fake.cut_watches = 0
        del fake.fail[NODES]
        back = time.monotonic()
        fake.seed(f"{NODES}/b", node("b"))
        await until(lambda: "b" in seen.held)
        assert time.monotonic() - back < 6.0  # retries stay a few seconds apart
        assert seen.removed == [] and inf.broken_since is None


async def test_a_request_cut_short_is_a_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import aiohttp

    fake = FakeApiServer()
    async with serving(fake) as client:

        async def cut(*_: Any, **__: Any) -> Any:
            raise aiohttp.ServerDisconnectedError()

        monkeypatch.setattr(KubeClient, "_send", cut)
        with pytest.raises(ConnectionLost, match="ServerDisconnectedError"):
            await client.get(NODES)
