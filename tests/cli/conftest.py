"""A tiny in-process kube-apiserver for the CLI's I/O: enough REST to create, list, get, patch and delete.

It behaves like kube-apiserver where the CLI can tell: Status bodies for 404/409, ``generateName``,
uids and creation timestamps filled in, ``status`` dropped on create and on main-resource patches for
resources with a status subresource, chunked lists with ``limit``/``continue``, and a bare
``404 page not found`` for unknown API groups (CRDs not installed). ``deny`` makes a request answer with
an admission-style 400 Status. Every request is recorded.

Fixtures: ``fake_api`` (the server), ``kube`` (a KubeClient pointing at it), ``kubeconfig`` (a file whose
current context points at it with namespace ``team-a``) and ``cli`` (run ``pumice <argv>`` in a worker
thread, as ``main`` would, returning exit code, stdout and stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from controllers.cli.parser import add_cli_parsers
from controllers.kube.client import KubeClient

Obj = dict[str, Any]
CREATED_AT = "2024-05-01T10:00:00Z"
# Resources whose status is a subresource: the main endpoint ignores status, /status ignores the rest.
WITH_STATUS = {"jobs", "queues"}
KNOWN_PREFIXES = ("/api/v1", "/apis/batch.volcano.sh/v1alpha1", "/apis/bus.volcano.sh/v1alpha1",
                  "/apis/scheduling.volcano.sh/v1beta1", "/apis/flow.volcano.sh/v1alpha1",
                  "/apis/topology.volcano.sh/v1alpha1", "/apis/events.k8s.io/v1")  # fmt: skip


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    content_type: str
    body: Any


@dataclass(frozen=True)
class Route:
    prefix: str
    namespace: str | None
    resource: str
    name: str | None
    status: bool


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge(out.get(key), value)
    return out


def _selected(obj: Obj, selector: str) -> bool:
    """Equality-based label selectors (``a=b``, ``a!=b``, ``a``, ``!a``), as the API server reads them."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in selector.split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            ok = labels.get(key) != value
        elif "=" in term:
            key, value = term.split("=", 1)
            ok = labels.get(key.rstrip("=")) == value
        elif term.startswith("!"):
            ok = term[1:] not in labels
        else:
            ok = term in labels
        if not ok:
            return False
    return True


def _status(code: int, reason: str, message: str) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}  # fmt: skip
    return web.json_response(body, status=code)


@dataclass
class FakeApiServer:
    objects: dict[tuple[str, str, str, str], Obj] = field(default_factory=dict)
    requests: list[Recorded] = field(default_factory=list)
    deny: dict[tuple[str, str], str] = field(default_factory=dict)
    # What a watch request (?watch=true) streams, as {"type": ..., "object": ...}; then it stays open.
    watch_events: list[Obj] = field(default_factory=list)
    url: str = ""
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def put(self, prefix: str, resource: str, obj: Obj) -> Obj:
        """Seed an object as if it had been created (status kept)."""
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._ids)}")
        meta.setdefault("creationTimestamp", CREATED_AT)
        self.objects[(prefix, meta.get("namespace", ""), resource, meta["name"])] = obj
        return obj

    def get(self, prefix: str, resource: str, name: str, namespace: str = "") -> Obj | None:
        return self.objects.get((prefix, namespace, resource, name))

    def calls(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    @staticmethod
    def _route(path: str) -> Route | None:
        prefix = next((p for p in KNOWN_PREFIXES if path.startswith(p + "/")), None)
        if prefix is None:
            return None
        parts = path[len(prefix) + 1 :].split("/")
        namespace = None
        if parts[0] == "namespaces" and len(parts) >= 3:
            namespace, parts = parts[1], parts[2:]
        resource, name = parts[0], parts[1] if len(parts) > 1 else None
        return Route(prefix, namespace, resource, name, len(parts) > 2 and parts[2] == "status")

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body: Any = await request.json() if request.can_read_body else None
        self.requests.append(
            Recorded(request.method, request.path, dict(request.query), request.content_type, body)
        )
        if (request.method, request.path) in self.deny:
            message = self.deny[(request.method, request.path)]
            return _status(400, "BadRequest", message)
        route = self._route(request.path)
        if route is None:
            return web.Response(status=404, text="404 page not found\n")
        group = route.prefix.split("/")[2] if route.prefix.startswith("/apis/") else ""
        kind_name = f"{route.resource}.{group}" if group else route.resource
        key = (route.prefix, route.namespace or "", route.resource, route.name or "")
        if route.name is None:
            if request.method == "GET" and request.query.get("watch") == "true":
                return await self._watch(request)
            if request.method == "GET":
                return self._list(route, request)
            if request.method == "POST":
                return self._create(route, body, kind_name)
            return _status(405, "MethodNotAllowed", "method not allowed")
        current = self.objects.get(key)
        if current is None:
            return _status(404, "NotFound", f'{kind_name} "{route.name}" not found')
        if request.method == "GET":
            return web.json_response(current)
        if request.method == "DELETE":
            del self.objects[key]
            return web.json_response(current)
        if request.method == "PATCH":
            if request.content_type != "application/merge-patch+json":
                return _status(415, "UnsupportedMediaType", f"unsupported patch type {request.content_type}")
            if route.resource in WITH_STATUS:
                kept = {"status": body.get("status")} if route.status else {
                    k: v for k, v in body.items() if k != "status"
                }  # fmt: skip
            else:
                kept = body
            self.objects[key] = _merge(current, kept)
            return web.json_response(self.objects[key])
        return _status(405, "MethodNotAllowed", "method not allowed")

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        resp.content_type = "application/json"
        await resp.prepare(request)
        events, self.watch_events = self.watch_events, []
        for event in events:
            await resp.write(json.dumps(event).encode() + b"\n")
        await asyncio.sleep(60)  # a watch stays open; the client's --timeout ends it
        return resp

    def _list(self, route: Route, request: web.Request) -> web.Response:
        items = [
            obj
            for (prefix, ns, resource, _), obj in sorted(self.objects.items())
            if prefix == route.prefix
            and resource == route.resource
            and route.namespace in (None, ns)
            and _selected(obj, request.query.get("labelSelector", ""))
        ]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or 0) or len(items)
        page = items[start : start + limit]
        meta: Obj = {"resourceVersion": "1"}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        return web.json_response({"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page})

    def _create(self, route: Route, body: Obj, kind_name: str) -> web.Response:
        obj = dict(body)
        meta = dict(obj.get("metadata") or {})
        if not meta.get("name"):
            meta["name"] = f"{meta.get('generateName', '')}{next(self._ids):05d}"
        if route.namespace:
            meta["namespace"] = route.namespace
        key = (route.prefix, route.namespace or "", route.resource, meta["name"])
        if key in self.objects:
            return _status(409, "AlreadyExists", f'{kind_name} "{meta["name"]}" already exists')
        meta.update(uid=f"uid-{next(self._ids)}", creationTimestamp=CREATED_AT, resourceVersion="1")
        obj["metadata"] = meta
        if route.resource in WITH_STATUS:
            obj.pop("status", None)
        self.objects[key] = obj
        return web.json_response(obj, status=201)


@pytest.fixture
async def fake_api() -> AsyncIterator[FakeApiServer]:
    fake = FakeApiServer()
    server = TestServer(fake.app())
    await server.start_server()
    fake.url = str(server.make_url("")).rstrip("/")
    yield fake
    await server.close()


@pytest.fixture
async def kube(fake_api: FakeApiServer) -> AsyncIterator[KubeClient]:
    cfg = k8s.Configuration()
    cfg.host = fake_api.url
    client = KubeClient(cfg, pool=4)
    yield client
    await client.close()


@pytest.fixture
def kubeconfig(fake_api: FakeApiServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": fake_api.url}}],
        "users": [{"name": "me", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "fake", "user": "me", "namespace": "team-a"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[CliResult]]


def parse(*argv: str) -> argparse.Namespace:
    """The arguments as ``pumice`` parses them (argparse errors raise SystemExit(2))."""
    parser = argparse.ArgumentParser(prog="pumice")
    add_cli_parsers(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


@pytest.fixture
def cli(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    async def run(*argv: str) -> CliResult:
        args = parse(*argv, "--kubeconfig", str(kubeconfig))
        capsys.readouterr()
        # The command runs its own event loop (asyncio.run), as under `pumice`; the fake server keeps
        # serving on this one.
        code = await asyncio.to_thread(lambda: int(args.func(args)))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
