"""HTTP and TCP probes of pods for JobFlow dependencies, run from pumice against pod IPs.

Each probe has a timeout (a probe that hangs fails); at most ``concurrency`` run at once, whatever the
number of flows waiting; a probe already in flight is not started again. They run as tasks of the flow
controller, never on the scheduler's or the extender's path. The HTTP client is a minimal HTTP/1.0 GET on
asyncio streams: it needs a status line, nothing else, and keeps aiohttp at the process's I/O edges.
Results go to :attr:`ProbeRunner.results`, read by the pure reconcile (:mod:`extender.flows.probes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from extender.flows.probes import ProbeRequest, ProbeResult

log = logging.getLogger(__name__)


async def probe_once(req: ProbeRequest, limit_s: float) -> tuple[bool, str]:
    """Make one probe: (passed, what happened)."""
    writer: asyncio.StreamWriter | None = None
    try:
        async with asyncio.timeout(limit_s):
            reader, writer = await asyncio.open_connection(req.ip, req.port)
            if req.kind == "tcpSocket":
                return True, "connected"
            path = req.path if req.path.startswith("/") else f"/{req.path}"
            lines = [f"GET {path} HTTP/1.0", f"Host: {req.ip}:{req.port}", "User-Agent: pumice-jobflow-probe"]
            if req.header is not None:
                lines.append(f"{req.header[0]}: {req.header[1]}")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace"))
            await writer.drain()
            status_line = await reader.readline()
        parts = status_line.decode("latin-1").split()
        if len(parts) < 2 or not parts[1].isdigit():
            return False, "not an HTTP answer"
        code = int(parts[1])
        return 200 <= code < 300, f"HTTP {code}"
    except TimeoutError:
        return False, f"no answer within {limit_s:g}s"
    except OSError as e:
        return False, e.strerror or type(e).__name__
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()


class ProbeRunner:
    """A queue of probes and the workers that make them (``concurrency`` at most at once)."""

    def __init__(
        self,
        *,
        timeout: float = 1.0,
        concurrency: int = 16,
        clock: Callable[[], float] = time.time,
        probe: Callable[[ProbeRequest, float], Awaitable[tuple[bool, str]]] | None = None,
    ) -> None:
        self.timeout = timeout
        self.concurrency = concurrency
        self.clock = clock
        self._probe = probe or probe_once
        self._queue: asyncio.Queue[tuple[ProbeRequest, Callable[[], None]]] = asyncio.Queue()
        self.results: dict[ProbeRequest, ProbeResult] = {}
        self.inflight: set[ProbeRequest] = set()
        self.stats = {"probes": 0, "failed": 0}

    def submit(self, reqs: list[ProbeRequest], done: Callable[[], None]) -> None:
        """Queue the requests not already queued or running; ``done`` is called after each answers."""
        for r in dict.fromkeys(reqs):
            if r not in self.inflight:
                self.inflight.add(r)
                self._queue.put_nowait((r, done))

    async def work(self) -> None:
        """One worker, forever (the owner runs ``concurrency`` of them in its TaskGroup)."""
        while True:
            req, done = await self._queue.get()
            try:
                ok, message = await self._probe(req, self.timeout)
            except Exception as e:  # a probe's failure is its result, never the worker's end
                ok, message = False, f"probe error: {type(e).__name__}"
                log.warning("probe raised", extra={"ip": req.ip, "port": req.port, "error": repr(e)})
            self.stats["probes"] += 1
            if not ok:
                self.stats["failed"] += 1
            self.results[req] = ProbeResult(ok=ok, at=self.clock(), message=message)
            self.inflight.discard(req)
            done()

    def forget_older_than(self, horizon: float) -> None:
        """Drop results nobody asked for lately (pods come and go; the map must not grow forever)."""
        for req in [r for r, res in self.results.items() if res.at < horizon]:
            del self.results[req]
