"""The one place that talks to kube-apiserver: a thin raw-JSON client over kubernetes-asyncio.

kubernetes-asyncio gives us kubeconfig/in-cluster loading, TLS and token refresh; we skip its model
(de)serialisation, which costs more than the scheduler's whole decision, and exchange plain dicts decoded
with orjson instead.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

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

    async def close(self) -> None:
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
