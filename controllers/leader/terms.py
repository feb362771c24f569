"""The leader-only tasks, run for exactly as long as a term lasts: :class:`Terms`.

One root task of ``pumice serve`` supervises the duties only the leader performs (the scheduling loop, the
status writer, the job, flow, cron, workload-group, queue-command and HyperNode-problem reconcilers, the
start-up writes). For each term: ``begin`` (the new leader rebuilds what was in flight from what its
informers hold), then every duty as a task, until the term ends; then the tasks are cancelled and awaited,
and ``end`` drops what the term held in memory only (plans not yet in the cluster, remembered writes), so
the next term, here or elsewhere, starts from the cluster alone. The process keeps running as a standby.

Invariants:
- no duty runs outside a term, and :attr:`~controllers.leader.leadership.Leadership.serving` is true only
  while the duties run (the extender answers locally then, and forwards otherwise);
- a duty that raises, or returns (each runs forever), during its term is a root task's death: this task
  raises it and the process exits, as before leader election;
- stepping down is made safe or the process ends: duties that do not stop within ``stop_timeout`` after
  their cancellation end this task with an error (the process exits rather than keep a half-stopped
  leader inside a standby).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from controllers.leader.leadership import Leadership

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Duty:
    name: str
    run: Callable[[], Coroutine[Any, Any, None]]


class DutyEnded(RuntimeError):
    """A leader-only task ended during its term: it runs forever, so this is a death."""


class Terms:
    def __init__(
        self,
        leadership: Leadership,
        duties: Sequence[Duty],
        *,
        begin: Callable[[], Coroutine[Any, Any, None]],
        end: Callable[[], Awaitable[None]],
        stop_timeout: float = 10.0,
    ) -> None:
        self.leadership = leadership
        self.duties = tuple(duties)
        self._begin = begin
        self._end = end
        self.stop_timeout = stop_timeout
        self.terms = 0  # terms served (started) by this process
        # Set while no duty runs (between terms, and once a shutdown has stopped them).
        self.idle = asyncio.Event()
        self.idle.set()
        self._closed = False

    async def run(self) -> None:
        """Until cancelled: wait to lead, serve the term, stand by again."""
        lead = self.leadership
        while True:
            await lead.wait_leading()
            if self._closed:
                await asyncio.Event().wait()  # shut down: never lead again (the process is ending)
            await self._serve(lead.term)

    def close(self) -> None:
        """No new term will start (shutdown); a running one ends when leadership is given up."""
        self._closed = True

    async def _serve(self, term: int) -> None:
        lead = self.leadership
        self.idle.clear()
        lost = asyncio.get_running_loop().create_task(lead.wait_lost(term), name="term-lost")
        tasks: list[asyncio.Task[None]] = []
        try:
            begin = asyncio.get_running_loop().create_task(self._begin(), name="term-begin")
            await asyncio.wait([begin, lost], return_when=asyncio.FIRST_COMPLETED)
            if not begin.done():
                await _stop([begin], self.stop_timeout)
                return
            begin.result()  # a begin that failed is a death
            self.terms += 1
            tasks = [asyncio.get_running_loop().create_task(_forever(d), name=d.name) for d in self.duties]
            lead.serving = True
            log.info("leading: duties started", extra={"term": term, "duties": len(tasks)})
            await asyncio.wait([*tasks, lost], return_when=asyncio.FIRST_COMPLETED)
            for t in tasks:
                failure = t.exception() if t.done() and not t.cancelled() else None
                if failure is not None:
                    raise failure
        finally:
            lead.serving = False
            lost.cancel()
            if not await _stop(tasks, self.stop_timeout):
                raise RuntimeError(
                    f"leader-only tasks did not stop within {self.stop_timeout:g}s of losing leadership"
                )
            await self._end()
            self.idle.set()
            log.info("standing by: duties stopped", extra={"term": term})


async def _forever(duty: Duty) -> None:
    await duty.run()
    raise DutyEnded(f"leader-only task {duty.name} ended")


async def _stop(tasks: Sequence[asyncio.Task[None]], grace: float) -> bool:
    """Cancel ``tasks`` and wait for them to end; whether they all did within ``grace`` seconds."""
    for t in tasks:
        t.cancel()
    if not tasks:
        return True
    _, pending = await asyncio.wait(tasks, timeout=grace)
    for t in tasks:
        if t.done() and not t.cancelled():
            t.exception()  # retrieved: a task that failed while stopping is logged by its owner
    return not pending
