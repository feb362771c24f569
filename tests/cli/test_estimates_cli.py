"""The forecast in the CLI: ``job list -o wide``, ``job why`` and ``queue pending`` read the
StartEstimate condition pumice keeps on waiting PodGroups."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from controllers.cli import estimates, job_views, pending
from tests.cli.conftest import Cli, FakeApiServer
from tests.cli.test_job_why import BATCH, CORE, NS, SCHED, condition, pod, podgroup, vcjob

NOW = datetime(2024, 5, 1, 10, 5, 0, tzinfo=UTC)


def estimate(in_queue: int, in_cluster: int, start: str, *, reason: str = "Estimated") -> dict[str, Any]:
    message = f"position {in_queue} in queue q1 ({in_cluster} in the cluster); start about {start}"
    if reason == "StartUnknown":
        message = f"position {in_queue} in queue q1 ({in_cluster} in the cluster); start unknown: waits on x"
    return {
        "type": "StartEstimate",
        "status": "True",
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2024-05-01T10:04:00Z",
    }


def waiting_group(name: str, owner: str, *conds: dict[str, Any], phase: str = "Inqueue") -> dict[str, Any]:
    return podgroup(name, phase, owner=owner, conditions=list(conds))


def test_cells() -> None:
    pg = waiting_group("g", "u1", estimate(2, 5, "2024-05-01T10:17:00Z"))
    s = estimates.shown(pg)
    assert s is not None
    assert (estimates.position_cell(s), estimates.cluster_cell(s), estimates.start_cell(s, NOW)) == (
        "2",
        "5",
        "in 12m",
    )
    unknown = estimates.shown(waiting_group("g", "u1", estimate(1, 1, "", reason="StartUnknown")))
    assert estimates.start_cell(unknown, NOW) == "unknown"
    # A group that runs shows no estimate, whatever is left on it.
    assert (
        estimates.shown(waiting_group("g", "u1", estimate(1, 1, "2024-05-01T10:17:00Z"), phase="Running"))
        is None
    )


def test_job_list_wide_shows_position_and_estimated_start() -> None:
    job = vcjob("train")
    found = estimates.by_job([waiting_group("train-u1", "u1", estimate(3, 7, "2024-05-01T11:05:00Z"))])
    header, row = job_views.job_table(
        [job], NOW, all_namespaces=False, wide=True, forecast=found
    ).splitlines()
    assert header.split()[-4:] == ["SCHEDULER", "POSITION", "ESTIMATED", "START"]
    assert row.split()[-4:] == ["<none>", "3", "in", "60m"]


async def test_job_list_wide_lists_the_podgroups(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("train"))
    fake_api.put(SCHED, "podgroups", waiting_group("train-u1", "u1", estimate(1, 2, "2030-01-01T00:00:00Z")))
    result = await cli("job", "list", "-n", NS, "-o", "wide")
    assert result.code == 0, result.err
    row = result.out.splitlines()[1].split()
    assert row[-3:-1] == ["1", "in"] and row[-1].endswith("d")  # in 5y...d
    plain = await cli("job", "list", "-n", NS)
    assert "POSITION" not in plain.out
    assert not [r for r in fake_api.calls("GET") if r.path.endswith("/podgroups")][
        1:
    ]  # only -o wide lists them


async def test_why_shows_the_estimate(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("train"))
    fake_api.put(
        SCHED,
        "podgroups",
        waiting_group(
            "train-u1",
            "u1",
            condition("NotEnoughResources", "gang 0/2 placeable"),
            estimate(2, 4, "2030-01-01T00:00:00Z"),
        ),
    )
    fake_api.put(CORE, "pods", pod("train-worker-0", group="train-u1", job="train"))
    result = await cli("job", "why", "train", "-n", NS)
    assert result.code == 0, result.err
    assert "Position:         2 in queue q1 (4 in the cluster)" in result.out
    assert "Estimated Start:  2030-01-01T00:00:00Z (in " in result.out


def test_pending_order_and_table() -> None:
    groups = [
        waiting_group("c", "u3", estimate(3, 9, "2024-05-01T12:00:00Z")),
        waiting_group("a", "u1", estimate(1, 2, "2024-05-01T10:05:10Z")),
        waiting_group("none-yet", "u4"),
        waiting_group("b", "u2", estimate(2, 5, "2024-05-01T11:00:00Z")),
        {**waiting_group("runs", "u5", phase="Running")},
        {**waiting_group("elsewhere", "u6"), "spec": {"queue": "q2"}},
    ]
    waiting = pending.pending(groups, "q1", "default")
    assert [g["metadata"]["name"] for g in waiting] == ["a", "b", "c", "none-yet"]
    lines = pending.pending_table(waiting, NOW, wide=True).splitlines()
    assert lines[0].split() == [
        "NAMESPACE", "NAME", "PHASE", "POSITION", "IN", "CLUSTER", "ESTIMATED", "START", "AGE", "WAITING",
    ]  # fmt: skip
    assert lines[1].split() == [NS, "a", "Inqueue", "1", "2", "now", "5m", "<none>"]
    assert lines[4].split() == [NS, "none-yet", "Inqueue", "<none>", "<none>", "<none>", "5m", "<none>"]


async def test_queue_pending_command(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "podgroups", waiting_group("b", "u2", estimate(2, 2, "2030-01-01T00:00:00Z")))
    fake_api.put(SCHED, "podgroups", waiting_group("a", "u1", estimate(1, 1, "2030-01-01T00:00:00Z")))
    result = await cli("queue", "pending", "q1")
    assert result.code == 0, result.err
    assert [line.split()[1] for line in result.out.splitlines()[1:]] == ["a", "b"]
    empty = await cli("queue", "pending", "nobody")
    assert empty.code == 0 and "No PodGroups waiting in queue nobody" in empty.err
    doc = await cli("queue", "pending", "q1", "-o", "name")
    assert doc.out.splitlines() == ["podgroup.scheduling.volcano.sh/a", "podgroup.scheduling.volcano.sh/b"]
