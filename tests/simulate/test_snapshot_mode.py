"""Snapshot mode (``pumice simulate --snapshot``): the shared scenarios give the placements and evictions one
core cycle gives (``tests/core/test_scenarios.py``), and what only snapshot mode reads: ``kind: List``
documents, Volcano Jobs without their pods, kinds it ignores, PodGroup phases and reasons."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controllers.simulate.snapshot import SnapshotResult, flatten, simulate_snapshot
from extender.core.timestamps import epoch
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_RESOURCES
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, T0, gang, node, pod, queue
from tests.core.test_hypernodes import exact, hn
from tests.fixtures.scenarios import Scenario, load_scenarios

SCENARIOS = load_scenarios()


def placements(result: SnapshotResult) -> dict[str, str]:
    return {p.pod.split("/")[1]: p.node for p in result.placements}


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_snapshot_mode_gives_the_expected_placements(s: Scenario) -> None:
    result = simulate_snapshot(s.objects, load_conf(s.conf), now=NOW)
    assert placements(result) == s.placements
    if s.evictions is not None:
        assert sorted(e.pod.split("/")[1] for e in result.evictions) == s.evictions


def test_kubectl_list_documents_are_unwrapped() -> None:
    pg, pods = gang("a", 2)
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node("n0"), *pods]})
    typed = yaml.safe_dump({"apiVersion": "v1", "kind": "PodGroupList", "items": [pg], "metadata": {}})
    objects = flatten(yaml.safe_load_all(f"{listed}---\n---\n{typed}"))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("Node", "n0"),
        ("Pod", "a-0"),
        ("Pod", "a-1"),
        ("PodGroup", "a"),
    ]
    assert placements(simulate_snapshot(objects, load_conf(None), now=NOW)) == {"a-0": "n0", "a-1": "n0"}
    with pytest.raises(ValueError, match="got a list"):
        flatten([[node("n0")]])


def _task(name: str, replicas: int, cpu: str) -> dict[str, Any]:
    containers = [{"name": "main", "image": "img", "resources": {"requests": {"cpu": cpu}}}]
    return {"name": name, "replicas": replicas, "template": {"spec": {"containers": containers}}}


VCJOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "train", "namespace": "ml", "uid": "uid-train", "creationTimestamp": T0},
    "spec": {"minAvailable": 3, "tasks": [_task("ps", 1, "1"), _task("worker", 2, "2")]},
}


def test_a_volcano_job_without_pods_is_expanded_and_placed() -> None:
    result = simulate_snapshot([node("n0", cpu="5"), VCJOB], load_conf(None), now=NOW)
    assert {p.pod: p.node for p in result.placements} == {
        "ml/train-ps-0": "n0",
        "ml/train-worker-0": "n0",
        "ml/train-worker-1": "n0",
    }
    assert {p.group for p in result.placements} == {"ml/train-uid-train"}
    [group] = result.podgroups
    assert (group.name, group.phase, group.min_member, group.running) == (
        "ml/train-uid-train",
        "Running",
        3,
        3,
    )


def test_unknown_kinds_are_listed_as_ignored() -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ml"}}
    result = simulate_snapshot([node("n0"), config], load_conf(None), now=NOW)
    assert result.ignored == ("ConfigMap ml/settings",)
    assert simulate_snapshot([node("n0")], load_conf(None), now=NOW).ignored == ()


def test_podgroup_phases_and_why_a_gang_waits() -> None:
    """n0 has 4 cpu: a (2 pods) is placed and Running; b (4 pods, younger) fits only 2 and says so."""
    a, pa = gang("a", 2, phase="Pending")
    b, pb = gang("b", 4, phase="Pending")
    b["metadata"]["creationTimestamp"] = "2024-01-01T00:00:01Z"
    result = simulate_snapshot([node("n0", cpu="4"), a, b, *pa, *pb], load_conf(None), now=NOW)
    groups = {g.name: g for g in result.podgroups}
    placed, waiting = groups["default/a"], groups["default/b"]
    assert (placed.phase, placed.running, placed.reason, placed.message) == ("Running", 2, "", "")
    assert (waiting.phase, waiting.running, waiting.waiting) == ("Inqueue", 0, 4)
    assert waiting.reason == NOT_ENOUGH_RESOURCES
    assert waiting.message == "gang 2/4 placeable: needs cpu 1, best node n0 has cpu 0"


def test_pods_already_terminating_leave_and_their_room_is_used() -> None:
    """The state of test_sharing's test_pods_already_leaving_need_no_victim: the preemptor waits for the
    two terminating pods (no eviction) and, once the kubelet lets them go, runs where they were."""
    from tests.core.test_sharing import CLASSES, PREEMPT_CONF, job, running

    low, lp = running("low", "default", 4, "n0", priority_class="low")
    lp[0]["metadata"]["deletionTimestamp"] = T0
    lp[1]["metadata"]["deletionTimestamp"] = T0
    high, hp = job("high", "default", 2, min_member=2, priority_class="high")
    objects = [node("n0", cpu="4"), *CLASSES, low, high, *lp, *hp]
    result = simulate_snapshot(objects, load_conf(PREEMPT_CONF), now=NOW)
    assert result.evictions == ()
    assert placements(result) == {"high-0": "n0", "high-1": "n0"}


def test_an_unreadable_object_is_listed_with_why_and_the_rest_is_simulated() -> None:
    bad_job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"tasks": 5},
    }
    bad_node = node("n9", cpu="1")
    bad_node["status"]["allocatable"]["cpu"] = "lots"
    nameless = {"apiVersion": "v1", "kind": "Pod", "metadata": {}}
    pg, pods = gang("g", 1)
    result = simulate_snapshot([bad_job, bad_node, nameless, node("n0"), pg, *pods], load_conf(None), now=NOW)
    assert placements(result) == {"g-0": "n0"}
    assert result.ignored == (
        "Job j: spec.tasks: expected a list, got int",
        "Pod <unnamed>: a Pod without metadata.name",
        "Node n9: Node.status.allocatable: invalid resource quantity 'lots'",
    )


def _replica_set(min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-5d8",
            "namespace": "default",
            "uid": "uid-rs",
            "annotations": {"scheduling.volcano.sh/group-min-member": str(min_member)},
        },
    }


def _rs_pods(n: int) -> list[dict[str, Any]]:
    owner = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-5d8",
        "uid": "uid-rs",
        "controller": True,
    }
    pods = [pod(f"web-5d8-{i}", cpu="2") for i in range(n)]
    for p in pods:
        p["metadata"]["ownerReferences"] = [owner]
    return pods


def test_workload_pods_get_the_group_the_workload_controller_would_make() -> None:
    """3 pods of a ReplicaSet asking for a gang of 3 (2 cpu each) on a 4-cpu node: none placed, and the
    group says why; with room for 3, all three. Without the owner in the snapshot, minMember is 1."""
    small, big = node("n0", cpu="4"), node("n0", cpu="6")
    gang_of_3 = [_replica_set(3), *_rs_pods(3)]
    result = simulate_snapshot([small, *gang_of_3], load_conf(None), now=NOW)
    assert placements(result) == {}
    (group,) = result.podgroups
    assert (group.name, group.min_member, group.reason) == (
        "default/podgroup-uid-rs",
        3,
        NOT_ADMITTED,
    )
    assert "ReplicaSet default/web-5d8" not in " ".join(result.ignored)
    assert len(placements(simulate_snapshot([big, *gang_of_3], load_conf(None), now=NOW))) == 3
    alone = simulate_snapshot([small, *_rs_pods(3)], load_conf(None), now=NOW)
    assert len(placements(alone)) == 2
    assert [g.min_member for g in alone.podgroups] == [1]


def test_resource_quotas_are_read_by_the_resourcequota_plugin() -> None:
    conf = load_conf(
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: resourcequota\n"
        "  - name: proportion\n  - name: predicates\n"
    )
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q1", "namespace": "default"},
        "spec": {"hard": {"requests.cpu": "1"}},
    }
    # A vcjob's PodGroup before its pods exist (the job controller creates them once it is Inqueue):
    # the quota's room is what its minResources must fit in.
    pg, _ = gang("a", 2, phase="Pending")
    pg["spec"]["minResources"] = {"cpu": "2"}
    result = simulate_snapshot([node("n0", cpu="4"), quota, pg], conf, now=NOW)
    (group,) = result.podgroups
    assert group.phase == "Pending"
    assert "resourcequota q1" in group.message
    assert result.ignored == ()


def test_hypernodes_are_read_by_network_topology_aware() -> None:
    """A hard tier-1 gang of 3 × 2 cpu on 4 nodes of 4 cpu in two leaves: inside one leaf (nodeorder alone
    spreads it over three nodes, so over both leaves)."""
    conf = load_conf(
        "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: priority\n  - name: gang\n"
        "  - name: predicates\n  - name: nodeorder\n  - name: network-topology-aware\n"
    )
    nodes = [node(f"n{i}", cpu="4") for i in range(4)]
    leaves = [hn("s0", 1, exact("n0"), exact("n1")), hn("s1", 1, exact("n2"), exact("n3"))]
    pg, pods = gang("g", 3, phase="Pending", cpu="2")
    pg["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    result = simulate_snapshot([*nodes, *leaves, pg, *pods], conf, now=NOW)
    assert result.ignored == ()
    used = set(placements(result).values())
    assert len(placements(result)) == 3 and used in ({"n0", "n1"}, {"n2", "n3"})
    spread = simulate_snapshot([*nodes, pg, *pods], load_conf(None), now=NOW)
    assert len(set(placements(spread).values())) == 3


def _issue_22_objects() -> list[dict[str, Any]]:
    """The state of issue #22's case: ta's elastic job holds both nodes, tb's job is new."""
    from tests.plugins.test_elastic import NODES, _job, _tree

    ta, ta_pods = _job("ta-job", "ta", 4, 1, on="running")
    tb, tb_pods = _job("tb-job", "tb", 2, 2)
    return [*NODES, *_tree(), ta, tb, *ta_pods, *tb_pods]


def test_cycles_one_runs_exactly_one_session() -> None:
    """``--cycles 1``: one scheduling session and what it decided carried out (binds, victims leaving, the
    placements that waited for them), no fixpoint. Issue #22's case takes one session: tb's job is
    admitted, reclaim evicts two of ta's pods and tb's pods run in their room."""
    from tests.plugins.test_elastic import CAPACITY_TREE_CONF

    one = simulate_snapshot(_issue_22_objects(), load_conf(CAPACITY_TREE_CONF), now=NOW, cycles=1)
    assert one.cycles == 1
    assert sorted(e.by for e in one.evictions) == ["default/tb-job", "default/tb-job"]
    victims = {e.node for e in one.evictions}
    assert {p.node for p in one.placements if p.group == "default/tb-job"} == victims
    assert {g.name: g.running for g in one.podgroups} == {"default/ta-job": 2, "default/tb-job": 2}


def test_cycles_stop_where_a_fixpoint_would_go_on() -> None:
    """Two queues' jobs submitted together: a session places their minimums and lets the extra pods wait
    for allocate's fair window; N sessions at the same clock leave them waiting, the fixpoint moves the
    clock past the window and places them."""
    a, pa = gang("a", 4, min_member=1, queue="qa", phase="Pending")
    b, pb = gang("b", 4, min_member=1, queue="qb", phase="Pending")
    objects = [node("n0", cpu="16"), queue("qa"), queue("qb"), a, b, *pa, *pb]
    for n in (1, 2):
        result = simulate_snapshot(objects, load_conf(None), now=epoch(T0), cycles=n)
        assert (result.cycles, len(result.placements), result.now) == (n, 2, T0)
    settled = simulate_snapshot(objects, load_conf(None), now=epoch(T0))
    assert len(settled.placements) == 8 and settled.now > T0


@pytest.mark.parametrize("argv", [["--cycles", "1", "x.yaml"], ["--snapshot", "x.yaml", "--cycles", "0"]])
def test_cycles_needs_snapshot_mode_and_a_positive_count(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from extender.main import main

    assert main(["simulate", *argv]) == 2
    assert "--cycles takes --snapshot" in capsys.readouterr().err


def test_cycles_from_the_command_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.plugins.test_elastic import CAPACITY_TREE_CONF

    state = tmp_path / "state.yaml"
    state.write_text(yaml.safe_dump_all(_issue_22_objects()))
    conf = tmp_path / "volcano-scheduler.conf"
    conf.write_text(CAPACITY_TREE_CONF)
    from extender.main import main

    argv = [
        "simulate",
        "--snapshot",
        str(state),
        "--scheduler-conf",
        str(conf),
        "--cycles",
        "1",
        "-o",
        "json",
    ]
    assert main(argv) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["cycles"] == 1
    assert len(doc["evictions"]) == 2
