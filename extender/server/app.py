"""The extender's HTTP surface: ``POST /filter``, ``/prioritize``, ``/preempt``, ``/bind``.

Handlers are thin: decode once with orjson (off the event loop when the body is large), check the shape,
take the fast path for pods of other schedulers, ask the backend, encode. Always HTTP 200 to kube-scheduler
for a well-formed request (it treats any other status as a failed call); a non-empty ``Error`` only for
"cannot decide" (cache not synced) and for a refused bind. A malformed or wrongly typed body is a 400 with
the reason; a body over the size cap is a 413.

With leader election, a replica that does not lead answers locally only what reads the watched cluster
(another scheduler's pods, ``preempt``) and forwards the verbs that need the leader's reservations (see
:mod:`extender.server.forward`).

Nothing a request body says is trusted as cluster state: the pod in a filter request is used for its UID
and its schedulerName (the fast path) only. What pumice reads about the pod comes from its own watch; a pod
the watch has not shown yet is waited for briefly and otherwise refused (it reserves nothing), and ``bind``
binds only what the backend itself reserved (see :class:`Backend`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import orjson
from aiohttp import web

from extender.api import wire
from extender.core.errors import InvalidObject
from extender.core.model import Pod, PodUID
from extender.core.parse import parse_pod
from extender.server.forward import FORWARDED_HEADER, NO_LEADER, Forwarder, LeaderView
from extender.server.metrics import Histogram

log = logging.getLogger(__name__)


class Backend(Protocol):
    @property
    def ready(self) -> bool: ...

    @property
    def scheduler_names(self) -> frozenset[str]: ...

    async def prepare(self, uid: PodUID) -> None:
        """Return once pumice's own watch has shown pod ``uid`` and a cycle has planned it, or a short
        bound has passed (never a whole cycle on the request path)."""
        ...

    def filter(self, raw_pod: Mapping[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        """Answer from pumice's own state; ``raw_pod`` is read for its UID only."""
        ...

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]: ...

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]: ...

    async def bind(self, args: wire.ExtenderBindingArgs) -> str:
        """Bind only a pod the backend holds a reservation for, to that node; else a reason."""
        ...


BACKEND_KEY: Final = web.AppKey("pumice_extender_backend", Backend)
LATENCY_KEY: Final = web.AppKey("pumice_extender_latency", Histogram)
# With leader election: who leads, and the client that forwards to it (see extender.server.forward).
LEADER_KEY: Final = web.AppKey("pumice_extender_leader", LeaderView)
FORWARDER_KEY: Final = web.AppKey("pumice_extender_forwarder", Forwarder)

_NOT_SYNCED: Final = "pumice: cluster cache not synced yet"
# A nodeCacheCapable filter for 50 000 nodes is ~1 MiB; 8 MiB leaves room for clusters configured without
# nodeCacheCapable (whole Node objects) of a few hundred nodes, and bounds what one request can cost.
DEFAULT_MAX_BODY: Final = 8 * 1024 * 1024
# Bodies larger than this are decoded in a worker thread, so one big request does not stall the loop.
_OFF_LOOP_BYTES: Final = 256 * 1024


def _json(body: object) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _bad(text: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=text)


async def _decode(request: web.Request) -> dict[str, Any]:
    raw = await request.read()  # aiohttp answers 413 past the app's client_max_size
    try:
        body = await asyncio.to_thread(orjson.loads, raw) if len(raw) > _OFF_LOOP_BYTES else orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise _bad(f"request body is not JSON: {e}") from None
    if not isinstance(body, dict):
        raise _bad("request body must be a JSON object")
    return body


def _object(value: object, where: str, *, required: bool = False) -> dict[str, Any]:
    if value is None:
        if required:
            raise _bad(f"{where} is required")
        return {}
    if not isinstance(value, dict):
        raise _bad(f"{where} must be a JSON object")
    return value


def _pod(body: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The embedded Pod, with the parts every handler reads checked for type."""
    pod = _object(body.get("Pod"), f"{kind}.Pod", required=True)
    meta = _object(pod.get("metadata"), f"{kind}.Pod.metadata")
    spec = _object(pod.get("spec"), f"{kind}.Pod.spec")
    for key, where in ((meta.get("uid"), "metadata.uid"), (spec.get("schedulerName"), "spec.schedulerName")):
        if key is not None and not isinstance(key, str):
            raise _bad(f"{kind}.Pod.{where} must be a string")
    return pod


def _node_names(body: Mapping[str, Any]) -> list[str]:
    names = body.get("NodeNames")
    if names is None:
        # Not nodeCacheCapable: whole Node objects were sent; only their names matter to us.
        items = _object(body.get("Nodes"), "ExtenderArgs.Nodes").get("items") or []
        if not isinstance(items, list):
            raise _bad("ExtenderArgs.Nodes.items must be a list of Nodes")
        names = [_object(n, "ExtenderArgs.Nodes.items[]").get("metadata") for n in items]
        names = [_object(m, "ExtenderArgs.Nodes.items[].metadata").get("name") for m in names]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _bad("ExtenderArgs.NodeNames must be a list of node names (nodeCacheCapable)")
    return names


def _uid(pod: Mapping[str, Any]) -> PodUID:
    return PodUID(str((pod.get("metadata") or {}).get("uid") or ""))


def _ours(backend: Backend, pod: Mapping[str, Any]) -> bool:
    return (pod.get("spec") or {}).get("schedulerName") in backend.scheduler_names


def _parse(pod: dict[str, Any], kind: str) -> Pod:
    try:
        return parse_pod(pod)
    except InvalidObject as e:
        raise _bad(f"{kind}.Pod: {e}") from None


def _victims(body: Mapping[str, Any]) -> dict[str, wire.MetaVictims]:
    """``NodeNameToMetaVictims``, or the UIDs of ``NodeNameToVictims`` (not nodeCacheCapable)."""
    meta = body.get("NodeNameToMetaVictims")
    full = meta is None
    raw = _object(body.get("NodeNameToVictims") if full else meta, "ExtenderPreemptionArgs victims")
    out: dict[str, wire.MetaVictims] = {}
    for node, v in raw.items():
        where = f"ExtenderPreemptionArgs victims[{node}]"
        victims = _object(v, where)
        pods = victims.get("Pods") or []
        pdb = victims.get("NumPDBViolations", 0)
        if not isinstance(pods, list):
            raise _bad(f"{where}.Pods must be a list")
        if not isinstance(pdb, int) or isinstance(pdb, bool):
            raise _bad(f"{where}.NumPDBViolations must be an integer")
        uids: list[wire.MetaPod] = []
        for p in pods:
            entry = _object(p, f"{where}.Pods[]")
            uid = (
                _object(entry.get("metadata"), f"{where}.Pods[].metadata").get("uid")
                if full
                else entry.get("UID")
            )
            if not isinstance(uid, str):
                raise _bad(f"{where}.Pods[]: a victim needs a string UID")
            uids.append({"UID": uid})
        out[node] = {"Pods": uids, "NumPDBViolations": pdb}
    return out


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


async def _elsewhere(request: web.Request, no_leader: object) -> web.Response | None:
    """None: answer here (no leader election, or this process leads). Otherwise the leader's answer to
    the same request, or ``no_leader`` when no leader is known or it could not be reached (a request
    already forwarded once is never forwarded again)."""
    leader = request.app.get(LEADER_KEY)
    if leader is None or leader.serving:
        return None
    url = None if request.headers.get(FORWARDED_HEADER) else leader.leader_url()
    forwarder = request.app.get(FORWARDER_KEY)
    if url is not None and forwarder is not None:
        got = await forwarder.forward(url, request.path, await request.read(), by=leader.identity)
        if got is not None:
            return web.Response(status=got[0], body=got[1], content_type="application/json")
    return _json(no_leader)


async def handle_filter(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod, names = _pod(body, "ExtenderArgs"), _node_names(body)
    if not _ours(backend, raw_pod):
        return _json({"NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""})
    if not backend.ready:
        return _json(
            {"NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": _NOT_SYNCED}
        )
    no_leader: wire.ExtenderFilterResult = {
        "NodeNames": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {},
        "Error": NO_LEADER,
    }
    if (answer := await _elsewhere(request, no_leader)) is not None:
        return answer
    await backend.prepare(_uid(raw_pod))
    return _json(backend.filter(raw_pod, names))


async def handle_prioritize(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod, names = _pod(body, "ExtenderArgs"), _node_names(body)
    if not _ours(backend, raw_pod) or not backend.ready:
        return _json([])  # no opinion: kube-scheduler's own scores decide
    if (answer := await _elsewhere(request, [])) is not None:
        return answer
    return _json(backend.prioritize(_parse(raw_pod, "ExtenderArgs"), names))


async def handle_preempt(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    raw_pod = _pod(body, "ExtenderPreemptionArgs")
    victims = _victims(body)
    if not backend.ready:
        return _json({"NodeNameToMetaVictims": {}})
    pod = _parse(raw_pod, "ExtenderPreemptionArgs")
    return _json({"NodeNameToMetaVictims": backend.preempt(pod, _ours(backend, raw_pod), victims)})


async def handle_bind(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    body = await _decode(request)
    for key in ("PodName", "PodNamespace", "PodUID", "Node"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise _bad(f"ExtenderBindingArgs.{key} is required")
    args: wire.ExtenderBindingArgs = {
        "PodName": body["PodName"],
        "PodNamespace": body["PodNamespace"],
        "PodUID": body["PodUID"],
        "Node": body["Node"],
    }
    if not backend.ready:
        return _json({"Error": _NOT_SYNCED})
    if (answer := await _elsewhere(request, {"Error": NO_LEADER})) is not None:
        return answer
    return _json({"Error": await backend.bind(args)})


async def _close_forwarder(app: web.Application) -> None:
    await app[FORWARDER_KEY].close()


def make_extender_app(
    backend: Backend,
    latency: Histogram,
    *,
    max_body: int = DEFAULT_MAX_BODY,
    leader: LeaderView | None = None,
    forwarder: Forwarder | None = None,
) -> web.Application:
    """The extender's routes; with ``leader``, a replica that does not lead forwards what only the leader
    can answer through ``forwarder`` (see :mod:`extender.server.forward`)."""
    app = web.Application(client_max_size=max_body)
    app[BACKEND_KEY] = backend
    app[LATENCY_KEY] = latency
    if leader is not None:
        app[LEADER_KEY] = leader
        app[FORWARDER_KEY] = forwarder if forwarder is not None else Forwarder()
        app.on_cleanup.append(_close_forwarder)
    for verb, fn in (
        ("filter", handle_filter),
        ("prioritize", handle_prioritize),
        ("preempt", handle_preempt),
        ("bind", handle_bind),
    ):
        app.router.add_post(f"/{verb}", _timed(verb, fn))
    return app
