"""A controller work queue: de-duplicated keys, one worker per key at a time, per-key backoff.

Like client-go's rate-limited work queue: a key added while queued is not added twice; a key added while
a worker holds it runs again once that worker is done (never two workers on one key); a key whose sync
failed comes back after an exponential delay (``base`` x 2^(failures-1), capped at ``cap``), reset by a
success. The clock and the delayed-call scheduler are injected, so the policy is testable without
sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

K = TypeVar("K")


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        base: float = 0.5,
        cap: float = 300.0,
        call_later: Callable[[float, Callable[[], None]], object] | None = None,
    ) -> None:
        self.base = base
        self.cap = cap
        self._call_later = call_later
        self._queue: asyncio.Queue[K] = asyncio.Queue()
        self._queued: set[K] = set()
        self._active: set[K] = set()
        self._again: set[K] = set()
        self.failures: dict[K, int] = {}

    def add(self, key: K) -> None:
        if key in self._active:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        if self._call_later is not None:
            self._call_later(delay, lambda: self.add(key))
        else:
            asyncio.get_running_loop().call_later(delay, self.add, key)

    def backoff(self, key: K) -> float:
        """Count a failure of ``key`` and return the delay before it runs again."""
        n = self.failures[key] = self.failures.get(key, 0) + 1
        return float(min(self.base * 2 ** min(n - 1, 40), self.cap))

    def forget(self, key: K) -> None:
        """A success: the next failure starts from ``base`` again."""
        self.failures.pop(key, None)

    def __len__(self) -> int:
        return len(self._queued)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being worked on (delayed keys not counted)."""
        return not self._queued and not self._active

    async def get(self) -> K:
        key = await self._queue.get()
        self._queued.discard(key)
        self._active.add(key)
        return key

    def done(self, key: K) -> None:
        self._active.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.add(key)

    async def work(self, sync: Callable[[K], Awaitable[None]]) -> None:
        """A worker: take keys forever, ``sync`` each, always mark it done (``sync`` handles errors)."""
        while True:
            key = await self.get()
            try:
                await sync(key)
            finally:
                self.done(key)
            # A sync that writes nothing never yields, and a full queue never makes get() wait: after a
            # restart one worker would run every job's first reconcile before the extender answered
            # kube-scheduler or the scheduling loop ran once. One turn of the event loop per key.
            await asyncio.sleep(0)
