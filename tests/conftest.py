"""Fixtures every test package shares: the in-process API server (``fake_api``, see :mod:`tests.fakeapi`)
and a client of it (``kube``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client as k8s

from controllers.kube.client import KubeClient
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
    cfg = k8s.Configuration()
    cfg.host = fake_api.url
    client = KubeClient(cfg, pool=4)
    yield client
    await client.close()
