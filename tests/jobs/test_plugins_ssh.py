"""The ssh job plugin: the Secret (names, data, config), the mount, Volcano's arguments, idempotence."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.ssh import SshArgs, SshPlugin

PRIVATE = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n"
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGZha2U= pumice"
CTX = PluginContext(ssh_private_key=PRIVATE, ssh_public_key=PUBLIC)
OWNER = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "mj",
    "uid": "uid-9",
    "controller": True,
    "blockOwnerDeletion": True,
}
ITEMS = [
    {"key": "id_rsa", "path": ".ssh/id_rsa"},
    {"key": "id_rsa.pub", "path": ".ssh/id_rsa.pub"},
    {"key": "authorized_keys", "path": ".ssh/authorized_keys"},
    {"key": "config", "path": ".ssh/config"},
]


def make_job(*tasks: tuple[str, int, dict[str, Any]]) -> Job:
    return parse_job(
        {
            "metadata": {"name": "mj", "namespace": "hpc", "uid": "uid-9"},
            "spec": {
                "plugins": {"ssh": []},
                "tasks": [{"name": n, "replicas": r, "template": {"spec": s}} for n, r, s in tasks],
            },
        }
    )


SPEC = {"containers": [{"name": "c"}, {"name": "d"}], "initContainers": [{"name": "i"}]}
JOB = make_job(("master", 1, SPEC), ("worker", 2, SPEC))


def make_pod(job: Job, task: str, index: int) -> dict[str, Any]:
    t = job.task(task)
    assert t is not None
    return {
        "metadata": {"name": pod_name(job.name, task, index)},
        "spec": copy.deepcopy(dict(t.template["spec"])),
    }


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


# --- the Secret --------------------------------------------------------------------------------------------
def test_secret_holds_the_context_key_pair_and_an_ssh_config() -> None:
    [secret] = SshPlugin.from_args([]).objects(JOB, CTX)
    assert secret["apiVersion"] == "v1"
    assert secret["kind"] == "Secret"
    assert secret["type"] == "Opaque"
    assert secret["metadata"] == {
        "name": "mj-ssh",
        "namespace": "hpc",
        "labels": {"volcano.sh/job-name": "mj", "volcano.sh/job-namespace": "hpc"},
        "ownerReferences": [OWNER],
    }
    assert decoded(secret) == {
        "id_rsa": PRIVATE,
        "id_rsa.pub": PUBLIC + "\n",
        "authorized_keys": PUBLIC + "\n",
        "config": (
            "StrictHostKeyChecking no\n"
            "UserKnownHostsFile /dev/null\n"
            "Host mj-master-0\n  HostName mj-master-0.mj\n  Port 22\n"
            "Host mj-worker-0\n  HostName mj-worker-0.mj\n  Port 22\n"
            "Host mj-worker-1\n  HostName mj-worker-1.mj\n  Port 22\n"
        ),
    }


def test_ssh_config_follows_template_hostname_subdomain_and_port() -> None:
    job = make_job(
        ("a", 3, {"hostname": "only", "containers": []}), ("b", 1, {"subdomain": "net", "containers": []})
    )
    [secret] = SshPlugin.from_args(["--ssh-port=2222"]).objects(job, CTX)
    assert decoded(secret)["config"] == (
        "StrictHostKeyChecking no\n"
        "UserKnownHostsFile /dev/null\n"
        "Host only\n  HostName only.mj\n  Port 2222\n"
        "Host mj-b-0\n  HostName mj-b-0.net\n  Port 2222\n"
    )


def test_keys_from_arguments_win_over_the_context() -> None:
    other_private = "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"
    other_public = "ssh-rsa AAAAB3NzaC1yc2E= user@host\n"
    plugin = SshPlugin.from_args([f"--ssh-private-key={other_private}", f"--ssh-public-key={other_public}"])
    assert not plugin.needs_key_pair
    data = decoded(plugin.objects(JOB, CTX)[0])
    assert data["id_rsa"] == other_private + "\n"
    assert data["id_rsa.pub"] == data["authorized_keys"] == other_public
    assert SshPlugin.from_args([]).needs_key_pair


def test_no_key_pair_anywhere_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"job plugin ssh: job hpc/mj has no ssh key pair"):
        SshPlugin.from_args([]).objects(JOB, PluginContext())


def test_secret_is_deterministic() -> None:
    plugin = SshPlugin.from_args([])
    assert plugin.objects(JOB, CTX) == plugin.objects(JOB, CTX)


# --- the mount ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "path", "mode"),
    [([], "/root/.ssh", 0o600), (["--ssh-key-file-path=/home/user/.ssh"], "/home/user/.ssh", 0o644)],
)
def test_every_container_mounts_the_key_directory(argv: list[str], path: str, mode: int) -> None:
    pod = make_pod(JOB, "worker", 1)
    SshPlugin.from_args(argv).on_pod(pod, JOB, JOB.tasks[1], 1)
    assert pod["spec"]["volumes"] == [
        {"name": "mj-ssh", "secret": {"secretName": "mj-ssh", "items": ITEMS, "defaultMode": mode}}
    ]
    for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        assert c["volumeMounts"] == [{"name": "mj-ssh", "mountPath": path, "subPath": ".ssh"}]


def test_mount_is_idempotent_and_keeps_other_volumes() -> None:
    pod = make_pod(JOB, "master", 0)
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    plugin = SshPlugin.from_args([])
    plugin.on_pod(pod, JOB, JOB.tasks[0], 0)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, JOB, JOB.tasks[0], 0)
    assert pod == once
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["data", "mj-ssh"]
    assert [m["name"] for m in pod["spec"]["containers"][0]["volumeMounts"]] == ["data", "mj-ssh"]


# --- arguments ---------------------------------------------------------------------------------------------
def test_default_args() -> None:
    assert SshPlugin.from_args([]).args == SshArgs(
        ssh_key_file_path="/root/.ssh", ssh_private_key="", ssh_public_key="", ssh_port=22
    )


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--no-root"], "--no-root"),
        (["--ssh-port=0"], "--ssh-port"),
        (["--ssh-port=70000"], "--ssh-port"),
        (["--ssh-port=ssh"], "--ssh-port"),
        (["--ssh-key-file-path=.ssh"], "--ssh-key-file-path"),
        (["--ssh-private-key=not a key", f"--ssh-public-key={PUBLIC}"], "--ssh-private-key"),
        ([f"--ssh-private-key={PRIVATE}", "--ssh-public-key=AAAA"], "--ssh-public-key"),
        ([f"--ssh-private-key={PRIVATE}"], "--ssh-public-key"),
        ([f"--ssh-public-key={PUBLIC}"], "--ssh-private-key"),
    ],
)
def test_bad_args_name_the_argument(argv: list[str], names: str) -> None:
    with pytest.raises(ConfigError) as e:
        SshPlugin.from_args(argv)
    assert str(e.value).startswith("job plugin ssh: ")
    assert names in str(e.value)
