"""task-topology: the annotations (Volcano's table), roles packed and spread, task order, bad input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from extender.api import labels as L
from extender.core.errors import ConfigError
from extender.core.model import group_key
from extender.plugins.registry import NOT_YET, PLUGINS, load_conf
from extender.plugins.task_topology import TaskTopology, TaskTopologyPlugin, parse_task_topology
from tests.core.builders import Raw, conf_with, node, placed, pod, podgroup, run
from tests.plugins.helpers import session

AFF = L.TASK_TOPOLOGY_AFFINITY
ANTI = L.TASK_TOPOLOGY_ANTI_AFFINITY
ORDER = L.TASK_TOPOLOGY_TASK_ORDER
TASKS = {"ps", "worker", "chief", "evaluator"}


# --- the annotations (the cases of Volcano's readTopologyFromPgAnnotations test) -------------------


@pytest.mark.parametrize(
    ("annotations", "tasks", "want"),
    [
        pytest.param(
            {AFF: "ps,worker;ps,chief", ANTI: "ps;worker,chief", ORDER: "ps,worker,chief,evaluator"},
            TASKS,
            TaskTopology(
                affinity=(("ps", "worker"), ("ps", "chief")),
                anti_affinity=(("ps",), ("worker", "chief")),
                task_order=("ps", "worker", "chief", "evaluator"),
            ),
            id="correct",
        ),
        pytest.param(
            {AFF: "ps-some,worker-another-some", ORDER: "chief-kk,ps-some"},
            {"ps-some", "worker-another-some", "chief-kk"},
            TaskTopology(affinity=(("ps-some", "worker-another-some"),), task_order=("chief-kk", "ps-some")),
            id="names-with-dashes",
        ),
        pytest.param({}, TASKS, None, id="no-annotations"),
        pytest.param({"volcano.sh/other": "x"}, TASKS, None, id="other-annotations"),
        pytest.param(
            {AFF: "ps,worker;ps,,chief,;", ANTI: "ps;worker,chief;;;", ORDER: "ps,worker,chief,evaluator,,,"},
            TASKS,
            TaskTopology(
                affinity=(("ps", "worker"), ("ps", "chief")),
                anti_affinity=(("ps",), ("worker", "chief")),
                task_order=("ps", "worker", "chief", "evaluator"),
            ),
            id="redundant-punctuation",
        ),
        pytest.param(
            {AFF: " ps , worker "}, TASKS, TaskTopology(affinity=(("ps", "worker"),)), id="spaces-stripped"
        ),
    ],
)
def test_parse(annotations: Mapping[str, str], tasks: set[str], want: TaskTopology | None) -> None:
    assert parse_task_topology(annotations, tasks) == want


@pytest.mark.parametrize(
    ("annotations", "match"),
    [
        ({AFF: "$%GF$^trtqwrg^"}, r"task-topology-affinity: task '\$%GF\$\^trtqwrg\^' is not a task"),
        ({ANTI: "ps;worker,chief;#@FGEW^vfa897bgs;;"}, "task-topology-anti-affinity: task '#@FGEW"),
        ({AFF: "ps,worker", ORDER: "ps,worker,evaluator"}, "task-order: task 'evaluator' is not a task"),
        ({ANTI: "ps,ps"}, "task 'ps' is listed twice in one group"),
    ],
)
def test_parse_refuses(annotations: Mapping[str, str], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_task_topology(annotations, {"ps", "worker", "chief"})


# --- scheduling -----------------------------------------------------------------------------------


def _job(
    name: str,
    roles: Mapping[str, int],
    annotations: Mapping[str, str],
    min_member: int | None = None,
    cpu: str = "1",
    running: Mapping[str, str] | None = None,
) -> list[Raw]:
    """A PodGroup with ``annotations`` and ``roles[r]`` waiting pods ``<name>-<r>-<i>`` of task ``r``;
    ``running`` puts named pods on nodes instead."""
    pg = podgroup(name, sum(roles.values()) if min_member is None else min_member, phase="Inqueue")
    pg["metadata"]["annotations"] = dict(annotations)
    pods = []
    for role, n in roles.items():
        for i in range(n):
            pname = f"{name}-{role}-{i}"
            on = (running or {}).get(pname, "")
            pods.append(
                pod(pname, group=name, task=role, cpu=cpu, node=on, phase="Running" if on else "Pending")
            )
    return [pg, *pods]


def _conf(*plugins: str, weight: int | None = None) -> str:
    args = {} if weight is None else {"task-topology": {"task-topology.weight": weight}}
    return conf_with("priority", "gang", *plugins, arguments=args)


def _nodes(n: int, cpu: str = "4") -> list[Raw]:
    return [node(f"n{i}", cpu=cpu) for i in range(1, n + 1)]


def _run(objs: Sequence[Raw], nodes: Sequence[Raw], conf: str) -> dict[str, str]:
    groups = [o for o in objs if o["kind"] == "PodGroup"]
    pods = [o for o in objs if o["kind"] == "Pod"]
    return placed(run(nodes=nodes, pods=pods, groups=groups, conf=conf))


def test_affine_roles_are_packed_together() -> None:
    """ps and workers affine: the gang lands on one node, where nodeorder alone spreads it (least
    requested), so the pods before a pod (tentative placements of its own gang) count."""
    job = _job("tf", {"ps": 1, "worker": 2}, {AFF: "ps,worker"})
    spread = _run(job, _nodes(4), _conf("nodeorder"))
    assert len(set(spread.values())) == 3
    packed = _run(job, _nodes(4), _conf("nodeorder", "task-topology"))
    assert len(packed) == 3
    assert len(set(packed.values())) == 1


def test_anti_affine_role_is_spread() -> None:
    """Workers anti-affine with themselves: one per node, where binpack alone stacks them."""
    job = _job("tf", {"worker": 3}, {ANTI: "worker"})
    stacked = _run(job, _nodes(4), _conf("binpack"))
    assert len(set(stacked.values())) == 1
    spread = _run(job, _nodes(4), _conf("binpack", "task-topology"))
    assert len(spread) == 3
    assert len(set(spread.values())) == 3


def test_ps_with_workers_and_workers_apart() -> None:
    """Volcano's use case: each ps near workers, workers apart: 2 ps and 2 workers make two ps+worker
    pairs on two nodes."""
    job = _job("tf", {"ps": 2, "worker": 2}, {AFF: "ps,worker", ANTI: "worker;ps"})
    got = _run(job, _nodes(4), _conf("nodeorder", "task-topology"))
    assert len(got) == 4
    by_node: dict[str, list[str]] = {}
    for name, where in got.items():
        by_node.setdefault(where, []).append(name.split("-")[1])
    assert sorted(sorted(roles) for roles in by_node.values()) == [["ps", "worker"], ["ps", "worker"]]


def test_running_pods_of_the_role_count() -> None:
    """A running worker keeps its node from a new anti-affine worker (Volcano counts only the pods its
    session placed; pumice counts the job's pods already there too)."""
    job = _job("tf", {"worker": 2}, {ANTI: "worker"}, min_member=1, running={"tf-worker-0": "n1"})
    got = _run(job, _nodes(2), _conf("binpack", "task-topology"))
    assert got == {"tf-worker-1": "n2"}
    assert _run(job, _nodes(2), _conf("binpack")) == {"tf-worker-1": "n1"}


def test_task_order_decides_who_gets_the_room() -> None:
    """Room for one of two pods (minMember 1): without the plugin the older name goes first (ps); the
    task order "worker,ps" puts the worker first."""
    annotations = {ORDER: "worker,ps"}
    job = _job("tf", {"ps": 1, "worker": 1}, annotations, min_member=1, cpu="3")
    assert _run(job, _nodes(1), _conf("nodeorder")) == {"tf-ps-0": "n1"}
    assert _run(job, _nodes(1), _conf("nodeorder", "task-topology")) == {"tf-worker-0": "n1"}


def test_task_order_key_within_buckets() -> None:
    """Pods in buckets before the rest; in a bucket, by the task order (and the biggest bucket first)."""
    job = _job(
        "tf", {"evaluator": 1, "ps": 1, "worker": 2}, {AFF: "ps,worker", ORDER: "worker,ps"}, min_member=1
    )
    plugin = TaskTopologyPlugin({})
    ssn = session([plugin], nodes=_nodes(2), pods=job[1:], groups=job[:1])
    members = [ssn.snapshot.pods[u] for u in ssn.snapshot.members[group_key("default", "tf")]]
    order = [p.name for p in sorted(members, key=lambda p: (*ssn.task_key(p), p.name))]
    assert order == ["tf-worker-0", "tf-worker-1", "tf-ps-0", "tf-evaluator-0"]


def test_bad_annotation_is_ignored_with_a_reason() -> None:
    """An affinity naming a task the job lacks: the job schedules as without the plugin, and the plugin
    says why it ignored the annotations."""
    job = _job("tf", {"ps": 1, "worker": 2}, {AFF: "ps,chief"})
    assert _run(job, _nodes(4), _conf("nodeorder", "task-topology")) == _run(
        job, _nodes(4), _conf("nodeorder")
    )
    plugin = TaskTopologyPlugin({})
    session([plugin], nodes=_nodes(2), pods=job[1:], groups=job[:1])
    reason = plugin.ignored[group_key("default", "tf")]
    assert "task-topology-affinity" in reason
    assert "'chief' is not a task of the job" in reason


def test_pods_without_task_names_are_left_alone() -> None:
    """Plain pods (no task name) of an annotated group: no bucket, no crash, placed as usual."""
    pg = podgroup("tf", 2, phase="Inqueue")
    pg["metadata"]["annotations"] = {AFF: ""}
    pods = [pod(f"tf-{i}", group="tf") for i in range(2)]
    got = _run([pg, *pods], _nodes(2), _conf("nodeorder", "task-topology"))
    assert got == _run([pg, *pods], _nodes(2), _conf("nodeorder"))
    assert len(got) == 2


# --- the conf -------------------------------------------------------------------------------------


def test_registered() -> None:
    assert "task-topology" in PLUGINS
    assert "task-topology" not in NOT_YET
    load_conf(_conf("task-topology", weight=10))


def test_unknown_argument_fails_loading() -> None:
    with pytest.raises(ConfigError, match=r"task-topology: unknown argument 'task-topology\.wieght'"):
        load_conf(conf_with("task-topology", arguments={"task-topology": {"task-topology.wieght": 1}}))


def test_a_waiting_job_says_its_annotation_was_ignored() -> None:
    """A job that cannot start (3 pods of 3 cpus, one 4-cpu node) with a bad annotation: its reason says
    both what it lacks and why its annotation is ignored."""
    job = _job("tf", {"ps": 1, "worker": 2}, {AFF: "ps,chief"}, cpu="3")
    groups = [o for o in job if o["kind"] == "PodGroup"]
    pods = [o for o in job if o["kind"] == "Pod"]
    result = run(nodes=_nodes(1), pods=pods, groups=groups, conf=_conf("nodeorder", "task-topology"))
    why = result.unschedulable[group_key("default", "tf")].message
    assert why.startswith("gang 1/3 placeable")
    assert "task-topology ignored: volcano.sh/task-topology-affinity: task 'chief' is not a task" in why
