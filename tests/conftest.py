"""Fixtures every test package shares: the in-process API server (``fake_api``, see :mod:`tests.fakeapi`),
a client of it (``kube``), and a spy on allocate's failure memory (``recalled``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.framework import gang_failures
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


@pytest.fixture
def recalled(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For every gang allocate's failure memory was asked about: whether it answered (a spy)."""
    seen: list[bool] = []
    real = gang_failures.GangFailures.recall

    def spy(self: gang_failures.GangFailures, *args: Any) -> Any:
        got = real(self, *args)
        seen.append(got is not None)
        return got

    monkeypatch.setattr(gang_failures.GangFailures, "recall", spy)
    return seen
