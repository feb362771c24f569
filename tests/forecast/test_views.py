"""The endpoint's items and pages."""

from __future__ import annotations

from extender.core.model import GroupKey
from extender.forecast.model import GroupForecast, Outlook, Position
from extender.forecast.views import continue_offset, continue_token, item, page

T = 1_800_000_000.0


def group(name: str, ns: str = "a", i: int = 1, ahead: tuple[str, ...] = ()) -> GroupForecast:
    return GroupForecast(
        key=GroupKey(f"{ns}/{name}"),
        queue="q",
        outlook=Outlook.ESTIMATED,
        start=T + 600,
        earliest=T + 300,
        latest=T + 900,
        position=Position(queue="q", in_queue=i, in_cluster=i, ahead=tuple(GroupKey(a) for a in ahead)),
    )


def test_item_names_only_what_is_ahead_in_its_own_namespace() -> None:
    doc = item(group("c", i=3, ahead=("b/secret", "a/first")), T)
    assert doc == {
        "namespace": "a",
        "name": "c",
        "queue": "q",
        "outlook": "Estimated",
        "position": {"queue": 3, "cluster": 3},
        "ahead": ["first"],
        "estimatedStart": "2027-01-15T08:10:00Z",
        "earliestStart": "2027-01-15T08:05:00Z",
        "latestStart": "2027-01-15T08:15:00Z",
        "waitSeconds": 600,
        "reason": None,
    }
    unknown = GroupForecast(key=GroupKey("a/u"), queue="q", outlook=Outlook.UNKNOWN, reason="why")
    assert item(unknown, T)["estimatedStart"] is None and item(unknown, T)["reason"] == "why"


def test_pages_and_their_tokens() -> None:
    groups = [group(f"g{i}", i=i) for i in range(1, 6)]
    first = page(groups, computed_at=T, now=T, offset=0, limit=2)
    assert [i["name"] for i in first["items"]] == ["g1", "g2"]
    assert first["metadata"]["remainingItemCount"] == 3
    offset = continue_offset(first["metadata"]["continue"], T)
    assert offset == 2
    last = page(groups, computed_at=T, now=T, offset=4, limit=2)
    assert [i["name"] for i in last["items"]] == ["g5"] and "continue" not in last["metadata"]
    assert continue_offset(continue_token(T, 2), T + 1) is None  # cut from another forecast
    assert continue_offset("not a token", T) is None
