"""drf namespace fair share (``enableNamespaceOrder``): within a queue, the jobs of the namespace with the
lowest weighted dominant share go first; in preempt, namespaces are weighed before jobs. Outcomes from
Volcano's namespace fair-share e2e test and namespace_info_test.go (up to v1.7), then ours."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.core.model import PodGroup, PodUID
from extender.core.parse import parse_resource_quota
from extender.core.quota import namespace_weight
from extender.framework.lines import Entry, Line
from extender.framework.session import Session
from extender.plugins.drf import DrfPlugin
from extender.plugins.registry import load_conf
from tests.core.builders import T0, Raw, node, pod, podgroup
from tests.plugins.quota_objects import resource_quota, run_with, session_with

WIDE = {"memory": "1000Gi"}  # memory never dominates: shares are cpu shares

CONF = """
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
  - name: drf
    {switch}
"""
ON = CONF.format(switch="enableNamespaceOrder: true")
OFF = CONF.format(switch="")


def _created(i: int) -> str:
    return f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z"


def _jobs(namespace: str, count: int, size: int, start: int) -> tuple[list[Raw], list[Raw]]:
    """``count`` gangs of ``size`` 1-cpu pods in ``namespace``, created one second apart from ``start``."""
    groups, pods = [], []
    for j in range(count):
        name = f"{namespace}-{j}"
        groups.append(podgroup(name, size, namespace=namespace, phase="Inqueue", created=_created(start + j)))
        pods += [
            pod(f"{name}-{i}", group=name, namespace=namespace, memory="1Gi", created=_created(start + j))
            for i in range(size)
        ]
    return groups, pods


def _placed_by_namespace(result: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for uid in result.placements:
        ns = str(uid).split("-", 1)[0]
        out[ns] = out.get(ns, 0) + 1
    return out


@pytest.mark.parametrize(
    ("conf", "expected"), [(ON, {"test": 4, "fs": 4}), (OFF, {"test": 8})], ids=["on", "off"]
)
def test_volcano_namespace_fair_share(conf: str, expected: dict[str, int]) -> None:
    """Volcano's "Namespace Fair Share" e2e: room for 8 pods, 8 gangs of 2 in each of two namespaces (those
    of ``test`` created first). With namespace order the two split the room evenly (Volcano: within one
    gang); without, job order gives it all to the older jobs."""
    g1, p1 = _jobs("test", 8, 2, 0)
    g2, p2 = _jobs("fs", 8, 2, 100)
    result = run_with(conf, nodes=[node("n0", cpu="8", extra=WIDE)], pods=p1 + p2, groups=g1 + g2)
    assert _placed_by_namespace(result) == expected


@pytest.mark.parametrize(
    ("weights", "expected"),
    [((3, 1), {"test": 12, "fs": 4}), ((1, 1), {"test": 8, "fs": 8}), ((1, 3), {"test": 4, "fs": 12})],
    ids=["3-to-1", "even", "1-to-3"],
)
def test_namespace_weights_from_resource_quotas(weights: tuple[int, int], expected: dict[str, int]) -> None:
    """16 one-pod jobs per namespace, room for 16: each namespace's part follows its weight."""
    g1, p1 = _jobs("test", 16, 1, 0)
    g2, p2 = _jobs("fs", 16, 1, 100)
    quotas = [
        resource_quota("w", ns, {"volcano.sh/namespace.weight": str(w)})
        for ns, w in zip(("test", "fs"), weights, strict=True)
    ]
    result = run_with(
        ON, nodes=[node("n0", cpu="16", extra=WIDE)], pods=p1 + p2, groups=g1 + g2, quotas=quotas
    )
    assert _placed_by_namespace(result) == expected


def test_what_a_namespace_already_runs_counts() -> None:
    """``test`` runs 4 pods of a job outside the cycle's work (a running group): ``fs`` is served first."""
    g1, p1 = _jobs("test", 4, 1, 0)
    g2, p2 = _jobs("fs", 4, 1, 100)
    busy = podgroup("busy", 1, namespace="test", phase="Running")
    running = [
        pod(f"busy-{i}", group="busy", namespace="test", node="n0", phase="Running", memory="1Gi")
        for i in range(4)
    ]
    result = run_with(
        ON, nodes=[node("n0", cpu="8", extra=WIDE)], pods=p1 + p2 + running, groups=[*g1, *g2, busy]
    )
    assert {str(u) for u in result.placements} == {f"fs-{j}-0" for j in range(4)}


def test_a_namespace_of_another_queue_does_not_take_turns_here() -> None:
    """Namespaces are ordered within a queue; queue order still comes first (one queue here, two
    namespaces, and a namespace with nothing waiting changes nothing)."""
    g1, p1 = _jobs("test", 2, 1, 0)
    result = run_with(ON, nodes=[node("n0", cpu="1", extra=WIDE)], pods=p1, groups=g1)
    assert {str(u) for u in result.placements} == {"test-0-0"}


# --- weights (Volcano's namespace_info_test.go) ----------------------------------------------------


@pytest.mark.parametrize(
    ("hards", "weight"),
    [
        ([], 1),
        ([{"cpu": "1"}], 1),
        ([{"volcano.sh/namespace.weight": "1"}, {"volcano.sh/namespace.weight": "2"}], 2),
        ([{"volcano.sh/namespace.weight": "0"}], 1),  # below 1 counts 1
        ([{"volcano.sh/namespace.weight": "2500m"}], 3),  # a quantity, rounded up
    ],
    ids=["none", "no-weight-key", "heaviest-wins", "zero", "quantity"],
)
def test_namespace_weight(hards: list[dict[str, str]], weight: int) -> None:
    quotas = tuple(parse_resource_quota(resource_quota(f"q{i}", "ns", h)) for i, h in enumerate(hards))
    assert namespace_weight(quotas) == weight


def test_namespace_order_is_off_unless_set() -> None:
    conf = load_conf(OFF)
    drf = conf.tiers()[0][1]
    assert not drf.takes_part("namespace_order")
    assert load_conf(ON).tiers()[0][1].takes_part("namespace_order")


def test_namespace_keys_follow_placements() -> None:
    """The key is read afresh: a placement in the cycle raises its namespace's share at once."""
    g1, p1 = _jobs("test", 1, 1, 0)
    conf = load_conf(ON)
    ssn = session_with(conf.tiers()[0], nodes=[node("n0", cpu="4", extra=WIDE)], pods=p1, groups=g1)
    assert ssn.namespace_key("test") == (0.0,)
    stmt = ssn.statement()
    stmt.place(PodUID("test-0-0"), 0, "default")
    assert ssn.namespace_key("test") == (pytest.approx(0.25),)
    stmt.discard()
    assert ssn.namespace_key("test") == (0.0,)


# --- preemptable -----------------------------------------------------------------------------------


def _preempt_world(namespace_order: bool) -> Any:
    """10 cpu. ``rich`` runs eight one-pod jobs; ``poor`` runs a job of 2 pods and waits with a third pod
    of it (the preemptor). Job shares alone refuse every victim (a 1-cpu job would fall to 0, below the
    preemptor's 3/10); namespace shares allow them (rich at 8/10 stays above poor's 3/10)."""
    groups = [podgroup(f"r{i}", 1, namespace="rich", phase="Running") for i in range(8)]
    pods = [
        pod(f"r{i}-0", group=f"r{i}", namespace="rich", node="n0", phase="Running", memory="1Gi")
        for i in range(8)
    ]
    groups.append(podgroup("p", 1, namespace="poor", phase="Running"))
    pods += [
        pod(f"p-{i}", group="p", namespace="poor", node="n0", phase="Running", memory="1Gi") for i in range(2)
    ]
    pods.append(pod("p-new", group="p", namespace="poor", memory="1Gi", created=T0))
    drf = DrfPlugin({})
    drf.switches = {"enableNamespaceOrder": namespace_order}
    return session_with([drf], nodes=[node("n0", cpu="10", extra=WIDE)], pods=pods, groups=groups)


@pytest.mark.parametrize(
    ("namespace_order", "victims"), [(True, 4), (False, 0)], ids=["namespaces-first", "jobs-only"]
)
def test_preemptable_weighs_namespaces_first(namespace_order: bool, victims: int) -> None:
    """With namespace order, rich gives pods while it stays above poor's 3/10: four, from 8/10 down to 4/10.
    A fifth would leave both at 3/10, where job shares decide, and they refuse."""
    ssn = _preempt_world(namespace_order)
    drf = ssn.plugins[0]
    candidates = [ssn.running.by_uid[PodUID(f"r{i}-0")].pod for i in range(8)]
    answer = drf.preemptable(ssn, ssn.snapshot.pods[PodUID("p-new")], candidates)
    assert len(answer) == victims


# --- the line's order is exact -----------------------------------------------------------------------


@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.booleans(), st.integers(0, 3)), min_size=1, max_size=12),
    st.lists(st.integers(0, 2), min_size=12, max_size=12),
)
def test_the_line_serves_the_order_of_whole_namespace_key_job_key(
    entries: list[tuple[str, bool, int]], drift: list[int]
) -> None:
    """Whatever the namespace keys do between turns, each pop is the first group of the order
    (gang whole, namespace key now, job key, seq) over the groups still in line."""
    keys = {"a": 0, "b": 0, "c": 0}

    class _Ssn:
        namespace_ordered = True

        def namespace_key(self, ns: str) -> tuple[int]:
            return (keys[ns],)

    line_entries: list[Entry] = []
    for seq, (ns, whole, job) in enumerate(entries):
        g = PodGroup(namespace=ns, name=f"g{seq}")
        line_entries.append(((whole, (job,)), seq, g))
    line = Line(cast(Session, _Ssn()), list(line_entries))
    left = list(line_entries)
    for turn in range(len(entries)):
        keys[entries[turn % len(entries)][0]] += drift[turn]
        best = min(left, key=lambda e: (e[0][0], keys[e[2].namespace], e[0], e[1]))
        assert line.pop() is best[2]
        left.remove(best)
    assert not line
