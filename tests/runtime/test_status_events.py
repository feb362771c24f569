"""PodGroup Events from the status writer: once per change of what the group waits on."""

from __future__ import annotations

from typing import Any

from controllers.reconcilers.status import StatusWriter


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str]] = []

    def record(self, ref: Any, *, type_: str, reason: str, note: str, action: str) -> None:
        self.events.append((ref.kind, type_, reason, note))


def status(
    phase: str, message: str = "", reason: str = "NotEnoughResources", running: int = 0
) -> dict[str, Any]:
    conds = [{"type": "Unschedulable", "status": "True", "reason": reason, "message": message}]
    return {"phase": phase, "conditions": conds if message else [], "running": running}


RAW = {
    "metadata": {
        "name": "g",
        "namespace": "ns",
        "uid": "u",
        "ownerReferences": [
            {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "ju"}
        ],
    },
    "spec": {"queue": "q1", "minMember": 2},
}


def test_events_follow_changes_of_reason_and_phase() -> None:
    rec = Recorder()
    w = StatusWriter(None, None, None, events=rec)  # type: ignore[arg-type]  # events alone: no cache, state, writes
    short = "gang 1/2 placeable: needs cpu 2"
    w._tell(RAW, status("Pending"), status("Pending", short))
    w._tell(RAW, status("Pending", short), status("Pending", short))  # no change: nothing
    w._tell(RAW, status("Pending", short), status("Inqueue"))
    w._tell(RAW, status("Inqueue"), status("Running", running=2))
    assert rec.events == [
        ("PodGroup", "Warning", "Unschedulable", f"NotEnoughResources: {short}"),
        ("PodGroup", "Normal", "Enqueued", "admitted to queue q1"),
        ("Job", "Normal", "Enqueued", "admitted to queue q1"),
        ("PodGroup", "Normal", "Scheduled", "gang scheduled: 2 pods running (minMember 2)"),
        ("Job", "Normal", "Scheduled", "gang scheduled: 2 pods running (minMember 2)"),
    ]


def test_moving_figures_are_not_a_new_reason() -> None:
    """Idle capacity changes with every pod that comes or goes: an Event only when what blocks changes."""
    rec = Recorder()
    w = StatusWriter(None, None, None, events=rec)  # type: ignore[arg-type]  # events alone: no cache, state, writes
    first = status("Pending", "cluster over-committed: minResources cpu 9 > idle cpu 7.6")
    fewer = status("Pending", "cluster over-committed: minResources cpu 9 > idle cpu 5.2")
    memory = status("Pending", "cluster over-committed: minResources memory 9Gi > idle memory 2Gi")
    queue = status("Pending", "queue q1: cpu 9/8 over capability", reason="NotEnqueued")
    w._tell(RAW, status("Pending"), first)
    w._tell(RAW, first, fewer)
    w._tell(RAW, fewer, memory)
    w._tell(RAW, memory, queue)
    assert [e[3] for e in rec.events] == [
        "NotEnoughResources: cluster over-committed: minResources cpu 9 > idle cpu 7.6",
        "NotEnoughResources: cluster over-committed: minResources memory 9Gi > idle memory 2Gi",
        "NotEnqueued: queue q1: cpu 9/8 over capability",
    ]


def test_a_podgroup_without_a_job_tells_only_itself() -> None:
    rec = Recorder()
    w = StatusWriter(None, None, None, events=rec)  # type: ignore[arg-type]  # events alone: no cache, state, writes
    raw = {"metadata": {"name": "g", "namespace": "ns", "uid": "u"}, "spec": {}}
    w._tell(raw, status("Pending"), status("Inqueue"))
    assert rec.events == [("PodGroup", "Normal", "Enqueued", "admitted to queue default")]
