"""binpack and nodeorder: which node a pod goes to."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from extender.core.errors import ConfigError
from extender.core.model import PodUID
from extender.plugins.binpack import BinpackPlugin
from extender.plugins.nodeorder import NodeorderPlugin
from extender.plugins.registry import load_conf
from tests.core.builders import GPU, Raw, conf_with, node, pod, podgroup, run
from tests.plugins.helpers import session

# "busy" has 3 of 8 cpu used (by another scheduler's pod), "idle" nothing; both take the new pod.
NODES = [node("busy", cpu="8", memory="16Gi"), node("idle", cpu="8", memory="16Gi")]
BUSY = pod("sys", cpu="3", memory="2Gi", node="busy", phase="Running", scheduler="default-scheduler")


def choose(plugins: tuple[str, ...], arguments: dict[str, dict[str, Any]] | None = None, **kw: Any) -> str:
    pg = podgroup("j", 1, phase="Inqueue")
    result = run(
        NODES, [BUSY, pod("j-0", group="j", **kw)], [pg], conf=conf_with(*plugins, arguments=arguments)
    )
    return result.placements[PodUID("j-0")]


# (id, plugins, arguments, expected node)
CHOICE: list[tuple[str, tuple[str, ...], dict[str, dict[str, Any]] | None, str]] = [
    ("binpack-fills", ("binpack",), None, "busy"),
    ("nodeorder-spreads", ("nodeorder",), None, "idle"),
    (
        "nodeorder-most-requested",
        ("nodeorder",),
        {"nodeorder": {"leastrequested.weight": 0, "mostrequested.weight": 1, "balancedresource.weight": 0}},
        "busy",
    ),
    (
        "nodeorder-all-off",
        ("nodeorder",),
        {"nodeorder": {"leastrequested.weight": 0, "balancedresource.weight": 0}},
        "busy",
    ),
    ("binpack-weight-zero", ("binpack",), {"binpack": {"binpack.weight": 0}}, "busy"),
    ("binpack-outweighs-nodeorder", ("binpack", "nodeorder"), {"binpack": {"binpack.weight": 10}}, "busy"),
    (
        "nodeorder-outweighs-binpack",
        ("binpack", "nodeorder"),
        {"nodeorder": {"leastrequested.weight": 10}},
        "idle",
    ),
    ("volcano-default", ("predicates", "nodeorder", "binpack"), None, "idle"),
]


@pytest.mark.parametrize(
    ("plugins", "arguments", "expected"), [r[1:] for r in CHOICE], ids=[r[0] for r in CHOICE]
)
def test_node_choice(
    plugins: tuple[str, ...], arguments: dict[str, dict[str, Any]] | None, expected: str
) -> None:
    assert choose(plugins, arguments) == expected


def test_no_scorer_breaks_ties_by_node_name() -> None:
    assert choose(("gang",)) == "busy"


def test_binpack_packs_a_gang_onto_fewest_nodes() -> None:
    pg = podgroup("j", 4, phase="Inqueue")
    pods = [pod(f"j-{i}", group="j", cpu="2", memory="1Gi") for i in range(4)]
    nodes = [node(f"n{i}", cpu="8", memory="16Gi") for i in range(3)]
    packed = run(nodes, pods, [pg], conf=conf_with("binpack")).placements
    assert set(packed.values()) == {"n0"}
    spread = run(nodes, pods, [pg], conf=conf_with("nodeorder")).placements
    assert len(set(spread.values())) == 3


def test_balanced_allocation_prefers_even_use() -> None:
    """cpu-heavy pod: the node where it evens out cpu and memory use scores higher."""
    nodes = [node("mem-busy", cpu="8", memory="8Gi"), node("cpu-busy", cpu="8", memory="8Gi")]
    used = [
        pod("m", cpu="0", memory="4Gi", node="mem-busy", phase="Running", scheduler="x"),
        pod("c", cpu="4", memory="0", node="cpu-busy", phase="Running", scheduler="x"),
    ]
    pg = podgroup("j", 1, phase="Inqueue")
    args = {"nodeorder": {"leastrequested.weight": 0, "balancedresource.weight": 1}}
    result = run(
        nodes,
        [*used, pod("j-0", group="j", cpu="4", memory="0")],
        [pg],
        conf=conf_with("nodeorder", arguments=args),
    )
    assert result.placements == {"j-0": "mem-busy"}


def _scores(plugin: Any, nodes: list[Raw], pods: list[Raw], request_pod: Raw) -> list[float]:
    ssn = session([plugin], nodes, [*pods, request_pod])
    req = ssn.vector(ssn.snapshot.pods[request_pod["metadata"]["uid"]].uid)
    s = plugin.node_score(ssn, req, ssn.free)
    return [] if s is None else [float(x) for x in np.round(s, 6)]


def test_binpack_score_formula() -> None:
    """weight × Σ w_r·(used_r + req_r)/alloc_r / Σ w_r × 100 over requested resources with a weight."""
    nodes = [node("a", cpu="4", memory="8Gi", gpus=4), node("b", cpu="8", memory="8Gi", gpus=8)]
    used = [pod("u", cpu="2", memory="2Gi", node="a", phase="Running", gpus=2)]
    plugin = BinpackPlugin(
        {
            "binpack.weight": 2,
            "binpack.cpu": 1,
            "binpack.memory": 3,
            "binpack.resources": GPU,
            f"binpack.resources.{GPU}": 4,
        }
    )
    scores = _scores(plugin, nodes, used, pod("r", cpu="1", memory="2Gi", gpus=1))
    a = 2 * (1 * 3 / 4 + 3 * 4 / 8 + 4 * 3 / 4) / 8 * 100
    b = 2 * (1 * 1 / 8 + 3 * 2 / 8 + 4 * 1 / 8) / 8 * 100
    assert scores == pytest.approx([a, b])


def test_binpack_ignores_unweighted_and_unrequested_resources() -> None:
    nodes = [node("a", cpu="4", gpus=4)]
    plugin = BinpackPlugin({"binpack.memory": 0})
    assert _scores(plugin, nodes, [], pod("r", cpu="2", gpus=1, memory=None)) == pytest.approx([50.0])
    assert _scores(BinpackPlugin({}), nodes, [], pod("r", cpu=None, memory=None)) == []


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"binpack.resources.nvidia.com/gpu": 2}, "names a resource not listed in binpack.resources"),
        ({"binpack.cpu": -1}, "binpack.cpu must not be negative"),
        ({"binpack.weight": "heavy"}, "binpack.weight='heavy' must be a int"),
        ({"binpack.weight": 1.5}, "must be a int"),
        ({"binpack.weight": float("inf")}, "must be a int"),
        ({"binpack.gpu": 1}, "unknown argument 'binpack.gpu'"),
    ],
    ids=["unlisted-resource", "negative", "not-int", "fraction", "infinite", "unknown"],
)
def test_binpack_bad_arguments(arguments: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match="binpack") as e:
        load_conf(conf_with("binpack", arguments={"binpack": arguments}))
    assert fragment in str(e.value)


def test_nodeorder_accepts_volcano_weights() -> None:
    names = [
        "nodeaffinity",
        "podaffinity",
        "tainttoleration",
        "imagelocality",
        "podtopologyspread",
        "volumebinding",
    ]
    load_conf(conf_with("nodeorder", arguments={"nodeorder": {f"{n}.weight": 2 for n in names}}))
    with pytest.raises(ConfigError, match="plugin nodeorder: unknown argument 'leastrequested'"):
        NodeorderPlugin({"leastrequested": 1})


def _reference(plugin: Any, ssn: Any, req: np.ndarray, free: np.ndarray) -> np.ndarray | None:
    """The scores as the formulas read, written the plain way (clip, mean over a two-column matrix)."""
    alloc = ssn.snapshot.alloc.astype(np.float64)
    safe = np.where(alloc > 0, alloc, 1.0)
    frac = np.clip((alloc - free + req) / safe, 0.0, 1.0)
    if isinstance(plugin, NodeorderPlugin):
        score = np.zeros(len(free))
        score += plugin.least * (1.0 - frac[:, :2]).mean(axis=1) * 100
        score += plugin.most * frac[:, :2].mean(axis=1) * 100
        score += plugin.balanced * (1.0 - np.abs(frac[:, 0] - frac[:, 1])) * 100
        return score
    names = ssn.snapshot.index.names
    cols = [
        (i, float(plugin.weights[n])) for i, n in enumerate(names) if plugin.weights.get(n, 0) and req[i] > 0
    ]
    if not cols:
        return None
    dot = np.zeros(len(free))
    for i, w in cols:
        dot += frac[:, i] * w
    return np.asarray(plugin.weight * dot / sum(w for _, w in cols) * 100)


@pytest.mark.parametrize("seed", range(40))
def test_scores_are_the_formula_bit_for_bit_for_any_rows(seed: int) -> None:
    """The in-place, shared-fraction arithmetic gives exactly the plain formula's floats, for all nodes,
    for some rows, and for hypothetical rows (a node less some copies of the request, rows repeated)."""
    rng = np.random.default_rng(seed)
    nodes = [
        node(
            f"n{i}",
            cpu=str(rng.integers(0, 9)),
            memory=f"{rng.integers(0, 9)}Gi",
            gpus=int(rng.integers(0, 3)),
        )
        for i in range(12)
    ]
    used = [
        pod(
            f"u{i}",
            cpu=f"{rng.integers(0, 4000)}m",
            memory=f"{rng.integers(0, 4)}Gi",
            node=f"n{i}",
            phase="Running",
        )
        for i in range(12)
        if rng.random() < 0.7
    ]
    probe = pod(
        "r", cpu=f"{rng.integers(0, 3000)}m", memory=f"{rng.integers(0, 3)}Gi", gpus=int(rng.integers(0, 2))
    )
    plugins = [
        NodeorderPlugin(
            {
                "leastrequested.weight": int(rng.integers(0, 3)),
                "mostrequested.weight": int(rng.integers(0, 3)),
            }
        ),
        BinpackPlugin(
            {
                "binpack.weight": int(rng.integers(1, 4)),
                "binpack.cpu": int(rng.integers(0, 3)),
                "binpack.resources": GPU,
            }
        ),
    ]
    ssn = session(plugins, nodes, [*used, probe])
    req = ssn.vector(ssn.snapshot.pods[PodUID("r")].uid)
    free = ssn.free
    rows = rng.integers(0, 12, 20).astype(np.intp)
    ahead = free[rows] - rng.integers(0, 3, 20)[:, None] * req
    for plugin in plugins:
        expected = _reference(plugin, ssn, req, free)
        got = plugin.node_score(ssn, req, free)
        if expected is None:
            assert got is None
            continue
        assert got is not None and got.tobytes() == expected.tobytes()
        some = plugin.node_score(ssn, req, free[rows], rows)
        assert some is not None and some.tobytes() == expected[rows].tobytes()
        several = plugin.node_score(ssn, req, ahead, rows)
        assert several is not None
        for k, (r, f) in enumerate(zip(rows, ahead, strict=True)):
            then = free.copy()
            then[r] = f
            reference = _reference(plugin, ssn, req, then)
            assert reference is not None and several[k] == reference[r]
