"""The status writer shows the latest forecast on each waiting PodGroup, in the status write it makes
anyway (so whatever fences that write fences the estimate), and only when the estimate says something new."""

from __future__ import annotations

from typing import Any

from controllers.reconcilers.status import StatusWriter
from controllers.scheduling.scheduler import build_scheduler
from controllers.state.cluster import cluster_state
from extender.core.model import GroupKey
from extender.forecast.model import EMPTY, Forecast, GroupForecast, Outlook, Position
from extender.plugins.registry import load_conf
from tests.controllers.test_scheduler import RecordingExecutor
from tests.core.builders import gang, node, queue

T = 1_800_000_000.0
KEY = GroupKey("default/wait")


def forecast(start: float, at: float = T, in_queue: int = 1) -> Forecast:
    g = GroupForecast(
        key=KEY,
        queue="default",
        outlook=Outlook.ESTIMATED,
        start=start,
        earliest=start,
        latest=start,
        position=Position(queue="default", in_queue=in_queue, in_cluster=in_queue),
    )
    return Forecast(computed_at=at, groups={KEY: g})


def writer() -> tuple[StatusWriter, list[Forecast], Any]:
    state = cluster_state(frozenset({"volcano"}))
    h = state.cache.handlers()
    h["nodes"].upsert(node("n", cpu="1"))
    h["queues"].upsert(queue("default"))
    g, pods = gang("wait", 1, cpu="2")
    g["metadata"]["resourceVersion"] = "7"
    h["podgroups"].upsert(g)
    for p in pods:
        h["pods"].upsert(p)
    s = build_scheduler(state, load_conf(), RecordingExecutor())
    s.loop.cycle()
    s.shared.decided += 1
    latest = [EMPTY]
    w = StatusWriter(state.cache, s.shared, RecordingExecutor(), estimates=lambda: latest[0])
    return w, latest, state


Writes = list[tuple[str, dict[str, Any], bool, str, Any]]


def groups(writes: Writes) -> Writes:
    return [w for w in writes if "/podgroups/" in w[0]]


def estimate_of(writes: Writes) -> dict[str, Any] | None:
    for _, status, *_ in groups(writes):
        for c in status.get("conditions") or ():
            if c["type"] == "StartEstimate":
                return dict(c)
    return None


def echo(state: Any, status: dict[str, Any]) -> None:
    """The watch shows what was written."""
    raw = dict(state.cache.raw_podgroups()[0][1])
    raw["status"] = status
    raw["metadata"] = {**raw["metadata"], "resourceVersion": str(int(raw["metadata"]["resourceVersion"]) + 1)}
    state.cache.handlers()["podgroups"].upsert(raw)


def test_the_estimate_rides_the_status_write_and_only_news_is_written() -> None:
    w, latest, state = writer()
    writes = groups(w._pending_writes())
    assert writes and estimate_of(writes) is None  # no forecast yet
    echo(state, writes[0][1])
    latest[0] = forecast(T + 3600)
    writes = groups(w._pending_writes())
    # Through the object (Volcano's PodGroup has no status subresource), guarded by its resourceVersion.
    assert len(writes) == 1 and writes[0][0].endswith("/podgroups/wait") and not writes[0][2]
    assert writes[0][3] == "8"
    shown = estimate_of(writes)
    assert shown is not None and "start about" in shown["message"]
    echo(state, writes[0][1])
    latest[0] = forecast(T + 3660, at=T + 30)  # a minute later than said: nothing new
    assert groups(w._pending_writes()) == []
    latest[0] = forecast(T + 3600, at=T + 60, in_queue=2)  # it moved back in line
    assert estimate_of(w._pending_writes()) is not None
