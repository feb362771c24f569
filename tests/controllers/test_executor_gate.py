"""Lifting pumice's scheduling gate races our own annotation write (a plan's decision is written on the
pod at the same time): the guarded patch gets 409, and the gate is lifted after a fresh read. The e2e
GPU test found gated pods left waiting forever on v1.28 without this. Against the in-process API server
(tests.fakeapi)."""

from __future__ import annotations

import pytest

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.scheduling.kube_executor import KubeExecutor
from extender.api import labels as L
from tests.fakeapi import FakeApiServer, Recorded

POD = paths.PODS.item("p", namespace="ns")


def racing(api: FakeApiServer, conflicts: int) -> None:
    """A pod with our gate and another controller's; the first ``conflicts`` guarded patches lose to a
    concurrent write (the resourceVersion moves on, as our annotation write moves it)."""
    gates = [{"name": L.GANG_SCHEDULING_GATE}, {"name": "other.io/gate"}]
    api.seed(POD, {"metadata": {"name": "p", "namespace": "ns"}, "spec": {"schedulingGates": gates}})
    left = [conflicts]

    def concurrent_write(request: Recorded) -> None:
        if request.method != "PATCH":
            return
        if left[0]:
            left[0] -= 1
            api.touch(POD)
        else:  # the patch that wins is guarded by the version it read
            assert (
                request.body["metadata"]["resourceVersion"] == api.objects[POD]["metadata"]["resourceVersion"]
            )

    api.before = concurrent_write


def gates(api: FakeApiServer) -> list[dict[str, str]] | None:
    gates: list[dict[str, str]] | None = api.objects[POD]["spec"].get("schedulingGates")
    return gates


def reads(api: FakeApiServer) -> int:
    return api.hits().count(("GET", POD))


async def test_a_conflict_is_read_again_and_the_gate_lifted(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    racing(fake_api, conflicts=2)
    await KubeExecutor(kube).lift_gate("ns", "p")
    assert gates(fake_api) == [{"name": "other.io/gate"}]  # ours gone, the other controller's kept
    assert reads(fake_api) == 3


async def test_a_pod_that_keeps_losing_fails_the_lift(fake_api: FakeApiServer, kube: KubeClient) -> None:
    """The scheduler then drops the plan so the next cycle lifts again (tests/controllers/test_scheduler)."""
    racing(fake_api, conflicts=5)
    with pytest.raises(ApiError):
        await KubeExecutor(kube).lift_gate("ns", "p")
    current = gates(fake_api)
    assert current is not None and len(current) == 2
