"""The one place that talks to kube-apiserver: a thin raw-JSON client on one aiohttp session.

Objects are plain dicts decoded with orjson (a generated client's model (de)serialisation costs more than
the scheduler's whole decision). Where the server is and how to authenticate is a
:class:`~controllers.kube.connection.Connection`, which :func:`controllers.kube.kubeconfig.load_config`
builds from a kubeconfig or the service account; its credential is asked for on every request, so a token
that is rotated or refreshed is picked up.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final
from urllib.parse import urlencode

import aiohttp
import orjson

from controllers.kube.connection import Connection

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class ApiError(Exception):
    def __init__(
        self, status: int, body: Obj | str, method: str, path: str, *, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.body = body
        self._retry_after = retry_after
        message = body.get("message", "") if isinstance(body, dict) else str(body)[:300]
        super().__init__(f"{method} {path}: HTTP {status}: {message}")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""

    @property
    def retry_after(self) -> float | None:
        """Seconds the API server asked us to wait (429 or 503: its ``Retry-After`` header, else the
        Status body's ``details.retryAfterSeconds``), or None."""
        if self._retry_after is not None:
            return self._retry_after
        details = self.body.get("details") if isinstance(self.body, dict) else None
        seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
        return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else None


class ConnectionLost(ConnectionError):
    """The connection to the API server broke during a request or a watch: a stream cut mid-chunk, a
    server that went away, a reset. aiohttp raises these as its own errors, most of which are no OSError;
    this one is, so every caller reads it as it reads any network failure: not done, try again later."""


def _retry_after(resp: aiohttp.ClientResponse) -> float | None:
    value = resp.headers.get("Retry-After", "")
    return float(value) if value.isdigit() and int(value) > 0 else None


class UnreadableResponse(ApiError):
    """A successful status with a body we cannot decode (or not the JSON object the call returns). Never
    read as an empty answer: an empty LIST would look like every object was deleted."""

    def __init__(self, status: int, why: str, method: str, path: str) -> None:
        super().__init__(status, f"unreadable response body: {why}", method, path)


# Object metadata only: readable whatever the objects' specs hold (see Informer's fallback list).
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"


async def ignore_404(call: Awaitable[object]) -> None:
    """Await an API call for which "not found" means done (deleting what is gone, patching what went)."""
    try:
        await call
    except ApiError as e:
        if e.status != 404:
            raise


# Watch events carrying large objects exceed aiohttp's default read buffer; etcd's default limit on one
# object is 1.5 MiB.
READ_BUFFER_BYTES: Final = 2**21


class KubeClient:
    def __init__(self, connection: Connection, *, pool: int = 200) -> None:
        """``pool``: how many requests may be open at once (watches included)."""
        self._conn = connection
        self._http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(
                limit=pool, ssl=True if connection.tls is None else connection.tls
            ),
            # $HTTPS_PROXY and $NO_PROXY, as kubectl and kubernetes-asyncio honour them.
            trust_env=True,
            read_bufsize=READ_BUFFER_BYTES,
        )
        # Called as guard(method, path) before every write; raises to refuse it (see guarded()).
        self._guard: Callable[[str, str], None] | None = None
        self._owner = True

    def guarded(self, guard: Callable[[str, str], None]) -> KubeClient:
        """A client on the same session whose every write (any method but GET) first calls
        ``guard(method, path)``, which raises to refuse it before anything is sent: leader election's fence
        for the reconcilers (controllers.leader.fence). Closing it closes nothing; the original owns the
        session."""
        other = copy.copy(self)
        other._guard = guard
        other._owner = False
        return other

    async def close(self) -> None:
        if self._owner:
            await self._http.close()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        request_timeout: float | aiohttp.ClientTimeout | None = 30.0,
    ) -> aiohttp.ClientResponse:
        """One request on the connection pool, with the body encoded by orjson (a generic serialiser walks
        every body and dominated bind latency)."""
        conn = self._conn
        headers = {"Content-Type": content_type, "Accept": accept}
        token = await conn.authorization()
        if token:
            headers["Authorization"] = token
        url = f"{conn.host}{path}"
        if query:
            url += "?" + urlencode(query)
        timeout = (
            request_timeout
            if isinstance(request_timeout, aiohttp.ClientTimeout)
            else aiohttp.ClientTimeout(total=request_timeout)
        )
        kwargs: dict[str, Any] = {"headers": headers, "timeout": timeout}
        if body is not None:
            kwargs["data"] = orjson.dumps(body)
        if conn.proxy:
            kwargs["proxy"] = conn.proxy
            if conn.proxy_headers:
                kwargs["proxy_headers"] = dict(conn.proxy_headers)
        if conn.server_hostname:
            kwargs["server_hostname"] = conn.server_hostname
        if self._guard is not None and method != "GET":
            # As late as the client can: the leader-election fence is checked after every await of ours.
            self._guard(method, path)
        resp: aiohttp.ClientResponse = await self._http.request(method, url, **kwargs)
        return resp

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        time_limit: float = 30.0,
    ) -> Obj:
        try:
            resp = await self._send(
                method,
                path,
                query=query,
                body=body,
                content_type=content_type,
                accept=accept,
                request_timeout=time_limit,
            )
            async with resp:
                data = await resp.read()
        except aiohttp.ClientError as e:
            if isinstance(e, OSError):
                raise
            raise ConnectionLost(f"{method} {path}: {type(e).__name__}: {e}") from e
        return self._decoded(resp, data, method, path)

    @staticmethod
    def _decoded(resp: aiohttp.ClientResponse, data: bytes, method: str, path: str) -> Obj:
        """A response's body as the JSON object the call returns, or why not (ApiError for a failure)."""
        try:
            decoded: Any = orjson.loads(data) if data else {}
        except orjson.JSONDecodeError as e:
            if resp.status < 300:
                raise UnreadableResponse(resp.status, str(e), method, path) from None
            decoded = data.decode(errors="replace")
        if resp.status >= 300:
            raise ApiError(resp.status, decoded, method, path, retry_after=_retry_after(resp))
        if not isinstance(decoded, dict):
            raise UnreadableResponse(resp.status, f"a JSON {type(decoded).__name__}", method, path)
        return decoded

    async def get(
        self, path: str, query: list[tuple[str, str]] | None = None, *, accept: str = "application/json"
    ) -> Obj:
        return await self.request("GET", path, query=query, accept=accept)

    async def post(self, path: str, body: Obj, *, query: list[tuple[str, str]] | None = None) -> Obj:
        """Create ``body``; ``query`` such as ``[("dryRun", "All")]`` (the CLI's --dry-run=server)."""
        return await self.request("POST", path, body=body, query=query)

    async def merge_patch(self, path: str, body: Obj) -> Obj:
        return await self.request("PATCH", path, body=body, content_type="application/merge-patch+json")

    async def json_patch(self, path: str, ops: list[Obj]) -> Obj:
        return await self.request("PATCH", path, body=ops, content_type="application/json-patch+json")

    async def delete(self, path: str) -> Obj:
        return await self.request("DELETE", path)

    async def watch(self, path: str, query: list[tuple[str, str]]) -> AsyncIterator[Obj]:
        """Events of one watch request, decoded; ends when the server closes the stream. A stream that
        breaks raises :class:`ConnectionLost`; a refusal raises :class:`ApiError` (with the Status the
        server sent, its ``retry_after`` too)."""
        timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
        try:
            resp = await self._send("GET", path, query=[*query, ("watch", "true")], request_timeout=timeout)
            async with resp:
                if resp.status >= 300:
                    data = await resp.read()
                    try:
                        status: Any = orjson.loads(data)
                    except orjson.JSONDecodeError:
                        status = data.decode(errors="replace")
                    raise ApiError(
                        resp.status,
                        status if isinstance(status, dict) else str(status),
                        "WATCH",
                        path,
                        retry_after=_retry_after(resp),
                    )
                # Each event is one JSON document per line; long objects arrive in several chunks.
                buf = b""
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            yield _event(line, resp.status, path)
        except aiohttp.ClientError as e:
            if isinstance(e, OSError):
                raise
            raise ConnectionLost(f"WATCH {path}: {type(e).__name__}: {e}") from e


def _event(line: bytes, status: int, path: str) -> Obj:
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as e:
        raise UnreadableResponse(status, f"watch event: {e}", "WATCH", path) from None
    if not isinstance(event, dict):
        raise UnreadableResponse(status, "watch event is not an object", "WATCH", path)
    return event
