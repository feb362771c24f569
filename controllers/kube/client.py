"""The one place that talks to kube-apiserver: a thin raw-JSON client over kubernetes-asyncio.

kubernetes-asyncio gives us kubeconfig/in-cluster loading, TLS and token refresh; we skip its model
(de)serialisation, which costs more than the scheduler's whole decision, and exchange plain dicts decoded
with orjson instead.
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

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


class KubeConfigError(Exception):
    """No usable cluster credentials: the message says where we looked."""


async def load_config(kubeconfig: str | None, context: str | None = None) -> k8s.Configuration:
    """``--kubeconfig`` if given, else in-cluster, else ``$KUBECONFIG`` / ``~/.kube/config``; ``context``
    (a kubeconfig context name, kubectl's ``--context``) instead of the file's current-context."""
    cfg = k8s.Configuration()
    try:
        if kubeconfig:
            await k8s_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=cfg
            )
        elif os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=cfg)
        else:
            await k8s_config.load_kube_config(context=context, client_configuration=cfg)
    except (k8s_config.ConfigException, OSError, ValueError) as e:
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config (and not in a cluster)"
        raise KubeConfigError(f"cannot load cluster credentials from {where}: {e}") from None
    return cfg


class KubeClient:
    def __init__(self, cfg: k8s.Configuration, *, pool: int = 200) -> None:
        cfg.connection_pool_maxsize = pool
        self._api = k8s.ApiClient(configuration=cfg)
        # Called as guard(method, path) before every write; raises to refuse it (see guarded()).
        self._guard: Callable[[str, str], None] | None = None
        self._owner = True

    def guarded(self, guard: Callable[[str, str], None]) -> KubeClient:
        """A client on the same connections whose every write (any method but GET) first calls
        ``guard(method, path)``, which raises to refuse it before anything is sent: leader election's fence
        for the reconcilers (controllers.leader.fence). Closing it closes nothing; the original owns the
        connections."""
        other = copy.copy(self)
        other._guard = guard
        other._owner = False
        return other

    async def close(self) -> None:
        if self._owner:
            await self._api.close()

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
        """One request on kubernetes-asyncio's connection pool (its TLS, proxy and token refresh), with
        the body encoded by orjson: its generic serialiser walks every body and dominated bind latency."""
        rest = self._api.rest_client
        cfg = self._api.configuration
        headers = {"Content-Type": content_type, "Accept": accept}
        token = await cfg.get_api_key_with_prefix("BearerToken")
        if token:
            headers["Authorization"] = token
        url = f"{cfg.host}{path}"
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
        if rest.proxy:
            kwargs["proxy"] = rest.proxy
            if rest.proxy_headers:
                kwargs["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            kwargs["server_hostname"] = rest.server_hostname
        if self._guard is not None and method != "GET":
            # As late as the client can: the leader-election fence is checked after every await of ours.
            self._guard(method, path)
        resp: aiohttp.ClientResponse = await rest.pool_manager.request(method, url, **kwargs)
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
