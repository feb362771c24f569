"""A standby's extender: what it answers itself, what it forwards to the leader, and what it answers when no
leader is known (extender.server.forward), against two real listeners (the leader's over mutual TLS too)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

from extender.api import wire
from extender.core.model import Pod, PodUID
from extender.process.tls import generate_mtls_bundle, mtls_server_context
from extender.server.app import make_extender_app
from extender.server.forward import FORWARDED_HEADER, NO_LEADER, Forwarder
from extender.server.metrics import Histogram


class Backend:
    """Answers that say which replica gave them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[str] = []

    @property
    def ready(self) -> bool:
        return True

    @property
    def scheduler_names(self) -> frozenset[str]:
        return frozenset({"volcano"})

    async def prepare(self, uid: PodUID) -> None:
        self.calls.append("prepare")

    def filter(self, raw_pod: Mapping[str, Any], node_names: list[str]) -> wire.ExtenderFilterResult:
        self.calls.append("filter")
        return {"NodeNames": [self.name], "FailedNodes": {}, "FailedAndUnresolvableNodes": {}, "Error": ""}

    def prioritize(self, pod: Pod, node_names: list[str]) -> list[wire.HostPriority]:
        self.calls.append("prioritize")
        return [{"Host": self.name, "Score": 10}]

    def preempt(
        self, pod: Pod, ours: bool, victims: dict[str, wire.MetaVictims]
    ) -> dict[str, wire.MetaVictims]:
        self.calls.append("preempt")
        return {}

    async def bind(self, args: wire.ExtenderBindingArgs) -> str:
        self.calls.append("bind")
        return f"bound by {self.name}"


class View:
    def __init__(self, identity: str, *, serving: bool, url: str | None = None) -> None:
        self.identity = identity
        self.serving = serving
        self.url = url

    def leader_url(self) -> str | None:
        return self.url


def pod(scheduler: str = "volcano") -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}, "spec": {"schedulerName": scheduler}}


FILTER = {"Pod": pod(), "NodeNames": ["n1", "n2"]}
BIND = {"PodName": "p", "PodNamespace": "ns", "PodUID": "u1", "Node": "n1"}


@asynccontextmanager
async def listener(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[str]:
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=ssl_context)
    try:
        scheme = "https" if ssl_context else "http"
        yield f"{scheme}://127.0.0.1:{server.port}"
    finally:
        await server.close()


async def post(
    url: str,
    path: str,
    body: object,
    *,
    headers: dict[str, str] | None = None,
    ctx: ssl.SSLContext | None = None,
) -> Any:
    async with (
        aiohttp.ClientSession() as s,
        s.post(url + path, data=orjson.dumps(body), headers=headers, ssl=ctx or False) as r,
    ):
        assert r.status == 200, await r.text()
        return orjson.loads(await r.read())


def histogram() -> Histogram:
    return Histogram("t_seconds", "test")


async def test_a_standby_forwards_what_needs_the_leader_and_answers_the_rest_itself() -> None:
    leader_backend, standby_backend = Backend("leader"), Backend("standby")
    leader = make_extender_app(leader_backend, histogram(), leader=View("a", serving=True))
    async with listener(leader) as leader_url:
        standby = make_extender_app(
            standby_backend, histogram(), leader=View("b", serving=False, url=leader_url)
        )
        async with listener(standby) as url:
            assert (await post(url, "/filter", FILTER))["NodeNames"] == ["leader"]
            assert await post(url, "/prioritize", FILTER) == [{"Host": "leader", "Score": 10}]
            assert (await post(url, "/bind", BIND))["Error"] == "bound by leader"
            # Another scheduler's pod takes the fast path here: every node, no hop.
            other = await post(url, "/filter", {"Pod": pod("default-scheduler"), "NodeNames": ["n1"]})
            assert other["NodeNames"] == ["n1"]
            # preempt reads only the watched cluster: answered here.
            await post(url, "/preempt", {"Pod": pod("default-scheduler"), "NodeNameToMetaVictims": {}})
    assert leader_backend.calls == ["prepare", "filter", "prioritize", "bind"]
    assert standby_backend.calls == ["preempt"]


async def test_no_leader_known_answers_as_not_synced_and_a_forwarded_request_is_never_forwarded_again() -> (
    None
):
    backend = Backend("standby")
    app = make_extender_app(backend, histogram(), leader=View("b", serving=False, url=None))
    async with listener(app) as url:
        got = await post(url, "/filter", FILTER)
        assert got["Error"] == NO_LEADER and got["NodeNames"] is None
        assert await post(url, "/prioritize", FILTER) == []
        assert (await post(url, "/bind", BIND))["Error"] == NO_LEADER
    # Two replicas that each think the other leads: the request comes back once and stops there.
    ping = make_extender_app(
        Backend("ping"), histogram(), leader=View("b", serving=False, url="http://127.0.0.1:1")
    )
    async with listener(ping) as ping_url:
        pong = make_extender_app(Backend("pong"), histogram(), leader=View("a", serving=False, url=ping_url))
        async with listener(pong) as pong_url:
            got = await post(ping_url, "/filter", FILTER, headers={FORWARDED_HEADER: "a"})
            assert got["Error"] == NO_LEADER
            got = await post(pong_url, "/filter", FILTER)  # pong -> ping (forwarded) -> "no leader"
            assert got["Error"] == NO_LEADER
    assert backend.calls == []


async def test_an_unreachable_leader_is_no_leader() -> None:
    app = make_extender_app(
        Backend("standby"), histogram(), leader=View("b", serving=False, url="http://127.0.0.1:1")
    )
    async with listener(app) as url:
        assert (await post(url, "/filter", FILTER))["Error"] == NO_LEADER
        assert (await post(url, "/bind", BIND))["Error"] == NO_LEADER


async def test_forwarding_over_mutual_tls_presents_the_client_certificate(tmp_path: Path) -> None:
    bundle = generate_mtls_bundle(dns_names=["pumice.ns.svc"])
    files = {}
    for name in ("ca_cert", "server_cert", "server_key", "client_cert", "client_key"):
        files[name] = tmp_path / name
        files[name].write_bytes(getattr(bundle, name))
    server_ctx = mtls_server_context(files["server_cert"], files["server_key"], files["ca_cert"])
    client_ctx = ssl.create_default_context(cafile=str(files["ca_cert"]))
    client_ctx.load_cert_chain(files["client_cert"], files["client_key"])
    leader_backend = Backend("leader")
    leader = make_extender_app(leader_backend, histogram(), leader=View("a", serving=True))
    async with listener(leader, server_ctx) as leader_url:
        # The leader is dialled by address; its certificate names the Service, which is what is checked.
        forwarder = Forwarder(ssl_context=client_ctx, server_hostname="pumice.ns.svc")
        standby = make_extender_app(
            Backend("standby"),
            histogram(),
            leader=View("b", serving=False, url=leader_url),
            forwarder=forwarder,
        )
        async with listener(standby) as url:
            assert (await post(url, "/filter", FILTER))["NodeNames"] == ["leader"]
        # Without a client certificate the leader's listener refuses the handshake: no leader for the standby.
        bare = Forwarder(
            ssl_context=ssl.create_default_context(cafile=str(files["ca_cert"])),
            server_hostname="pumice.ns.svc",
        )
        standby = make_extender_app(
            Backend("standby"), histogram(), leader=View("b", serving=False, url=leader_url), forwarder=bare
        )
        async with listener(standby) as url:
            assert (await post(url, "/filter", FILTER))["Error"] == NO_LEADER
    assert leader_backend.calls == ["prepare", "filter"]
