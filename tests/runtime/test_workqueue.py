"""The controllers' work queue: de-duplication, one worker per key, re-queue while in flight, backoff."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from controllers.workqueue import WorkQueue


async def test_a_key_added_twice_is_queued_once() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert len(q) == 2
    assert await q.get() == "a" and await q.get() == "b"


async def test_a_key_added_while_held_runs_again_after_and_never_concurrently() -> None:
    q: WorkQueue[str] = WorkQueue()
    running: set[str] = set()
    runs: list[str] = []
    overlap = False

    async def sync(key: str) -> None:
        nonlocal overlap
        overlap |= key in running
        running.add(key)
        runs.append(key)
        if len(runs) == 1:
            q.add("a")  # a change arrives while the first sync of "a" runs
        await asyncio.sleep(0.01)
        running.discard(key)

    workers = [asyncio.create_task(q.work(sync)) for _ in range(4)]
    q.add("a")
    await asyncio.sleep(0.1)
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    assert runs == ["a", "a"] and not overlap


def test_backoff_doubles_per_key_up_to_the_cap_and_resets_on_success() -> None:
    q: WorkQueue[str] = WorkQueue(base=0.5, cap=4.0)
    assert [q.backoff("a") for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert q.backoff("b") == 0.5  # per key
    q.forget("a")
    assert q.backoff("a") == 0.5


async def test_add_after_uses_the_injected_scheduler() -> None:
    calls: list[float] = []
    pending: list[Callable[[], None]] = []

    def call_later(delay: float, fn: Callable[[], None]) -> object:
        calls.append(delay)
        pending.append(fn)
        return None

    q: WorkQueue[str] = WorkQueue(call_later=call_later)
    q.add_after("a", 2.0)
    assert calls == [2.0] and len(q) == 0
    pending[0]()
    assert len(q) == 1
