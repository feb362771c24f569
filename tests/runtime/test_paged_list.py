"""A LIST read in pages (controllers.kube.informer): handed over page by page, watched from its snapshot,
and applied only whole.

Each page goes to the handler's listing as it arrives (so 100 000 raw pods are never held at once); the
watch that follows starts from the resourceVersion of the LIST's first page, the snapshot every page is
of, so a change made while later pages were read is still seen; a LIST cut short changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

from controllers.kube.informer import Handler, Informer
from controllers.reconcilers.jobs import JOBS_PATH
from controllers.state.indexes import watched_objects
from tests.fakeapi import FakeApiServer
from tests.fakeapi.server import Recorded
from tests.runtime.test_containment import _until, job, kube, put

Obj = dict[str, Any]


class Pages:
    """A handler that records how each LIST arrived: the names of each page, and whether it ended."""

    def __init__(self) -> None:
        self.pages: list[list[str]] = []
        self.done = 0
        self.upserts: list[str] = []

    def page(self, objs: Sequence[Obj], /) -> None:
        self.pages.append([o["metadata"]["name"] for o in objs])
        assert all("managedFields" not in o["metadata"] for o in objs)

    def finish(self) -> None:
        self.done += 1

    def handler(self) -> Handler:
        pages = self

        class Listing:
            def page(self, objs: Sequence[Obj], /) -> None:
                pages.page(objs)

            def done(self) -> None:
                pages.finish()

        return Handler(
            replace=lambda _objs: None,
            upsert=lambda o: self.upserts.append(o["metadata"]["name"]),
            remove=lambda _o: None,
            listing=Listing,
        )


def _is_list(rec: Recorded) -> bool:
    return rec.method == "GET" and rec.path == JOBS_PATH and rec.query.get("watch") != "true"


async def test_a_list_arrives_page_by_page_and_is_watched_from_its_first_page() -> None:
    fake = FakeApiServer()
    for i in range(5):
        put(fake, {**job(f"j{i}"), "metadata": {**job(f"j{i}")["metadata"], "managedFields": [{"m": 1}]}})
    first_rv = str(fake.rv)

    def meanwhile(rec: Recorded) -> None:  # a job made while the second page is read
        if _is_list(rec) and rec.query.get("continue") == "2":
            put(fake, job("late"))

    fake.before = meanwhile
    got = Pages()
    async with kube(fake) as client:
        inf = Informer(client, JOBS_PATH, got.handler(), name="jobs", page_size=2)
        task = asyncio.create_task(inf.run())
        await _until(lambda: any(r.query.get("watch") == "true" for r in fake.calls("GET")))
        await _until(lambda: "late" in got.upserts or any("late" in p for p in got.pages))
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert got.done == 1 and inf.synced.is_set()
    assert [len(p) for p in got.pages][:2] == [2, 2] and all(len(p) <= 2 for p in got.pages)
    watch = next(r for r in fake.calls("GET") if r.query.get("watch") == "true")
    # The snapshot's version, not the later one the last page reported: "late" comes by the watch.
    assert watch.query["resourceVersion"] == first_rv
    assert "late" in got.upserts


async def test_a_list_cut_short_changes_nothing() -> None:
    store = watched_objects(frozenset({"volcano"}))
    store.handlers()["jobs"].replace([job("old")])
    fake = FakeApiServer()
    for i in range(5):
        put(fake, job(f"j{i}"))

    def cut(rec: Recorded) -> None:  # the second page fails (and every request after it)
        if _is_list(rec) and rec.query.get("continue"):
            fake.fail[JOBS_PATH] = 500

    fake.before = cut
    async with kube(fake) as client:
        inf = Informer(client, JOBS_PATH, store.handlers()["jobs"], name="jobs", page_size=2)
        task = asyncio.create_task(inf.run())
        await _until(lambda: len([r for r in fake.calls("GET") if _is_list(r)]) >= 3)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    assert not inf.synced.is_set()
    assert store.keys("jobs") == ["ns/old"]
