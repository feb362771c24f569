"""Lifting pumice's scheduling gate races our own annotation write (a plan's decision is written on the
pod at the same time): the guarded patch gets 409, and the gate is lifted after a fresh read. The e2e
GPU test found gated pods left waiting forever on v1.28 without this."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.kube.client import ApiError
from controllers.scheduling.kube_executor import KubeExecutor
from extender.api import labels as L


class RacingClient:
    """A pod with our gate and another controller's; the first ``conflicts`` guarded patches lose to a
    concurrent write (the resourceVersion moves on, as our annotation write moves it)."""

    def __init__(self, conflicts: int) -> None:
        self.conflicts = conflicts
        self.version = 1
        self.gates: list[dict[str, str]] | None = [
            {"name": L.GANG_SCHEDULING_GATE},
            {"name": "other.io/gate"},
        ]
        self.reads = 0

    async def get(self, path: str) -> dict[str, Any]:
        self.reads += 1
        return {"metadata": {"resourceVersion": str(self.version)}, "spec": {"schedulingGates": self.gates}}

    async def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.conflicts:
            self.conflicts -= 1
            self.version += 1
            raise ApiError(409, {"reason": "Conflict"}, "PATCH", path)
        assert body["metadata"]["resourceVersion"] == str(self.version)
        self.gates = body["spec"]["schedulingGates"]
        return {}


async def test_a_conflict_is_read_again_and_the_gate_lifted() -> None:
    client = RacingClient(conflicts=2)
    await KubeExecutor(client).lift_gate("ns", "p")  # type: ignore[arg-type]
    assert client.gates == [{"name": "other.io/gate"}]  # ours gone, the other controller's kept
    assert client.reads == 3


async def test_a_pod_that_keeps_losing_fails_the_lift() -> None:
    """The scheduler then drops the plan so the next cycle lifts again (tests/controllers/test_scheduler)."""
    client = RacingClient(conflicts=5)
    with pytest.raises(ApiError):
        await KubeExecutor(client).lift_gate("ns", "p")  # type: ignore[arg-type]
    assert client.gates is not None and len(client.gates) == 2
