"""Bounded fan-out of API calls."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import Any


async def bounded(calls: Iterable[Awaitable[Any]], limit: int) -> None:
    """Await every call, at most ``limit`` at once (a 1 000-replica job must not open 1 000
    connections), then raise the first failure, if any, after all have finished."""
    sem = asyncio.Semaphore(limit)

    async def one(call: Awaitable[Any]) -> None:
        async with sem:
            await call

    for r in await asyncio.gather(*(one(c) for c in calls), return_exceptions=True):
        if isinstance(r, BaseException):
            raise r
