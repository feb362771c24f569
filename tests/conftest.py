"""Fixtures every test package shares: the in-process API server (``fake_api``, see :mod:`tests.fakeapi`)
and a client of it (``kube``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from tests.fakeapi import FakeApiServer


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
    client = KubeClient(Connection(host=fake_api.url), pool=4)
    yield client
    await client.close()
