"""Topology spread (whenUnsatisfiable: DoNotSchedule): nodes, pods and groups in, placements out."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from extender.core.model import GroupKey, PodUID
from tests.core.builders import HOSTNAME, ZONE, Raw, gang, node, pod, podgroup, run, spread_by

WEB = {"app": "web"}


def zoned(zones: str, per_zone: int = 2, cpu: str = "8") -> list[Raw]:
    """``per_zone`` nodes in each zone, named ``<zone><i>``."""
    return [
        node(f"{z}{i}", cpu=cpu, labels={ZONE: z, HOSTNAME: f"{z}{i}"})
        for z in zones
        for i in range(per_zone)
    ]


def running(name: str, on: str, labels: dict[str, str] = WEB, **kw: Any) -> Raw:
    return pod(name, node=on, phase="Running", scheduler="default-scheduler", labels=labels, **kw)


def zones_of(placements: dict[Any, str]) -> Counter[str]:
    return Counter(n[0] for n in placements.values())


def test_gang_spreads_with_max_skew_one_across_zones() -> None:
    pg, pods = gang("web", 6, labels=WEB, spread=[spread_by(ZONE, 1, app="web")])
    result = run(zoned("abc"), pods, [pg])
    assert result.ready == {"default/web"}
    assert zones_of(result.placements) == {"a": 2, "b": 2, "c": 2}


def test_binpacking_cannot_override_a_hard_spread() -> None:
    """binpack alone would stack the gang on one node; the constraint still spreads it."""
    conf = "actions: enqueue, allocate\ntiers:\n- plugins:\n  - name: binpack\n"
    pg, pods = gang("web", 3, labels=WEB, spread=[spread_by(ZONE, 1, app="web")])
    result = run(zoned("abc"), pods, [pg], conf=conf)
    assert zones_of(result.placements) == {"a": 1, "b": 1, "c": 1}


# (id, nodes, pods there, constraint overrides, gang size, expected zone counts of the gang, or None
# when it cannot be placed)
SPREAD: list[tuple[str, list[Raw], list[Raw], dict[str, Any], int, dict[str, int] | None]] = [
    (
        "existing-skew-is-evened-out",
        zoned("abc"),
        [running("x", "a0"), running("y", "a1")],
        {},
        2,
        {"b": 1, "c": 1},
    ),
    (
        "max-skew-two",
        zoned("ab"),
        [running("x", "a0"), running("y", "a1"), running("z", "a0")],
        {"maxSkew": 2},
        1,
        {"b": 1},
    ),
    # a0 fills up after two pods; a sixth would put b two ahead.
    ("too-skewed-to-place", [*zoned("a", 1, cpu="2"), *zoned("b", 1)], [], {}, 6, None),
    (
        "nodes-without-the-key-are-not-eligible",
        [*zoned("a", per_zone=1), node("bare", cpu="64")],
        [],
        {},
        2,
        {"a": 2},
    ),
    # minDomains 3 with two zones: the global minimum counts as 0, so each zone takes maxSkew pods.
    ("min-domains", zoned("ab"), [], {"minDomains": 3}, 3, None),
    ("min-domains-met", zoned("ab"), [], {"minDomains": 2}, 3, {"a": 2, "b": 1}),
    # Pods of another namespace, and pods being deleted, do not count: counted, they would send both
    # pods to b.
    (
        "other-namespace-ignored",
        zoned("ab"),
        [running("x", "a0", namespace="sys"), running("y", "a1", namespace="sys")],
        {},
        2,
        {"a": 1, "b": 1},
    ),
    (
        "terminating-ignored",
        zoned("ab"),
        [running("x", "a0", deleting=True), running("y", "a1", deleting=True)],
        {},
        2,
        {"a": 1, "b": 1},
    ),
]


@pytest.mark.parametrize(
    ("node_list", "existing", "overrides", "size", "expected"),
    [r[1:] for r in SPREAD],
    ids=[r[0] for r in SPREAD],
)
def test_spread_table(
    node_list: list[Raw],
    existing: list[Raw],
    overrides: dict[str, Any],
    size: int,
    expected: dict[str, int] | None,
) -> None:
    constraint = {**spread_by(ZONE, 1, app="web"), **overrides}
    pg, pods = gang("web", size, labels=WEB, spread=[constraint])
    result = run(node_list, [*existing, *pods], [pg])
    if expected is not None:
        assert zones_of(result.placements) == expected
    else:
        assert result.placements == {}
        assert "topology spread over topology.kubernetes.io/zone would exceed maxSkew 1 (app=web)" in (
            result.unschedulable[GroupKey("default/web")].message
        )


def test_min_domains_refuses_a_third_pod_on_two_zones() -> None:
    pg, pods = gang("web", 3, labels=WEB, spread=[{**spread_by(ZONE, 1, app="web"), "minDomains": 3}])
    result = run(zoned("ab"), pods, [pg])
    assert result.placements == {}
    assert result.unschedulable[GroupKey("default/web")].message.startswith(
        "gang 2/3 placeable: no node satisfies"
    )


def test_node_affinity_policy_honor_limits_the_domains() -> None:
    """Zone c fails the pod's node affinity, so it is no domain: a and b alone set the minimum."""
    affinity = [[{"key": ZONE, "operator": "In", "values": ["a", "b"]}]]
    pg, pods = gang("web", 4, labels=WEB, affinity=affinity, spread=[spread_by(ZONE, 1, app="web")])
    result = run(zoned("abc"), pods, [pg])
    assert zones_of(result.placements) == {"a": 2, "b": 2}
    ignore = {**spread_by(ZONE, 1, app="web"), "nodeAffinityPolicy": "Ignore"}
    pg, pods = gang("web", 4, labels=WEB, affinity=affinity, spread=[ignore])
    result = run(zoned("abc"), pods, [pg])
    # c counts as an empty domain the pod can never use: the minimum stays 0, one pod per zone.
    assert result.placements == {}


def test_node_taints_policy() -> None:
    """A tainted zone is still a domain (Ignore, the default) unless the constraint says Honor."""
    taint = [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    node_list = [*zoned("ab"), node("c0", cpu="8", labels={ZONE: "c", HOSTNAME: "c0"}, taints=taint)]
    pg, pods = gang("web", 4, labels=WEB, spread=[spread_by(ZONE, 1, app="web")])
    assert run(node_list, pods, [pg]).placements == {}
    honor = {**spread_by(ZONE, 1, app="web"), "nodeTaintsPolicy": "Honor"}
    pg, pods = gang("web", 4, labels=WEB, spread=[honor])
    assert zones_of(run(node_list, pods, [pg]).placements) == {"a": 2, "b": 2}


def test_schedule_anyway_never_refuses() -> None:
    pg, pods = gang("web", 5, labels=WEB, spread=[spread_by(ZONE, 1, hard=False, app="web")])
    result = run(zoned("ab", per_zone=1, cpu="8"), pods, [pg])
    assert len(result.placements) == 5


def test_pod_not_matching_its_own_selector() -> None:
    """Only matching pods count, and the incoming pod adds itself only when it matches."""
    existing = [running("x", "a0"), running("y", "a1")]
    p = pod("p", group="j", labels={"app": "other"}, spread=[spread_by(ZONE, 2, app="web")])
    result = run(zoned("ab"), [*existing, p], [podgroup("j", 1, phase="Inqueue")])
    assert result.placements[PodUID("p")] == "a0"  # a: 2 + 0 - 0 <= 2; the default conf's scores tie
    p = pod("p", group="j", labels=WEB, spread=[spread_by(ZONE, 2, app="web")])
    result = run(zoned("ab"), [*existing, p], [podgroup("j", 1, phase="Inqueue")])
    assert result.placements[PodUID("p")][0] == "b"  # a: 2 + 1 - 0 > 2
