"""The one in-process Kubernetes API server of the tests: enough REST, served over HTTP, for pumice's client.

Every test that talks to "the API server" below e2e talks to this one (the CLI, the reconcilers, the
informers' containment, the executor's guarded patches), through a real
:class:`~controllers.kube.client.KubeClient`. It behaves like kube-apiserver where pumice can tell:

- paths as :mod:`controllers.kube.paths` builds them; a group/version that table does not know answers a bare
  ``404 page not found`` (CRDs not installed);
- LIST with ``limit``/``continue``, equality-based ``labelSelector``, ``fieldSelector`` on ``metadata.name``
  only (others are ignored), the
  collection's ``resourceVersion``, and metadata only for ``as=PartialObjectMetadataList``;
- WATCH from a ``resourceVersion``: every change after it, then new changes as they happen, until
  ``timeoutSeconds``; a version older than the last :meth:`FakeApiServer.compact` answers an ERROR 410 event;
- GET, POST (``generateName``, uid, creationTimestamp; 409 AlreadyExists), PUT (onto the resourceVersion it
  names, 409 otherwise), DELETE (404 NotFound), PATCH as
  merge (RFC 7386), strategic merge (read as a merge: lists replaced) or JSON patch (RFC 6902); a
  ``metadata.resourceVersion`` in a merge patch is a precondition (409 Conflict when it moved on);
- the ``status`` subresource where the table says a resource has one: the main resource ignores ``status``
  on create and patch, ``/status`` changes nothing else; ``pods/binding`` and ``pods/eviction``;
- every write moves one resourceVersion counter (seeding too), as etcd's revision moves.

Programmable: :attr:`raw` serves bytes instead of an object (what the API server stores but a client cannot
decode), :attr:`deny` answers an admission-style 400, :attr:`fail` any status on a path (429 and 503 with a
``Retry-After``), :attr:`cut_watches` cuts watch streams mid-event, :attr:`before` and
:attr:`after` run before a request is served and before its response goes out (a concurrent write, a watch
event arriving meanwhile), :attr:`watch_events`/:attr:`watch_lines` are sent to the next watch. Every request
is recorded.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from tests.fakeapi.rest import Route, json_patch, kind_name, merge, named, route, selected, status

Obj = dict[str, Any]
CREATED_AT: Final = "2024-05-01T10:00:00Z"
MERGE: Final = "application/merge-patch+json"
STRATEGIC: Final = "application/strategic-merge-patch+json"
JSON_PATCH: Final = "application/json-patch+json"


_REASONS: Final = {409: "Conflict", 429: "TooManyRequests", 503: "ServiceUnavailable", 410: "Expired"}


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any
    authorization: str | None = None


@dataclass
class FakeApiServer:
    # Every object by its item path (``/api/v1/namespaces/ns/pods/p``).
    objects: dict[str, Obj] = field(default_factory=dict)
    # Bytes served for an item instead of its object (GET and LIST), e.g. nested past what a client decodes.
    raw: dict[str, bytes] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    # (method, path) -> message: answered 400 BadRequest, as an admission webhook's denial reaches a client.
    deny: dict[tuple[str, str], str] = field(default_factory=dict)
    # path -> status: every request to the path answers it.
    fail: dict[str, int] = field(default_factory=dict)
    before: Callable[[Recorded], None] | None = None
    after: Callable[[Recorded], None] | None = None
    # Sent to the next watch request (whatever it watches), after the changes it asked for.
    watch_events: list[Obj] = field(default_factory=list)
    watch_lines: list[bytes] = field(default_factory=list)
    # Seconds a watch stays open when the request does not say (timeoutSeconds).
    watch_timeout: float = 60.0
    # The next this many watches are cut mid-event (half a JSON line, then the connection dropped), as a
    # kube-apiserver that stops does: the client sees a payload that is not completed.
    cut_watches: int = 0
    version: Obj = field(default_factory=lambda: {"major": "1", "minor": "28", "gitVersion": "v1.28.7"})
    url: str = ""
    rv: int = 0
    _log: list[tuple[int, str, Route, Obj]] = field(default_factory=list)
    _compacted: int = 0
    _open_watches: set[asyncio.BaseTransport] = field(default_factory=set)
    _tick: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    # --- what tests set and read ----------------------------------------------------------------------------
    def seed(self, path: str, obj: Obj, raw: bytes | None = None, *, copied: bool = True) -> Obj:
        """Store ``obj`` at item ``path`` as the API server would hold it (a copy unless ``copied`` is
        False; uid ``uid-<name>`` and a creation time unless given), and tell the watches. It keeps a
        resourceVersion it gives that is ahead of the server's (which moves there, as after a restore),
        else gets the next one. With ``raw``, those bytes are what GET and LIST serve."""
        obj = copy.deepcopy(obj) if copied else obj
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{meta.get('name')}")
        meta.setdefault("creationTimestamp", CREATED_AT)
        r = route(path)
        if r is not None and r.namespace is not None:
            meta.setdefault("namespace", r.namespace)
        if raw is not None:
            self.raw[path] = raw
        given = str(meta.get("resourceVersion") or "")
        if given.isdigit() and int(given) > self.rv:
            self.rv = int(given) - 1
        return self._store(path, obj, "MODIFIED" if path in self.objects else "ADDED")

    def put(self, prefix: str, resource: str, obj: Obj) -> Obj:
        """Seed ``obj`` itself (not a copy) in ``resource`` of group/version ``prefix``, in its namespace."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._ids)}")
        ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        return self.seed(f"{prefix}{ns}/{resource}/{meta['name']}", obj, copied=False)

    def get(self, prefix: str, resource: str, name: str, namespace: str = "") -> Obj | None:
        ns = f"/namespaces/{namespace}" if namespace else ""
        return self.objects.get(f"{prefix}{ns}/{resource}/{name}")

    def stored(self, prefix: str, resource: str, name: str, namespace: str = "") -> Obj:
        """The object :meth:`get` finds, which must exist (KeyError otherwise)."""
        obj = self.get(prefix, resource, name, namespace)
        if obj is None:
            raise KeyError(f"{prefix}/{resource}/{name} in {namespace or 'the cluster'}")
        return obj

    def remove(self, path: str) -> Obj:
        """Delete the object at ``path`` (as someone else would), telling the watches."""
        obj = self.objects.pop(path)
        self.raw.pop(path, None)
        self._record_change("DELETED", path, obj)
        return obj

    def touch(self, path: str) -> None:
        """A write by someone else: the object's resourceVersion moves on."""
        self._store(path, self.objects[path], "MODIFIED")

    def drop_watches(self) -> None:
        """Cut every open watch stream (their clients see a payload that is not completed), as a
        kube-apiserver that stops does."""
        for transport in list(self._open_watches):
            transport.close()

    def compact(self) -> None:
        """Forget the changes so far: a watch from an older resourceVersion is answered 410 Gone."""
        self._compacted = self.rv
        self._log.clear()

    def calls(self, method: str | None = None) -> list[Recorded]:
        return [r for r in self.requests if method is None or r.method == method]

    def hits(self) -> list[tuple[str, str]]:
        """(method, path) of every request."""
        return [(r.method, r.path) for r in self.requests]

    def posted(self) -> list[tuple[str, Any]]:
        return [(r.path, r.body) for r in self.calls("POST")]

    def under(self, collection: str) -> dict[str, Obj]:
        """The objects of a collection path, by name."""
        return {p.rsplit("/", 1)[1]: o for p, o in self.objects.items() if p.rsplit("/", 1)[0] == collection}

    # --- serving ---------------------------------------------------------------------------------------
    def _store(self, path: str, obj: Obj, change: str) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.objects[path] = obj
        self._record_change(change, path, obj)
        return obj

    def _record_change(self, change: str, path: str, obj: Obj) -> None:
        r = route(path)
        if change == "DELETED":
            self.rv += 1
        if r is not None:
            self._log.append((self.rv, change, r, copy.deepcopy(obj)))
        self._tick.set()
        self._tick = asyncio.Event()

    def _body(self, path: str) -> bytes:
        return self.raw.get(path) or orjson.dumps(self.objects[path])

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body: Any = None
        if request.can_read_body:
            data = await request.read()
            body = orjson.loads(data) if data else None
        rec = Recorded(
            request.method,
            request.path,
            dict(request.query),
            request.content_type,
            body,
            request.headers.get("Authorization"),
        )
        self.requests.append(rec)
        if self.before is not None:
            self.before(rec)
        response = await self._serve(request, rec)
        if self.after is not None:
            self.after(rec)
        return response

    async def _serve(self, request: web.Request, rec: Recorded) -> web.StreamResponse:
        if (rec.method, rec.path) in self.deny:
            return status(400, "BadRequest", self.deny[(rec.method, rec.path)])
        if rec.path in self.fail:
            code = self.fail[rec.path]
            return status(code, _REASONS.get(code, "InternalError"), f"injected {code}")
        if rec.path == "/version" and rec.method == "GET":
            return web.json_response(self.version)
        r = route(rec.path)
        if r is None:
            return web.Response(status=404, text="404 page not found\n")
        if r.name is None:
            if rec.method == "GET" and rec.query.get("watch") == "true":
                return await self._watch(request, r)
            if rec.method == "GET":
                return self._list(r, request)
            if rec.method == "POST":
                return self._create(r, rec.body)
            return status(405, "MethodNotAllowed", "method not allowed")
        current = self.objects.get(r.item)
        if current is None:
            return status(404, "NotFound", f'{kind_name(r)} "{r.name}" not found')
        if rec.method == "GET" and r.subresource is None:
            return web.Response(body=self._body(r.item), content_type="application/json")
        if rec.method == "DELETE" and r.subresource is None:
            return web.json_response(self.remove(r.item))
        if rec.method == "PATCH" and (r.subresource is None or (r.status and r.has_status())):
            return self._patch(r, current, rec)
        if rec.method == "PUT" and r.subresource is None:
            return self._update(r, current, rec.body or {})
        if rec.method == "POST" and r.subresource == "binding":
            node = ((rec.body or {}).get("target") or {}).get("name")
            self._store(r.item, merge(current, {"spec": {"nodeName": node}}), "MODIFIED")
            return web.json_response({"kind": "Status", "status": "Success"}, status=201)
        if rec.method == "POST" and r.subresource == "eviction":
            self.remove(r.item)
            return web.json_response({"kind": "Status", "status": "Success"}, status=201)
        return status(405, "MethodNotAllowed", "method not allowed")

    def _patch(self, r: Route, current: Obj, rec: Recorded) -> web.Response:
        if rec.content_type == JSON_PATCH:
            try:
                patched = json_patch(current, rec.body)
            except (ValueError, KeyError, IndexError, TypeError) as e:
                return status(422, "Invalid", f"json patch: {e}")
        elif rec.content_type in (MERGE, STRATEGIC):
            want = ((rec.body or {}).get("metadata") or {}).get("resourceVersion")
            if want is not None and want != current["metadata"]["resourceVersion"]:
                message = "the object has been modified; please apply your changes to the latest version"
                return status(
                    409, "Conflict", f'Operation cannot be fulfilled on {kind_name(r)} "{r.name}": {message}'
                )
            patch = {k: v for k, v in (rec.body or {}).items() if k != "metadata"}
            patch["metadata"] = {
                k: v for k, v in ((rec.body or {}).get("metadata") or {}).items() if k != "resourceVersion"
            }
            patched = merge(current, patch)
        else:
            return status(415, "UnsupportedMediaType", f"unsupported patch type {rec.content_type}")
        if r.has_status():
            if r.status:
                patched = {**current, "status": patched.get("status")}
            else:
                patched = {**patched, "status": current.get("status")}
            if patched.get("status") is None:
                patched.pop("status")
        return web.json_response(self._store(r.item, patched, "MODIFIED"))

    def _update(self, r: Route, current: Obj, body: Obj) -> web.Response:
        """PUT: the whole object replaced, only onto the version it names (409 otherwise); identity kept."""
        want = (body.get("metadata") or {}).get("resourceVersion")
        if want is not None and want != current["metadata"]["resourceVersion"]:
            message = "the object has been modified; please apply your changes to the latest version"
            return status(
                409, "Conflict", f'Operation cannot be fulfilled on {kind_name(r)} "{r.name}": {message}'
            )
        obj = copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        for k in ("uid", "creationTimestamp", "namespace", "name"):
            meta[k] = current["metadata"].get(k)
        if r.has_status():
            obj.pop("status", None)
            if "status" in current:
                obj["status"] = current["status"]
        return web.json_response(self._store(r.item, obj, "MODIFIED"))

    def _create(self, r: Route, body: Obj) -> web.Response:
        obj = copy.deepcopy(body)
        meta = dict(obj.get("metadata") or {})
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}{next(self._ids):05d}"
        if r.namespace:
            meta["namespace"] = r.namespace
        path = f"{r.collection}/{meta['name']}"
        if path in self.objects:
            return status(409, "AlreadyExists", f'{kind_name(r)} "{meta["name"]}" already exists')
        meta.update(uid=f"uid-{next(self._ids)}", creationTimestamp=CREATED_AT)
        obj["metadata"] = meta
        if r.has_status():
            obj.pop("status", None)
        return web.json_response(self._store(path, obj, "ADDED"), status=201)

    def _members(self, r: Route) -> list[str]:
        """Item paths of the collection ``r`` names (every namespace when it names none), in order."""
        out = []
        for path in sorted(self.objects):
            o = route(path)
            if (
                o is not None
                and o.name is not None
                and o.subresource is None
                and (o.prefix, o.resource) == (r.prefix, r.resource)
                and r.namespace in (None, o.namespace)
            ):
                out.append(path)
        return out

    def _list(self, r: Route, request: web.Request) -> web.Response:
        selector = request.query.get("labelSelector", "")
        name = named(request.query.get("fieldSelector", ""))
        members = [
            p
            for p in self._members(r)
            if selected(self.objects[p], selector) and name in (None, p.rsplit("/", 1)[1])
        ]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or 0) or len(members)
        page = members[start : start + limit]
        meta: Obj = {"resourceVersion": str(self.rv)}
        if start + limit < len(members):
            meta["continue"] = str(start + limit)
        if "PartialObjectMetadataList" in request.headers.get("Accept", ""):
            items = [orjson.dumps({"metadata": self.objects[p]["metadata"]}) for p in page]
        else:
            items = [self._body(p) for p in page]
        head = orjson.dumps({"kind": "List", "apiVersion": "v1", "metadata": meta})
        return web.Response(
            body=head[:-1] + b',"items":[' + b",".join(items) + b"]}", content_type="application/json"
        )

    async def _watch(self, request: web.Request, r: Route) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        since = int(request.query.get("resourceVersion") or self.rv)
        limit = float(request.query.get("timeoutSeconds") or self.watch_timeout)
        name = named(request.query.get("fieldSelector", ""))
        if self.cut_watches > 0:
            self.cut_watches -= 1
            await resp.write(b'{"type":"MODIFIED","object":{"metadata":')
            assert request.transport is not None
            request.transport.close()
            return resp
        events, self.watch_events = self.watch_events, []
        lines, self.watch_lines = self.watch_lines, []
        with contextlib.suppress(ConnectionError, TimeoutError):
            if since < self._compacted:
                gone = {
                    "kind": "Status",
                    "code": 410,
                    "reason": "Expired",
                    "message": "too old resource version",
                }
                await resp.write(orjson.dumps({"type": "ERROR", "object": gone}) + b"\n")
                return resp
            assert request.transport is not None
            self._open_watches.add(request.transport)
            async with asyncio.timeout(limit):
                since = await self._send_changes(resp, r, since, name)
                for event in events:
                    await resp.write(orjson.dumps(event) + b"\n")
                for line in lines:
                    await resp.write(line + b"\n")
                while True:
                    await self._tick.wait()
                    since = await self._send_changes(resp, r, since, name)
        if request.transport is not None:
            self._open_watches.discard(request.transport)
        return resp

    async def _send_changes(
        self, resp: web.StreamResponse, r: Route, since: int, name: str | None = None
    ) -> int:
        for rv, change, o, obj in list(self._log):
            if (
                rv > since
                and (o.prefix, o.resource) == (r.prefix, r.resource)
                and r.namespace in (None, o.namespace)
                and name in (None, o.name)
            ):
                await resp.write(orjson.dumps({"type": change, "object": obj}) + b"\n")
            since = max(since, rv)
        return since


@contextlib.asynccontextmanager
async def serving(fake: FakeApiServer, *, pool: int = 4) -> AsyncIterator[KubeClient]:
    """``fake`` served on a local port, and a client of it (both closed on exit)."""
    server = TestServer(fake.app())
    await server.start_server()
    fake.url = str(server.make_url("")).rstrip("/")
    client = KubeClient(Connection(host=fake.url), pool=pool)
    try:
        yield client
    finally:
        await client.close()
        await server.close()
