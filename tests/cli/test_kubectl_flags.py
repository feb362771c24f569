"""The CLI closer to kubectl and vcctl (issue 9): positional names, vcctl's ``-n`` for queues,
``-o name|jsonpath=...``, ``--context``, ``-l/--selector`` and ``-w/--watch`` on list."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli import job_views
from controllers.cli import kubeconfig as kc
from controllers.kube.kubeconfig import KubeConfigError
from tests.cli.conftest import Cli, FakeApiServer, parse

NOW = datetime(2024, 5, 1, 10, 5, 0, tzinfo=UTC)
BATCH = "/apis/batch.volcano.sh/v1alpha1"
SCHED = "/apis/scheduling.volcano.sh/v1beta1"


def vcjob(name: str, namespace: str = "team-a", phase: str = "Pending", **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"minAvailable": 1, "queue": "q1", "tasks": [{"name": "w", "replicas": 1}]},
        "status": {"state": {"phase": phase}},
    }


def queue(name: str, weight: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": weight},
        "status": {"state": "Open"},
    }


# -- names -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("job", "view", "demo"),
        ("job", "view", "-N", "demo"),
        ("job", "view", "--name", "demo"),
        ("job", "view", "-n", "ns", "demo"),  # -n stays the namespace for namespaced Jobs
        ("job", "why", "demo"),
        ("job", "why", "-N", "demo"),
        ("job", "suspend", "demo"),
        ("job", "resume", "demo"),
        ("job", "delete", "demo"),
        ("job", "run", "demo"),
        ("job", "run", "-N", "demo"),
        ("queue", "create", "demo"),
        ("queue", "create", "-n", "demo"),  # vcctl: Queues are cluster-scoped, -n is the name
        ("queue", "create", "-N", "demo"),
        ("queue", "get", "demo"),
        ("queue", "get", "-n", "demo"),
        ("queue", "operate", "-n", "demo", "-a", "close"),
        ("queue", "operate", "demo", "-a", "open"),
        ("queue", "delete", "demo"),
        ("queue", "delete", "--name", "demo"),
    ],
)
def test_a_name_is_positional_or_a_flag(argv: tuple[str, ...]) -> None:
    assert parse(*argv).name == "demo"


@pytest.mark.parametrize(
    "argv",
    [
        ("job", "view"),  # no name at all
        ("job", "view", "a", "-N", "b"),  # two names
        ("job", "run", "a", "-f", "job.yaml"),
        ("queue", "get"),
        ("queue", "get", "a", "-n", "b"),
    ],
)
def test_exactly_one_name(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2


async def test_queue_create_with_vcctls_n(cli: Cli, fake_api: FakeApiServer) -> None:
    r = await cli("queue", "create", "-n", "q7", "-w", "3")
    assert r.code == 0, r.err
    created = fake_api.get(SCHED, "queues", "q7")
    assert created is not None and created["spec"]["weight"] == 3


async def test_job_view_positional(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("demo"))
    r = await cli("job", "view", "demo")
    assert r.code == 0, r.err
    assert "Name:" in r.out and "demo" in r.out


# -- -o name and -o jsonpath -----------------------------------------------------------------------


async def test_output_name(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("a"))
    fake_api.put(BATCH, "jobs", vcjob("b"))
    fake_api.put(SCHED, "queues", queue("q1"))
    assert (await cli("job", "list", "-o", "name")).out == "job.batch.volcano.sh/a\njob.batch.volcano.sh/b\n"
    assert (await cli("job", "view", "a", "-o", "name")).out == "job.batch.volcano.sh/a\n"
    assert (await cli("queue", "list", "-o", "name")).out == "queue.scheduling.volcano.sh/q1\n"
    assert (await cli("queue", "get", "q1", "-o", "name")).out == "queue.scheduling.volcano.sh/q1\n"


async def test_output_jsonpath(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("a", phase="Running"))
    fake_api.put(BATCH, "jobs", vcjob("b"))
    fake_api.put(SCHED, "queues", queue("q1", weight=4))
    r = await cli("job", "list", "-o", "jsonpath={.items[*].metadata.name}")
    assert (r.code, r.out) == (0, "a b")
    template = '{range .items[*]}{.metadata.name}={.status.state.phase}{"\\n"}{end}'
    assert (await cli("job", "list", "-o", f"jsonpath={template}")).out == "a=Running\nb=Pending\n"
    assert (await cli("job", "view", "b", "-o", "jsonpath={.spec.queue}")).out == "q1"
    assert (await cli("queue", "get", "q1", "-o", "jsonpath={.spec.weight}")).out == "4"
    # queue list's template sees what -o json prints: the Queues and the computed shares.
    r = await cli("queue", "list", "-o", "jsonpath={.items[0].metadata.name} {.shares.plugin}")
    assert r.out == "q1 proportion", r.err


def test_a_bad_template_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("jsonpath={.items[", "jsonpath={range .items[*]}", "jsonpath", "yml"):
        with pytest.raises(SystemExit) as e:
            parse("job", "list", "-o", bad)
        assert e.value.code == 2
    assert "bad jsonpath template" in capsys.readouterr().err


# -- --context -------------------------------------------------------------------------------------


@pytest.fixture
def two_contexts(fake_api: FakeApiServer, tmp_path: Path) -> Path:
    """The current context points nowhere; context "other" at the fake server, namespace team-b."""
    path = tmp_path / "kubeconfig2"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "fake", "cluster": {"server": fake_api.url}},
            {"name": "nowhere", "cluster": {"server": "http://127.0.0.1:9"}},
        ],
        "users": [{"name": "me", "user": {"token": "t0ken"}}],
        "contexts": [
            {"name": "dead", "context": {"cluster": "nowhere", "user": "me", "namespace": "team-a"}},
            {"name": "other", "context": {"cluster": "fake", "user": "me", "namespace": "team-b"}},
        ],
        "current-context": "dead",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


async def test_context_picks_cluster_and_namespace(
    fake_api: FakeApiServer, two_contexts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_api.put(BATCH, "jobs", vcjob("b1", namespace="team-b"))

    async def run(*argv: str) -> tuple[int, str, str]:
        args = parse(*argv, "--kubeconfig", str(two_contexts))
        code = await asyncio.to_thread(lambda: int(args.func(args)))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    assert await run("job", "list", "-o", "name", "--context", "other") == (
        0,
        "job.batch.volcano.sh/b1\n",
        "",
    )
    code, _, err = await run("job", "list", "--context", "nope")
    assert code == 1 and 'context "nope" does not exist' in err


# -- -l/--selector ---------------------------------------------------------------------------------


async def test_selector_is_sent_to_the_server(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("a", team="x"))
    fake_api.put(BATCH, "jobs", vcjob("b", team="y"))
    r = await cli("job", "list", "-l", "team=y", "-o", "name")
    assert r.out == "job.batch.volcano.sh/b\n"
    lists = [q for q in fake_api.calls("GET") if q.path.endswith("/jobs")]
    assert lists[-1].query.get("labelSelector") == "team=y"
    q = {**queue("qa"), "metadata": {"name": "qa", "labels": {"tier": "gold"}}}
    fake_api.put(SCHED, "queues", q)
    fake_api.put(SCHED, "queues", queue("qb"))
    assert (await cli("queue", "list", "--selector", "tier=gold", "-o", "name")).out == (
        "queue.scheduling.volcano.sh/qa\n"
    )


# -- -w/--watch ------------------------------------------------------------------------------------


async def test_watch_prints_changes_until_the_timeout(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("a"))
    changed = vcjob("a", phase="Running")
    changed["metadata"]["resourceVersion"] = "7"
    fake_api.watch_events = [
        {"type": "MODIFIED", "object": changed},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}},
        {"type": "ADDED", "object": vcjob("c")},
    ]
    r = await cli("job", "list", "-w", "--timeout", "1")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith("NAME") and len(lines) == 4, r.out  # header, a, then a Running and c
    assert lines[1].split()[:2] == ["a", "Pending"]
    assert lines[2].split()[:2] == ["a", "Running"]
    assert lines[3].split()[:2] == ["c", "Pending"]
    watches = [q for q in fake_api.calls("GET") if q.query.get("watch") == "true"]
    assert watches and watches[0].query.get("resourceVersion") == "1"  # from the list: nothing missed


async def test_watch_with_a_template_prints_each_object(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(SCHED, "queues", queue("q1"))
    fake_api.watch_events = [{"type": "MODIFIED", "object": queue("q1", weight=5)}]
    r = await cli(
        "queue", "list", "-w", "--timeout", "1", "-o", 'jsonpath={.metadata.name}:{.spec.weight}{"\\n"}'
    )
    assert (r.code, r.out) == (0, "q1:1\nq1:5\n"), r.err


def test_watch_timeout_must_be_positive() -> None:
    with pytest.raises(SystemExit):
        parse("job", "list", "-w", "--timeout", "0")


# -- job view: the reason once ---------------------------------------------------------------------


def test_view_shows_the_copied_reason_once() -> None:
    """The job controller copies the PodGroup's condition into status.state; ``view`` does not repeat it."""
    cond = {"type": "Unschedulable", "status": "True", "reason": "NotEnqueued", "message": "queue q: cpu 9/8"}
    job = vcjob("big")
    job["status"]["state"] = {
        "phase": "Pending",
        "reason": "PodGroupPending",
        "message": "NotEnqueued: queue q: cpu 9/8",
    }
    text = job_views.describe_job(job, NOW, [], cond)
    assert "Reason:         PodGroupPending" in text and text.count("queue q: cpu 9/8") == 1, text
    # A job whose status does not carry it yet (an older pumice wrote it) still shows the condition.
    job["status"]["state"] = {"phase": "Pending"}
    assert "Waiting:        NotEnqueued: queue q: cpu 9/8" in job_views.describe_job(job, NOW, [], cond)


def test_context_namespace_of_a_named_context() -> None:
    docs = [
        {
            "current-context": "a",
            "contexts": [
                {"name": "a", "context": {"namespace": "ns-a"}},
                {"name": "b", "context": {"namespace": "ns-b"}},
            ],
        }
    ]
    assert kc.context_namespace(docs) == "ns-a"
    assert kc.context_namespace(docs, "b") == "ns-b"
    with pytest.raises(KubeConfigError, match='context "c" does not exist'):
        kc.context_namespace(docs, "c")
