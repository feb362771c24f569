"""numa-aware: Numatopology objects, the topology manager's hints, the predicate and score per policy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
import yaml

from extender.api import labels as L
from extender.core.errors import ConfigError, InvalidObject
from extender.core.model import NumaRequest, PodUID
from extender.core.numa import (
    Hint,
    NumaCell,
    admits,
    best_hint,
    decide,
    decision_annotation,
    numa_request,
    parse_numatopology,
)
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.numaaware import NumaAwarePlugin
from extender.plugins.registry import NOT_YET, PLUGINS, load_conf
from tests.contract.test_crds import NUMATOPOLOGY
from tests.core.builders import NOW, Raw, conf_with, node, pod, podgroup, queue

POLICY = "volcano.sh/numa-topology-policy"


# --- Numatopology objects ---------------------------------------------------------------------------


def numatopo(
    name: str,
    cells: Sequence[int] = (4, 4),
    free: str | None = None,
    topology_policy: str = "single-numa-node",
    cpu_policy: str = "static",
    reserved: str | None = None,
) -> Raw:
    """A Numatopology for ``name``: ``cells[i]`` cpus on NUMA node i (ids counted up), ``free`` the cpuset
    the kubelet has not given out (all of them by default)."""
    detail: dict[str, Any] = {}
    cpu = 0
    for numa, n in enumerate(cells):
        for core in range(n):
            detail[str(cpu)] = {"numa": numa, "socket": numa, "core": core}
            cpu += 1
    spec: Raw = {
        "policies": {"CPUManagerPolicy": cpu_policy, "TopologyManagerPolicy": topology_policy},
        "numares": {"cpu": {"allocatable": f"0-{cpu - 1}" if free is None else free, "capacity": cpu}},
        "cpuDetail": detail,
    }
    if reserved is not None:
        spec["resReserved"] = {"cpu": reserved}
    return {
        "apiVersion": "nodeinfo.volcano.sh/v1alpha1",
        "kind": "Numatopology",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_parse_the_exporters_object() -> None:
    """The CRD contract's example: cpu 0 reserved (and not allocatable), 3 free cpus per NUMA node."""
    topo = parse_numatopology(yaml.safe_load(NUMATOPOLOGY))
    assert topo.name == "node-0"
    assert topo.cpu_manager_policy == "static"
    assert topo.topology_manager_policy == "single-numa-node"
    assert topo.cells == (NumaCell(id=0, capacity=4, free=3), NumaCell(id=1, capacity=4, free=3))


def test_reserved_cpus_are_kept_out() -> None:
    """resReserved cpu 1.5 keeps 2 whole cpus (the lowest ids) out of exclusive use."""
    topo = parse_numatopology(numatopo("n1", cells=(4, 4), reserved="1500m"))
    assert [c.free for c in topo.cells] == [2, 4]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda s: s["numares"]["cpu"].update(allocatable="0-x"), "spec.numares.cpu.allocatable"),
        (lambda s: s["numares"]["cpu"].update(allocatable="3-1"), "spec.numares.cpu.allocatable"),
        (lambda s: s["cpuDetail"].update({"cpu9": {"numa": 0}}), "spec.cpuDetail[cpu9]"),
        (lambda s: s["cpuDetail"]["0"].update(numa=-1), "spec.cpuDetail[0].numa"),
        (lambda s: s.update(resReserved={"cpu": "lots"}), "spec.resReserved.cpu"),
        (lambda s: s.update(policies=["static"]), "spec.policies"),
    ],
)
def test_bad_objects_name_the_field(edit: Any, field: str) -> None:
    raw = numatopo("n1")
    edit(raw["spec"])
    with pytest.raises(InvalidObject, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_numatopology(raw)


# --- what a pod asks ----------------------------------------------------------------------------------


def numa_pod(
    name: str,
    policy: str | None = "single-numa-node",
    cpu: str = "2",
    group: str | None = None,
    guaranteed: bool = True,
) -> Raw:
    raw = pod(name, group=group, cpu=cpu, memory="1Gi")
    if guaranteed:
        res = raw["spec"]["containers"][0]["resources"]
        res["limits"] = dict(res["requests"])
    if policy is not None:
        raw["metadata"]["annotations"][POLICY] = policy
    return raw


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        (numa_pod("p", cpu="2"), NumaRequest(policy="single-numa-node", cpus=(2,))),
        (numa_pod("p", policy="restricted", cpu="1500m"), NumaRequest(policy="restricted", cpus=(0,))),
        (numa_pod("p", guaranteed=False), None),
        (numa_pod("p", policy="none"), None),
        (numa_pod("p", policy=None), None),
    ],
    ids=["whole-cpus", "fraction", "burstable", "policy-none", "no-policy"],
)
def test_numa_request(raw: Raw, want: NumaRequest | None) -> None:
    assert numa_request(raw["metadata"]["annotations"], raw["spec"]) == want
    assert parse_pod(raw).numa == want


# --- the topology manager -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "free", "cpus", "policy", "hint", "admitted"),
    [
        # Room on one NUMA node: that node, preferred, for every policy.
        ((4, 4), (3, 3), 2, "single-numa-node", Hint((0,), True), True),
        ((4, 4), (1, 3), 2, "restricted", Hint((1,), True), True),
        # 4 cpus could fit one NUMA node but 3 are free on each: only the pair holds them, not preferred.
        ((4, 4), (3, 3), 4, "single-numa-node", Hint((0, 1), False), False),
        ((4, 4), (3, 3), 4, "restricted", Hint((0, 1), False), False),
        ((4, 4), (3, 3), 4, "best-effort", Hint((0, 1), False), True),
        # 6 cpus need two NUMA nodes whatever is free: the pair is the preferred (restricted admits it).
        ((4, 4), (3, 3), 6, "restricted", Hint((0, 1), True), True),
        ((4, 4), (3, 3), 6, "single-numa-node", Hint((0, 1), False), False),
        # Nothing holds it: every cell, not preferred.
        ((4, 4), (1, 1), 3, "best-effort", Hint((0, 1), False), True),
        # Four cells: the narrowest preferred pair, lowest ids first.
        ((2, 2, 2, 2), (1, 2, 2, 2), 4, "restricted", Hint((1, 2), True), True),
    ],
)
def test_best_hint(
    capacity: tuple[int, ...], free: tuple[int, ...], cpus: int, policy: str, hint: Hint, admitted: bool
) -> None:
    got = best_hint(capacity, free, cpus, policy)
    assert got == hint
    assert admits(policy, got) is admitted


def _topo(cells: Sequence[int] = (4, 4), free: str | None = None, policy: str = "single-numa-node") -> Any:
    return parse_numatopology(numatopo("n1", cells=cells, free=free, topology_policy=policy))


@pytest.mark.parametrize(
    ("topo", "request_", "taken", "why"),
    [
        (_topo(), NumaRequest(policy="single-numa-node", cpus=(3,)), (3, 0), ""),
        (
            _topo(free="1-3,5-7"),
            NumaRequest(policy="single-numa-node", cpus=(4,)),
            None,
            "do not fit on one NUMA",
        ),
        (
            _topo(policy="best-effort", free="1-3,5-7"),
            NumaRequest(policy="best-effort", cpus=(4,)),
            (3, 1),
            "",
        ),
        # Two containers: the second goes where the first left room.
        (_topo(), NumaRequest(policy="single-numa-node", cpus=(3, 2)), (3, 2), ""),
        (
            _topo(policy="restricted"),
            NumaRequest(policy="single-numa-node", cpus=(1,)),
            None,
            "policy is restricted",
        ),
        (None, NumaRequest(policy="single-numa-node", cpus=(1,)), None, "no Numatopology"),
        (_topo(), NumaRequest(policy="sideways", cpus=(1,)), None, "unknown numa-topology-policy 'sideways'"),
    ],
    ids=[
        "fits",
        "spans-two",
        "best-effort-spans",
        "two-containers",
        "node-policy",
        "no-topology",
        "bad-policy",
    ],
)
def test_decide(topo: Any, request_: NumaRequest, taken: tuple[int, ...] | None, why: str) -> None:
    free = [c.free for c in topo.cells] if topo is not None else []
    d = decide(topo, free, request_)
    assert d.taken == taken
    assert why in d.why
    assert (d.why == "") is (taken is not None)


def test_cpu_manager_must_be_static() -> None:
    topo = parse_numatopology(numatopo("n1", cpu_policy="none"))
    d = decide(topo, [4, 4], NumaRequest(policy="single-numa-node", cpus=(1,)))
    assert d.taken is None
    assert "cpu manager policy is none" in d.why


def test_decision_annotation_is_volcanos_shape() -> None:
    topo = _topo()
    assert json.loads(decision_annotation(topo, (3, 1))) == {"numa": {"0": {"cpu": "3"}, "1": {"cpu": "1"}}}
    assert json.loads(decision_annotation(topo, (0, 2))) == {"numa": {"1": {"cpu": "2"}}}


# --- scheduling ---------------------------------------------------------------------------------------

CONF = conf_with("priority", "gang", "predicates", "nodeorder", "numa-aware")
NO_NUMA_CONF = conf_with("priority", "gang", "predicates", "nodeorder")


def _snapshot(
    nodes: Sequence[Raw],
    topos: Sequence[Raw],
    pods: Sequence[Raw],
    groups: Sequence[Raw],
    plans: Mapping[str, str] | None = None,
) -> Snapshot:
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
        plans={PodUID(k): v for k, v in (plans or {}).items()},
        numatopologies=[parse_numatopology(t) for t in topos],
    )


def _cycle(
    nodes: Sequence[Raw],
    topos: Sequence[Raw],
    pods: Sequence[Raw],
    conf: str = CONF,
    min_member: int | None = None,
    plans: Mapping[str, str] | None = None,
    batch: bool = True,
) -> tuple[CycleResult, Session]:
    """One cycle over ``pods`` of one group ``g`` (minMember: all of them unless given)."""
    group = podgroup("g", len(pods) if min_member is None else min_member, phase="Inqueue")
    raws = []
    for p in pods:
        p["metadata"]["annotations"][L.GROUP_NAME_ANNOTATION] = "g"
        raws.append(p)
    loaded = load_conf(conf)
    ssn = Session(
        _snapshot(nodes, topos, raws, [group], plans), build_hooks(loaded.tiers()), now=NOW, batch=batch
    )
    for act in loaded.actions:
        act(ssn)
    return ssn.result, ssn


def _placed(result: CycleResult) -> dict[str, str]:
    return {str(k): v for k, v in sorted(result.placements.items())}


def _why(result: CycleResult) -> str:
    return result.unschedulable[next(iter(result.unschedulable))].message


def test_single_numa_node_refuses_what_spans_two() -> None:
    """4 cpus asked, 3 free on each NUMA node of n1: n1 has the cpus (8) but would span two NUMA nodes."""
    nodes = [node("n1", cpu="8"), node("n2", cpu="8")]
    pods = [numa_pod("p", cpu="4")]
    refused, _ = _cycle(nodes[:1], [numatopo("n1", free="1-3,5-7")], pods)
    assert _placed(refused) == {}
    assert "numa-aware: node n1: single-numa-node: 4 cpus do not fit on one NUMA node" in _why(refused)
    got, _ = _cycle(nodes, [numatopo("n1", free="1-3,5-7"), numatopo("n2", free="0-3,6-7")], pods)
    assert _placed(got) == {"p": "n2"}
    # Without the plugin the first node takes it (the test can fail).
    plain, _ = _cycle(
        nodes, [numatopo("n1", free="1-3,5-7"), numatopo("n2", free="0-3,6-7")], pods, NO_NUMA_CONF
    )
    assert _placed(plain) == {"p": "n1"}


def test_restricted_refuses_what_cannot_be_aligned() -> None:
    """restricted: 4 cpus on (4, 4) cells with 3 free each cannot be aligned; on (2, 2, 2, 2) cells
    (two NUMA nodes is the best any allocation can do) the aligned pair is admitted."""
    pods = [numa_pod("p", policy="restricted", cpu="4")]
    nodes = [node("n1", cpu="8"), node("n2", cpu="8")]
    topos = [
        numatopo("n1", free="1-3,5-7", topology_policy="restricted"),
        numatopo("n2", cells=(2, 2, 2, 2), topology_policy="restricted"),
    ]
    got, ssn = _cycle(nodes, topos, pods)
    assert _placed(got) == {"p": "n2"}
    plugin = next(p for p in ssn.plugins if isinstance(p, NumaAwarePlugin))
    assert json.loads(plugin.topology_decisions(ssn)[PodUID("p")]) == {
        "numa": {"0": {"cpu": "2"}, "1": {"cpu": "2"}}
    }
    refused, _ = _cycle(nodes[:1], topos[:1], pods)
    assert "restricted: 4 cpus do not fit on the fewest NUMA nodes" in _why(refused)


def test_best_effort_prefers_fewer_numa_nodes() -> None:
    """best-effort fits both nodes; n2 keeps the pod's 4 cpus on one NUMA node, n1 would span two."""
    pods = [numa_pod("p", policy="best-effort", cpu="4")]
    nodes = [node("n1", cpu="8"), node("n2", cpu="8")]
    topos = [
        numatopo("n1", free="1-3,5-7", topology_policy="best-effort"),
        numatopo("n2", free="0-3", topology_policy="best-effort"),
    ]
    got, _ = _cycle(nodes, topos, pods)
    assert _placed(got) == {"p": "n2"}
    plain, _ = _cycle(nodes, topos, pods, NO_NUMA_CONF)
    assert _placed(plain) == {"p": "n1"}


def test_nodes_without_numatopology() -> None:
    """A pod with a policy is refused where no Numatopology says how NUMA is laid out; a pod without one
    (or not Guaranteed) is not judged."""
    nodes = [node("n1", cpu="8")]
    refused, _ = _cycle(nodes, [], [numa_pod("p")])
    assert "numa-aware: node n1: the node has no Numatopology" in _why(refused)
    for free_pod in (numa_pod("p", policy=None), numa_pod("p", guaranteed=False)):
        got, _ = _cycle(nodes, [], [free_pod])
        assert _placed(got) == {"p": "n1"}


def test_placements_in_the_cycle_take_numa_cpus() -> None:
    """Three single-numa-node pods of 3 cpus, one node with 4 + 4 cpus (16 in all by its allocatable):
    one per NUMA node, the third refused; as a gang of three, none."""
    nodes = [node("n1", cpu="16")]
    topos = [numatopo("n1")]
    pods = [numa_pod(f"p{i}", cpu="3") for i in range(3)]
    got, ssn = _cycle(nodes, topos, pods, min_member=1)
    assert sorted(_placed(got)) == ["p0", "p1"]
    plugin = next(p for p in ssn.plugins if isinstance(p, NumaAwarePlugin))
    decided = {k: json.loads(v)["numa"] for k, v in plugin.topology_decisions(ssn).items()}
    assert decided == {"p0": {"0": {"cpu": "3"}}, "p1": {"1": {"cpu": "3"}}}
    gang, ssn = _cycle(nodes, topos, [numa_pod(f"p{i}", cpu="3") for i in range(3)])
    assert _placed(gang) == {}
    assert "single-numa-node" in _why(gang)
    # The discarded gang gave its cpus back.
    plugin = next(p for p in ssn.plugins if isinstance(p, NumaAwarePlugin))
    assert plugin.topology_decisions(ssn) == {}


def test_earlier_plans_hold_their_cpus() -> None:
    """A pod planned in an earlier cycle (not bound yet) holds its NUMA node's cpus: of two new pods
    only one fits."""
    nodes = [node("n1", cpu="16")]
    old = numa_pod("old", cpu="3")
    new = [numa_pod(f"p{i}", cpu="3") for i in range(2)]
    got, _ = _cycle(nodes, [numatopo("n1")], [old, *new], min_member=1, plans={"old": "n1"})
    assert sorted(_placed(got)) == ["p0"]


def test_batches_and_the_loop_agree() -> None:
    """pod_fit pods are never batched; plain pods of the same cycle are: the placements are the loop's."""
    nodes = [node(f"n{i}", cpu="16") for i in range(1, 4)]
    topos = [numatopo("n1"), numatopo("n2", free="0-1,4-5")]
    pods = [numa_pod(f"a{i}", cpu="3") for i in range(3)] + [pod(f"b{i}", cpu="2") for i in range(4)]
    batched, _ = _cycle(nodes, topos, [dict(p) for p in pods], min_member=1)
    looped, _ = _cycle(nodes, topos, [dict(p) for p in pods], min_member=1, batch=False)
    assert _placed(batched) == _placed(looped)
    assert sum(k.startswith("a") for k in _placed(batched)) == 2


# --- the conf -----------------------------------------------------------------------------------------


def test_registered() -> None:
    assert "numa-aware" in PLUGINS
    assert "numaaware" not in NOT_YET
    load_conf(conf_with("numa-aware", arguments={"numa-aware": {"weight": 10}}))


def test_unknown_argument_fails_loading() -> None:
    with pytest.raises(ConfigError, match="numa-aware: unknown argument 'wieght'"):
        load_conf(conf_with("numa-aware", arguments={"numa-aware": {"wieght": 1}}))


def test_the_cycle_result_carries_the_decision_annotation() -> None:
    """run_cycle closes the plugins: each placed pod's decision is an annotation to write before its bind;
    a gang that did not fit leaves none."""
    nodes = [node("n1", cpu="16")]
    topos = [numatopo("n1")]
    pods = [numa_pod(f"p{i}", cpu="3", group="g") for i in range(3)]
    loaded = load_conf(CONF)
    one = run_cycle(_snapshot(nodes, topos, pods[:2], [podgroup("g", 2, phase="Inqueue")]), loaded, NOW)
    assert {k: json.loads(v["volcano.sh/topology-decision"]) for k, v in one.annotations.items()} == {
        "p0": {"numa": {"0": {"cpu": "3"}}},
        "p1": {"numa": {"1": {"cpu": "3"}}},
    }
    gang = run_cycle(_snapshot(nodes, topos, pods, [podgroup("g", 3, phase="Inqueue")]), loaded, NOW)
    assert gang.placements == {}
    assert gang.annotations == {}
