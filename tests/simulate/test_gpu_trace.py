"""Trace mode with GPU cards and leaf/spine labels: parsing, the pods and PodGroups made of it, and the
card-level GPU figures on traces small enough to work out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from controllers.simulate.engine import TraceRun, vcjob
from controllers.simulate.jobs import expand
from controllers.simulate.metrics import TraceResult
from controllers.simulate.report import trace_document, trace_table
from controllers.simulate.trace import LEAF_LABEL, SPINE_LABEL, TraceError, parse_trace
from extender.core.gpus import GPU_INDEX, GPU_MEMORY, GPU_NUMBER
from extender.main import main
from extender.plugins.registry import load_conf

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "simulate"
BINPACK = EXAMPLES / "gpu-share-binpack.conf"
SPREAD = EXAMPLES / "gpu-share-spread.conf"
TOPOLOGY = EXAMPLES / "gpu-share-binpack-topology.conf"


def _pool(**over: Any) -> dict[str, Any]:
    return {"name": "g", "count": 4, "allocatable": {"cpu": "8"}, **over}


def _job(name: str, ask: dict[str, str], *, submit: float = 0, duration: float = 100, **over: Any) -> Any:
    return {
        "name": name,
        "submit": submit,
        "duration": duration,
        "tasks": [{"name": "w", "replicas": over.pop("replicas", 1), "requests": ask}],
        **over,
    }


def test_a_gpu_pool_registers_cards_and_memory_as_the_device_plugin_would() -> None:
    trace = parse_trace(
        {
            "nodes": [
                _pool(gpus={"cards": 8, "memory": 81920}),
                _pool(name="q", gpus={"cards": 2, "memory": "1Ki"}),
                _pool(name="cpu"),
            ]
        }
    )
    share, quantity, cpu = trace.pools
    assert share.allocatable == {"cpu": "8", GPU_NUMBER: "8", GPU_MEMORY: str(8 * 81920)}
    assert quantity.allocatable[GPU_MEMORY] == "2048" and (quantity.gpu_cards, quantity.gpu_memory) == (
        2,
        1024,
    )
    assert GPU_NUMBER not in cpu.allocatable and trace.has_gpus and not trace.has_topology
    run = TraceRun(trace, load_conf(BINPACK.read_text()))
    node = run.cluster.cache.node("g-3")
    assert node is not None and node.gpus is not None
    assert [c.memory for c in node.gpus.share] == [81920] * 8


def test_topology_labels_each_node_with_its_leaf_and_spine() -> None:
    trace = parse_trace({"nodes": [_pool(count=10, topology={"leaf": 2, "spine": 3})]})
    (pool,) = trace.pools
    leaves = [pool.node_labels(i)[LEAF_LABEL] for i in range(10)]
    spines = [pool.node_labels(i)[SPINE_LABEL] for i in range(10)]
    assert leaves == [f"g-leaf-{i // 2}" for i in range(10)]
    assert spines == ["g-spine-0"] * 6 + ["g-spine-1"] * 4
    assert trace.has_topology and not trace.has_gpus
    no_spine = parse_trace({"nodes": [_pool(topology={"leaf": 3})]}).pools[0]
    assert no_spine.node_labels(3) == {LEAF_LABEL: "g-leaf-1"}
    run = TraceRun(trace, load_conf(None))
    assert run.cluster.nodes["g-5"]["metadata"]["labels"][SPINE_LABEL] == "g-spine-0"


def test_gpu_asks_become_limits_and_network_topology_reaches_the_podgroup() -> None:
    trace = parse_trace(
        {
            "nodes": [_pool()],
            "jobs": [
                _job(
                    "train",
                    {GPU_NUMBER: "2", "cpu": "1"},
                    replicas=4,
                    networkTopology={"mode": "soft", "highestTierAllowed": 1},
                ),
                _job("serve", {GPU_MEMORY: "1024"}),
            ],
        }
    )
    serve, train = trace.jobs
    assert serve.network_topology is None
    _, podgroup, pods = expand(vcjob(train), created="2024-01-01T00:00:00Z", priorities={})
    assert podgroup["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 1}
    (container,) = pods[0]["spec"]["containers"]
    assert container["resources"] == {"requests": {GPU_NUMBER: "2", "cpu": "1"}, "limits": {GPU_NUMBER: "2"}}
    assert (
        "limits"
        not in vcjob(parse_trace({"nodes": [_pool()], "jobs": [_job("c", {"cpu": "1"})]}).jobs[0])["spec"][
            "tasks"
        ][0]["template"]["spec"]["containers"][0]["resources"]
    )
    hard = parse_trace({"nodes": [_pool()], "jobs": [_job("h", {}, networkTopology={})]}).jobs[0]
    assert hard.network_topology == {"mode": "hard"}


@pytest.mark.parametrize(
    ("pool", "job", "message"),
    [
        ({"gpus": {"cards": 0, "memory": 10}}, None, "nodes[0].gpus.cards: expected an integer >= 1, got 0"),
        ({"gpus": {"cards": 8, "memory": "lots"}}, None, "nodes[0].gpus.memory: expected a positive integer"),
        ({"gpus": {"cards": 8}}, None, "nodes[0].gpus.memory: expected a positive integer"),
        ({"gpus": {"cards": 8, "memory": 1, "mig": 2}}, None, "nodes[0].gpus: unknown fields ['mig']"),
        ({"gpus": [8]}, None, "nodes[0].gpus: expected a mapping, got list"),
        (
            {"gpus": {"cards": 1, "memory": 1}, "allocatable": {GPU_NUMBER: "4"}},
            None,
            f"nodes[0].allocatable: {GPU_NUMBER} comes from gpus",
        ),
        ({"topology": {"spine": 2}}, None, "nodes[0].topology.leaf: expected an integer >= 1, got None"),
        ({"topology": {"leaf": 2, "rack": 1}}, None, "nodes[0].topology: unknown fields ['rack']"),
        ({"gpu": {"cards": 1}}, None, "nodes[0]: unknown fields ['gpu']"),
        (
            {},
            _job("j", {GPU_MEMORY: "10", GPU_NUMBER: "1"}),
            f"jobs[0].tasks[0].requests: ask {GPU_MEMORY} (a share of one card) or {GPU_NUMBER}",
        ),
        ({}, _job("j", {GPU_MEMORY: "ten"}), "jobs[0].tasks[0].requests: invalid resource quantity 'ten'"),
        (
            {},
            _job("j", {}, networkTopology={"mode": "strict"}),
            "jobs[0].networkTopology.mode: expected hard",
        ),
        (
            {},
            _job("j", {}, networkTopology={"highestTierAllowed": 0}),
            "jobs[0].networkTopology.highestTierAllowed: expected an integer >= 1, got 0",
        ),
        (
            {},
            _job("j", {}, networkTopology={"highestTierName": "leaf"}),
            "jobs[0].networkTopology: unknown fields ['highestTierName']",
        ),
        ({}, _job("j", {}, networkTopology="hard"), "jobs[0].networkTopology: expected a mapping, got str"),
    ],
)
def test_a_bad_gpu_or_topology_field_says_where(
    pool: dict[str, Any], job: dict[str, Any] | None, message: str
) -> None:
    doc: dict[str, Any] = {"nodes": [_pool(**pool)], "jobs": [job] if job else []}
    with pytest.raises(TraceError) as e:
        parse_trace(doc)
    assert message in str(e.value)


def test_a_generated_shape_carries_its_network_topology() -> None:
    shape = {"duration": 60, "networkTopology": {"highestTierAllowed": 2}, "tasks": [{"replicas": 2}]}
    trace = parse_trace({"nodes": [_pool()], "generate": [{"count": 3, "shapes": [shape]}]})
    assert {j.network_topology == {"mode": "hard", "highestTierAllowed": 2} for j in trace.jobs} == {True}
    bad = {"count": 1, "shapes": [{**shape, "networkTopology": {"mode": 1}}]}
    with pytest.raises(TraceError, match=r"generate\[0\]\.shapes\[0\]\.networkTopology\.mode"):
        parse_trace({"nodes": [_pool()], "generate": [bad]})


# --- the GPU figures ------------------------------------------------------------------------------------
# One node of four cards of 100 (so shares are easy to see). At t=0 a and b ask 30 each, c one whole
# card, d 50; a, b and c run 100 s, d 200 s. Optionally e asks 95 at t=10 and runs 100 s.


def _cards_trace(*, with_e: bool = False) -> dict[str, Any]:
    jobs = [
        _job("a", {GPU_MEMORY: "30"}),
        _job("b", {GPU_MEMORY: "30"}),
        _job("c", {GPU_NUMBER: "1"}),
        _job("d", {GPU_MEMORY: "50"}, duration=200),
    ]
    if with_e:
        jobs.append(_job("e", {GPU_MEMORY: "95"}, submit=10))
    return {"nodes": [_pool(count=1, gpus={"cards": 4, "memory": 100})], "jobs": jobs}


def _run(doc: dict[str, Any], conf: Path) -> tuple[TraceRun, TraceResult]:
    run = TraceRun(parse_trace(doc), load_conf(conf.read_text()))
    return run, run.run()


def test_bound_pods_carry_their_cards_and_never_overfill_one() -> None:
    seen: list[dict[str, str]] = []
    run: TraceRun

    def look(_t: float) -> None:
        per_card: dict[str, int] = {}
        for raw in run.cluster.pods.values():
            ann = raw["metadata"]["annotations"]
            if raw["spec"].get("nodeName"):
                assert GPU_INDEX in ann, f"{raw['metadata']['name']} bound without its card"
                ask = raw["spec"]["containers"][0]["resources"]["limits"]
                for card in ann[GPU_INDEX].split(","):
                    per_card[card] = per_card.get(card, 0) + int(ask.get(GPU_MEMORY, 100))
                seen.append(ann)
        assert all(v <= 100 for v in per_card.values()), per_card

    run = TraceRun(parse_trace(_cards_trace(with_e=True)), load_conf(SPREAD.read_text()), progress=look)
    result = run.run()
    assert len(seen) > 5 and all(j.end is not None for j in result.jobs)


def test_binpack_figures_worked_out_by_hand() -> None:
    # Binpack: a and b share a card (60), c holds one whole, d opens a third (50). Until t=100:
    # allocated 60 + 100 + 50 = 210 of 400; free 190, of which 40 + 50 on partly used cards. Then d alone:
    # 50 of 400 allocated, its card's 50 stranded of 350 free. At t=200 nothing.
    _, result = _run(_cards_trace(), BINPACK)
    gpu = result.gpu
    assert gpu is not None and (gpu.cards, gpu.memory) == (4, 400)
    assert result.makespan == 200
    assert gpu.allocation_mean == pytest.approx((210 / 400 + 50 / 400) / 2)
    assert gpu.allocation_peak == pytest.approx(210 / 400)
    assert gpu.allocation_end == 0
    assert gpu.fragmentation_mean == pytest.approx((90 / 190 + 50 / 350) / 2)
    assert gpu.stranded_asks_mean == 0
    assert result.key_resource == "cpu"
    assert result.topology is None


def test_spread_figures_and_a_stranded_ask_worked_out_by_hand() -> None:
    # Spread: a, b and d each on their own card, c whole on the fourth: 210 allocated, all 190 free memory
    # on partly used cards. e (95) arrives at t=10: 190 free in all, at most 70 on one card: stranded until
    # a, b, c leave at t=100; e then takes an idle card (95), d keeps its 50: 145 allocated, 5 + 50 of 255
    # free stranded; at t=200 d and e are done.
    _, result = _run(_cards_trace(with_e=True), SPREAD)
    gpu = result.gpu
    assert gpu is not None and result.makespan == 200
    assert gpu.allocation_mean == pytest.approx((210 / 400 + 145 / 400) / 2)
    assert gpu.fragmentation_mean == pytest.approx((190 / 190 + 55 / 255) / 2)
    assert gpu.stranded_asks_mean == pytest.approx(90 / 200)
    e = next(j for j in result.jobs if j.name == "default/e")
    assert (e.start, e.end) == (100, 200)


def test_binpack_leaves_less_fragmentation_than_spread() -> None:
    packed = _run(_cards_trace(), BINPACK)[1].gpu
    spread = _run(_cards_trace(), SPREAD)[1].gpu
    assert packed is not None and spread is not None
    assert packed.allocation_mean == pytest.approx(spread.allocation_mean)  # the same work
    assert packed.fragmentation_mean < spread.fragmentation_mean - 0.2


# --- network topology ---------------------------------------------------------------------------------


def _gang_trace() -> dict[str, Any]:
    # Four nodes of 4 cards, two per leaf. A 1-card pod sits on g-0 first; then a 2-pod gang asks 4 cards
    # each (a whole node each), hard inside one leaf: only leaf 1 (g-2, g-3) can hold it whole.
    return {
        "nodes": [_pool(gpus={"cards": 4, "memory": 100}, topology={"leaf": 2})],
        "jobs": [
            _job("small", {GPU_NUMBER: "1"}, duration=1000),
            _job(
                "gang",
                {GPU_NUMBER: "4"},
                submit=1,
                replicas=2,
                networkTopology={"mode": "hard", "highestTierAllowed": 1},
            ),
        ],
    }


def test_topology_figures_count_gangs_inside_one_leaf() -> None:
    _, result = _run(_gang_trace(), TOPOLOGY)
    assert result.topology is not None
    assert (result.topology.gangs, result.topology.in_one_leaf) == (1, 1)
    assert result.topology.leaves_mean == 1
    doc = trace_document([("t", result)])["runs"][0]
    assert doc["topology"] == {"gangs": 1, "inOneLeaf": 1, "inOneSpine": 0, "leavesMean": 1.0}
    assert set(doc["gpu"]) >= {"allocationMean", "fragmentationMean", "strandedAsksMean"}
    assert "gpu:fragmentation" in doc["series"]
    table = trace_table([("t", result)])
    assert "GPU fragmentation mean / end" in table and "gangs in one leaf" in table
    # Without the plugin nothing keeps the gang in one leaf: it takes g-1 and g-2, across both.
    off = _run(_gang_trace(), BINPACK)[1].topology
    assert off is not None and (off.in_one_leaf, off.leaves_mean) == (0, 2)


def test_the_example_compares_the_gpu_policies_and_topology_side_by_side(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = yaml.safe_load((EXAMPLES / "gpu-share.yaml").read_text())
    for g in doc["generate"]:
        g["count"] = 12  # the example's shape, small enough for a unit test
    trace = parse_trace(doc)
    assert trace.has_gpus and trace.has_topology
    confs = sorted(EXAMPLES.glob("gpu-share-*.conf"))
    assert len(confs) == 6  # fragmentation, binpack, spread; topology off and on
    out = tmp_path / "gpu-share.yaml"
    out.write_text(yaml.safe_dump(doc))
    args = ["simulate", str(out), "--no-progress", "-o", "json"]
    for c in confs:
        args += ["--scheduler-conf", str(c)]
    assert main(args) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["conf"] for r in runs] == [c.name for c in confs]
    assert all(r["gpu"]["allocationPeak"] > 0 and r["topology"]["gangs"] > 0 for r in runs)


def test_plots_add_the_gpu_figures(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from controllers.simulate.plots import write_plots

    result = _run(_cards_trace(), BINPACK)[1]
    paths = write_plots([("binpack", result)], tmp_path)
    assert [p.name for p in paths] == ["utilization.png", "shares.png", "waits.png", "gpu.png"]
    assert (tmp_path / "gpu.png").stat().st_size > 1000
