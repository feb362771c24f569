"""``pumice job`` / ``pumice queue`` against a real kube-apiserver with pumice's CRDs and webhooks.

Each command runs as under ``pumice``: parsed by the real parser, its own event loop (in a worker
thread, so this test's loop stays free), the control plane's kubeconfig, output captured.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from kubernetes_asyncio import client

from controllers.cli.parser import add_cli_parsers
from tests.e2e import kube
from tests.e2e.controlplane import ControlPlane

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[Result]]


@pytest.fixture
def cli(control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]) -> Cli:
    async def run(*argv: str) -> Result:
        parser = argparse.ArgumentParser(prog="pumice")
        add_cli_parsers(parser.add_subparsers(dest="command", required=True))
        args = parser.parse_args([*argv, "--kubeconfig", str(control_plane.kubeconfig_path)])
        capsys.readouterr()
        code = await asyncio.to_thread(lambda: int(args.func(args)))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


async def test_job_run_list_suspend_delete(
    pumice: None, cli: Cli, namespace: str, kube_api: client.ApiClient
) -> None:
    ran = await cli("job", "run", "-n", namespace, "--name", "demo", "--replicas", "2", "--min", "2")
    assert (ran.code, ran.out, ran.err) == (0, "job.batch.volcano.sh/demo created\n", "")

    listed = await cli("job", "list", "-n", namespace)
    assert listed.code == 0, listed.err
    header, *rows = listed.out.splitlines()
    assert header.split()[:5] == ["NAME", "PHASE", "JOBTYPE", "REPLICAS", "MIN"]
    assert [r.split()[0] for r in rows] == ["demo"] and rows[0].split()[3] == "2"

    suspended = await cli("job", "suspend", "-n", namespace, "--name", "demo")
    assert suspended.code == 0, suspended.err
    assert suspended.out.startswith("command.bus.volcano.sh/demo-abortjob-")
    job = await kube.request(
        kube_api, "GET", f"/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/demo"
    )
    name = suspended.out.split("/", 1)[1].split()[0]
    commands = kube.collection_path("bus.volcano.sh/v1alpha1", "commands", namespace)
    try:
        command = await kube.request(kube_api, "GET", f"{commands}/{name}")
        assert command["action"] == "AbortJob"
        assert command["target"]["uid"] == job["metadata"]["uid"]
        assert command["metadata"]["ownerReferences"][0]["name"] == "demo"
    except client.ApiException as e:
        # A job controller may already have consumed (and deleted) it; it was created all the same.
        assert e.status == 404  # noqa: PT017 (the only non-error outcome of a real API call, not a raise to expect)

    missing = await cli("job", "view", "-n", namespace, "--name", "ghost")
    assert (missing.code, missing.err) == (1, 'pumice: jobs.batch.volcano.sh "ghost" not found\n')

    deleted = await cli("job", "delete", "-n", namespace, "--name", "demo")
    assert (deleted.code, deleted.out) == (0, 'job.batch.volcano.sh "demo" deleted\n')


async def test_queue_create_close_get_delete(pumice: None, cli: Cli, test_id: str) -> None:
    name = f"cli-{test_id}"[:63]
    created = await cli("queue", "create", "--name", name, "--weight", "2", "--capability", "cpu=4")
    assert (created.code, created.err) == (0, ""), created.err
    try:
        # Let pumice's status writer open the new queue first, so the state we set is not its first write.
        async def opened() -> bool:
            got = await cli("queue", "get", "--name", name)
            return got.code == 0 and got.out.splitlines()[1].split()[2] == "Open"

        await kube.wait_for(opened, within=30, message=f"queue {name} to be Open")
        closed = await cli("queue", "operate", "--name", name, "--action", "close")
        assert (closed.code, closed.err) == (0, "")
        got = await cli("queue", "get", "--name", name)
        assert got.out.splitlines()[1].split()[:3] == [name, "2", "Closed"]

        listed = await cli("queue", "list")
        assert any(line.split()[:3] == [name, "2", "Closed"] for line in listed.out.splitlines())

        denied = await cli(
            "queue", "create", "--name", f"{name}-bad", "--deserved", "cpu=1", "--guarantee", "cpu=2"
        )
        assert denied.code == 1 and denied.err.startswith("pumice: ") and "denied the request" in denied.err
    finally:
        deleted = await cli("queue", "delete", "--name", name)
    assert (deleted.code, deleted.out) == (0, f'queue.scheduling.volcano.sh "{name}" deleted\n')
