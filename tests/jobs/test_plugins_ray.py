"""The ray job plugin: the head's ports and command, the worker's command with the head's address, the head
Service, its camelCase arguments, idempotence, and the whole job as the controller builds it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.ray import RayArgs, RayPlugin
from extender.jobs.plugins.registry import build_plugins, plugin_objects
from extender.jobs.pods import build_pod

Spec = dict[str, Any]

HEAD_CMD = [
    "sh",
    "-c",
    "ray start --head --block --dashboard-host=0.0.0.0 --port=6379 --dashboard-port=8265 "
    "--ray-client-server-port=10001",
]
HEAD_PORTS = [
    {"name": "gcs", "containerPort": 6379},
    {"name": "dashboard", "containerPort": 8265},
    {"name": "client-server", "containerPort": 10001},
]


def spec_with(*names: str, **pod: Any) -> Spec:
    return {"containers": [{"name": n, "image": "ray"} for n in names], **pod}


def make_job(*tasks: tuple[str, int, Spec], plugins: dict[str, list[str]] | None = None) -> Job:
    raw = [{"name": n, "replicas": r, "template": {"spec": s}} for n, r, s in tasks]
    return parse_job(
        {
            "metadata": {"name": "rc", "namespace": "lab", "uid": "u-1"},
            "spec": {"tasks": raw, "plugins": plugins or {}},
        }
    )


JOB = make_job(("head", 1, spec_with("head", "sidecar")), ("worker", 3, spec_with("worker", "sidecar")))


def run(plugin: RayPlugin, job: Job, task: str, index: int) -> Spec:
    t = job.task(task)
    assert t is not None
    pod = {
        "metadata": {"name": pod_name(job.name, task, index)},
        "spec": copy.deepcopy(dict(t.template["spec"])),
    }
    plugin.on_pod(pod, job, t, index)
    return pod


def test_defaults() -> None:
    assert RayPlugin.from_args([]).args == RayArgs(
        head="head",
        worker="worker",
        head_container="head",
        worker_container="worker",
        port=6379,
        dashboard_port=8265,
        client_port=10001,
    )


def test_head_container_gets_ports_and_command_others_nothing() -> None:
    pod = run(RayPlugin.from_args([]), JOB, "head", 0)
    head, sidecar = pod["spec"]["containers"]
    assert head == {"name": "head", "image": "ray", "ports": HEAD_PORTS, "command": HEAD_CMD}
    assert sidecar == {"name": "sidecar", "image": "ray"}


@pytest.mark.parametrize("index", [0, 2])
def test_worker_container_gets_the_head_address(index: int) -> None:
    pod = run(RayPlugin.from_args([]), JOB, "worker", index)
    worker, sidecar = pod["spec"]["containers"]
    assert worker == {
        "name": "worker",
        "image": "ray",
        "command": ["sh", "-c", "ray start --block --address=rc-head-0.rc:6379"],
    }
    assert sidecar == {"name": "sidecar", "image": "ray"}


def test_camel_case_arguments_rename_tasks_containers_and_ports() -> None:
    job = make_job(("boss", 1, spec_with("main")), ("hands", 2, spec_with("w")))
    plugin = RayPlugin.from_args(
        [
            "--head=boss",
            "--worker=hands",
            "--headContainer=main",
            "-workerContainer",
            "w",
            "--port=7000",
            "--dashboardPort=7001",
            "--clientPort=7002",
        ]
    )
    head = run(plugin, job, "boss", 0)["spec"]["containers"][0]
    assert head["command"] == [
        "sh",
        "-c",
        "ray start --head --block --dashboard-host=0.0.0.0 --port=7000 --dashboard-port=7001 "
        "--ray-client-server-port=7002",
    ]
    assert [p["containerPort"] for p in head["ports"]] == [7000, 7001, 7002]
    worker = run(plugin, job, "hands", 1)["spec"]["containers"][0]
    assert worker["command"] == ["sh", "-c", "ray start --block --address=rc-boss-0.rc:7000"]


def test_head_template_hostname_and_subdomain_make_the_address() -> None:
    job = make_job(
        ("head", 1, spec_with("head", hostname="ray-head", subdomain="mesh")),
        ("worker", 1, spec_with("worker")),
    )
    worker = run(RayPlugin.from_args([]), job, "worker", 0)["spec"]["containers"][0]
    assert worker["command"][2] == "ray start --block --address=ray-head.mesh:6379"


def test_an_address_that_is_no_dns_name_is_quoted_for_the_shell() -> None:
    job = make_job(("head", 1, spec_with("head", hostname="a;b")), ("worker", 1, spec_with("worker")))
    worker = run(RayPlugin.from_args([]), job, "worker", 0)["spec"]["containers"][0]
    assert worker["command"][2] == "ray start --block --address='a;b.rc:6379'"


def test_existing_ports_are_kept_under_their_names_and_args_left_alone() -> None:
    spec = spec_with("head")
    spec["containers"][0].update(
        command=["python"], args=["serve.py"], ports=[{"name": "redis", "containerPort": 6379}]
    )
    job = make_job(("head", 1, spec))
    head = run(RayPlugin.from_args([]), job, "head", 0)["spec"]["containers"][0]
    assert head["ports"] == [{"name": "redis", "containerPort": 6379}, *HEAD_PORTS[1:]]
    assert head["command"] == HEAD_CMD
    assert head["args"] == ["serve.py"]


@pytest.mark.parametrize(
    ("job", "task"),
    [
        # No head task: nothing happens (admission refuses such a job; Volcano fails the pod).
        (make_job(("worker", 2, spec_with("worker"))), "worker"),
        # The task lacks the named container: left as it is.
        (make_job(("head", 1, spec_with("main")), ("worker", 1, spec_with("main"))), "head"),
        (make_job(("head", 1, spec_with("main")), ("worker", 1, spec_with("main"))), "worker"),
        # A task of neither role.
        (make_job(("head", 1, spec_with("head")), ("driver", 1, spec_with("head", "worker"))), "driver"),
    ],
)
def test_pods_left_alone(job: Job, task: str) -> None:
    t = job.task(task)
    assert t is not None
    assert run(RayPlugin.from_args([]), job, task, 0)["spec"] == t.template["spec"]


def test_init_containers_are_not_touched() -> None:
    job = make_job(("head", 1, spec_with("head", initContainers=[{"name": "head", "image": "x"}])))
    pod = run(RayPlugin.from_args([]), job, "head", 0)
    assert pod["spec"]["initContainers"] == [{"name": "head", "image": "x"}]


def test_one_task_in_both_roles_ends_with_the_worker_command() -> None:
    job = make_job(("ray", 2, spec_with("node")))
    argv = ["--head=ray", "--worker=ray", "--headContainer=node", "--workerContainer=node"]
    c = run(RayPlugin.from_args(argv), job, "ray", 1)["spec"]["containers"][0]
    assert c["ports"] == HEAD_PORTS
    assert c["command"] == ["sh", "-c", "ray start --block --address=rc-ray-0.rc:6379"]


@pytest.mark.parametrize(("task", "index"), [("head", 0), ("worker", 1)])
def test_idempotent(task: str, index: int) -> None:
    plugin = RayPlugin.from_args([])
    pod = run(plugin, JOB, task, index)
    once = copy.deepcopy(pod)
    t = JOB.task(task)
    assert t is not None
    plugin.on_pod(pod, JOB, t, index)
    assert pod == once


def test_head_service() -> None:
    [svc] = RayPlugin.from_args(["--head=boss", "--dashboardPort=9000"]).objects(JOB, PluginContext())
    assert svc == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "rc-head-svc",
            "namespace": "lab",
            "labels": {"volcano.sh/job-name": "rc", "volcano.sh/job-namespace": "lab"},
            "ownerReferences": [
                {
                    "apiVersion": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "rc",
                    "uid": "u-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "selector": {
                "volcano.sh/job-name": "rc",
                "volcano.sh/job-namespace": "lab",
                "volcano.sh/task-spec": "boss",
            },
            "ports": [
                {"name": "gcs", "port": 6379, "targetPort": 6379, "protocol": "TCP"},
                {"name": "dashboard", "port": 9000, "targetPort": 9000, "protocol": "TCP"},
                {"name": "client-server", "port": 10001, "targetPort": 10001, "protocol": "TCP"},
            ],
        },
    }


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--head="], "job plugin ray: --head=: must name a task"),
        (["--worker="], "job plugin ray: --worker=: must name a task"),
        (["--headContainer="], "job plugin ray: --headContainer=: must not be empty"),
        (["--port=0"], "job plugin ray: --port=0: must be a port number between 1 and 65535"),
        (["--dashboardPort=x"], "job plugin ray: --dashboardPort=x: want an integer"),
        (
            ["--clientPort=6379"],
            "job plugin ray: --port=6379, --dashboardPort=8265 and --clientPort=6379 must be three "
            "different ports",
        ),
        # Go's flags are case sensitive and spelt as Volcano spells them; the user guide's name is refused.
        (
            ["--clientServerPort=10001"],
            "job plugin ray: unknown argument --clientServerPort (known: --clientPort, --dashboardPort, "
            "--head, --headContainer, --port, --worker, --workerContainer)",
        ),
        (["--head-container=h"], "job plugin ray: unknown argument --head-container"),
        (["head"], "job plugin ray: unexpected argument 'head' (want --name=value)"),
    ],
)
def test_bad_args_name_plugin_and_argument(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        RayPlugin.from_args(argv)
    assert str(e.value).startswith(message)


def test_the_whole_job_as_the_controller_builds_it() -> None:
    """Admission adds svc to a ray job; with it the worker's address names the head pod's DNS record."""
    job = make_job(
        ("head", 1, spec_with("head")), ("worker", 2, spec_with("worker")), plugins={"ray": [], "svc": []}
    )
    plugins = build_plugins(job)
    assert [p.name for p in plugins] == ["svc", "ray"]
    head = build_pod(job, job.tasks[0], 0, plugins)
    worker = build_pod(job, job.tasks[1], 1, plugins)
    assert (head["spec"]["hostname"], head["spec"]["subdomain"]) == ("rc-head-0", "rc")
    assert head["metadata"]["labels"]["volcano.sh/task-spec"] == "head"
    assert worker["spec"]["containers"][0]["command"][2] == "ray start --block --address=rc-head-0.rc:6379"
    objects = plugin_objects(plugins, job, PluginContext())
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("ConfigMap", "rc-svc"),
        ("Service", "rc"),
        ("NetworkPolicy", "rc"),
        ("Service", "rc-head-svc"),
    ]
    head_svc = objects[-1]
    assert head_svc["spec"]["selector"].items() <= head["metadata"]["labels"].items()
    assert not head_svc["spec"]["selector"].items() <= worker["metadata"]["labels"].items()
