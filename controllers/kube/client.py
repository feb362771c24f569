"""The one place that talks to kube-apiserver: a thin raw-JSON client on one aiohttp session.

Objects are plain dicts decoded with orjson (a generated client's model (de)serialisation costs more than
the scheduler's whole decision). Where the server is and how to authenticate is a
:class:`~controllers.kube.connection.Connection`, which :func:`controllers.kube.kubeconfig.load_config`
builds from a kubeconfig or the service account; its credential is asked for on every request, so a token
that is rotated or refreshed is picked up.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Final
from urllib.parse import urlencode

import aiohttp
import orjson

from controllers.kube.connection import Connection

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class ApiError(Exception):
    def __init__(self, status: int, body: Obj | str, method: str, path: str) -> None:
        self.status = status
        self.body = body
        message = body.get("message", "") if isinstance(body, dict) else str(body)[:300]
        super().__init__(f"{method} {path}: HTTP {status}: {message}")

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""


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

    async def close(self) -> None:
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
    ) -> Obj:
        resp = await self._send(
            method, path, query=query, body=body, content_type=content_type, accept=accept
        )
        async with resp:
            data = await resp.read()
            try:
                decoded: Any = orjson.loads(data) if data else {}
            except orjson.JSONDecodeError as e:
                if resp.status < 300:
                    raise UnreadableResponse(resp.status, str(e), method, path) from None
                decoded = data.decode(errors="replace")
            if resp.status >= 300:
                raise ApiError(resp.status, decoded, method, path)
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
        """Events of one watch request, decoded; ends when the server closes the stream."""
        timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
        resp = await self._send("GET", path, query=[*query, ("watch", "true")], request_timeout=timeout)
        async with resp:
            if resp.status >= 300:
                body = await resp.read()
                raise ApiError(resp.status, body.decode(errors="replace"), "WATCH", path)
            # Each event is one JSON document per line; long objects arrive in several chunks.
            buf = b""
            async for chunk in resp.content.iter_any():
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        try:
                            event = orjson.loads(line)
                        except orjson.JSONDecodeError as e:
                            raise UnreadableResponse(
                                resp.status, f"watch event: {e}", "WATCH", path
                            ) from None
                        if not isinstance(event, dict):
                            raise UnreadableResponse(
                                resp.status, "watch event is not an object", "WATCH", path
                            )
                        yield event
