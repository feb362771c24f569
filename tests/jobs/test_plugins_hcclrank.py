"""The hcclrank job plugin: the ``hccl/rankIndex`` annotation by task position, from ``RANK``, or kept."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.core.errors import ConfigError
from extender.jobs.model import Job, parse_job, pod_name
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.hcclrank import HcclrankArgs, HcclrankPlugin
from extender.jobs.plugins.registry import build_plugins
from extender.jobs.pods import build_pod

Spec = dict[str, Any]
KEY = "hccl/rankIndex"


def make_job(
    *tasks: tuple[str, int] | tuple[str, int, Spec], plugins: dict[str, list[str]] | None = None
) -> Job:
    raw = [
        {
            "name": t[0],
            "replicas": t[1],
            "template": t[2] if len(t) > 2 else {"spec": {"containers": [{"name": "npu"}]}},
        }
        for t in tasks
    ]
    return parse_job(
        {
            "metadata": {"name": "hj", "namespace": "ai", "uid": "u"},
            "spec": {"tasks": raw, "plugins": plugins or {}},
        }
    )


def run(plugin: HcclrankPlugin, job: Job, task: str, index: int) -> Spec:
    t = job.task(task)
    assert t is not None
    pod = copy.deepcopy(dict(t.template))
    pod["metadata"] = {"name": pod_name(job.name, task, index), **(pod.get("metadata") or {})}
    plugin.on_pod(pod, job, t, index)
    return pod


def rank_of(pod: Spec) -> str | None:
    value = (pod["metadata"].get("annotations") or {}).get(KEY)
    return None if value is None else str(value)


def with_env(*containers: list[dict[str, Any]]) -> Spec:
    return {"spec": {"containers": [{"name": f"c{i}", "env": env} for i, env in enumerate(containers)]}}


def test_defaults() -> None:
    assert HcclrankPlugin.from_args([]).args == HcclrankArgs(master="master", worker="worker")


JOB = make_job(("master", 3), ("worker", 2), ("ps", 1))


@pytest.mark.parametrize(
    ("task", "index", "rank"),
    [
        ("master", 0, "0"),
        ("master", 2, "2"),
        ("worker", 0, "3"),  # after the three masters
        ("worker", 1, "4"),
        ("ps", 0, None),  # neither role
    ],
)
def test_rank_by_position(task: str, index: int, rank: str | None) -> None:
    assert rank_of(run(HcclrankPlugin.from_args([]), JOB, task, index)) == rank


@pytest.mark.parametrize(
    ("job", "task", "index", "rank"),
    [
        (make_job(("lead", 4), ("node", 3)), "lead", 3, "3"),
        (make_job(("lead", 4), ("node", 3)), "node", 2, "6"),
        (make_job(("node", 3)), "node", 2, "2"),  # no master task: no offset
        (make_job(("lead", 0), ("node", 2)), "node", 1, "1"),
    ],
)
def test_custom_task_names(job: Job, task: str, index: int, rank: str) -> None:
    plugin = HcclrankPlugin.from_args(["--master", "lead", "-worker=node"])
    assert rank_of(run(plugin, job, task, index)) == rank


@pytest.mark.parametrize(
    ("template", "rank"),
    [
        (with_env([{"name": "RANK", "value": "5"}]), "5"),
        # The first RANK of the containers in order decides.
        (with_env([{"name": "X", "value": "1"}], [{"name": "RANK", "value": "7"}]), "7"),
        (with_env([{"name": "RANK", "value": "first"}], [{"name": "RANK", "value": "second"}]), "first"),
        # A RANK without a literal value counts as unset: the rank by position (worker 1 after 3 masters).
        (with_env([{"name": "RANK", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]), "4"),
        (with_env([{"name": "RANK", "value": ""}], [{"name": "RANK", "value": "9"}]), "4"),
    ],
)
def test_rank_from_env(template: Spec, rank: str) -> None:
    job = make_job(("master", 3), ("worker", 2, template))
    assert rank_of(run(HcclrankPlugin.from_args([]), job, "worker", 1)) == rank


def test_env_rank_of_init_containers_is_ignored() -> None:
    template = {
        "spec": {
            "containers": [{"name": "c"}],
            "initContainers": [{"name": "i", "env": [{"name": "RANK", "value": "8"}]}],
        }
    }
    job = make_job(("master", 1), ("worker", 2, template))
    assert rank_of(run(HcclrankPlugin.from_args([]), job, "worker", 0)) == "1"


def test_env_rank_applies_to_a_task_of_neither_role() -> None:
    job = make_job(("ps", 1, with_env([{"name": "RANK", "value": "11"}])))
    assert rank_of(run(HcclrankPlugin.from_args([]), job, "ps", 0)) == "11"


def test_an_annotation_from_the_template_is_kept() -> None:
    template = {"metadata": {"annotations": {KEY: "42", "a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    job = make_job(("master", 1), ("worker", 2, template))
    pod = run(HcclrankPlugin.from_args([]), job, "worker", 1)
    assert pod["metadata"]["annotations"] == {KEY: "42", "a": "b"}


def test_an_empty_annotation_is_replaced_and_others_kept() -> None:
    template = {"metadata": {"annotations": {KEY: "", "a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    job = make_job(("master", 1), ("worker", 2, template))
    pod = run(HcclrankPlugin.from_args([]), job, "worker", 1)
    assert pod["metadata"]["annotations"] == {KEY: "2", "a": "b"}


def test_idempotent_and_no_objects() -> None:
    plugin = HcclrankPlugin.from_args([])
    pod = run(plugin, JOB, "worker", 1)
    once = copy.deepcopy(pod)
    plugin.on_pod(pod, JOB, JOB.tasks[1], 1)
    assert pod == once
    assert plugin.objects(JOB, PluginContext()) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--master="], "job plugin hcclrank: --master=: must name a task"),
        (["--worker"], "job plugin hcclrank: --worker needs a value"),
        (["--rank=1"], "job plugin hcclrank: unknown argument --rank (known: --master, --worker)"),
    ],
)
def test_bad_args_name_plugin_and_argument(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        HcclrankPlugin.from_args(argv)
    assert str(e.value) == message


@pytest.mark.parametrize(
    ("task", "index", "rank"),
    # pytorch counts one master; with two, its RANK and the rank by position differ, and RANK wins.
    [("master", 0, "0"), ("master", 1, "0"), ("worker", 0, "1"), ("worker", 2, "3")],
)
def test_with_pytorch_the_rank_is_pytorchs(task: str, index: int, rank: str) -> None:
    """hcclrank runs after pytorch whatever the spec's order, so the annotation agrees with ``RANK``."""
    job = make_job(("master", 2), ("worker", 3), plugins={"hcclrank": [], "pytorch": [], "svc": []})
    plugins = build_plugins(job)
    assert [p.name for p in plugins] == ["svc", "pytorch", "hcclrank"]
    t = job.task(task)
    assert t is not None
    pod = build_pod(job, t, index, plugins)
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert pod["metadata"]["annotations"][KEY] == env["RANK"] == rank
