"""A programmable in-process API server for the runtime's containment tests.

Objects of one collection are stored as raw JSON *bytes*, so a test can store what kube-apiserver would
hold but a client cannot decode (nesting past orjson's limit). It serves LIST (whole, or metadata only for
``as=PartialObjectMetadataList``), GET by name, DELETE, merge-PATCH of ``/status``, POST (recorded), and a
WATCH that sends the queued event lines and closes. Every request is recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from controllers.kube.client import KubeClient

Obj = dict[str, Any]


def deep(levels: int) -> Any:
    """A value nested ``levels`` deep: kube-apiserver stores it, orjson will not decode past 1024."""
    v: Any = "x"
    for _ in range(levels):
        v = {"a": v}
    return v


def deep_bytes(obj: Obj, levels: int) -> bytes:
    """``obj`` with a too-deep annotation value, encoded by hand (orjson will not encode it either)."""
    body = orjson.dumps(obj)
    inner = b'{"a":' * levels + b'"x"' + b"}" * levels
    return body[:-1] + b',"spec":{"deep":' + inner + b"}}"


@dataclass
class FakeKube:
    """One collection at ``collection`` (e.g. ``/apis/batch.volcano.sh/v1alpha1/jobs``)."""

    collection: str
    items: dict[tuple[str, str], bytes] = field(default_factory=dict)
    watch_lines: list[bytes] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    posted: list[tuple[str, Obj]] = field(default_factory=list)
    rv: int = 100

    def put(self, obj: Obj, raw: bytes | None = None) -> None:
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("resourceVersion", str(self.rv))
        self.items[(meta.get("namespace", ""), meta["name"])] = raw if raw is not None else orjson.dumps(obj)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def _meta_of(self, key: tuple[str, str]) -> Obj:
        ns, name = key
        return {"metadata": {"name": name, "namespace": ns, "uid": f"uid-{name}", "resourceVersion": "1"}}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        path = request.path
        if request.method == "POST":
            body = await request.json()
            self.posted.append((path, body))
            return web.json_response(body, status=201)
        if path == self.collection and request.method == "GET":
            if request.query.get("watch") == "true":
                return await self._watch(request)
            if "PartialObjectMetadataList" in request.headers.get("Accept", ""):
                items = b",".join(orjson.dumps(self._meta_of(k)) for k in self.items)
            else:
                items = b",".join(self.items.values())
            return web.Response(
                body=b'{"kind":"List","metadata":{"resourceVersion":"%d"},"items":[%s]}' % (self.rv, items),
                content_type="application/json",
            )
        prefix, plural = self.collection.rsplit("/", 1)
        for key, raw in list(self.items.items()):
            ns, name = key
            item = f"{prefix}/namespaces/{ns}/{plural}/{name}" if ns else f"{self.collection}/{name}"
            if path == item and request.method == "GET":
                return web.Response(body=raw, content_type="application/json")
            if path == item and request.method == "DELETE":
                del self.items[key]
                return web.json_response({"kind": "Status", "status": "Success"})
            if path == f"{item}/status" and request.method == "PATCH":
                obj = orjson.loads(raw)
                patch = await request.json()
                obj.setdefault("status", {}).update(patch.get("status") or {})
                self.items[key] = orjson.dumps(obj)
                return web.json_response(obj)
        return web.json_response(
            {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"}, status=404
        )

    async def _watch(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        lines, self.watch_lines = self.watch_lines, []
        for line in lines:
            await resp.write(line + b"\n")
        if not lines:
            await asyncio.sleep(0.05)
        await resp.write_eof()
        return resp


async def serve(fake: FakeKube) -> AsyncIterator[KubeClient]:
    server = TestServer(fake.app())
    await server.start_server()
    cfg = k8s.Configuration()
    cfg.host = str(server.make_url("")).rstrip("/")
    client = KubeClient(cfg)
    try:
        yield client
    finally:
        await client.close()
        await server.close()
