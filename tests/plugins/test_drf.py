"""drf: the job with the smallest dominant share goes first."""

from __future__ import annotations

import pytest

from extender.plugins.drf import DrfPlugin
from tests.core.builders import conf_with, node, pod, podgroup, run
from tests.plugins.helpers import group, session


def _holding() -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """``big`` (older) holds 6 of 8 cpu, ``small`` holds 1Gi of 16Gi memory; each wants one more pod."""
    groups = [
        podgroup("big", 1, phase="Running", created="2024-01-01T00:00:00Z"),
        podgroup("small", 1, phase="Running", created="2024-01-02T00:00:00Z"),
    ]
    pods = [
        pod("big-0", group="big", cpu="6", memory="1Gi", node="n0", phase="Running"),
        pod("small-0", group="small", cpu="100m", memory="1Gi", node="n0", phase="Running"),
        pod("big-1", group="big", cpu="1", memory="1Gi"),
        pod("small-1", group="small", cpu="1", memory="1Gi"),
    ]
    return pods, groups


def test_dominant_shares() -> None:
    pods, groups = _holding()
    drf = DrfPlugin({})
    ssn = session([drf], [node("n0", cpu="8", memory="16Gi")], pods, groups)
    big = group(ssn, "big")
    small = group(ssn, "small")
    assert drf.job_order(ssn, big) == pytest.approx((6 / 8,))
    assert drf.job_order(ssn, small) == pytest.approx((1 / 16,))  # memory dominates 0.1/8 cpu


@pytest.mark.parametrize(
    ("plugins", "winner"),
    [(("gang", "drf"), "small-1"), (("gang",), "big-1")],
    ids=["drf-favours-smaller-share", "age-without-drf"],
)
def test_drf_decides_who_gets_the_last_cpu(plugins: tuple[str, ...], winner: str) -> None:
    pods, groups = _holding()
    # 8 cpu: 6.1 held, room for exactly one more 1-cpu pod.
    result = run([node("n0", cpu="8", memory="16Gi")], pods, groups, conf=conf_with(*plugins))
    assert set(result.placements) == {winner}


def test_priority_tier_comes_before_drf() -> None:
    pods, groups = _holding()
    pods[2]["spec"]["priority"] = 10  # big-1: the big job is now the higher-priority one
    result = run([node("n0", cpu="8", memory="16Gi")], pods, groups)  # Volcano's default conf
    assert set(result.placements) == {"big-1"}


def test_pod_count_is_not_a_share() -> None:
    """Eight tiny pods hold 80% of the node's pod slots but almost no cpu or memory: their job's dominant
    share is small, and it goes before a job holding half the cpu (Volcano ignores the pods slot)."""
    groups = [
        podgroup("few", 1, phase="Running", created="2024-01-01T00:00:00Z"),
        podgroup("many", 1, phase="Running", created="2024-01-02T00:00:00Z"),
    ]
    pods = [pod("few-0", group="few", cpu="4", memory="1Gi", node="n0", phase="Running")]
    pods += [
        pod(f"many-{i}", group="many", cpu="10m", memory="1Mi", node="n0", phase="Running") for i in range(8)
    ]
    drf = DrfPlugin({})
    ssn = session([drf], [node("n0", cpu="8", memory="16Gi", pods=10)], pods, groups)
    assert drf.job_order(ssn, group(ssn, "many")) == pytest.approx((80 / 8000,))
    assert drf.job_order(ssn, group(ssn, "few")) == pytest.approx((0.5,))
