"""How the garbage collector treats a process that holds a whole cluster.

CPython's full collection walks every container object the process holds: with 5 000 nodes and 100 000
pods in the caches that is about 830 000 objects and half a second of CPU (``hack/bench/restart_memory.py``
prints it), and it starts whenever the objects that survived since the last one pass a quarter of those
it kept, that is in the middle of whatever allocates then: a scheduling cycle or a filter request.
Almost all of those objects are the caches' records, which live until their object changes and hold no
reference cycles (frozen dataclasses, tuples, dicts and strings), so walking them finds nothing.

:func:`settle` collects once and then freezes what survived (``gc.freeze``: the permanent generation,
which no collection walks); young objects are collected as before. :func:`keep_settled` freezes every
:data:`LISTING` seconds while the informers list (between LIST pages: otherwise each full collection
during a cold start walks everything listed so far, over and over), again when they have listed, settles
every :data:`REFREEZE` seconds for what has lived since, and every
:data:`THAW` seconds unfreezes everything first, so garbage in reference cycles among frozen objects (a
cycle's session that was alive at a freeze) is kept at most that long. The one full walk an hour costs
what a full collection costs today, at a known time instead of inside a cycle.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

log = logging.getLogger(__name__)

LISTING: Final = 0.1  # seconds between freezes while the first LISTs come in (a page or two)
REFREEZE: Final = 300.0  # seconds between freezes of what lived since the last
THAW: Final = 3600.0  # seconds between full collections over everything


def settle(*, thaw: bool = False) -> None:
    """Collect, then freeze what survived; with ``thaw``, over everything frozen before too."""
    if thaw:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


async def keep_settled(
    listed: Callable[[], Awaitable[object]],
    *,
    listing: float = LISTING,
    refreeze: float = REFREEZE,
    thaw: float = THAW,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Freeze every ``listing`` seconds until ``listed()`` returns (the informers' first LISTs are in) and
    once more then; from then on settle every ``refreeze`` seconds, unfreezing first every ``thaw``
    seconds. Runs until cancelled."""
    done = asyncio.ensure_future(listed())
    try:
        while not done.done():
            gc.freeze()  # the pages taken in so far: no cycles (decoded JSON, the caches' records)
            await asyncio.wait({done}, timeout=listing)
    finally:
        done.cancel()
    done.result()
    # No collection first: at 100 000 pods it would walk everything (half a second) just as the first
    # cycle after a restart wants the CPU, and a fresh LIST's garbage went by reference counts anyway;
    # any cycle frozen now goes at the first thaw.
    gc.freeze()
    log.info("heap frozen", extra={"objects": gc.get_freeze_count()})
    thawed = clock()
    while True:
        await asyncio.sleep(refreeze)
        full = clock() - thawed >= thaw
        settle(thaw=full)
        if full:
            thawed = clock()
