"""The env and svc job plugins: exact pod edits, exact objects, Volcano's arguments, idempotence."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.env import EnvPlugin
from extender.jobs.plugins.svc import SvcArgs, SvcPlugin

CTX = PluginContext()
OWNER = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "tr",
    "uid": "uid-1",
    "controller": True,
    "blockOwnerDeletion": True,
}
META_LABELS = {"volcano.sh/job-name": "tr", "volcano.sh/job-namespace": "ml"}


def container(name: str = "main", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "img", **extra}


def task(name: str, replicas: int, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "replicas": replicas, "template": {"spec": spec or {"containers": [container()]}}}


def make_job(*tasks: dict[str, Any], plugins: dict[str, list[str]] | None = None) -> Job:
    return parse_job(
        {
            "metadata": {"name": "tr", "namespace": "ml", "uid": "uid-1"},
            "spec": {"tasks": list(tasks), "plugins": plugins or {}},
        }
    )


def make_pod(job: Job, task_name: str, index: int) -> dict[str, Any]:
    """A fresh pod of the task, as the controller builds it before the plugins run."""
    t = job.task(task_name)
    assert t is not None
    pod = copy.deepcopy(dict(t.template))
    pod["metadata"] = {"name": pod_name(job.name, t.name, index), "namespace": job.namespace}
    return pod


def env_of(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


# --- env ---------------------------------------------------------------------------------------------------
def test_env_sets_both_index_vars_on_every_container_and_init_container() -> None:
    job = make_job(
        task(
            "worker", 3, {"containers": [container("a"), container("b")], "initContainers": [container("i")]}
        )
    )
    pod = make_pod(job, "worker", 2)
    EnvPlugin.from_args([]).on_pod(pod, job, job.tasks[0], 2)
    want = [{"name": "VK_TASK_INDEX", "value": "2"}, {"name": "VC_TASK_INDEX", "value": "2"}]
    for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        assert c["env"] == want


def test_env_is_idempotent_and_overrides_the_templates_value_in_place() -> None:
    tmpl = {
        "containers": [container(env=[{"name": "A", "value": "1"}, {"name": "VC_TASK_INDEX", "value": "x"}])]
    }
    job = make_job(task("worker", 2, tmpl))
    pod = make_pod(job, "worker", 1)
    plugin = EnvPlugin.from_args([])
    plugin.on_pod(pod, job, job.tasks[0], 1)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, job, job.tasks[0], 1)
    assert pod == once
    assert pod["spec"]["containers"][0]["env"] == [
        {"name": "A", "value": "1"},
        {"name": "VC_TASK_INDEX", "value": "1"},
        {"name": "VK_TASK_INDEX", "value": "1"},
    ]


def test_env_creates_no_objects_and_takes_no_arguments() -> None:
    assert EnvPlugin.from_args([]).objects(make_job(task("a", 1)), CTX) == []
    with pytest.raises(ConfigError, match=r"job plugin env: unknown argument --index"):
        EnvPlugin.from_args(["--index=1"])


# --- svc: pods ---------------------------------------------------------------------------------------------
def test_svc_pod_gets_hostname_subdomain_env_refs_and_mount() -> None:
    job = make_job(
        task("ps", 1),
        task("my-worker", 2, {"containers": [container()], "initContainers": [container("init")]}),
    )
    pod = make_pod(job, "my-worker", 1)
    SvcPlugin.from_args([]).on_pod(pod, job, job.tasks[1], 1)
    spec = pod["spec"]
    assert spec["hostname"] == "tr-my-worker-1"
    assert spec["subdomain"] == "tr"
    assert spec["volumes"] == [{"name": "tr-svc", "configMap": {"name": "tr-svc"}}]

    def ref(key: str) -> dict[str, Any]:
        return {"name": key, "valueFrom": {"configMapKeyRef": {"name": "tr-svc", "key": key}}}

    for c in spec["containers"] + spec["initContainers"]:
        assert c["env"] == [
            ref("VC_PS_HOSTS"),
            ref("VC_PS_NUM"),
            ref("VC_MY_WORKER_HOSTS"),
            ref("VC_MY_WORKER_NUM"),
        ]
        assert c["volumeMounts"] == [{"name": "tr-svc", "mountPath": "/etc/volcano"}]


def test_svc_keeps_hostname_and_subdomain_from_the_template() -> None:
    job = make_job(task("w", 2, {"hostname": "fixed", "subdomain": "other", "containers": [container()]}))
    pod = make_pod(job, "w", 0)
    SvcPlugin.from_args([]).on_pod(pod, job, job.tasks[0], 0)
    assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == ("fixed", "other")


def test_svc_inject_hosts_env_false_leaves_env_alone_but_still_mounts() -> None:
    job = make_job(task("w", 2))
    pod = make_pod(job, "w", 0)
    SvcPlugin.from_args(["--inject-hosts-env=false"]).on_pod(pod, job, job.tasks[0], 0)
    c = pod["spec"]["containers"][0]
    assert "env" not in c
    assert c["volumeMounts"] == [{"name": "tr-svc", "mountPath": "/etc/volcano"}]


def test_svc_on_pod_is_idempotent() -> None:
    job = make_job(
        task("a", 1), task("b", 3, {"containers": [container()], "initContainers": [container("i")]})
    )
    pod = make_pod(job, "b", 2)
    plugin = SvcPlugin.from_args([])
    plugin.on_pod(pod, job, job.tasks[1], 2)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, job, job.tasks[1], 2)
    assert pod == once
    assert len(pod["spec"]["volumes"]) == 1
    assert len(pod["spec"]["containers"][0]["env"]) == 4


# --- svc: objects ------------------------------------------------------------------------------------------
def test_svc_configmap_lists_hosts_per_task() -> None:
    job = make_job(
        task("master", 1),
        task("my-worker", 3),
        task("fixed", 4, {"hostname": "solo", "containers": [container()]}),
        task("sub", 2, {"subdomain": "elsewhere", "containers": [container()]}),
        task("none", 0),
    )
    cm = SvcPlugin.from_args([]).objects(job, CTX)[0]
    assert cm["apiVersion"] == "v1"
    assert cm["kind"] == "ConfigMap"
    assert cm["metadata"] == {
        "name": "tr-svc",
        "namespace": "ml",
        "labels": META_LABELS,
        "ownerReferences": [OWNER],
    }
    assert cm["data"] == {
        "master.host": "tr-master-0.tr",
        "VC_MASTER_HOSTS": "tr-master-0.tr",
        "VC_MASTER_NUM": "1",
        "my_worker.host": "tr-my-worker-0.tr\ntr-my-worker-1.tr\ntr-my-worker-2.tr",
        "VC_MY_WORKER_HOSTS": "tr-my-worker-0.tr,tr-my-worker-1.tr,tr-my-worker-2.tr",
        "VC_MY_WORKER_NUM": "3",
        "fixed.host": "solo.tr",
        "VC_FIXED_HOSTS": "solo.tr",
        "VC_FIXED_NUM": "1",
        "sub.host": "tr-sub-0.elsewhere\ntr-sub-1.elsewhere",
        "VC_SUB_HOSTS": "tr-sub-0.elsewhere,tr-sub-1.elsewhere",
        "VC_SUB_NUM": "2",
        "none.host": "",
        "VC_NONE_HOSTS": "",
        "VC_NONE_NUM": "0",
    }


SELECTOR = {"volcano.sh/job-name": "tr", "volcano.sh/job-namespace": "ml"}
META = {"name": "tr", "namespace": "ml", "labels": META_LABELS, "ownerReferences": [OWNER]}
NETWORK_POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": META,
    "spec": {
        "podSelector": {"matchLabels": SELECTOR},
        "ingress": [{"from": [{"podSelector": {"matchLabels": SELECTOR}}]}],
        "policyTypes": ["Ingress"],
    },
}


def service(publish: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": META,
        "spec": {"clusterIP": "None", "selector": SELECTOR, "publishNotReadyAddresses": publish},
    }


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        ([], [service(False), NETWORK_POLICY]),
        (["--publish-not-ready-addresses=true"], [service(True), NETWORK_POLICY]),
        (["--publish-not-ready-addresses"], [service(True), NETWORK_POLICY]),
        (["--disable-network-policy=true"], [service(False)]),
        (["-disable-network-policy", "--publish-not-ready-addresses=1"], [service(True)]),
        (["--disable-network-policy=false"], [service(False), NETWORK_POLICY]),
    ],
)
def test_svc_service_and_network_policy(argv: list[str], want: list[dict[str, Any]]) -> None:
    objs = SvcPlugin.from_args(argv).objects(make_job(task("w", 2)), CTX)
    assert objs[0]["kind"] == "ConfigMap"
    assert objs[1:] == want


def test_svc_objects_are_deterministic() -> None:
    job = make_job(task("a", 2), task("b", 1))
    plugin = SvcPlugin.from_args([])
    assert plugin.objects(job, CTX) == plugin.objects(job, CTX)
    assert list(plugin.objects(job, CTX)[0]["data"]) == list(plugin.objects(job, CTX)[0]["data"])


# --- svc: arguments ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "want"),
    [
        ([], SvcArgs()),
        (["--inject-hosts-env=F"], SvcArgs(inject_hosts_env=False)),
        (["--disable-network-policy=TRUE"], SvcArgs(disable_network_policy=True)),
        (["--disable-network-policy", "--disable-network-policy=false"], SvcArgs()),
    ],
)
def test_svc_args(argv: list[str], want: SvcArgs) -> None:
    assert SvcPlugin.from_args(argv).args == want


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--disable-network-policy=yes"], "--disable-network-policy=yes"),
        (["--publish-not-ready"], "--publish-not-ready"),
        (["--port=80"], "--port"),
        (["true"], "'true'"),
    ],
)
def test_svc_rejects_bad_args(argv: list[str], names: str) -> None:
    with pytest.raises(ConfigError) as e:
        SvcPlugin.from_args(argv)
    assert str(e.value).startswith("job plugin svc: ")
    assert names in str(e.value)
