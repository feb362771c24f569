"""The StartEstimate condition: written and read back, rewritten only when it says something new."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.model import GroupKey
from extender.core.timestamps import epoch
from extender.forecast import condition
from extender.forecast.model import GroupForecast, Outlook, Position, wait_bucket

T = epoch("2026-01-02T10:00:00Z")
KEY = GroupKey("team-a/train")


def estimate(
    start: float | None = T + 3600,
    *,
    outlook: Outlook = Outlook.ESTIMATED,
    in_queue: int = 2,
    in_cluster: int = 5,
    earliest: float | None = None,
    latest: float | None = None,
    reason: str = "",
) -> GroupForecast:
    return GroupForecast(
        key=KEY,
        queue="research",
        outlook=outlook,
        start=start,
        earliest=start if earliest is None else earliest,
        latest=start if latest is None else latest,
        reason=reason,
        position=Position(queue="research", in_queue=in_queue, in_cluster=in_cluster),
    )


def test_written_and_read_back() -> None:
    c = condition.condition(estimate(earliest=T + 3000, latest=T + 4000), T)
    assert c == {
        "type": "StartEstimate",
        "status": "True",
        "reason": "Estimated",
        "message": "position 2 in queue research (5 in the cluster); start about 2026-01-02T11:00:00Z "
        "(between 2026-01-02T10:50:00Z and 2026-01-02T11:06:40Z)",
        "lastTransitionTime": "2026-01-02T10:00:00Z",
    }
    shown = condition.read(c)
    assert (shown.in_queue, shown.in_cluster, shown.queue) == (2, 5, "research")
    assert (shown.start, shown.earliest, shown.latest, shown.computed_at) == (T + 3600, T + 3000, T + 4000, T)


@pytest.mark.parametrize(
    ("f", "reason", "status", "tail"),
    [
        (
            estimate(None, outlook=Outlook.UNKNOWN, reason="waits on x"),
            "StartUnknown",
            "Unknown",
            "start unknown: waits on x",
        ),
        (
            estimate(None, outlook=Outlook.NEVER, reason="too big"),
            "WillNotStart",
            "False",
            "will not start: too big",
        ),
        (estimate(T - 10, outlook=Outlook.RUNNING), "Estimated", "True", "start about 2026-01-02T10:00:00Z"),
    ],
)
def test_outlooks(f: GroupForecast, reason: str, status: str, tail: str) -> None:
    c = condition.condition(f, T)
    assert (c["reason"], c["status"]) == (reason, status)
    assert c["message"].endswith(tail)
    assert condition.read(c).start == (None if f.outlook in (Outlook.UNKNOWN, Outlook.NEVER) else T)


def test_only_news_is_written() -> None:
    old = condition.condition(estimate(), T)
    later = T + 60

    def after(f: GroupForecast, now: float = later) -> dict[str, Any]:
        return condition.settle(old, condition.condition(f, now), now)

    assert after(estimate(T + 3600 + 300)) == old  # 5 minutes on a wait of an hour: not news
    assert after(estimate(T + 3600 + 600)) != old  # 10 minutes is more than a tenth of the wait left
    assert after(estimate(in_queue=1)) != old  # among the first ten, any move
    assert after(estimate(outlook=Outlook.UNKNOWN, start=None)) != old
    assert after(estimate(), now=T + condition.REFRESH + 1) != old  # refreshed now and then
    far = condition.condition(estimate(in_queue=200, in_cluster=400), T)
    assert (
        condition.settle(far, condition.condition(estimate(in_queue=190, in_cluster=390), later), later)
        == far
    )
    assert condition.settle(None, old, T) == old


def test_with_estimate_on_a_status() -> None:
    unschedulable = {
        "type": "Unschedulable",
        "status": "True",
        "reason": "NotEnoughResources",
        "message": "m",
    }
    desired = {"phase": "Inqueue", "conditions": [unschedulable]}
    shown = condition.with_estimate(desired, {}, estimate(), T, T)
    assert [c["type"] for c in shown["conditions"]] == ["Unschedulable", "StartEstimate"]
    # No word on the group yet: what stands is kept. Running: it goes.
    current = {"conditions": shown["conditions"]}
    assert condition.with_estimate(desired, current, None, T, T) == shown
    assert condition.with_estimate({"phase": "Running", "conditions": []}, current, estimate(), T, T) == {
        "phase": "Running",
        "conditions": [],
    }


def test_wait_buckets() -> None:
    assert wait_bucket(estimate(T + 30), T) == "under 1m"
    assert wait_bucket(estimate(T + 7200), T) == "under 6h"
    assert wait_bucket(estimate(T + 9 * 86400), T) == "longer"
    assert wait_bucket(estimate(T, outlook=Outlook.RUNNING), T) == "now"
    assert wait_bucket(estimate(None, outlook=Outlook.UNKNOWN), T) == "unknown"
    assert wait_bucket(estimate(None, outlook=Outlook.NEVER), T) == "never"
