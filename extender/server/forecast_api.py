"""The forecast over HTTP, read-only, for dashboards and portals: ``/apis/forecast.pumice.dev/v1/...``.

- ``GET .../namespaces/{namespace}/podgroups``: that namespace's waiting PodGroups;
- ``GET .../namespaces/{namespace}/podgroups/{name}``: one of them (404 when it does not wait);
- ``GET .../queues/{queue}/podgroups``: a queue's waiting PodGroups (``pumice queue pending``'s list), those
  of the namespaces the caller may read;
- ``GET .../podgroups``: every waiting PodGroup the caller may read (``?queue=`` narrows it).

Lists are in the cluster's order, paged (``?limit=`` 1 to 1000, default 100; ``?continue=``), JSON as
:mod:`extender.forecast.views` writes it. Who may read what is the API server's to say, not ours: the
caller's bearer token (``Authorization: Bearer ...``) goes through the :class:`Access` port (TokenReview,
then SubjectAccessReview for ``get podgroups`` in each namespace), so a caller sees what ``kubectl get
podgroups`` would show it. No token or a token the API server does not accept: 401; a namespace it may
not read, asked by name: 403; lists leave out what it may not read. The reviews cannot be asked: 503.
Before the first forecast: 503 with ``Retry-After``. Served on the webhook listener (TLS: tokens never
travel in clear), beside admission. Handlers are thin: the forecast is computed elsewhere.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import Any, Final, Protocol

import orjson
from aiohttp import web

from extender.core.model import group_key
from extender.forecast.model import Forecast, GroupForecast
from extender.forecast.views import API_VERSION, ITEM_KIND, continue_offset, item, page

log = logging.getLogger(__name__)

PREFIX: Final = "/apis/forecast.pumice.dev/v1"
MAX_LIMIT: Final = 1000
DEFAULT_LIMIT: Final = 100


class Access(Protocol):
    async def readable(self, token: str, namespaces: Collection[str]) -> tuple[str | None, frozenset[str]]:
        """The user ``token`` stands for (None: not authenticated) and which of ``namespaces`` it may
        read PodGroups in; raises when the API server cannot be asked."""
        ...


def _status(code: int, reason: str, message: str, **headers: str) -> web.Response:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return web.Response(
        status=code, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def _token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _limit(request: web.Request) -> int:
    raw = request.query.get("limit", str(DEFAULT_LIMIT))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise web.HTTPBadRequest(text=f"limit must be an integer from 1 to {MAX_LIMIT}")
    return int(raw)


def _namespace(g: GroupForecast) -> str:
    return g.key.partition("/")[0]


def add_forecast_routes(
    app: web.Application, forecast: Callable[[], Forecast], access: Access, clock: Callable[[], float]
) -> None:
    """Serve the forecast on ``app`` (see the module docstring)."""

    async def readable(
        request: web.Request, namespaces: Collection[str]
    ) -> tuple[str, frozenset[str]] | web.Response:
        token = _token(request)
        if token is None:
            return _status(401, "Unauthorized", "a bearer token is required (Authorization: Bearer ...)")
        try:
            user, allowed = await access.readable(token, namespaces)
        except Exception as e:  # the reviews could not be asked: no answer is not "no"
            log.warning("access review failed", extra={"error": str(e)})
            return _status(503, "ServiceUnavailable", "cannot ask the API server who may read this")
        if user is None:
            return _status(401, "Unauthorized", "the API server does not accept this token")
        return user, allowed

    def current() -> Forecast | web.Response:
        f = forecast()
        if not f.computed_at:
            return _status(503, "ServiceUnavailable", "no forecast computed yet", **{"Retry-After": "10"})
        return f

    def listing(request: web.Request, f: Forecast, groups: list[GroupForecast]) -> web.Response:
        limit = _limit(request)
        token = request.query.get("continue")
        offset = 0
        if token:
            found = continue_offset(token, f.computed_at)
            if found is None:
                return _status(410, "Expired", "the forecast was computed again since; list again")
            offset = found
        doc = page(groups, computed_at=f.computed_at, now=clock(), offset=offset, limit=limit)
        return web.Response(body=orjson.dumps(doc), content_type="application/json")

    async def in_namespace(request: web.Request, ns: str) -> Forecast | web.Response:
        """The latest forecast, if the caller may read PodGroups in ``ns``; else the answer saying why not."""
        who = await readable(request, [ns])
        if isinstance(who, web.Response):
            return who
        if ns not in who[1]:
            return _forbidden(who[0], ns)
        return current()

    async def namespaced(request: web.Request) -> web.Response:
        ns = request.match_info["namespace"]
        f = await in_namespace(request, ns)
        if isinstance(f, web.Response):
            return f
        return listing(request, f, [g for g in f.ordered() if _namespace(g) == ns])

    async def one(request: web.Request) -> web.Response:
        ns, name = request.match_info["namespace"], request.match_info["name"]
        f = await in_namespace(request, ns)
        if isinstance(f, web.Response):
            return f
        g = f.groups.get(group_key(ns, name))
        if g is None:
            return _status(404, "NotFound", f"PodGroup {ns}/{name} is not waiting (or does not exist)")
        body: dict[str, Any] = {"apiVersion": API_VERSION, "kind": ITEM_KIND, **item(g, clock())}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def every(request: web.Request, queue: str | None) -> web.Response:
        f = current()
        if isinstance(f, web.Response):
            return f
        groups = [g for g in f.ordered() if queue is None or g.queue == queue]
        who = await readable(request, {_namespace(g) for g in groups})
        if isinstance(who, web.Response):
            return who
        return listing(request, f, [g for g in groups if _namespace(g) in who[1]])

    async def everywhere(request: web.Request) -> web.Response:
        return await every(request, request.query.get("queue") or None)

    async def queued(request: web.Request) -> web.Response:
        return await every(request, request.match_info["queue"])

    app.router.add_get(f"{PREFIX}/podgroups", everywhere)
    app.router.add_get(f"{PREFIX}/queues/{{queue}}/podgroups", queued)
    app.router.add_get(f"{PREFIX}/namespaces/{{namespace}}/podgroups", namespaced)
    app.router.add_get(f"{PREFIX}/namespaces/{{namespace}}/podgroups/{{name}}", one)


def _forbidden(user: str, namespace: str) -> web.Response:
    return _status(
        403,
        "Forbidden",
        f'podgroups.scheduling.volcano.sh is forbidden: User "{user}" cannot get resource "podgroups" in '
        f'API group "scheduling.volcano.sh" in the namespace "{namespace}"',
    )
