"""``pumice jobflow|jobtemplate|cronjob``: kubectl-style tables and documents, and ``jobflow delete``."""

from __future__ import annotations

from typing import Any

from tests.cli.conftest import Cli, FakeApiServer

FLOW = "/apis/flow.volcano.sh/v1alpha1"
BATCH = "/apis/batch.volcano.sh/v1alpha1"


def jobflow(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"flows": [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]},
        "status": status,
    }


async def test_jobflow_list_get_delete(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(
        FLOW,
        "jobflows",
        jobflow(
            "f1",
            state={"phase": "Running"},
            completedJobs=["f1-a"],
            runningJobs=["f1-b"],
            conditions={"f1-a": {"phase": "Completed"}, "f1-b": {"phase": "Running"}},
        ),
    )
    listed = await cli("jobflow", "list")
    assert listed.code == 0, listed.err
    assert listed.out.splitlines()[0].split() == [
        "NAME",
        "STATUS",
        "COMPLETED",
        "RUNNING",
        "PENDING",
        "FAILED",
        "FLOWS",
        "AGE",
    ]
    assert listed.out.splitlines()[1].split()[:7] == ["f1", "Running", "1", "1", "0", "0", "2"]
    got = await cli("jobflow", "get", "f1")
    rows = [line.split() for line in got.out.splitlines()]
    assert ["b", "f1-b", "Running", "a", "<none>"] in rows and [
        "a",
        "f1-a",
        "Completed",
        "<none>",
        "<none>",
    ] in rows
    named = await cli("jobflow", "list", "-o", "name")
    assert named.out == "jobflow.flow.volcano.sh/f1\n"
    deleted = await cli("jobflow", "delete", "f1", "--keep-jobs")
    assert (deleted.code, deleted.out) == (0, 'jobflow.flow.volcano.sh "f1" deleted\n')
    (call,) = fake_api.calls("DELETE")
    assert call.path == f"{FLOW}/namespaces/team-a/jobflows/f1" and call.body == {
        "propagationPolicy": "Orphan"
    }


async def test_jobtemplate_and_cronjob_tables(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(
        FLOW,
        "jobtemplates",
        {
            "metadata": {"name": "t1", "namespace": "team-a"},
            "spec": {"queue": "q1", "tasks": [{"name": "m", "replicas": 1}, {"name": "w", "replicas": 4}]},
        },
    )
    out = (await cli("jobtemplate", "list")).out.splitlines()
    assert out[0].split() == ["NAME", "TASKS", "REPLICAS", "QUEUE", "AGE"] and out[1].split()[:4] == [
        "t1",
        "2",
        "5",
        "q1",
    ]
    fake_api.put(
        BATCH,
        "cronjobs",
        {
            "metadata": {"name": "nightly", "namespace": "team-a"},
            "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Berlin", "jobTemplate": {"spec": {}}},
            "status": {"active": [{"name": "nightly-1"}]},
        },
    )
    cron = (await cli("cronjob", "get", "nightly")).out.splitlines()
    assert cron[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert cron[1].split()[:7] == ["nightly", "0", "2", "*", "*", "*", "Europe/Berlin"]
    empty = await cli("jobflow", "list", "-n", "other")
    assert (empty.code, empty.out, empty.err) == (0, "", "No resources found in other namespace.\n")
