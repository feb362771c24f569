"""What current clusters do that v1.24 did not, and placement rules kube-scheduler checks too, end to end.

- On 1.28+ gang pods are admitted with pumice's scheduling gate (the pod webhook is narrowed to pumice's
  pods by matchConditions) and the gate is lifted once the whole gang is planned.
- A gang whose members repel each other (required anti-affinity per hostname) is planned on distinct
  nodes by pumice itself: kube-scheduler never has to refuse a plan.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.test_gang import PG, _all_bound

pytestmark = pytest.mark.e2e
GATE = "pumice.dev/gang"


async def _podgroup(api: client.ApiClient, ns: str, name: str, min_member: int) -> None:
    body = {
        "apiVersion": PG,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": min_member},
    }
    await kube.request(api, "POST", kube.collection_path(PG, "podgroups", ns), body=body)


def _member(name: str, group: str, selector: dict[str, str], **extra: Any) -> dict[str, Any]:
    return kube.pod_manifest(
        name, cpu="1", scheduler_name="volcano", annotations={"scheduling.k8s.io/group-name": group},
        node_selector=selector, **extra,
    )  # fmt: skip


async def test_gang_pods_are_gated_until_the_whole_gang_is_planned(
    control_plane: ControlPlane, pumice: None, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, fake_kubelet: FakeKubelet, test_id: str,
) -> None:  # fmt: skip
    if (control_plane.version.major, control_plane.version.minor) < (1, 28):
        pytest.skip(
            f"scheduling gates with matchConditions need Kubernetes 1.28+ (this is {control_plane.version})"
        )
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="4", labels=sel)
    await _podgroup(kube_api, namespace, "g", 2)
    first = await kube.create_pod(kube_api, namespace, _member("g-0", "g", sel))
    assert [g["name"] for g in first["spec"].get("schedulingGates") or []] == [GATE], "gated at admission"
    plain = await kube.create_pod(kube_api, namespace, kube.pod_manifest("plain", cpu="1", node_selector=sel))
    assert not plain["spec"].get("schedulingGates"), "other schedulers' pods are not touched"
    pod = await kube.get_pod(kube_api, namespace, "g-0")
    assert not pod["spec"].get("nodeName") and pod["spec"].get("schedulingGates")
    await kube.create_pod(kube_api, namespace, _member("g-1", "g", sel))
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, ["g-0", "g-1"]), 30, message="the gang bound")
    for name in ("g-0", "g-1"):
        assert not (await kube.get_pod(kube_api, namespace, name))["spec"].get("schedulingGates")


async def test_a_gang_with_required_anti_affinity_lands_on_distinct_nodes(
    pumice: None, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, fake_kubelet: FakeKubelet, test_id: str,
) -> None:  # fmt: skip
    sel = node_labels(test_id)
    nodes = await fake_nodes(3, cpu="8", labels=sel)  # room for all three on any one node
    await _podgroup(kube_api, namespace, "spread", 3)
    names = [f"spread-{i}" for i in range(3)]
    term = {"labelSelector": {"matchLabels": {"gang": test_id}}, "topologyKey": "kubernetes.io/hostname"}
    for name in names:
        manifest = _member(name, "spread", sel, labels={"gang": test_id})
        manifest["spec"]["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        }
        await kube.create_pod(kube_api, namespace, manifest)
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, names), 30, message="the gang bound")
    placed = [(await kube.get_pod(kube_api, namespace, n))["spec"]["nodeName"] for n in names]
    assert sorted(placed) == sorted(nodes), placed
    # pumice planned them apart itself: kube-scheduler never had to refuse a planned node.
    events = (await kube.list_objects(kube_api, f"/api/v1/namespaces/{namespace}/events"))["items"]
    refusals = [
        e.get("message", "") for e in events if "rejected by kube-scheduler" in (e.get("message") or "")
    ]
    assert not refusals, refusals
