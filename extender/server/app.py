"""The extender's HTTP surface: ``POST /filter``, ``/prioritize``, ``/preempt``, ``/bind``.

Handlers are thin: decode once with orjson, take the fast path for pods of other schedulers, ask the
backend (answers from the precomputed plan; only bind does I/O), encode. Always HTTP 200 to
kube-scheduler for a well-formed request (it treats any other status as a failed call); a non-empty
``Error`` only for "cannot decide" (cache not synced). A malformed body is a 400 with the reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import orjson
from aiohttp import web

from extender.api import wire
from extender.core.errors import InvalidObject
from extender.core.model import Pod
from extender.core.parse import parse_pod
from extender.server.metrics import Histogram

log = logging.getLogger(__name__)


class Backend(Protocol):
    @property
    def ready(self) -> bool: ...

    @property
    def scheduler_names(self) -> frozenset[str]: ...

    def filter(self, raw_pod: dict[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        """May raise InvalidObject for a pod it has to read (one with a plan is answered by UID)."""
        ...

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]: ...

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]: ...

    async def bind(self, args: wire.ExtenderBindingArgs) -> str: ...


BACKEND_KEY: Final = web.AppKey("pumice_extender_backend", Backend)
LATENCY_KEY: Final = web.AppKey("pumice_extender_latency", Histogram)

_NOT_SYNCED: Final = "pumice: cluster cache not synced yet"


def _json(body: object) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def _decode(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise web.HTTPBadRequest(text=f"request body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="request body must be a JSON object")
    return body


def _pod_and_nodes(body: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    pod = body.get("Pod")
    if not isinstance(pod, dict):
        raise web.HTTPBadRequest(text="ExtenderArgs.Pod is required")
    names = body.get("NodeNames")
    if names is None:
        nodes = body.get("Nodes") or {}
        names = [((n.get("metadata") or {}).get("name")) for n in (nodes.get("items") or [])]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise web.HTTPBadRequest(
            text="ExtenderArgs.NodeNames must be a list of node names (nodeCacheCapable)"
        )
    return pod, names


def _ours(backend: Backend, pod: dict[str, Any]) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") in backend.scheduler_names


def _parse(pod: dict[str, Any]) -> Pod:
    try:
        return parse_pod(pod)
    except InvalidObject as e:
        raise web.HTTPBadRequest(text=f"ExtenderArgs.Pod: {e}") from None


def _timed(
    verb: str, fn: Callable[[web.Request], Awaitable[web.Response]]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        t0 = time.perf_counter()
        try:
            return await fn(request)
        finally:
            request.app[LATENCY_KEY].observe(verb, time.perf_counter() - t0)

    return handler


async def handle_filter(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod, names = _pod_and_nodes(body)
    if not _ours(backend, raw_pod):
        return _json({"NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""})
    if not backend.ready:
        return _json(
            {"NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": _NOT_SYNCED}
        )
    try:
        return _json(backend.filter(raw_pod, names))
    except InvalidObject as e:
        raise web.HTTPBadRequest(text=f"ExtenderArgs.Pod: {e}") from None


async def handle_prioritize(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod, names = _pod_and_nodes(body)
    if not _ours(backend, raw_pod) or not backend.ready:
        return _json([])  # no opinion: kube-scheduler's own scores decide
    return _json(backend.prioritize(_parse(raw_pod), names))


async def handle_preempt(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod = body.get("Pod")
    if not isinstance(raw_pod, dict):
        raise web.HTTPBadRequest(text="ExtenderPreemptionArgs.Pod is required")
    victims = body.get("NodeNameToMetaVictims")
    if victims is None and body.get("NodeNameToVictims"):
        # Not nodeCacheCapable: full pods were sent; reduce them to UIDs.
        victims = {
            node: {
                "Pods": [{"UID": (p.get("metadata") or {}).get("uid", "")} for p in v.get("Pods") or []],
                "NumPDBViolations": v.get("NumPDBViolations", 0),
            }
            for node, v in body["NodeNameToVictims"].items()
        }
    if not isinstance(victims, dict):
        victims = {}
    if not backend.ready:
        return _json({"NodeNameToMetaVictims": {}})
    result = backend.preempt(_parse(raw_pod), _ours(backend, raw_pod), victims)
    return _json({"NodeNameToMetaVictims": result})


async def handle_bind(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    for key in ("PodName", "PodNamespace", "PodUID", "Node"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise web.HTTPBadRequest(text=f"ExtenderBindingArgs.{key} is required")
    args: wire.ExtenderBindingArgs = {
        "PodName": body["PodName"],
        "PodNamespace": body["PodNamespace"],
        "PodUID": body["PodUID"],
        "Node": body["Node"],
    }
    return _json({"Error": await backend.bind(args)})


def make_extender_app(backend: Backend, latency: Histogram) -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app[BACKEND_KEY] = backend
    app[LATENCY_KEY] = latency
    for verb, fn in (
        ("filter", handle_filter),
        ("prioritize", handle_prioritize),
        ("preempt", handle_preempt),
        ("bind", handle_bind),
    ):
        app.router.add_post(f"/{verb}", _timed(verb, fn))
    return app
