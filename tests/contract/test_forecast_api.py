"""The forecast endpoint: who may read what is the API server's answer, lists are paged in line order."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from extender.core.model import GroupKey
from extender.forecast.model import EMPTY, Forecast, GroupForecast, Outlook, Position
from extender.server.forecast_api import PREFIX, add_forecast_routes

T = 1_800_000_000.0
Client = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]


class Access:
    """alice reads a; root reads everything; any other token is not one."""

    def __init__(self) -> None:
        self.down = False

    async def readable(self, token: str, namespaces: Collection[str]) -> tuple[str | None, frozenset[str]]:
        if self.down:
            raise RuntimeError("API server away")
        if token == "root":
            return "root", frozenset(namespaces)
        if token == "alice":
            return "alice", frozenset(n for n in namespaces if n == "a")
        return None, frozenset()


def group(ns: str, name: str, i: int, queue: str = "q") -> GroupForecast:
    return GroupForecast(
        key=GroupKey(f"{ns}/{name}"),
        queue=queue,
        outlook=Outlook.ESTIMATED,
        start=T + 60 * i,
        earliest=T + 60 * i,
        latest=T + 60 * i,
        position=Position(queue=queue, in_queue=i, in_cluster=i),
    )


FORECAST = Forecast(
    computed_at=T,
    groups={
        g.key: g
        for g in (group("a", "g1", 1), group("b", "g2", 2), group("a", "g3", 3), group("a", "other", 4, "r"))
    },
)


async def client(
    aiohttp_client: Client, forecast: Forecast = FORECAST, access: Access | None = None
) -> TestClient[Any, Any]:
    app = web.Application()
    add_forecast_routes(app, lambda: forecast, access or Access(), lambda: T)
    return await aiohttp_client(app)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def test_a_namespace_the_caller_may_read(aiohttp_client: Client) -> None:
    c = await client(aiohttp_client)
    r = await c.get(f"{PREFIX}/namespaces/a/podgroups", headers=bearer("alice"))
    assert r.status == 200
    doc = await r.json()
    assert (doc["apiVersion"], doc["kind"]) == ("forecast.pumice.dev/v1", "PodGroupForecastList")
    assert [i["name"] for i in doc["items"]] == ["g1", "g3", "other"]
    assert doc["metadata"]["computedAt"] == "2027-01-15T08:00:00Z"
    one = await c.get(f"{PREFIX}/namespaces/a/podgroups/g3", headers=bearer("alice"))
    assert (await one.json())["position"] == {"queue": 3, "cluster": 3}
    missing = await c.get(f"{PREFIX}/namespaces/a/podgroups/nope", headers=bearer("alice"))
    assert missing.status == 404


async def test_forbidden_and_unauthenticated(aiohttp_client: Client) -> None:
    c = await client(aiohttp_client)
    r = await c.get(f"{PREFIX}/namespaces/b/podgroups", headers=bearer("alice"))
    assert r.status == 403
    body = await r.json()
    assert body["reason"] == "Forbidden" and 'User "alice" cannot get resource "podgroups"' in body["message"]
    assert (await c.get(f"{PREFIX}/namespaces/b/podgroups/g2", headers=bearer("alice"))).status == 403
    assert (await c.get(f"{PREFIX}/namespaces/a/podgroups")).status == 401
    assert (await c.get(f"{PREFIX}/namespaces/a/podgroups", headers=bearer("stolen"))).status == 401


async def test_lists_leave_out_what_the_caller_may_not_read(aiohttp_client: Client) -> None:
    c = await client(aiohttp_client)
    mine = await (await c.get(f"{PREFIX}/podgroups", headers=bearer("alice"))).json()
    assert [i["name"] for i in mine["items"]] == ["g1", "g3", "other"]
    everything = await (await c.get(f"{PREFIX}/queues/q/podgroups", headers=bearer("root"))).json()
    assert [i["name"] for i in everything["items"]] == ["g1", "g2", "g3"]
    by_query = await (await c.get(f"{PREFIX}/podgroups?queue=r", headers=bearer("root"))).json()
    assert [i["name"] for i in by_query["items"]] == ["other"]


async def test_pages(aiohttp_client: Client) -> None:
    c = await client(aiohttp_client)
    first = await (await c.get(f"{PREFIX}/podgroups?limit=2", headers=bearer("root"))).json()
    assert [i["name"] for i in first["items"]] == ["g1", "g2"] and first["metadata"][
        "remainingItemCount"
    ] == 2
    token = first["metadata"]["continue"]
    rest = await (
        await c.get(f"{PREFIX}/podgroups", params={"limit": "2", "continue": token}, headers=bearer("root"))
    ).json()
    assert [i["name"] for i in rest["items"]] == ["g3", "other"] and "continue" not in rest["metadata"]
    assert (await c.get(f"{PREFIX}/podgroups?limit=0", headers=bearer("root"))).status == 400
    stale = await client(aiohttp_client, Forecast(computed_at=T + 30, groups=FORECAST.groups))
    r = await stale.get(f"{PREFIX}/podgroups", params={"continue": token}, headers=bearer("root"))
    assert r.status == 410


async def test_unavailable(aiohttp_client: Client) -> None:
    none_yet = await client(aiohttp_client, EMPTY)
    r = await none_yet.get(f"{PREFIX}/namespaces/a/podgroups", headers=bearer("alice"))
    assert r.status == 503 and r.headers["Retry-After"] == "10"
    access = Access()
    access.down = True
    c = await client(aiohttp_client, access=access)
    assert (await c.get(f"{PREFIX}/namespaces/a/podgroups", headers=bearer("alice"))).status == 503
