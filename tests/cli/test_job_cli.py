"""``pumice job ...``: the bodies built from flags, the tables, and the calls against a fake API server."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.cli import explain, job_bodies, job_views, jobs
from controllers.cli import kubeconfig as kc
from controllers.cli.errors import CliError, UsageError
from controllers.cli.parser import resource_list
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from tests.cli.conftest import Cli, FakeApiServer, parse

NOW = datetime(2024, 5, 1, 10, 5, 0, tzinfo=UTC)  # 5 minutes after the fake server's creation time
BATCH = "/apis/batch.volcano.sh/v1alpha1"
BUS = "/apis/bus.volcano.sh/v1alpha1"


def vcjob(name: str, namespace: str = "team-a", **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {
            "minAvailable": 2,
            "queue": "q1",
            "schedulerName": "volcano",
            "tasks": [{"name": "ps", "replicas": 1}, {"name": "worker", "replicas": 2}],
        },
        "status": status,
    }


# -- flags and bodies ------------------------------------------------------------------------------


def test_resource_list_parses_and_checks_quantities() -> None:
    assert resource_list("cpu=1000m,memory=100Mi") == {"cpu": "1000m", "memory": "100Mi"}
    assert resource_list(" cpu = 2 , nvidia.com/gpu=1,") == {"cpu": "2", "nvidia.com/gpu": "1"}
    assert resource_list("") == {}
    for bad in ("cpu", "cpu=", "=1", "cpu=lots"):
        with pytest.raises(argparse.ArgumentTypeError):
            resource_list(bad)


def test_build_job_matches_vcctl_run() -> None:
    job = job_bodies.build_job(
        name="demo",
        namespace="team-a",
        image="nginx",
        replicas=3,
        min_available=2,
        requests={"cpu": "1"},
        limits={"cpu": "2"},
        queue="q1",
    )
    assert job == {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "demo", "namespace": "team-a"},
        "spec": {
            "minAvailable": 2,
            "schedulerName": "volcano",
            "queue": "q1",
            "tasks": [
                {
                    "name": "default0",
                    "replicas": 3,
                    "template": {
                        "metadata": {"name": "demo", "labels": {"job.volcano.sh": "demo"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "demo",
                                    "image": "nginx",
                                    "imagePullPolicy": "IfNotPresent",
                                    "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


def test_build_job_defaults_are_vcctls() -> None:
    args = parse("job", "run", "--name", "d")
    job = job_bodies.build_job(
        name=args.name,
        namespace="ns",
        image=args.image,
        replicas=args.replicas,
        min_available=args.min,
        requests=args.requests,
        limits=args.limits,
        scheduler=args.scheduler,
        queue=args.queue,
    )
    assert "queue" not in job["spec"]
    assert job["spec"]["minAvailable"] == 1 and job["spec"]["schedulerName"] == "volcano"
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["image"] == "busybox"
    expected = {"cpu": "1000m", "memory": "100Mi"}
    assert container["resources"] == {"limits": expected, "requests": expected}


def test_bad_flags_exit_2() -> None:
    for argv in (
        ("job", "run"),  # neither --name nor -f
        ("job", "run", "--name", "x", "-f", "j.yaml"),
        ("job", "run", "--name", "x", "--replicas", "0"),
        ("job", "run", "--name", "x", "--limits", "memory=much"),
        ("job", "view"),
        ("job", "list", "-o", "xml"),
    ):
        with pytest.raises(SystemExit) as exc:
            parse(*argv)
        assert exc.value.code == 2, argv


def test_job_from_file_takes_the_files_namespace_unless_flag_conflicts() -> None:
    text = "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: f, namespace: own}\nspec: {}\n"
    job = job_bodies.load_job_file(text, namespace="ctx", explicit_namespace=False)
    assert job["metadata"] == {"name": "f", "namespace": "own"}
    assert (
        job_bodies.load_job_file(text, namespace="own", explicit_namespace=True)["metadata"]["namespace"]
        == "own"
    )
    with pytest.raises(UsageError, match="does not match"):
        job_bodies.load_job_file(text, namespace="other", explicit_namespace=True)
    bare = job_bodies.load_job_file("metadata: {name: g}\n", namespace="ctx", explicit_namespace=False)
    assert bare["apiVersion"] == "batch.volcano.sh/v1alpha1" and bare["metadata"]["namespace"] == "ctx"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n",
            "expected a batch.volcano.sh/v1alpha1 Job",
        ),
        ("metadata: {}\n", "no metadata.name"),
        ("- a\n", "YAML mapping"),
        ("metadata: {name: a}\n---\nmetadata: {name: b}\n", "exactly one Job, found 2"),
        ("a: [", "not valid YAML"),
    ],
)
def test_job_file_errors(text: str, error: str) -> None:
    with pytest.raises(CliError, match=error):
        job_bodies.load_job_file(text, namespace="ns", explicit_namespace=False)


def test_build_command_targets_and_is_owned_by_the_job() -> None:
    job = vcjob("demo")
    job["metadata"]["uid"] = "u-1"
    ref = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "name": "demo",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert job_bodies.build_command(job, job_bodies.ABORT_JOB) == {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "demo-abortjob-", "namespace": "team-a", "ownerReferences": [ref]},
        "action": "AbortJob",
        "target": ref,
    }
    assert (
        job_bodies.build_command(job, job_bodies.RESUME_JOB)["metadata"]["generateName"] == "demo-resumejob-"
    )


# -- rendering -------------------------------------------------------------------------------------


def test_job_table() -> None:
    running = vcjob("train", state={"phase": "Running"}, minAvailable=2, running=3, retryCount=1)
    running["metadata"]["labels"] = {"volcano.sh/job-type": "MPI"}
    fresh = vcjob("new")
    assert job_views.job_table([running, fresh], NOW, all_namespaces=False, wide=False).splitlines() == [
        "NAME   PHASE    JOBTYPE  REPLICAS  MIN  PENDING  RUNNING  SUCCEEDED  FAILED  UNKNOWN  RETRYCOUNT"
        "  AGE",
        "train  Running  MPI      3         2    0        3        0          0       0        1         "
        "  5m",
        "new    <none>   Batch    3         2    0        0        0          0       0        0         "
        "  5m",
    ]


def test_job_table_all_namespaces_and_wide() -> None:
    table = job_views.job_table([vcjob("a", "ns1")], NOW, all_namespaces=True, wide=True)
    header, row = table.splitlines()
    assert header.split() == [
        *("NAMESPACE", "NAME", "PHASE", "JOBTYPE", "REPLICAS", "MIN", "PENDING", "RUNNING", "SUCCEEDED"),
        *("FAILED", "UNKNOWN", "RETRYCOUNT", "AGE", "QUEUE", "SCHEDULER"),
    ]
    assert row.split()[:2] == ["ns1", "a"] and row.split()[-2:] == ["q1", "volcano"]


def test_filter_jobs() -> None:
    a, b = vcjob("a"), vcjob("b")
    b["spec"]["queue"] = "q2"
    assert job_views.filter_jobs([a, b], queue="q2", scheduler=None) == [b]
    assert job_views.filter_jobs([a, b], queue=None, scheduler="other") == []
    assert job_views.filter_jobs([a, b], queue=None, scheduler=None) == [a, b]


def test_describe_job() -> None:
    job = vcjob(
        "train",
        state={"phase": "Running", "reason": "Started"},
        minAvailable=2,
        running=2,
        pending=1,
        taskStatusCount={"worker": {"phase": {"Running": 2}}, "ps": {"phase": {"Pending": 1}}},
        conditions=[{"status": "Pending", "lastTransitionTime": "2024-05-01T10:00:01Z"}],
    )
    job["metadata"]["labels"] = {"a": "1", "b": "2"}
    job["spec"]["tasks"][1]["template"] = {
        "spec": {"containers": [{"image": "trainer:1", "resources": {"requests": {"cpu": "2"}}}]}
    }
    events = [
        {
            "type": "Normal",
            "reason": "Scheduled",
            "message": "all pods bound ",
            "count": 3,
            "firstTimestamp": "2024-05-01T10:00:00Z",
            "lastTimestamp": "2024-05-01T10:04:00Z",
            "source": {"component": "pumice"},
        }
    ]
    text = job_views.describe_job(job, NOW, events)
    assert text.startswith("Name:            train\nNamespace:       team-a\nLabels:          a=1\n")
    assert "\n                 b=2\n" in text
    assert "Created:         2024-05-01T10:00:00Z (5m ago)\n" in text
    assert "Queue:           q1\n" in text
    assert "  NAME    REPLICAS  IMAGE      REQUESTS  LIMITS\n" in text
    assert "  worker  2         trainer:1  cpu=2     <none>\n" in text
    assert "  Phase:          Running\n  Reason:         Started\n" in text
    assert "  Pods:           Pending 1, Running 2, Succeeded 0, Failed 0, Terminating 0, Unknown 0\n" in text
    assert "Task Status:\n  TASK    PENDING  RUNNING" in text
    assert "  ps      1        0" in text and "  worker  0        2" in text
    assert "Conditions:\n  STATUS   LAST TRANSITION\n  Pending  2024-05-01T10:00:01Z\n" in text
    assert "  Normal  Scheduled  60s (x3 over 5m)  pumice  all pods bound\n" in text
    assert job_views.describe_job(vcjob("x"), NOW, []).endswith("Events:  <none>\n")
    assert job_views.describe_job(vcjob("x"), NOW, None).endswith("Events:  <unavailable>\n")


# -- API calls against the fake server ---------------------------------------------------------------


async def test_list_jobs_follows_continue_tokens(fake_api: FakeApiServer, kube: KubeClient) -> None:
    for i in range(3):
        fake_api.put(BATCH, "jobs", vcjob(f"j{i}", "ns1" if i else "ns2"))
    assert [j["metadata"]["name"] for j in await jobs.list_jobs(kube, "ns1")] == ["j1", "j2"]
    jobs_all = await jobs.list_jobs(kube, None)
    assert len(jobs_all) == 3
    assert fake_api.requests[-1].path == f"{BATCH}/jobs"
    assert fake_api.requests[-1].query["limit"] == "500"


async def test_list_all_pages(
    fake_api: FakeApiServer, kube: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(kc, "LIST_CHUNK", "2")
    for i in range(5):
        fake_api.put(BATCH, "jobs", vcjob(f"j{i}"))
    assert len(await jobs.list_jobs(kube, "team-a")) == 5
    assert [r.query.get("continue") for r in fake_api.calls("GET")] == [None, "2", "4"]


async def test_command_job_references_the_live_job(fake_api: FakeApiServer, kube: KubeClient) -> None:
    fake_api.put(BATCH, "jobs", vcjob("demo"))
    uid = fake_api.stored(BATCH, "jobs", "demo", "team-a")["metadata"]["uid"]
    created = await jobs.command_job(kube, "team-a", "demo", job_bodies.ABORT_JOB)
    assert created["metadata"]["name"].startswith("demo-abortjob-")
    post = fake_api.calls("POST")[0]
    assert post.path == f"{BUS}/namespaces/team-a/commands"
    assert post.body["target"]["uid"] == uid and post.body["metadata"]["ownerReferences"][0]["uid"] == uid


async def test_command_for_a_missing_job_creates_nothing(fake_api: FakeApiServer, kube: KubeClient) -> None:
    with pytest.raises(ApiError) as exc:
        await jobs.command_job(kube, "team-a", "ghost", job_bodies.RESUME_JOB)
    assert exc.value.status == 404
    assert fake_api.calls("POST") == []


async def test_job_events_keep_only_the_volcano_jobs(fake_api: FakeApiServer, kube: KubeClient) -> None:
    def event(name: str, api_version: str, last: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "team-a"},
            "involvedObject": {"kind": "Job", "name": "demo", "apiVersion": api_version},
            "lastTimestamp": last,
        }

    fake_api.put("/api/v1", "events", event("e2", "batch.volcano.sh/v1alpha1", "2024-05-01T10:02:00Z"))
    fake_api.put("/api/v1", "events", event("e1", "batch.volcano.sh/v1alpha1", "2024-05-01T10:01:00Z"))
    fake_api.put("/api/v1", "events", event("e3", "batch/v1", "2024-05-01T10:03:00Z"))
    events = await explain.job_events(kube, vcjob("demo"))
    assert [e["metadata"]["name"] for e in events or []] == ["e1", "e2"]
    assert fake_api.requests[-1].query["fieldSelector"] == "involvedObject.name=demo,involvedObject.kind=Job"
    fake_api.deny[("GET", "/api/v1/namespaces/team-a/events")] = "forbidden"
    assert await explain.job_events(kube, vcjob("demo")) is None


# -- the commands, end to end through argparse --------------------------------------------------------


async def test_run_creates_in_the_contexts_namespace(cli: Cli, fake_api: FakeApiServer) -> None:
    result = await cli("job", "run", "--name", "demo", "--replicas", "3", "--min", "2", "--queue", "q1")
    assert (result.code, result.out, result.err) == (0, "job.batch.volcano.sh/demo created\n", "")
    post = fake_api.calls("POST")[0]
    assert post.path == f"{BATCH}/namespaces/team-a/jobs"
    assert post.body["spec"]["minAvailable"] == 2 and post.body["spec"]["tasks"][0]["replicas"] == 3


async def test_run_min_above_replicas_is_a_usage_error(cli: Cli, fake_api: FakeApiServer) -> None:
    result = await cli("job", "run", "--name", "demo", "--replicas", "1", "--min", "2")
    assert result.code == 2 and "--min 2 exceeds --replicas 1" in result.err
    assert fake_api.requests == []


async def test_run_from_file(cli: Cli, fake_api: FakeApiServer, tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job_bodies.build_job(name="filed", namespace="elsewhere")))
    result = await cli("job", "run", "-f", str(path))
    assert result.code == 0, result.err
    assert fake_api.calls("POST")[0].path == f"{BATCH}/namespaces/elsewhere/jobs"
    missing = await cli("job", "run", "-f", str(tmp_path / "none.yaml"))
    assert missing.code == 1 and missing.err.startswith("pumice: cannot read")


async def test_run_denied_by_admission_prints_the_servers_message(cli: Cli, fake_api: FakeApiServer) -> None:
    message = 'admission webhook "validate.jobs.pumice.dev" denied the request: spec.minAvailable: too big'
    fake_api.deny[("POST", f"{BATCH}/namespaces/team-a/jobs")] = message
    result = await cli("job", "run", "--name", "demo")
    assert (result.code, result.out, result.err) == (1, "", f"pumice: {message}\n")


async def test_list_table_and_empty(cli: Cli, fake_api: FakeApiServer) -> None:
    empty = await cli("job", "list")
    assert (empty.code, empty.out, empty.err) == (0, "", "No resources found in team-a namespace.\n")
    fake_api.put(BATCH, "jobs", vcjob("train", state={"phase": "Running"}, running=3))
    fake_api.put(BATCH, "jobs", vcjob("other", "ns2"))
    result = await cli("job", "list")
    assert result.code == 0
    lines = result.out.splitlines()
    assert lines[0].startswith("NAME   PHASE    JOBTYPE") and lines[0].endswith("AGE")
    assert lines[1].split()[:3] == ["train", "Running", "Batch"] and len(lines) == 2
    every = await cli("job", "list", "-A", "-o", "yaml")
    doc = yaml.safe_load(every.out)
    assert doc["kind"] == "List" and [i["metadata"]["name"] for i in doc["items"]] == ["other", "train"]


async def test_view(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("train", state={"phase": "Running"}))
    text = await cli("job", "view", "--name", "train")
    assert text.code == 0 and text.out.startswith("Name:") and "  Phase:          Running\n" in text.out
    as_json = await cli("job", "view", "-N", "train", "-o", "json", "-n", "team-a")
    assert '"name": "train"' in as_json.out


async def test_view_missing_job_is_a_404(cli: Cli, fake_api: FakeApiServer) -> None:
    result = await cli("job", "view", "--name", "ghost", "-n", "ns9")
    assert (result.code, result.out) == (1, "")
    assert result.err == 'pumice: jobs.batch.volcano.sh "ghost" not found\n'
    assert fake_api.requests[0].path == f"{BATCH}/namespaces/ns9/jobs/ghost"


async def test_suspend_resume_delete(cli: Cli, fake_api: FakeApiServer) -> None:
    fake_api.put(BATCH, "jobs", vcjob("demo"))
    suspended = await cli("job", "suspend", "--name", "demo")
    assert suspended.code == 0 and suspended.out.startswith("command.bus.volcano.sh/demo-abortjob-")
    resumed = await cli("job", "resume", "-N", "demo")
    assert resumed.code == 0 and "demo-resumejob-" in resumed.out
    actions = [r.body["action"] for r in fake_api.calls("POST")]
    assert actions == ["AbortJob", "ResumeJob"]
    deleted = await cli("job", "delete", "--name", "demo")
    assert (deleted.code, deleted.out) == (0, 'job.batch.volcano.sh "demo" deleted\n')
    assert fake_api.get(BATCH, "jobs", "demo", "team-a") is None
    again = await cli("job", "delete", "--name", "demo")
    assert again.code == 1 and "not found" in again.err


async def test_missing_crds_get_a_hint(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "JOBS", dataclasses.replace(paths.JOBS, version="v9"))
    result = await cli("job", "list")
    assert result.code == 1
    assert result.err == (
        "pumice: the server could not find the requested resource "
        "(GET /apis/batch.volcano.sh/v9/namespaces/team-a/jobs); are the CRDs installed?\n"
    )


def _point_at_closed_port(kubeconfig: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on once this closes
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    doc = yaml.safe_load(kubeconfig.read_text())
    doc["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
    kubeconfig.write_text(yaml.safe_dump(doc))


async def test_unreachable_server(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _point_at_closed_port(kubeconfig)
    args = parse("job", "list", "--kubeconfig", str(kubeconfig))
    code = await asyncio.to_thread(args.func, args)
    assert code == 1 and "pumice: cannot reach the API server" in capsys.readouterr().err
