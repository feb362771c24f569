"""Command admission: one row per rule, with the exact denial text."""

from __future__ import annotations

from typing import Any

import pytest

from admission import commands
from extender.core.model import Queue
from tests.admission.builders import Raw, judged, lookup

CLUSTER = lookup(Queue(name="q1"))
JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "name": "j1",
    "uid": "u1",
    "controller": True,
}
QUEUE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "q1", "uid": "u2"}
JOB_ACTIONS = "AbortJob, CompleteJob, RestartJob, ResumeJob, TerminateJob"


def command(action: Any = "AbortJob", target: Any = JOB, **target_fields: Any) -> Raw:
    cmd: Raw = {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"generateName": "j1-abortjob-", "namespace": "ns"},
    }
    if action is not None:
        cmd["action"] = action
    if target is not None:
        cmd["target"] = {**target, **target_fields} if isinstance(target, dict) else target
    return cmd


CASES: list[tuple[str, Raw, list[str]]] = [
    ("abort a job", command(), []),
    *((f"{a} a job", command(a), []) for a in ("ResumeJob", "RestartJob", "TerminateJob", "CompleteJob")),
    ("close a queue", command("CloseQueue", QUEUE), []),
    ("open a queue", command("OpenQueue", QUEUE), []),
    (
        "a policy-only action",
        command("RestartTask"),
        [f"action: must be one of {JOB_ACTIONS} for a Job target, got 'RestartTask'"],
    ),
    (
        "the internal sync action",
        command("SyncJob"),
        [f"action: must be one of {JOB_ACTIONS} for a Job target, got 'SyncJob'"],
    ),
    ("no action", command(None), [f"action: must be one of {JOB_ACTIONS} for a Job target, got none"]),
    (
        "a queue action on a job",
        command("CloseQueue"),
        [f"action: must be one of {JOB_ACTIONS} for a Job target, got 'CloseQueue'"],
    ),
    (
        "a job action on a queue",
        command("AbortJob", QUEUE),
        ["action: must be one of CloseQueue, OpenQueue for a Queue target, got 'AbortJob'"],
    ),
    (
        "no target",
        command(target=None),
        ["target: required; the Job or Queue to act on (apiVersion, kind, name, uid)"],
    ),
    (
        "target not an object",
        command(target="j1"),
        ["target: required; the Job or Queue to act on (apiVersion, kind, name, uid)"],
    ),
    ("target without a name", command(name=""), ["target.name: required; the name of the object to act on"]),
    (
        "target of an unknown kind",
        command(kind="Pod"),
        ["target.kind: must be Job or Queue, got 'Pod'"],
    ),
    (
        "a Kubernetes batch/v1 Job",
        command(apiVersion="batch/v1"),
        ["target.apiVersion: must be batch.volcano.sh/v1alpha1 for a Job target, got 'batch/v1'"],
    ),
    (
        "a queue target of the wrong version",
        command("OpenQueue", QUEUE, apiVersion="scheduling.volcano.sh/v1"),
        [
            "target.apiVersion: must be scheduling.volcano.sh/v1beta1 for a Queue target, "
            "got 'scheduling.volcano.sh/v1'"
        ],
    ),
    (
        "a missing queue",
        command("OpenQueue", QUEUE, name="gone"),
        ["target.name: queue 'gone' does not exist"],
    ),
]


@pytest.mark.parametrize(("new", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate(new: Raw, want: list[str]) -> None:
    assert [str(e) for e in commands.validate(new, None, CLUSTER)] == want


def test_delete_is_not_validated() -> None:
    assert judged("/commands/validate")(None, command(kind="Pod"), CLUSTER) == []
