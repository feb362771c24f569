"""gang: jobs whose gang is not whole go before jobs that only want extra replicas."""

from __future__ import annotations

import pytest

from extender.plugins.gang import GangPlugin
from tests.core.builders import conf_with, node, pod, podgroup, run
from tests.plugins.helpers import group, session


@pytest.mark.parametrize(
    ("phase", "key"),
    [
        ("Pending", (False,)),
        ("Inqueue", (False,)),
        ("Unknown", (False,)),
        ("Running", (True,)),
        ("Completed", (True,)),
    ],
    ids=lambda v: str(v),
)
def test_job_order(phase: str, key: tuple[bool]) -> None:
    ssn = session([GangPlugin({})], groups=[podgroup("g", 1, phase=phase)])
    assert GangPlugin({}).job_order(ssn, group(ssn, "g")) == key


def test_waiting_gang_before_older_running_job() -> None:
    """The older job runs and wants one more replica; the younger gang needs the last 2 cpu."""
    groups = [
        podgroup("running", 1, phase="Running", created="2024-01-01T00:00:00Z"),
        podgroup("waiting", 2, phase="Inqueue", created="2024-01-02T00:00:00Z"),
    ]
    pods = [
        pod("running-0", group="running", cpu="2", node="n0", phase="Running"),
        pod("running-1", group="running", cpu="1"),
        pod("waiting-0", group="waiting"),
        pod("waiting-1", group="waiting"),
    ]
    result = run([node("n0", cpu="4")], pods, groups, conf=conf_with("gang"))
    assert set(result.placements) == {"waiting-0", "waiting-1"}
