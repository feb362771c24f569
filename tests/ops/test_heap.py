"""extender.process.heap: what survives a settle is frozen (no later collection walks it), garbage in
reference cycles is collected first, and the periodic freezes thaw everything once per THAW."""

from __future__ import annotations

import asyncio
import gc
import itertools
import weakref
from collections.abc import Iterator

import pytest

from extender.process import heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # the rest of the test process collects as before


def test_settle_collects_cycles_then_freezes_what_survives() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a reference cycle: only the collector frees it
    gone = weakref.ref(a)
    kept = [_Node() for _ in range(1000)]
    del a, b
    heap.settle()
    assert gone() is None
    assert gc.get_freeze_count() >= len(kept)
    frozen = gc.get_freeze_count()
    young = [_Node() for _ in range(10)]
    assert gc.get_freeze_count() == frozen and young  # objects made since are collected as before


def test_a_cycle_made_garbage_while_frozen_goes_at_the_next_thaw() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    gone = weakref.ref(a)
    heap.settle()
    del a, b
    heap.settle()
    assert gone() is not None  # frozen: no collection walks it
    heap.settle(thaw=True)
    assert gone() is None


async def test_keep_settled_freezes_while_listing_then_thaws_once_per_period(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[bool] = []
    enough = asyncio.Event()

    def settle(*, thaw: bool = False) -> None:
        calls.append(thaw)
        if len(calls) >= 8:
            enough.set()

    monkeypatch.setattr(heap, "settle", settle)
    freezes: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: freezes.append(len(calls)))
    listed = asyncio.Event()
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0  # each look at the clock: a second later
        return now[0]

    task = asyncio.create_task(
        heap.keep_settled(listed.wait, listing=0.001, refreeze=0.001, thaw=5.0, clock=clock)
    )
    await asyncio.sleep(0.05)
    assert calls == [] and len(freezes) > 1  # while the informers list: freezes, no collection
    listing = len(freezes)
    listed.set()
    await asyncio.wait_for(enough.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # Once listed one more freeze, no collection walking everything; the settles come after it.
    assert len(freezes) > listing and set(freezes) == {0}
    assert calls[0] is False
    thaws = [i for i, t in enumerate(calls) if t]
    assert thaws and all(b - a >= 2 for a, b in itertools.pairwise(thaws))
    assert len(thaws) < len(calls) - 1
