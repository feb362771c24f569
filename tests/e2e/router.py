"""An endpoint router for the e2e tests: what a Service (kube-proxy) does in front of pumice's replicas.

One TCP port in front of several backends (``host:port``). It polls each backend's readiness (``/readyz`` over
HTTP or HTTPS, unverified, every ``poll`` seconds) and sends each new connection to a ready backend, round
robin; a backend that refuses the connection is skipped for the next ready one (as a Service's endpoints
lag a pod that died). Bytes are piped as they are, so TLS stays end to end between the client
(kube-scheduler, kube-apiserver) and the replica, as through a ClusterIP. Connections already open stay on
their backend until either side closes them, as kube-proxy's do.

It runs on its own thread and event loop, so the test's blocking calls (starting a process, waiting for
it) never stall it. ``ready`` is the set of backends it currently sends to; ``connections`` counts what it
sent where.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import ssl
import threading
from collections import Counter
from collections.abc import Sequence

import aiohttp


class Router:
    def __init__(
        self,
        name: str,
        backends: Sequence[tuple[str, int]],
        *,
        scheme: str = "http",
        ready_path: str = "/readyz",
        poll: float = 0.1,
    ) -> None:
        self.name = name
        self.backends = list(backends)
        self.scheme = scheme
        self.ready_path = ready_path
        self.poll = poll
        self.ready: set[tuple[str, int]] = set()
        self.connections: Counter[tuple[str, int]] = Counter()
        self.refused = 0  # connections no ready backend took
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"router-{name}", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self._rr = itertools.count()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> Router:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()

    async def _start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        self._tasks.append(asyncio.get_running_loop().create_task(self._probe()))

    async def _stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            self._server.close()

    async def _probe(self) -> None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        timeout = aiohttp.ClientTimeout(total=1.0)
        async with aiohttp.ClientSession(timeout=timeout, trust_env=False) as session:
            while True:
                for host, port in self.backends:
                    url = f"{self.scheme}://{host}:{port}{self.ready_path}"
                    try:
                        async with session.get(url, ssl=ctx if self.scheme == "https" else False) as r:
                            ok = r.status == 200
                    except (aiohttp.ClientError, OSError, TimeoutError):
                        ok = False
                    (self.ready.add if ok else self.ready.discard)((host, port))
                await asyncio.sleep(self.poll)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ready = [b for b in self.backends if b in self.ready]
        start = next(self._rr)
        for i in range(len(ready)):
            backend = ready[(start + i) % len(ready)]
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*backend), 2.0)
            except (OSError, TimeoutError):
                self.ready.discard(backend)  # dead: not again until it answers /readyz
                continue
            self.connections[backend] += 1
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
            return
        self.refused += 1
        writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()
