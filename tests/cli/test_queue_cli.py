"""``pumice queue ...``: bodies from flags, the table, and the calls against a fake API server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from controllers.cli import queue_bodies, queues
from controllers.cli.errors import CliError
from controllers.kube.client import KubeClient
from tests.cli.conftest import Cli, FakeApiServer, parse

NOW = datetime(2024, 5, 3, 10, 0, 0, tzinfo=UTC)  # two days after the fake server's creation time
SCHED = "/apis/scheduling.volcano.sh/v1beta1"


def queue(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"weight": 1},
        "status": status,
    }


def test_build_queue_from_flags() -> None:
    args = parse(
        "queue", "create", "--name", "q1", "--weight", "3", "--parent", "root", "--state", "Closed",
        "--capability", "cpu=4,memory=8Gi", "--deserved", "cpu=2", "--guarantee", "cpu=1",
    )  # fmt: skip
    body = queue_bodies.build_queue(
        name=args.name,
        weight=args.weight,
        parent=args.parent,
        capability=args.capability,
        deserved=args.deserved,
        guarantee=args.guarantee,
        state=args.state,
    )
    assert body == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q1"},
        "spec": {
            "weight": 3,
            "parent": "root",
            "capability": {"cpu": "4", "memory": "8Gi"},
            "deserved": {"cpu": "2"},
            "guarantee": {"resource": {"cpu": "1"}},
        },
        "status": {"state": "Closed"},
    }


def test_build_queue_minimal() -> None:
    assert queue_bodies.build_queue(name="q") == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {"weight": 1},
    }


def test_patches() -> None:
    assert queue_bodies.state_patch("Closed") == {"status": {"state": "Closed"}}
    assert queue_bodies.weight_patch(5) == {"spec": {"weight": 5}}


def test_bad_flags_exit_2() -> None:
    for argv in (
        ("queue", "create"),
        ("queue", "create", "--name", "q", "--weight", "0"),
        ("queue", "create", "--name", "q", "--state", "Half"),
        ("queue", "create", "--name", "q", "--capability", "cpu"),
        ("queue", "operate", "--name", "q", "--action", "shut"),
        ("queue", "operate", "--name", "q"),
        ("queue", "get"),
        ("queue", "list", "-n", "ns"),  # queues are cluster-scoped
    ):
        with pytest.raises(SystemExit) as exc:
            parse(*argv)
        assert exc.value.code == 2, argv


def test_queue_table() -> None:
    busy = queue("research", state="Open", inqueue=1, pending=2, running=3, unknown=4, completed=5)
    busy["spec"] = {"weight": 4, "parent": "root", "capability": {"cpu": "8"}}
    busy["status"]["allocated"] = {"cpu": "3", "memory": "1Gi"}
    fresh = queue("new")
    assert queues.queue_table([busy, fresh], NOW, wide=False) == (
        "NAME      WEIGHT  STATE   PARENT  INQUEUE  PENDING  RUNNING  AGE\n"
        "research  4       Open    root    1        2        3        2d\n"
        "new       1       <none>  <none>  0        0        0        2d\n"
    )
    wide = queues.queue_table([busy], NOW, wide=True).splitlines()
    assert wide[0].split()[-4:] == ["UNKNOWN", "COMPLETED", "CAPABILITY", "ALLOCATED"]
    assert wide[1].split()[-4:] == ["4", "5", "cpu=8", "cpu=3,memory=1Gi"]


async def test_create_sets_state_through_the_status_subresource(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    created = await queues.create_queue(kube, queue_bodies.build_queue(name="q1", state="Closed"))
    assert created["status"] == {"state": "Closed"}
    post, patch = fake_api.requests
    assert (post.method, post.path) == ("POST", f"{SCHED}/queues")
    assert (patch.method, patch.path, patch.content_type) == (
        "PATCH",
        f"{SCHED}/queues/q1/status",
        "application/merge-patch+json",
    )
    assert patch.body == {"status": {"state": "Closed"}}


async def test_create_without_state_leaves_status_to_the_controller(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    await queues.create_queue(kube, queue_bodies.build_queue(name="q1"))
    assert [r.method for r in fake_api.requests] == ["POST"]


async def test_create_reports_a_failed_state_patch(fake_api: FakeApiServer, kube: KubeClient) -> None:
    fake_api.deny[("PATCH", f"{SCHED}/queues/q1/status")] = "status is read-only here"
    with pytest.raises(CliError, match="q1 was created, but setting its state to Open failed: status is"):
        await queues.create_queue(kube, queue_bodies.build_queue(name="q1", state="Open"))


async def test_create_and_list(cli: Cli, fake_api: FakeApiServer) -> None:
    created = await cli("queue", "create", "--name", "q1", "--weight", "2", "--capability", "cpu=4")
    assert (created.code, created.out, created.err) == (0, "queue.scheduling.volcano.sh/q1 created\n", "")
    assert fake_api.stored(SCHED, "queues", "q1")["spec"] == {"weight": 2, "capability": {"cpu": "4"}}
    fake_api.put(SCHED, "queues", queue("default", state="Open", running=2))
    listed = await cli("queue", "list")
    assert listed.code == 0
    assert [line.split()[:3] for line in listed.out.splitlines()] == [
        ["NAME", "WEIGHT", "STATE"],
        ["default", "1", "Open"],
        ["q1", "2", "<none>"],
    ]
    as_json = await cli("queue", "list", "-o", "json")
    assert '"kind": "List"' in as_json.out


async def test_list_empty(cli: Cli) -> None:
    result = await cli("queue", "list")
    assert (result.code, result.out, result.err) == (0, "", "No resources found\n")


async def test_create_denied(cli: Cli, fake_api: FakeApiServer) -> None:
    message = (
        'admission webhook "validate.queues.pumice.dev" denied the request: '
        "spec.guarantee.resource.cpu: 2 exceeds deserved 1"
    )
    fake_api.deny[("POST", f"{SCHED}/queues")] = message
    result = await cli("queue", "create", "--name", "q1", "--deserved", "cpu=1", "--guarantee", "cpu=2")
    assert (result.code, result.out, result.err) == (1, "", f"pumice: {message}\n")


async def test_get(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "queues", queue("q1", state="Open", pending=1))
    table = await cli("queue", "get", "--name", "q1")
    assert table.code == 0 and table.out.splitlines()[1].split()[:6] == [
        "q1",
        "1",
        "Open",
        "<none>",
        "0",
        "1",
    ]
    doc = yaml.safe_load((await cli("queue", "get", "-N", "q1", "-o", "yaml")).out)
    assert doc["metadata"]["name"] == "q1" and doc["status"]["pending"] == 1
    missing = await cli("queue", "get", "--name", "nope")
    assert (missing.code, missing.err) == (1, 'pumice: queues.scheduling.volcano.sh "nope" not found\n')


async def test_operate_close_open_and_update(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "queues", queue("q1", state="Open"))
    closed = await cli("queue", "operate", "--name", "q1", "--action", "close")
    assert (closed.code, closed.out) == (0, "queue.scheduling.volcano.sh/q1 closed\n")
    assert fake_api.stored(SCHED, "queues", "q1")["status"]["state"] == "Closed"
    patch = fake_api.calls("PATCH")[-1]
    assert (patch.path, patch.content_type, patch.body) == (
        f"{SCHED}/queues/q1/status",
        "application/merge-patch+json",
        {"status": {"state": "Closed"}},
    )
    opened = await cli("queue", "operate", "-N", "q1", "-a", "open")
    assert opened.out == "queue.scheduling.volcano.sh/q1 opened\n"
    assert fake_api.stored(SCHED, "queues", "q1")["status"]["state"] == "Open"
    updated = await cli("queue", "operate", "-N", "q1", "-a", "update", "-w", "7")
    assert updated.code == 0 and fake_api.stored(SCHED, "queues", "q1")["spec"]["weight"] == 7
    assert fake_api.calls("POST") == []  # no Command: pumice does not execute queue Commands


async def test_operate_update_needs_weight_and_missing_queue_is_404(
    cli: Cli, fake_api: FakeApiServer
) -> None:
    no_weight = await cli("queue", "operate", "--name", "q1", "--action", "update")
    assert no_weight.code == 2 and "--weight" in no_weight.err
    assert fake_api.requests == []
    missing = await cli("queue", "operate", "--name", "ghost", "--action", "close")
    assert (missing.code, missing.err) == (1, 'pumice: queues.scheduling.volcano.sh "ghost" not found\n')


async def test_delete(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "queues", queue("q1"))
    deleted = await cli("queue", "delete", "--name", "q1")
    assert (deleted.code, deleted.out) == (0, 'queue.scheduling.volcano.sh "q1" deleted\n')
    assert fake_api.get(SCHED, "queues", "q1") is None
    fake_api.put(SCHED, "queues", queue("default"))
    message = (
        'admission webhook "validate.queues.pumice.dev" denied the request: queue default cannot be deleted'
    )
    fake_api.deny[("DELETE", f"{SCHED}/queues/default")] = message
    denied = await cli("queue", "delete", "--name", "default")
    assert (denied.code, denied.err) == (1, f"pumice: {message}\n")
