"""The harness itself: the stock kube-scheduler binds a pod to a fake node, the fake kubelet runs it,
completes it and confirms its deletion; a pod larger than every node stays Pending with a reason; the
control plane's version is detected and the scheduler config written in the apiVersion it loads."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes
from tests.e2e.controlplane import (
    SCHEDULER_API_V1,
    SCHEDULER_API_V1BETA2,
    SCHEDULER_API_V1BETA3,
    ControlPlane,
    ControlPlaneError,
    KubeVersion,
    _http,
    binary_version,
    scheduler_config_api_versions,
)
from tests.e2e.fake_kubelet import FakeKubelet

pytestmark = pytest.mark.e2e

# No apiVersion: start_scheduler writes the one this control plane's kube-scheduler loads.
STOCK_CONFIG = """
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
profiles:
  - schedulerName: default-scheduler
"""


@pytest.fixture
def stock_scheduler(control_plane: ControlPlane) -> None:
    control_plane.start_scheduler(STOCK_CONFIG)


def test_versions_are_detected(control_plane: ControlPlane) -> None:
    """The binary's ``--version`` and the server's ``/version`` agree; the config version follows them."""
    status, body = _http("GET", f"{control_plane.server_url}/version", control_plane.token)
    assert status == 200, body
    served = KubeVersion.parse(json.loads(body)["gitVersion"])
    assert served == binary_version("kube-apiserver") == control_plane.version
    expected = SCHEDULER_API_V1 if control_plane.scheduler_version.at_least(1, 25) else SCHEDULER_API_V1BETA3
    assert control_plane.scheduler_config_api_version == expected


def test_scheduler_runs_the_detected_config_version(
    stock_scheduler: None, control_plane: ControlPlane
) -> None:
    written = yaml.safe_load(control_plane.scheduler_config_path.read_text())
    assert written["apiVersion"] == control_plane.scheduler_config_api_version
    control_plane.check_alive()


def test_a_config_version_the_scheduler_cannot_load_is_refused(control_plane: ControlPlane) -> None:
    unknown = "kubescheduler.config.k8s.io/v1alpha1"
    with pytest.raises(ControlPlaneError, match="does not load"):
        control_plane.start_scheduler({"apiVersion": unknown, "profiles": [{"schedulerName": "x"}]})


@pytest.mark.parametrize(
    ("version", "accepted"),
    [
        ("v1.24.17", (SCHEDULER_API_V1BETA3, SCHEDULER_API_V1BETA2)),
        ("v1.25.0", (SCHEDULER_API_V1, SCHEDULER_API_V1BETA3, SCHEDULER_API_V1BETA2)),
        ("Kubernetes v1.28.7", (SCHEDULER_API_V1, SCHEDULER_API_V1BETA3)),
        ("v1.29.0-rc.1", (SCHEDULER_API_V1,)),
    ],
)
def test_scheduler_config_versions_by_release(version: str, accepted: tuple[str, ...]) -> None:
    assert scheduler_config_api_versions(KubeVersion.parse(version)) == accepted


async def test_pod_is_bound_and_runs(
    stock_scheduler: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
) -> None:
    nodes = await fake_nodes(3, cpu="8", memory="32Gi")
    await kube.create_pod(kube_api, namespace, kube.pod_manifest("plain", cpu="500m", memory="256Mi"))

    async def running() -> dict[str, Any] | None:
        fake_kubelet.check()
        pod = await kube.get_pod(kube_api, namespace, "plain")
        # The kubelet records the start once its status patch has answered: this GET may see the pod
        # Running first (as with the delete below).
        started = (namespace, "plain") in fake_kubelet.started
        return pod if started and pod.get("status", {}).get("phase") == "Running" else None

    pod = await kube.wait_for(running, 30, message="pod plain to be bound and Running")
    assert pod["spec"]["nodeName"] in nodes
    ready = kube.pod_condition(pod, "Ready")
    assert ready is not None and ready["status"] == "True"
    statuses = pod["status"]["containerStatuses"]
    assert [s["state"].get("running") is not None for s in statuses] == [True]
    assert (namespace, "plain") in fake_kubelet.started

    done = await fake_kubelet.succeed(namespace, "plain")
    assert done["status"]["phase"] == "Succeeded"
    assert done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 0


async def test_deletion_of_running_pod_is_confirmed(
    stock_scheduler: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
) -> None:
    await fake_nodes(1)
    await kube.create_pod(kube_api, namespace, kube.pod_manifest("victim"))

    async def running() -> bool:
        pod = await kube.get_pod(kube_api, namespace, "victim")
        return bool(pod.get("status", {}).get("phase") == "Running")

    await kube.wait_for(running, 30, message="pod victim to run")
    # A graceful delete of a running bound pod only completes when the (fake) kubelet confirms it;
    # terminal or unbound pods, by contrast, are removed by the apiserver at once.
    await kube.request(kube_api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/victim")

    async def gone() -> bool:
        try:
            await kube.get_pod(kube_api, namespace, "victim")
        except client.ApiException as err:
            return err.status == 404
        return False

    await kube.wait_for(gone, 30, message="pod victim to be deleted")

    # The kubelet records its confirmation once its DELETE returns; this test's GET, on the same event
    # loop, may see the 404 before that response is read, so the record is awaited, not asserted at once.
    async def confirmed() -> bool:
        return (namespace, "victim") in fake_kubelet.deleted

    await kube.wait_for(confirmed, 15, message="the fake kubelet to record its confirmation")


async def test_failed_pod_reports_exit_code(
    stock_scheduler: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
) -> None:
    await fake_nodes(1)
    await kube.create_pod(kube_api, namespace, kube.pod_manifest("crashes", containers=2))

    async def running() -> bool:
        pod = await kube.get_pod(kube_api, namespace, "crashes")
        return bool(pod.get("status", {}).get("phase") == "Running")

    await kube.wait_for(running, 30, message="pod crashes to run")
    pod = await fake_kubelet.fail(namespace, "crashes", 137, reason="OOMKilled", exit_codes={"c0": 0})
    assert pod["status"]["phase"] == "Failed"
    codes = {s["name"]: s["state"]["terminated"]["exitCode"] for s in pod["status"]["containerStatuses"]}
    assert codes == {"c0": 0, "c1": 137}

    # The kubelet never flips a terminal pod back, whatever events still arrive.
    await kube.request(
        kube_api,
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/crashes",
        body={"metadata": {"labels": {"touched": "yes"}}},
        content_type="application/merge-patch+json",
    )
    pod = await kube.get_pod(kube_api, namespace, "crashes")
    assert pod["status"]["phase"] == "Failed"


async def test_oversized_pod_stays_pending(
    stock_scheduler: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
) -> None:
    await fake_nodes(3, cpu="8")
    await kube.create_pod(kube_api, namespace, kube.pod_manifest("huge", cpu="9"))

    async def unschedulable() -> dict[str, Any] | None:
        pod = await kube.get_pod(kube_api, namespace, "huge")
        condition = kube.pod_condition(pod, "PodScheduled")
        if condition and condition.get("reason") == "Unschedulable":
            return dict(condition)
        return None

    condition = await kube.wait_for(unschedulable, 30, message="pod huge to be marked Unschedulable")
    assert "Insufficient cpu" in str(condition["message"])
    pod = await kube.get_pod(kube_api, namespace, "huge")
    assert pod["status"]["phase"] == "Pending"
    assert not pod["spec"].get("nodeName")
