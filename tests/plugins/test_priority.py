"""priority: higher-priority jobs are ordered, admitted and planned first."""

from __future__ import annotations

import pytest

from extender.plugins.priority import PriorityPlugin
from tests.core.builders import conf_with, gang, node, pod, podgroup, priority_class, run
from tests.plugins.helpers import group, session

PCS = [priority_class("low", 10), priority_class("high", 1000)]


@pytest.mark.parametrize(
    ("priority_class_name", "pod_priorities", "expected"),
    [
        ("high", [0], 1000),
        ("low", [500], 10),  # the class wins over pod priorities
        ("", [3, 7, 5], 7),  # no class: the highest pod priority, as Volcano
        ("", [], 0),
        ("missing", [4], 4),
    ],
    ids=["class", "class-over-pods", "max-pod", "no-pods", "unknown-class"],
)
def test_group_priority(priority_class_name: str, pod_priorities: list[int], expected: int) -> None:
    pg = podgroup("g", 1, priority_class=priority_class_name)
    pods = [pod(f"p{i}", group="g", priority=p) for i, p in enumerate(pod_priorities)]
    ssn = session([PriorityPlugin({})], pods=pods, groups=[pg], priority_classes=PCS)
    g = group(ssn, "g")
    assert ssn.snapshot.group_priority(g) == expected
    assert PriorityPlugin({}).job_order(ssn, g) == (-expected,)


# Room for one 3-cpu gang. (id, conf plugins, expected winner)
ORDER = [
    ("priority-beats-age", ("priority", "gang"), "young"),
    ("age-without-priority", ("gang",), "old"),
]


@pytest.mark.parametrize(("plugins", "winner"), [r[1:] for r in ORDER], ids=[r[0] for r in ORDER])
def test_priority_decides_who_gets_the_room(plugins: tuple[str, ...], winner: str) -> None:
    old, po = gang("old", 3)
    young, py = gang("young", 3)
    old["metadata"]["creationTimestamp"] = "2024-01-01T00:00:00Z"
    young["metadata"]["creationTimestamp"] = "2024-01-02T00:00:00Z"
    young["spec"]["priorityClassName"] = "high"
    result = run([node("n0", cpu="4")], po + py, [old, young], conf=conf_with(*plugins), priority_classes=PCS)
    assert {uid.rsplit("-", 1)[0] for uid in result.placements} == {winner}


def test_pod_priority_orders_pods_within_a_gang() -> None:
    """Elastic gang with room for two pods: the higher-priority pods go first."""
    pg = podgroup("g", 1, phase="Inqueue")
    pods = [pod("a", group="g", priority=1), pod("b", group="g", priority=9), pod("c", group="g", priority=5)]
    result = run([node("n0", cpu="2")], pods, [pg])
    assert set(result.placements) == {"b", "c"}


def test_plain_pod_priority_orders_implicit_groups() -> None:
    pods = [pod("lo", cpu="3", priority=1), pod("hi", cpu="3", priority=100, created="2024-02-01T00:00:00Z")]
    result = run([node("n0", cpu="4")], pods, conf=conf_with("priority", "gang", actions="allocate"))
    assert set(result.placements) == {"hi"}
