"""Node filters (extender.core.fit): static reasons, resource fit and the shortfall a reason quotes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import fit
from extender.core.model import GroupKey, Node, NodeConstraints, Requirement, Taint, Toleration
from extender.core.parse import parse_node
from extender.core.parse_affinity import node_constraints
from extender.core.resources import ResourceIndex
from extender.core.topology import TopologyIndex
from tests.core.builders import GPU, node, pod, podgroup, run

NO_SCHEDULE = {"key": "dedicated", "value": "infra", "effect": "NoSchedule"}


def constraints(**kw: Any) -> NodeConstraints:
    return node_constraints(pod("p", **kw)["spec"])


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


# (id, node kwargs, pod kwargs, expected reason fragment or None)
STATIC = [
    ("plain", {}, {}, None),
    ("cordoned", {"unschedulable": True}, {}, "cordoned"),
    ("selector-match", {"labels": {"zone": "a"}}, {"selector": {"zone": "a"}}, None),
    ("selector-mismatch", {"labels": {"zone": "b"}}, {"selector": {"zone": "a"}}, "nodeSelector"),
    ("selector-missing-label", {}, {"selector": {"zone": "a"}}, "nodeSelector"),
    (
        "selector-all-keys",
        {"labels": {"zone": "a"}},
        {"selector": {"zone": "a", "disk": "ssd"}},
        "nodeSelector",
    ),
    ("taint-untolerated", {"taints": [NO_SCHEDULE]}, {}, "taint dedicated=infra:NoSchedule"),
    ("taint-noexecute", {"taints": [{**NO_SCHEDULE, "effect": "NoExecute"}]}, {}, "NoExecute"),
    ("taint-prefer-is-soft", {"taints": [{**NO_SCHEDULE, "effect": "PreferNoSchedule"}]}, {}, None),
    ("taint-tolerated-equal", {"taints": [NO_SCHEDULE]}, {"tolerations": [NO_SCHEDULE]}, None),
    (
        "taint-tolerated-exists",
        {"taints": [NO_SCHEDULE]},
        {"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
        None,
    ),
    ("taint-tolerate-everything", {"taints": [NO_SCHEDULE]}, {"tolerations": [{"operator": "Exists"}]}, None),
    (
        "taint-wrong-value",
        {"taints": [NO_SCHEDULE]},
        {"tolerations": [{**NO_SCHEDULE, "value": "other"}]},
        "taint",
    ),
    (
        "taint-wrong-effect",
        {"taints": [NO_SCHEDULE]},
        {"tolerations": [{**NO_SCHEDULE, "effect": "NoExecute"}]},
        "taint",
    ),
    (
        "taint-one-of-two-tolerated",
        {"taints": [NO_SCHEDULE, {"key": "gpu", "value": "", "effect": "NoSchedule"}]},
        {"tolerations": [NO_SCHEDULE]},
        "taint gpu=:NoSchedule",
    ),
    (
        "affinity-in",
        {"labels": {"arch": "amd64"}},
        {"affinity": [[expr("arch", "In", "amd64", "arm64")]]},
        None,
    ),
    (
        "affinity-in-miss",
        {"labels": {"arch": "s390x"}},
        {"affinity": [[expr("arch", "In", "amd64")]]},
        "affinity",
    ),
    ("affinity-in-absent", {}, {"affinity": [[expr("arch", "In", "amd64")]]}, "affinity"),
    ("affinity-notin", {"labels": {"arch": "amd64"}}, {"affinity": [[expr("arch", "NotIn", "arm64")]]}, None),
    ("affinity-notin-absent", {}, {"affinity": [[expr("arch", "NotIn", "arm64")]]}, None),
    (
        "affinity-notin-hit",
        {"labels": {"arch": "arm64"}},
        {"affinity": [[expr("arch", "NotIn", "arm64")]]},
        "affinity",
    ),
    ("affinity-exists", {"labels": {"gpu": ""}}, {"affinity": [[expr("gpu", "Exists")]]}, None),
    ("affinity-exists-miss", {}, {"affinity": [[expr("gpu", "Exists")]]}, "affinity"),
    ("affinity-doesnotexist", {}, {"affinity": [[expr("gpu", "DoesNotExist")]]}, None),
    (
        "affinity-doesnotexist-hit",
        {"labels": {"gpu": "1"}},
        {"affinity": [[expr("gpu", "DoesNotExist")]]},
        "affinity",
    ),
    ("affinity-gt", {"labels": {"cores": "64"}}, {"affinity": [[expr("cores", "Gt", "32")]]}, None),
    (
        "affinity-gt-equal",
        {"labels": {"cores": "32"}},
        {"affinity": [[expr("cores", "Gt", "32")]]},
        "affinity",
    ),
    ("affinity-lt", {"labels": {"cores": "8"}}, {"affinity": [[expr("cores", "Lt", "32")]]}, None),
    (
        "affinity-gt-not-a-number",
        {"labels": {"cores": "many"}},
        {"affinity": [[expr("cores", "Gt", "1")]]},
        "affinity",
    ),
    (
        "affinity-unknown-operator",
        {"labels": {"a": "b"}},
        {"affinity": [[expr("a", "Like", "b")]]},
        "affinity",
    ),
    (
        "affinity-and-within-term",
        {"labels": {"arch": "amd64"}},
        {"affinity": [[expr("arch", "In", "amd64"), expr("zone", "Exists")]]},
        "affinity",
    ),
    (
        "affinity-or-across-terms",
        {"labels": {"arch": "amd64"}},
        {"affinity": [[expr("zone", "Exists")], [expr("arch", "In", "amd64")]]},
        None,
    ),
    ("affinity-empty-term-matches-nothing", {}, {"affinity": [[]]}, "affinity"),
    ("cordon-reported-first", {"unschedulable": True, "taints": [NO_SCHEDULE]}, {}, "cordoned"),
]


@pytest.mark.parametrize(("node_kw", "pod_kw", "reason"), [r[1:] for r in STATIC], ids=[r[0] for r in STATIC])
def test_static_reason(node_kw: dict[str, Any], pod_kw: dict[str, Any], reason: str | None) -> None:
    got = fit.static_reason(constraints(**pod_kw), parse_node(node("n0", **node_kw)))
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


@pytest.mark.parametrize(
    ("op", "values", "name", "ok"),
    [("In", ["n1"], "n1", True), ("In", ["n1"], "n2", False), ("NotIn", ["n1"], "n2", True)],
    ids=["in", "in-miss", "notin"],
)
def test_match_fields_metadata_name(op: str, values: list[str], name: str, ok: bool) -> None:
    raw = pod("p")
    raw["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": op, "values": values}]}
                ]
            }
        }
    }
    c = node_constraints(raw["spec"])
    assert (fit.static_reason(c, parse_node(node(name))) is None) is ok


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        (Toleration(key="k", value="v"), Taint(key="k", value="v", effect="NoSchedule"), True),
        (
            Toleration(key="k", value="v", effect="NoSchedule"),
            Taint(key="k", value="v", effect="NoSchedule"),
            True,
        ),
        (Toleration(key="k", value="x"), Taint(key="k", value="v", effect="NoSchedule"), False),
        (Toleration(key="k", operator="Exists"), Taint(key="k", value="v", effect="NoExecute"), True),
        (Toleration(operator="Exists"), Taint(key="any", effect="NoSchedule"), True),
        (Toleration(operator="Exists", effect="NoExecute"), Taint(key="any", effect="NoSchedule"), False),
        (Toleration(), Taint(key="any", effect="NoSchedule"), False),
        (Toleration(key="j", operator="Exists"), Taint(key="k", effect="NoSchedule"), False),
    ],
    ids=[
        "equal",
        "equal-effect",
        "value-differs",
        "exists",
        "wildcard",
        "wildcard-other-effect",
        "empty",
        "other-key",
    ],
)
def test_toleration(toleration: Toleration, taint: Taint, ok: bool) -> None:
    assert toleration.tolerates(taint) is ok


def test_static_mask_and_summary() -> None:
    nodes = [
        parse_node(node("a", labels={"zone": "a"})),
        parse_node(node("b", labels={"zone": "b"})),
        parse_node(node("c", labels={"zone": "b"})),
        parse_node(node("d", labels={"zone": "a"}, unschedulable=True)),
    ]
    c = constraints(selector={"zone": "a"})
    assert fit.static_mask(c, nodes).tolist() == [True, False, False, False]
    assert fit.summarize_static(c, nodes) == (
        "node does not match the pod's nodeSelector (2 nodes); node is unschedulable (cordoned) (1 nodes)"
    )
    assert fit.summarize_static(NodeConstraints(), nodes[:1]) == "no nodes"
    assert fit.static_mask(c, []).shape == (0,)


LABELS = st.dictionaries(
    st.sampled_from(["zone", "disk", "rank"]), st.sampled_from(["a", "b", "1", "7"]), max_size=3
)
TAINTS = st.lists(
    st.builds(
        Taint,
        key=st.sampled_from(["dedicated", "spot"]),
        value=st.sampled_from(["", "x"]),
        effect=st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
    ),
    max_size=2,
).map(tuple)
NODES = st.lists(
    st.builds(
        lambda i, labels, taints, cordoned: Node(
            name=f"n{i}", allocatable={}, labels=labels, taints=taints, unschedulable=cordoned
        ),
        st.integers(0, 9),
        LABELS,
        TAINTS,
        st.booleans(),
    ),
    max_size=12,
)
REQUIREMENTS = st.builds(
    Requirement,
    key=st.sampled_from(["zone", "disk", "rank", "metadata.name"]),
    operator=st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
    values=st.lists(st.sampled_from(["a", "b", "1", "7", "n3"]), max_size=2).map(tuple),
    field=st.booleans(),
)
CONSTRAINTS = st.builds(
    NodeConstraints,
    node_selector=st.lists(
        st.tuples(st.sampled_from(["zone", "disk"]), st.sampled_from(["a", "b"])), max_size=2
    ).map(tuple),
    affinity_terms=st.none() | st.lists(st.lists(REQUIREMENTS, max_size=2).map(tuple), max_size=3).map(tuple),
    tolerations=st.lists(
        st.builds(
            Toleration,
            key=st.sampled_from(["", "dedicated", "spot"]),
            operator=st.sampled_from(["Equal", "Exists"]),
            value=st.sampled_from(["", "x"]),
            effect=st.sampled_from(["", "NoSchedule", "NoExecute"]),
        ),
        max_size=2,
    ).map(tuple),
)


@settings(max_examples=300, deadline=None)
@given(NODES, CONSTRAINTS)
def test_static_mask_over_the_index_equals_the_per_node_reasons(
    nodes: list[Node], c: NodeConstraints
) -> None:
    """The array form (label requirements decided per distinct value, taints per distinct list) keeps
    exactly the nodes static_reason keeps."""
    expected = [fit.static_reason(c, n) is None for n in nodes]
    assert fit.static_mask(c, nodes, TopologyIndex(nodes)).tolist() == expected
    assert fit.static_mask(c, nodes).tolist() == expected


@pytest.mark.parametrize(
    ("free", "req", "mask"),
    [
        ([[4, 4, 1], [1, 4, 1]], [2, 2, 1], [True, False]),
        ([[2, 2, 1], [2, 2, 0]], [2, 2, 1], [True, False]),  # equality fits; the pods slot counts
        ([[-1, 4, 1]], [0, 0, 1], [False]),  # an over-committed node takes nothing
        ([[0, 0, 1]], [0, 0, 1], [True]),
    ],
    ids=["some", "exact-and-pod-slot", "negative-free", "best-effort"],
)
def test_fits(free: list[list[int]], req: list[int], mask: list[bool]) -> None:
    assert fit.fits(np.array(free, dtype=np.int64), np.array(req, dtype=np.int64)).tolist() == mask


def test_shortfall_picks_fewest_missing_then_closest() -> None:
    index = ResourceIndex.of([GPU])  # cpu, memory, pods, gpu
    names = ["far", "close", "two-short", "excluded"]
    free = np.array([[500, 8, 10, 0], [1500, 8, 10, 0], [3000, 1, 10, 0], [9999, 99, 99, 9]], dtype=np.int64)
    req = np.array([2000, 4, 1, 0], dtype=np.int64)
    mask = np.array([True, True, True, False])
    short = fit.shortfall(free, req, mask, index, names)
    assert short is not None
    assert short.node == "close"
    assert dict(short.lacking) == {"cpu": (2000, 1500)}
    assert short.describe() == "needs cpu 2, best node close has cpu 1.5"
    assert fit.shortfall(free, req, np.zeros(4, dtype=np.bool_), index, names) is None


def test_shortfall_reports_zero_for_over_committed_free() -> None:
    index = ResourceIndex.of([])
    short = fit.shortfall(
        np.array([[-500, 10, 1]], dtype=np.int64), np.array([1000, 0, 1]), np.array([True]), index, ["n0"]
    )
    assert short is not None and dict(short.lacking) == {"cpu": (1000, 0)}


def _reference_shortfall(
    free: np.ndarray[Any, Any], req: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]
) -> int | None:
    """The row the shortfall names, as its definition reads: over the candidates, fewest missing
    resources, then the largest min(free, request) / request, then the first (a stable lexsort)."""
    if not mask.any():
        return None
    cand = np.flatnonzero(mask)
    f = free[cand]
    missing = (f < req).sum(axis=1)
    ratio = np.where(req > 0, np.minimum(f, req) / np.where(req > 0, req, 1), 1.0).min(axis=1)
    return int(cand[np.lexsort((-ratio, missing))[0]])


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.lists(st.integers(-3, 6), min_size=4, max_size=4), min_size=n, max_size=n),
            st.lists(st.integers(0, 5), min_size=4, max_size=4),
            st.lists(st.booleans(), min_size=n, max_size=n),
        )
    )
)
def test_shortfall_is_the_reference_choice(case: tuple[list[list[int]], list[int], list[bool]]) -> None:
    rows, asked, allowed = case
    free = np.asfortranarray(np.array(rows, dtype=np.int64) * 1000)
    req = np.array(asked, dtype=np.int64) * 700
    mask = np.array(allowed, dtype=np.bool_)
    index = ResourceIndex.of([GPU])
    names = [f"n{i}" for i in range(len(rows))]
    best = _reference_shortfall(free, req, mask)
    short = fit.shortfall(free, req, mask, index, names)
    assert (short and short.node) == (None if best is None else names[best])


# End to end: a one-pod job and a set of nodes, only one of which is usable.
USABLE = [
    ("cordoned", [node("bad", unschedulable=True)], {}),
    ("tainted", [node("bad", taints=[NO_SCHEDULE])], {}),
    ("selector", [node("bad", labels={"zone": "b"})], {"selector": {"zone": "a"}}),
    ("affinity", [node("bad", labels={"zone": "b"})], {"affinity": [[expr("zone", "In", "a")]]}),
    ("too-small", [node("bad", cpu="500m")], {}),
    ("no-gpu", [node("bad", cpu="64")], {"gpus": 1}),
    ("pods-full", [node("bad", cpu="64", pods=0)], {}),
]


@pytest.mark.parametrize(("bad_nodes", "pod_kw"), [r[1:] for r in USABLE], ids=[r[0] for r in USABLE])
def test_unusable_nodes_never_chosen(bad_nodes: list[dict[str, Any]], pod_kw: dict[str, Any]) -> None:
    good = node("zz-good", cpu="2", labels={"zone": "a"}, gpus=1)  # sorts last: never a tie-break winner
    job = podgroup("j", 1, phase="Inqueue")  # admitted already: only the node filters decide
    result = run([*bad_nodes, good], [pod("p0", group="j", **pod_kw)], [job])
    assert result.placements == {"p0": "zz-good"}
    result = run(bad_nodes, [pod("p0", group="j", **pod_kw)], [job])
    assert result.placements == {}
    assert result.unschedulable[GroupKey("default/j")].reason == "NotEnoughResources"
