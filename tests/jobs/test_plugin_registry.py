"""The job plugin registry (names, order, errors) and the Go flag syntax every plugin shares."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.args import option, parse_flags, port_number
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.registry import (
    PLUGIN_NAMES,
    apply_pod_plugins,
    build_plugins,
    check_plugin,
    plugin_objects,
)

KEYS = PluginContext(
    ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    ssh_public_key="ssh-ed25519 AAAA test",
)


def make_job(plugins: dict[str, list[str]]) -> Job:
    spec = {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}
    return parse_job(
        {
            "metadata": {"name": "rj", "namespace": "ns", "uid": "u"},
            "spec": {
                "plugins": plugins,
                "tasks": [
                    {"name": "master", "replicas": 1, "template": {"spec": spec}},
                    {"name": "worker", "replicas": 2, "template": {"spec": spec}},
                ],
            },
        }
    )


ALL: dict[str, list[str]] = {"tensorflow": [], "pytorch": [], "mpi": [], "ssh": [], "svc": [], "env": []}
ORDER = ["env", "svc", "ssh", "mpi", "pytorch", "tensorflow", "ray", "hcclrank"]


def test_plugin_names() -> None:
    assert frozenset(ORDER) == PLUGIN_NAMES


def test_build_order_is_fixed_whatever_the_spec_order() -> None:
    every: dict[str, list[str]] = {**ALL, "hcclrank": [], "ray": []}
    forward = build_plugins(make_job(every))
    backward = build_plugins(make_job(dict(reversed(every.items()))))
    assert [p.name for p in forward] == ORDER
    assert [p.name for p in backward] == [p.name for p in forward]
    assert build_plugins(make_job({})) == []


def test_build_passes_each_plugin_its_arguments() -> None:
    [svc, pytorch] = build_plugins(
        make_job({"pytorch": ["--port=1234"], "svc": ["--disable-network-policy"]})
    )
    assert getattr(pytorch, "args").port == 1234  # noqa: B009 - the protocol does not expose args
    assert getattr(svc, "args").disable_network_policy  # noqa: B009 - as above


@pytest.mark.parametrize(
    ("plugins", "names"),
    [
        ({"mxnet": []}, "'mxnet'"),
        ({"env": [], "horovod": []}, "'horovod'"),
        ({"svc": ["--bogus"]}, "--bogus"),
        ({"mpi": ["--port=x"]}, "--port"),
    ],
)
def test_build_refuses_unknown_plugins_and_bad_args(plugins: dict[str, list[str]], names: str) -> None:
    with pytest.raises(ConfigError) as e:
        build_plugins(make_job(plugins))
    assert names in str(e.value)


@pytest.mark.parametrize(
    ("name", "args", "want"),
    [
        ("env", [], None),
        ("svc", ["--publish-not-ready-addresses=true"], None),
        ("pytorch", ["--master=m", "--worker=w", "--port=1"], None),
        ("ray", ["--headContainer=main", "--dashboardPort=9000"], None),
        ("hcclrank", ["--master=m"], None),
        ("mxnet", [], "unknown job plugin 'mxnet' (known: env, hcclrank, mpi, pytorch, ray, ssh, svc, "
         "tensorflow)"),
        ("tensorflow", ["--port=99999"],
         "job plugin tensorflow: --port=99999: must be a port number between 1 and 65535"),
        ("ssh", ["--no-root"], "job plugin ssh: unknown argument --no-root (known: --ssh-key-file-path, "
         "--ssh-port, --ssh-private-key, --ssh-public-key)"),
    ],
)  # fmt: skip
def test_check_plugin(name: str, args: list[str], want: str | None) -> None:
    assert check_plugin(name, args) == want


def fresh_pod(job: Job, task: str, index: int) -> dict[str, Any]:
    t = job.task(task)
    assert t is not None
    pod = copy.deepcopy(dict(t.template))
    pod["metadata"] = {"name": pod_name(job.name, task, index)}
    return pod


@pytest.mark.parametrize(("task", "index"), [("master", 0), ("worker", 1)])
def test_all_plugins_together_are_deterministic_and_idempotent(task: str, index: int) -> None:
    job = make_job({**ALL, "pytorch": ["--wait-master-enabled"]})
    t = job.task(task)
    assert t is not None
    first, second = fresh_pod(job, task, index), fresh_pod(job, task, index)
    apply_pod_plugins(build_plugins(job), first, job, t, index)
    apply_pod_plugins(build_plugins(job), second, job, t, index)
    assert first == second
    once = copy.deepcopy(first)
    apply_pod_plugins(build_plugins(job), first, job, t, index)
    assert first == once
    c = first["spec"]["containers"][0]
    assert len({e["name"] for e in c["env"]}) == len(c["env"])
    assert len({m["name"] for m in c["volumeMounts"]}) == len(c["volumeMounts"]) == 2
    assert [p["containerPort"] for p in c["ports"]] == [22, 23456]


def test_the_wait_container_gets_no_ssh_keys_or_hosts() -> None:
    job = make_job({**ALL, "pytorch": ["--wait-master-enabled"]})
    pod = fresh_pod(job, "worker", 0)
    apply_pod_plugins(build_plugins(job), pod, job, job.tasks[1], 0)
    [user_init, wait] = pod["spec"]["initContainers"]
    assert {m["name"] for m in user_init["volumeMounts"]} == {"rj-svc", "rj-ssh"}
    assert wait["name"] == "wait-for-master"
    assert "volumeMounts" not in wait
    assert [e["name"] for e in wait["env"]] == ["MASTER_ADDR", "MASTER_PORT", "WAIT_TIMEOUT"]


def test_plugin_objects_in_plugin_order() -> None:
    objs = plugin_objects(build_plugins(make_job(ALL)), make_job(ALL), KEYS)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("ConfigMap", "rj-svc"),
        ("Service", "rj"),
        ("NetworkPolicy", "rj"),
        ("Secret", "rj-ssh"),
    ]


# --- Go flag syntax ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class Demo:
    port: int = option(80, check=port_number)
    name: str = option("x")
    verbose: bool = option(False)


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        ([], Demo()),
        (["--port=81"], Demo(port=81)),
        (["-port=81"], Demo(port=81)),
        (["--port", "81"], Demo(port=81)),
        (["-port", "0x51"], Demo(port=81)),
        (["--port=1_000"], Demo(port=1000)),
        (["--port=81", "--port=82"], Demo(port=82)),
        (["--name="], Demo(name="")),
        (["--name", "-dash"], Demo(name="-dash")),
        (["--name=a=b"], Demo(name="a=b")),
        (["--verbose"], Demo(verbose=True)),
        (["-verbose=f"], Demo(verbose=False)),
        (["--verbose", "--"], Demo(verbose=True)),
    ],
)
def test_flag_syntax(argv: list[str], want: Demo) -> None:
    assert parse_flags("demo", argv, Demo) == want


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--size=1"], "job plugin demo: unknown argument --size (known: --name, --port, --verbose)"),
        (["--port"], "job plugin demo: --port needs a value"),
        (["--port= 81"], "job plugin demo: --port= 81: want an integer"),
        (["--port=8.5"], "job plugin demo: --port=8.5: want an integer"),
        (["--port=0"], "job plugin demo: --port=0: must be a port number between 1 and 65535"),
        (["--verbose=yes"], "job plugin demo: --verbose=yes: want true or false"),
        (["--verbose", "true"], "job plugin demo: unexpected argument 'true' (want --name=value)"),
        (["-"], "job plugin demo: unexpected argument '-' (want --name=value)"),
        (["---port=1"], "job plugin demo: bad flag syntax '---port=1'"),
        (["--=1"], "job plugin demo: bad flag syntax '--=1'"),
        (["--", "--port=1"], "job plugin demo: unexpected argument '--port=1' after --"),
    ],
)
def test_flag_errors(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_flags("demo", argv, Demo)
    assert str(e.value) == message


def test_plugins_run_after_pytorch_still_skip_its_wait_container() -> None:
    job = make_job({"pytorch": ["--wait-master-enabled"], "env": [], "mpi": []})
    pytorch, env, mpi = (
        p for name in ("pytorch", "env", "mpi") for p in build_plugins(job) if p.name == name
    )
    pod = fresh_pod(job, "worker", 0)
    apply_pod_plugins([pytorch, env, mpi], pod, job, job.tasks[1], 0)
    [user_init, wait] = pod["spec"]["initContainers"]
    assert [e["name"] for e in user_init["env"]] == ["VK_TASK_INDEX", "VC_TASK_INDEX"]
    assert user_init["ports"] == [{"name": "mpijob-port", "containerPort": 22}]
    assert "ports" not in wait
    assert [e["name"] for e in wait["env"]] == ["MASTER_ADDR", "MASTER_PORT", "WAIT_TIMEOUT"]
