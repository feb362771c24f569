"""Fixtures for tests against a real etcd + kube-apiserver + kube-scheduler.

- ``control_plane`` (session, synchronous): one ControlPlane for the whole run, started on first use;
  every test that needs it is skipped, naming the missing binary, when one is absent.
  Start kube-scheduler from a (sync) fixture with ``control_plane.start_scheduler(config)``: a no-op when
  that config already runs, so tests sharing a config share a scheduler.
- ``kube_api`` (function, async): a kubernetes-asyncio ApiClient for the admin kubeconfig.
- ``namespace`` (function, async): a fresh namespace, emptied and removed after the test.
- ``fake_nodes`` (function, async): ``await fake_nodes(3, cpu="8")`` -> node names unique to the test,
  deleted after it.
- ``fake_kubelet`` (function, async): a started FakeKubelet serving every fake node.
- ``controller_manager`` (function): kube-controller-manager's workload controllers and garbage collector
  on the shared control plane, or a skip naming why not.

When a test fails, the tails of every control-plane process log are attached to its report; the control
plane's versions are printed in the header and, when one ran, just before pytest's closing line. Async
fixtures are function-scoped on purpose: the processes live in a synchronous session fixture, so no
event loop outlives a test.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.controlplane import (
    ControlPlane,
    ControlPlaneError,
    assets_dir,
    binary_version,
    controller_manager_skip_reason,
    skip_reason,
)
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

E2E_DIR = Path(__file__).parent
CONTROL_PLANE = pytest.StashKey[ControlPlane]()
CONTROL_PLANE_USED = pytest.StashKey[str]()

FakeNodes = Callable[..., Awaitable[list[str]]]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if E2E_DIR in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.e2e)


def pytest_report_header(config: pytest.Config) -> str:
    reason = skip_reason()
    if reason:
        return f"e2e control plane: none ({reason})"
    try:
        return (
            f"e2e control plane: kube-apiserver {binary_version('kube-apiserver')}, "
            f"kube-scheduler {binary_version('kube-scheduler')} from {assets_dir()}"
        )
    except ControlPlaneError as err:
        return f"e2e control plane: {err}"


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line before pytest's closing line: which control plane ran, or why the e2e tests skipped."""
    used = config.stash.get(CONTROL_PLANE_USED, None)
    if used is not None:
        terminalreporter.write_line(f"e2e control plane: {used}")
        return
    reason = skip_reason()
    skipped = terminalreporter.stats.get("skipped", [])
    if reason and any(E2E_DIR in (config.rootpath / r.nodeid.split("::")[0]).parents for r in skipped):
        terminalreporter.write_line(f"e2e control plane: none, the e2e tests were skipped: {reason}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    control_plane = item.config.stash.get(CONTROL_PLANE, None)
    if report.failed and control_plane is not None and "control_plane" in getattr(item, "fixturenames", ()):
        report.sections.append((f"control plane logs ({report.when})", control_plane.log_tails(40)))
    return report


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    plane = ControlPlane()
    plane.start()
    request.config.stash[CONTROL_PLANE] = plane
    request.config.stash[CONTROL_PLANE_USED] = plane.describe()
    try:
        yield plane
    finally:
        del request.config.stash[CONTROL_PLANE]
        plane.stop()


def _dns_label(text: str, limit: int) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-") or "t"


@pytest.fixture
def test_id(request: pytest.FixtureRequest) -> str:
    """A short DNS-label-safe id unique to this test run, for names of namespaces, nodes, queues."""
    return f"{_dns_label(request.node.name, 40)}-{secrets.token_hex(2)}"


@pytest_asyncio.fixture(loop_scope="function")
async def kube_api(control_plane: ControlPlane) -> AsyncIterator[client.ApiClient]:
    api = await kube.new_api_client(control_plane.kubeconfig_path)
    async with api:
        yield api


@pytest_asyncio.fixture(loop_scope="function")
async def namespace(kube_api: client.ApiClient, test_id: str) -> AsyncIterator[str]:
    name = f"e2e-{test_id}"
    await kube.create_namespace(kube_api, name)
    yield name
    await kube.delete_namespace(kube_api, name)


@pytest_asyncio.fixture(loop_scope="function")
async def fake_nodes(kube_api: client.ApiClient, test_id: str) -> AsyncIterator[FakeNodes]:
    created: list[str] = []

    async def make(n: int, *, prefix: str | None = None, **kwargs: Any) -> list[str]:
        names = await kube.create_fake_nodes(
            kube_api, n, prefix=prefix or f"{test_id}-n", start=len(created), **kwargs
        )
        created.extend(names)
        return names

    yield make
    await kube.delete_nodes(kube_api, created)


@pytest_asyncio.fixture(loop_scope="function")
async def fake_kubelet(kube_api: client.ApiClient) -> AsyncIterator[FakeKubelet]:
    kubelet = FakeKubelet(kube_api)
    await kubelet.start()
    yield kubelet
    await kubelet.stop()


@pytest.fixture
def pumice(control_plane: ControlPlane) -> None:
    """pumice (and kube-scheduler on its config) running on the shared control plane."""
    ensure_pumice(control_plane)


@pytest.fixture
def controller_manager(control_plane: ControlPlane) -> Iterator[None]:
    """kube-controller-manager (Deployments, ReplicaSets, StatefulSets, Jobs, garbage collection) on the
    shared control plane for one test, stopped after it (its garbage collector would delete other tests'
    pods whose owners are only pretended); skipped, with the reason, where the assets have none."""
    reason = controller_manager_skip_reason()
    if reason:
        pytest.skip(reason)
    control_plane.start_controller_manager()
    yield
    control_plane.stop_process("kube-controller-manager")


def node_labels(test_id: str) -> dict[str, str]:
    """Labels of this test's fake nodes: pods select them, so tests sharing the plane never meet."""
    return {"pumice.e2e/test": test_id}
