"""PodGroup Events from the status writer: once per change of what the group waits on."""

from __future__ import annotations

from typing import Any

from controllers.status import StatusWriter


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
        self.events.append((type_, reason, note))


def status(phase: str, message: str = "") -> dict[str, Any]:
    conds = [{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": message}]
    return {"phase": phase, "conditions": conds if message else []}


def test_events_follow_changes_of_reason_and_phase() -> None:
    rec = Recorder()
    w = StatusWriter(None, None, None, events=rec)  # type: ignore[arg-type]
    raw = {"metadata": {"name": "g", "namespace": "ns", "uid": "u"}}
    w._tell(raw, status("Pending"), status("Pending", "gang 1/2 placeable: needs cpu 2"))
    w._tell(
        raw,
        status("Pending", "gang 1/2 placeable: needs cpu 2"),
        status("Pending", "gang 1/2 placeable: needs cpu 2"),
    )
    w._tell(raw, status("Pending", "gang 1/2 placeable: needs cpu 2"), status("Inqueue"))
    w._tell(raw, status("Inqueue"), status("Running"))
    assert rec.events == [
        ("Warning", "Unschedulable", "gang 1/2 placeable: needs cpu 2"),
        ("Normal", "Inqueue", "admitted to its queue"),
        ("Normal", "Running", "gang scheduled: minMember pods running"),
    ]
