"""resource-strategy-fit: tables from Volcano's own tests (proportional_test.go,
resource_strategy_fit_test.go, sra_test.go), with our builders and our code; the reasons a pending pod
carries; conf loading."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.core.errors import ConfigError
from extender.core.model import PodUID
from extender.plugins.registry import load_conf
from extender.plugins.resource_strategy_fit import ResourceStrategyFitPlugin, strategy_for
from tests.core.builders import GPU, conf_with, key, node, placed, pod, podgroup, run
from tests.plugins.helpers import session

T4, A10 = "nvidia.com/t4", "nvidia.com/a10"


def _plugin(**arguments: Any) -> ResourceStrategyFitPlugin:
    return ResourceStrategyFitPlugin(arguments)


# --- proportional (Volcano: Test_checkNodeResourceIsProportional) ----------------------------------------
# Nodes given by their idle resources; proportion nvidia.com/gpu: 4 cpu, 4 memory units per GPU.
PROPORTIONAL = [
    ("cpu_task_less_than_reserved_resource", ("4", "4G", 0), ("30", "30G", 6), True),
    ("cpu_task_greater_than_reserved_resource", ("10", "10G", 0), ("30", "30G", 6), False),
    ("gpu_task_no_proportional_check", ("10", "10G", 1), ("30", "30G", 6), True),
    ("cpu_task_less_than_idle_resource", ("10", "10G", 0), ("26", "26G", 2), True),
]


@pytest.mark.parametrize(
    ("task", "idle", "fits"), [r[1:] for r in PROPORTIONAL], ids=[r[0] for r in PROPORTIONAL]
)
def test_volcano_proportional_table(
    task: tuple[str, str, int], idle: tuple[str, str, int], fits: bool
) -> None:
    plugin = _plugin(
        resourceStrategyFitWeight=0,
        proportional={
            "enable": True,
            "resources": GPU,
            "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 4},
        },
    )
    ssn = session(
        [plugin],
        nodes=[node("n1", cpu=idle[0], memory=idle[1], gpus=idle[2])],
        pods=[pod("t1", cpu=task[0], memory=task[1], gpus=task[2])],
    )
    assert bool(ssn.fit_mask(ssn.vector(PodUID("t1")))[0]) is fits


def test_memory_proportion_is_in_units_of_ten_to_the_ninth_bytes() -> None:
    """The unit Volcano's code computes (milli-units × 10^6): 1 per GPU keeps 10^9 bytes, not 1 GiB."""
    plugin = _plugin(
        resourceStrategyFitWeight=0,
        proportional={"enable": True, "resources": GPU, "resourceProportion": {f"{GPU}.cpu": 0}},
    )
    # 1 idle GPU keeps 10^9 bytes; a pod leaving exactly that fits, one byte more does not.
    ssn = session(
        [plugin],
        nodes=[node("n", cpu="8", memory=str(3 * 10**9), gpus=1)],
        pods=[pod("fits", cpu="1", memory=str(2 * 10**9)), pod("not", cpu="1", memory=str(2 * 10**9 + 1))],
    )
    assert ssn.fit_mask(ssn.vector(PodUID("fits")))[0]
    assert not ssn.fit_mask(ssn.vector(PodUID("not")))[0]


def test_a_held_back_pod_says_which_node_keeps_what() -> None:
    conf = conf_with(
        "gang",
        "predicates",
        "resource-strategy-fit",
        arguments={
            "resource-strategy-fit": {
                "proportional": {"enable": True, "resources": GPU, "resourceProportion": {f"{GPU}.cpu": 1}}
            }
        },
    )
    result = run(
        nodes=[node("gpu-1", cpu="6", memory="64Gi", gpus=4)],
        pods=[pod("cpu-only", group="c", cpu="4"), pod("trainer", group="t", cpu="1", gpus=1)],
        groups=[podgroup("c", 1, phase="Inqueue"), podgroup("t", 1, phase="Inqueue")],
        conf=conf,
    )
    assert placed(result) == {"trainer": "gpu-1"}
    why = result.unschedulable[key("c")].message
    assert f"{GPU} nodes keep cpu for their idle {GPU}" in why
    # Tried first (job order): 6 cpu free, 4 idle GPUs; the cpu pod would leave 2 < 4 × 1.
    assert f"node gpu-1 would keep 2 cpu < 4 idle {GPU} × 1 cpu" in why


def test_the_old_predicates_arguments_build_the_same_predicate() -> None:
    conf = conf_with(
        "gang",
        "predicates",
        arguments={
            "predicates": {
                "predicate.ProportionalEnable": True,
                "predicate.resources": GPU,
                f"predicate.resources.{GPU}.cpu": 2,
                f"predicate.resources.{GPU}.memory": 1,
            }
        },
    )
    result = run(
        nodes=[node("gpu", cpu="8", memory="64Gi", gpus=2), node("cpu", cpu="2", memory="64Gi")],
        pods=[pod("a", group="a", cpu="5")],
        groups=[podgroup("a", 1, phase="Inqueue")],
        conf=conf,
    )
    # 8 - 5 = 3 < 2 GPUs × 2 cpu: held back; the cpu node is too small.
    assert placed(result) == {}
    assert (
        "node gpu would keep 3 cpu < 2 idle nvidia.com/gpu × 2 cpu" in result.unschedulable[key("a")].message
    )


# --- per-resource scores (Volcano: TestScore) --------------------------------------------------------
def _least(w: int, cpu: int, mem: int) -> dict[str, Any]:
    return {
        "resourceStrategyFitWeight": w,
        "resources": {
            "cpu": {"type": "LeastAllocated", "weight": cpu},
            "memory": {"type": "LeastAllocated", "weight": mem},
        },
    }


def _most(w: int, cpu: int, mem: int) -> dict[str, Any]:
    return {
        "resourceStrategyFitWeight": w,
        "resources": {
            "cpu": {"type": "MostAllocated", "weight": cpu},
            "memory": {"type": "MostAllocated", "weight": mem},
        },
    }


def _mixed(w: int, cpu_type: str, cpu: int, mem_type: str, mem: int) -> dict[str, Any]:
    return {
        "resourceStrategyFitWeight": w,
        "resources": {"cpu": {"type": cpu_type, "weight": cpu}, "memory": {"type": mem_type, "weight": mem}},
    }


L, M = "LeastAllocated", "MostAllocated"
# (id, request (milli-cpu, bytes), node (used milli-cpu, used bytes, allocatable milli-cpu, bytes),
#  arguments, want)
SCORES = [
    ("test1", (100, 100), (200, 200, 500, 500), _least(10, 1, 1), 400),
    ("test2", (100, 100), (200, 200, 400, 400), _least(10, 1, 1), 250),
    ("test3", (100, 100), (200, 200, 500, 500), _most(10, 1, 1), 600),
    ("test4", (100, 100), (200, 200, 400, 400), _most(10, 1, 1), 750),
    ("test5", (100, 100), (200, 200, 500, 500), _mixed(10, L, 2, M, 1), 466.66666667),
    ("test6", (100, 100), (200, 200, 500, 500), _mixed(10, L, 1, M, 2), 533.33333333),
    ("test7", (0, 100), (200, 200, 500, 500), _mixed(10, L, 1, M, 2), 600),
    ("test8-no-cpu-allocatable", (100, 100), (0, 200, 0, 400), _mixed(10, L, 1, M, 2), 500),
    ("test9", (100, 100), (200, 200, 500, 500), {"resources": {"memory": {"type": M, "weight": 2}}}, 600),
    ("zero-resources-requested", (0, 0), (200, 200, 500, 500), _least(10, 1, 1), 0),
    ("node-fully-allocated", (100, 100), (500, 500, 500, 500), _least(10, 1, 1), 0),
    ("mixed-scoring-strategies", (100, 100), (200, 200, 500, 500), _mixed(10, L, 3, M, 1), 450),
    ("high-weight-scenario", (100, 100), (200, 200, 500, 500), _least(20, 5, 5), 800),
]


@pytest.mark.parametrize(
    ("request_", "usage", "arguments", "want"), [r[1:] for r in SCORES], ids=[r[0] for r in SCORES]
)
def test_volcano_score_table(
    request_: tuple[int, int], usage: tuple[int, int, int, int], arguments: dict[str, Any], want: float
) -> None:
    used_cpu, used_mem, alloc_cpu, alloc_mem = usage
    ssn = session(
        [plugin := _plugin(**arguments)],
        nodes=[node("n", cpu=f"{alloc_cpu}m", memory=str(alloc_mem))],
        pods=[
            pod(
                "t",
                cpu=f"{request_[0]}m" if request_[0] else None,
                memory=str(request_[1]) if request_[1] else None,
            ),
            pod("used", cpu=f"{used_cpu}m", memory=str(used_mem), node="n", phase="Running"),
        ],
    )
    scores = plugin.node_score(ssn, ssn.vector(PodUID("t")), ssn.free)
    got = 0.0 if scores is None else float(scores[0])
    assert got == pytest.approx(want, abs=1e-6)


def test_wildcards_match_by_the_longest_prefix_and_exact_names_win() -> None:
    plugin = _plugin(
        resources={
            "nvidia.com/*": {"type": M, "weight": 1},
            "nvidia.com/gpu-*": {"type": L, "weight": 2},
            "nvidia.com/gpu-a100": {"type": M, "weight": 3},
        }
    )
    assert strategy_for("nvidia.com/gpu-t4", plugin.strategies) == plugin.strategies["nvidia.com/gpu-*"]
    assert strategy_for("nvidia.com/gpu-a100", plugin.strategies) == plugin.strategies["nvidia.com/gpu-a100"]
    assert strategy_for("nvidia.com/mig", plugin.strategies) == plugin.strategies["nvidia.com/*"]
    assert strategy_for("amd.com/gpu", plugin.strategies) is None


# --- sra (Volcano: sra_test.go TestNode, cases 1-3) -----------------------------------------------------
SRA_NODES = [
    node("n1", cpu="32", memory="64Gi", pods=10),
    node("n2", cpu="8", memory="16Gi", pods=10, extra={T4: "16"}),
    node("n3", cpu="8", memory="16Gi", pods=10, extra={A10: "16"}),
    node("n4", cpu="8", memory="16Gi", pods=10, extra={T4: "8", A10: "16"}),
]
SRA_PODS = [
    pod("p1", cpu="1", memory="1Gi"),
    pod("p2", cpu="1.5", memory=None, extra={T4: "2"}),
    pod("p3", cpu="2", memory="4Gi", extra={A10: "2"}),
    pod("p4", cpu="3", memory="4Gi", extra={T4: "1", A10: "3"}),
]
SRA = [
    (
        "case1-multi-gpu",
        {
            "resourceStrategyFitWeight": 0,
            "sra": {
                "enable": True,
                "resources": f"{T4}, {A10}",
                "weight": 5,
                "resourceWeight": {T4: 2, A10: 3},
            },
        },
        {"p1": [500, 300, 200, 0], "p2": [0, 300, 0, 0], "p3": [0, 0, 200, 0], "p4": [0, 0, 0, 0]},
    ),
    (
        "case2-single-gpu",
        {
            "resourceStrategyFitWeight": 0,
            "sra": {"enable": True, "resources": T4, "weight": 5, "resourceWeight": {T4: 2}},
        },
        {"p1": [500, 0, 500, 0], "p2": [0, 0, 0, 0], "p3": [0, 0, 500, 0], "p4": [0, 0, 0, 0]},
    ),
    (
        "case3-with-strategies",
        {
            "resourceStrategyFitWeight": 8,
            "resources": {T4: {"type": M, "weight": 3}, "cpu": {"type": L, "weight": 1}},
            "sra": {"enable": True, "resources": T4, "weight": 0, "resourceWeight": {T4: 2}},
        },
        {
            "p1": [775, 700, 700, 700],
            "p2": [190.625, 237.5, 162.5, 312.5],
            "p3": [750, 600, 600, 600],
            "p4": [181.25, 162.5, 125, 200],
        },
    ),
]


@pytest.mark.parametrize(("arguments", "expected"), [r[1:] for r in SRA], ids=[r[0] for r in SRA])
def test_volcano_sra_table(arguments: dict[str, Any], expected: dict[str, list[float]]) -> None:
    plugin = _plugin(**arguments)
    ssn = session([plugin], nodes=SRA_NODES, pods=SRA_PODS)
    for name, want in expected.items():
        scores = plugin.node_score(ssn, ssn.vector(PodUID(name)), ssn.free)
        got = np.zeros(4) if scores is None else scores
        assert got.tolist() == pytest.approx(want), name


# --- conf loading -------------------------------------------------------------------------------------
BAD = [
    ("unknown-key", {"ResourceStrategyFitPlusWeight": 10}, "unknown key"),
    ("bad-type", {"resources": {"cpu": {"type": "Balanced"}}}, "must be LeastAllocated or MostAllocated"),
    ("zero-weight", {"resources": {"cpu": {"type": L, "weight": 0}}}, "positive integer"),
    ("lone-star", {"resources": {"*": {"type": L}}}, "one trailing '*'"),
    ("inner-star", {"resources": {"cloudml.*.gpu": {"type": L}}}, "one trailing '*'"),
    ("negative-weight", {"resourceStrategyFitWeight": -1}, "non-negative integer"),
    (
        "negative-proportion",
        {"proportional": {"enable": True, "resources": GPU, "resourceProportion": {f"{GPU}.cpu": -1}}},
        "must not be negative",
    ),
    (
        "proportion-of-unlisted",
        {"proportional": {"enable": True, "resources": GPU, "resourceProportion": {"amd.com/gpu.cpu": 1}}},
        "names no resource",
    ),
    ("enabled-without-resources", {"proportional": {"enable": True}}, "names no primary resource"),
    (
        "sra-weight-of-unlisted",
        {"sra": {"enable": True, "resources": T4, "resourceWeight": {A10: 1}}},
        "not in sra.resources",
    ),
]


@pytest.mark.parametrize(("arguments", "message"), [r[1:] for r in BAD], ids=[r[0] for r in BAD])
def test_bad_arguments_fail_startup(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_conf(conf_with("resource-strategy-fit", arguments={"resource-strategy-fit": arguments}))


def test_volcano_example_conf_loads() -> None:
    load_conf(
        conf_with(
            "resource-strategy-fit",
            arguments={
                "resource-strategy-fit": {
                    "resourceStrategyFitWeight": 10,
                    "resources": {GPU: {"type": M, "weight": 2}, "cpu": {"type": L, "weight": 1}},
                    "sra": {"enable": True, "resources": GPU, "weight": 10, "resourceWeight": {GPU: 1}},
                    "proportional": {
                        "enable": False,
                        "resources": GPU,
                        "resourceProportion": {f"{GPU}.cpu": 4, f"{GPU}.memory": 8},
                    },
                }
            },
        )
    )


def test_old_predicates_arguments_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"names no resource of predicate\.resources"):
        load_conf(
            conf_with("predicates", arguments={"predicates": {"predicate.resources.amd.com/gpu.cpu": 1}})
        )
    with pytest.raises(ConfigError, match="must be a non-negative number"):
        load_conf(
            conf_with(
                "predicates",
                arguments={"predicates": {"predicate.resources": GPU, f"predicate.resources.{GPU}.cpu": "x"}},
            )
        )


def test_a_held_back_pod_is_not_set_aside() -> None:
    """Placing GPU pods can let a held-back cpu pod in (less cpu kept for fewer idle GPUs), so with the
    predicate on no refusal stands: the cache must look at the group again in the next cycle."""
    nodes = [node("gpu-1", cpu="6", memory="64Gi", gpus=4)]
    pods = [pod("cpu-only", group="c", cpu="4")]
    groups = [podgroup("c", 1, phase="Inqueue")]
    proportional = {"proportional": {"enable": True, "resources": GPU}}
    result = run(
        nodes,
        pods,
        groups,
        conf=conf_with(
            "gang", "predicates", "resource-strategy-fit", arguments={"resource-strategy-fit": proportional}
        ),
    )
    assert key("c") in result.unschedulable
    assert not result.aside
    # The same pod short of plain room is set aside, as before.
    short = run(nodes, [pod("cpu-only", group="c", cpu="8")], groups, conf=conf_with("gang", "predicates"))
    assert key("c") in short.aside


# --- a pod's own table (Volcano: TestScore's pod-level cases) -------------------------------------------
TYPE_KEY, WEIGHT_KEY = "volcano.sh/resource-strategy-scoring-type", "volcano.sh/resource-strategy-weight"
POD_LEVEL = [
    ("pod-level-least-allocated", L, '{"cpu": 2, "memory": 1}', 400),
    ("pod-level-most-allocated", M, '{"cpu": 1, "memory": 2}', 600),
    ("pod-level-invalid-json", L, "invalid-json", 0),
    ("pod-level-missing-resource-weight", L, '{"cpu": 2}', 400),
    ("pod-level-weight-annotation-missing", L, None, 0),
]


@pytest.mark.parametrize(
    ("kind", "weights", "want"), [r[1:] for r in POD_LEVEL], ids=[r[0] for r in POD_LEVEL]
)
def test_volcano_pod_level_table(kind: str, weights: str | None, want: float) -> None:
    t = pod("t", cpu="100m", memory="100")
    t["metadata"]["annotations"][TYPE_KEY] = kind
    if weights is not None:
        t["metadata"]["annotations"][WEIGHT_KEY] = weights
    ssn = session(
        [plugin := _plugin(**_least(10, 1, 1))],
        nodes=[node("n", cpu="500m", memory="500")],
        pods=[t, pod("used", cpu="200m", memory="200", node="n", phase="Running")],
    )
    p = ssn.snapshot.pods[PodUID("t")]
    base = plugin.node_score(ssn, ssn.vector(p.uid), ssn.free)
    extra = plugin.pod_score(ssn, p, np.ones(1, dtype=np.bool_))
    assert base is not None and extra is not None
    assert float((base + extra)[0]) == pytest.approx(want, abs=1e-6)


def test_a_pod_with_its_own_table_packs_where_the_conf_spreads() -> None:
    nodes = [node("empty", cpu="8", memory="64Gi"), node("busy", cpu="8", memory="64Gi")]
    running = [pod("r", group="r", cpu="4", node="busy", phase="Running")]
    packer = pod("packer", group="p", cpu="1")
    packer["metadata"]["annotations"].update({TYPE_KEY: M, WEIGHT_KEY: '{"cpu": 1}'})
    groups = [
        podgroup("r", 1, phase="Running"),
        podgroup("p", 1, phase="Inqueue"),
        podgroup("s", 1, phase="Inqueue"),
    ]
    conf = conf_with("gang", "predicates", "resource-strategy-fit")  # the conf's table: LeastAllocated
    result = run(nodes, [*running, packer, pod("spreader", group="s", cpu="1")], groups, conf=conf)
    assert placed(result) == {"packer": "busy", "spreader": "empty"}
