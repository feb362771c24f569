"""The pytorch, tensorflow and mpi job plugins: exact env, TF_CONFIG, ports, their arguments, idempotence."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.mpi import MpiPlugin
from extender.jobs.plugins.pytorch import PytorchPlugin
from extender.jobs.plugins.tensorflow import TensorflowPlugin

Spec = dict[str, Any]
TWO_CONTAINERS: Spec = {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}


def make_job(*tasks: tuple[str, int] | tuple[str, int, Spec]) -> Job:
    raw = [
        {"name": t[0], "replicas": t[1], "template": {"spec": t[2] if len(t) > 2 else TWO_CONTAINERS}}
        for t in tasks
    ]
    return parse_job({"metadata": {"name": "fj", "namespace": "ml", "uid": "u"}, "spec": {"tasks": raw}})


def run(plugin: Any, job: Job, task: str, index: int) -> Spec:
    t = job.task(task)
    assert t is not None
    pod = {
        "metadata": {"name": pod_name(job.name, task, index)},
        "spec": copy.deepcopy(dict(t.template["spec"])),
    }
    plugin.on_pod(pod, job, t, index)
    return pod


def env(c: Spec) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c.get("env", [])}


# --- pytorch -----------------------------------------------------------------------------------------------
PT_JOB = make_job(("master", 1), ("worker", 3), ("logger", 1))


@pytest.mark.parametrize(
    ("task", "index", "rank"),
    [("master", 0, "0"), ("worker", 0, "1"), ("worker", 2, "3"), ("logger", 0, None)],
)
def test_pytorch_env(task: str, index: int, rank: str | None) -> None:
    pod = run(PytorchPlugin.from_args([]), PT_JOB, task, index)
    want = {"MASTER_ADDR": "fj-master-0.fj", "MASTER_PORT": "23456", "WORLD_SIZE": "4"}
    if rank is not None:
        want["RANK"] = rank
    for c in pod["spec"]["containers"]:
        assert env(c) == want
        assert c["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert pod["spec"]["initContainers"] == [{"name": "i"}]


def test_pytorch_custom_task_names_port_and_master_hostname() -> None:
    job = make_job(
        ("chief", 1, {"hostname": "boss", "subdomain": "net", "containers": [{"name": "c"}]}), ("wk", 2)
    )
    pod = run(PytorchPlugin.from_args(["--master=chief", "--worker=wk", "--port", "29500"]), job, "wk", 1)
    assert env(pod["spec"]["containers"][0]) == {
        "MASTER_ADDR": "boss.net",
        "MASTER_PORT": "29500",
        "WORLD_SIZE": "3",
        "RANK": "2",
    }


def test_pytorch_without_master_task_leaves_pod_alone() -> None:
    job = make_job(("worker", 2))
    t = job.tasks[0]
    pod = run(PytorchPlugin.from_args([]), job, "worker", 0)
    assert pod["spec"] == t.template["spec"]


def test_pytorch_keeps_an_existing_port_and_is_idempotent() -> None:
    spec = {"containers": [{"name": "c", "ports": [{"name": "mine", "containerPort": 23456}]}]}
    job = make_job(("master", 1, spec), ("worker", 1, spec))
    plugin = PytorchPlugin.from_args(["--wait-master-enabled"])
    pod = run(plugin, job, "worker", 0)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, job, job.tasks[1], 0)
    assert pod == once
    assert pod["spec"]["containers"][0]["ports"] == [{"name": "mine", "containerPort": 23456}]
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["wait-for-master"]


def test_pytorch_wait_for_master_only_on_workers_and_only_when_enabled() -> None:
    plugin = PytorchPlugin.from_args(
        ["--wait-master-enabled=true", "--wait-master-timeout=60", "--wait-master-image=busybox:1.37"]
    )
    worker = run(plugin, PT_JOB, "worker", 1)
    [_, wait] = worker["spec"]["initContainers"]
    assert wait["name"] == "wait-for-master"
    assert wait["image"] == "busybox:1.37"
    assert wait["command"][:2] == ["sh", "-c"]
    assert "nc -z" in wait["command"][2]
    assert wait["env"] == [
        {"name": "MASTER_ADDR", "value": "fj-master-0.fj"},
        {"name": "MASTER_PORT", "value": "23456"},
        {"name": "WAIT_TIMEOUT", "value": "60"},
    ]
    assert run(plugin, PT_JOB, "master", 0)["spec"]["initContainers"] == [{"name": "i"}]
    assert run(PytorchPlugin.from_args([]), PT_JOB, "worker", 1)["spec"]["initContainers"] == [{"name": "i"}]


# --- tensorflow --------------------------------------------------------------------------------------------
TF_JOB = make_job(("ps", 2), ("worker", 2), ("chief", 1), ("evaluator", 1), ("board", 1))
CLUSTER = (
    '"cluster":{"ps":["fj-ps-0.fj:2222","fj-ps-1.fj:2222"],"worker":["fj-worker-0.fj:2222","fj-worker-1.fj:2222"],'
    '"chief":["fj-chief-0.fj:2222"],"evaluator":["fj-evaluator-0.fj:2222"]}'
)


@pytest.mark.parametrize(
    ("task", "index", "task_json"),
    [
        ("ps", 1, '{"type":"ps","index":1}'),
        ("worker", 0, '{"type":"worker","index":0}'),
        ("chief", 0, '{"type":"chief","index":0}'),
        ("evaluator", 0, '{"type":"evaluator","index":0}'),
        ("board", 0, '{"type":"board","index":0}'),
    ],
)
def test_tf_config_exact(task: str, index: int, task_json: str) -> None:
    pod = run(TensorflowPlugin.from_args([]), TF_JOB, task, index)
    for c in pod["spec"]["containers"]:
        assert env(c) == {"TF_CONFIG": "{" + CLUSTER + ',"task":' + task_json + "}"}
        assert "ports" not in c
    assert pod["spec"]["initContainers"] == [{"name": "i"}]


def test_tf_config_custom_roles_port_and_omitted_empty_roles() -> None:
    job = make_job(("params", 1), ("trainer", 2), ("chief", 0))
    argv = ["--ps=params", "--worker=trainer", "--port=5000"]
    pod = run(TensorflowPlugin.from_args(argv), job, "trainer", 1)
    assert json.loads(env(pod["spec"]["containers"][0])["TF_CONFIG"]) == {
        "cluster": {
            "ps": ["fj-params-0.fj:5000"],
            "worker": ["fj-trainer-0.fj:5000", "fj-trainer-1.fj:5000"],
        },
        "task": {"type": "worker", "index": 1},
    }


def test_tf_one_task_one_replica_is_stand_alone() -> None:
    job = make_job(("worker", 1))
    assert "env" not in run(TensorflowPlugin.from_args([]), job, "worker", 0)["spec"]["containers"][0]
    job = make_job(("worker", 2))
    assert "TF_CONFIG" in env(run(TensorflowPlugin.from_args([]), job, "worker", 0)["spec"]["containers"][0])


def test_tf_is_idempotent() -> None:
    plugin = TensorflowPlugin.from_args([])
    pod = run(plugin, TF_JOB, "ps", 0)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, TF_JOB, TF_JOB.tasks[0], 0)
    assert pod == once


# --- mpi ---------------------------------------------------------------------------------------------------
MPI_JOB = make_job(("master", 1), ("worker", 3))
MPI_PORT = [{"name": "mpijob-port", "containerPort": 22}]


def test_mpi_master_gets_worker_hosts_and_everyone_the_port() -> None:
    master = run(MpiPlugin.from_args([]), MPI_JOB, "master", 0)
    for c in master["spec"]["containers"] + master["spec"]["initContainers"]:
        assert env(c) == {"MPI_HOST": "fj-worker-0.fj,fj-worker-1.fj,fj-worker-2.fj"}
        assert c["ports"] == MPI_PORT
    worker = run(MpiPlugin.from_args([]), MPI_JOB, "worker", 2)
    for c in worker["spec"]["containers"] + worker["spec"]["initContainers"]:
        assert "env" not in c
        assert c["ports"] == MPI_PORT


def test_mpi_custom_args_and_fixed_worker_hostname() -> None:
    job = make_job(("launcher", 1), ("node", 4, {"hostname": "h", "containers": [{"name": "c"}]}))
    pod = run(MpiPlugin.from_args(["--master=launcher", "--worker=node", "--port=2022"]), job, "launcher", 0)
    c = pod["spec"]["containers"][0]
    assert env(c) == {"MPI_HOST": "h.fj"}
    assert c["ports"] == [{"name": "mpijob-port", "containerPort": 2022}]


@pytest.mark.parametrize(
    ("job", "task", "want_env", "want_ports"),
    [
        # Volcano: a master pod of a job without the worker task is not touched at all.
        (make_job(("master", 1)), "master", None, None),
        (make_job(("master", 1), ("other", 1)), "other", None, MPI_PORT),
        (make_job(("master", 1), ("worker", 0)), "master", {"MPI_HOST": ""}, MPI_PORT),
    ],
)
def test_mpi_edge_cases(job: Job, task: str, want_env: dict[str, str] | None, want_ports: Any) -> None:
    c = run(MpiPlugin.from_args([]), job, task, 0)["spec"]["containers"][0]
    assert (env(c) if "env" in c else None) == want_env
    assert c.get("ports") == want_ports


def test_mpi_is_idempotent() -> None:
    plugin = MpiPlugin.from_args([])
    pod = run(plugin, MPI_JOB, "master", 0)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, MPI_JOB, MPI_JOB.tasks[0], 0)
    assert pod == once


# --- all three ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("plugin", [PytorchPlugin, TensorflowPlugin, MpiPlugin])
def test_frameworks_create_no_objects(plugin: Any) -> None:
    assert plugin.from_args([]).objects(MPI_JOB, PluginContext()) == []


@pytest.mark.parametrize(
    ("plugin", "argv", "names"),
    [
        (PytorchPlugin, ["--port=0"], "--port"),
        (PytorchPlugin, ["--port=abc"], "--port"),
        (PytorchPlugin, ["--master="], "--master"),
        (PytorchPlugin, ["--wait-master-timeout=-1"], "--wait-master-timeout"),
        (PytorchPlugin, ["--wait-master-enabled=maybe"], "--wait-master-enabled"),
        (PytorchPlugin, ["--wait-master-image="], "--wait-master-image"),
        (PytorchPlugin, ["--ps=ps"], "--ps"),
        (TensorflowPlugin, ["--port=65536"], "--port"),
        (TensorflowPlugin, ["--evaluator="], "--evaluator"),
        (TensorflowPlugin, ["--master=m"], "--master"),
        (MpiPlugin, ["--worker="], "--worker"),
        (MpiPlugin, ["--port"], "--port"),
        (MpiPlugin, ["--hostfile=/etc/hosts"], "--hostfile"),
    ],
)
def test_bad_args_name_plugin_and_argument(plugin: Any, argv: list[str], names: str) -> None:
    with pytest.raises(ConfigError) as e:
        plugin.from_args(argv)
    assert str(e.value).startswith(f"job plugin {plugin.name}: ")
    assert names in str(e.value)
