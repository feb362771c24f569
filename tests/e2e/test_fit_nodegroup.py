"""resource-strategy-fit's proportional predicate and nodegroup's queue affinity, end to end: a real
kube-apiserver + kube-scheduler, fake nodes (GPUs as the extended resource ``nvidia.com/gpu``), a fake
kubelet, pumice on a conf with both plugins.

What is asserted is what a user sees in the API server: which pods are bound where, and the reason on the
PodGroup of the one held back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

PG = "scheduling.volcano.sh/v1beta1"
GPU = "nvidia.com/gpu"
NODEGROUP_LABEL = "volcano.sh/nodegroup-name"

# Volcano's default tiers with both plugins; nodegroup not strict, so queues without rules still run on
# unlabelled nodes (the GPU test's queue has none).
CONF = f"""\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: nodegroup
    arguments:
      strict: false
  - name: resource-strategy-fit
    arguments:
      proportional:
        enable: true
        resources: {GPU}
        resourceProportion:
          {GPU}.cpu: 1
          {GPU}.memory: 1
"""


@pytest.fixture
def fit_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=CONF)


@pytest_asyncio.fixture(loop_scope="function")
async def queues(kube_api: client.ApiClient, namespace: str) -> AsyncIterator[list[str]]:
    """Names of Queues to delete after the test (once the namespace and its PodGroups are gone)."""
    names: list[str] = []
    yield names
    await kube.delete_namespace(kube_api, namespace)
    for name in names:
        await kube.delete_when_admitted(kube_api, f"{kube.collection_path(PG, 'queues')}/{name}")


async def create_queue(api: client.ApiClient, names: list[str], name: str, spec: dict[str, Any]) -> None:
    body = {"apiVersion": PG, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    await kube.request(api, "POST", kube.collection_path(PG, "queues"), body=body)
    names.append(name)


async def create_group(
    api: client.ApiClient, ns: str, name: str, size: int, queue: str, selector: dict[str, str], **pod: Any
) -> list[str]:
    body = {
        "apiVersion": PG,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": size, "queue": queue},
    }
    await kube.request(api, "POST", kube.collection_path(PG, "podgroups", ns), body=body)
    names = [f"{name}-{i}" for i in range(size)]
    for p in names:
        manifest = kube.pod_manifest(
            p,
            scheduler_name="volcano",
            annotations={"scheduling.k8s.io/group-name": name},
            node_selector=selector,
            **pod,
        )
        await kube.create_pod(api, ns, manifest)
    return names


async def node_of(api: client.ApiClient, ns: str, name: str) -> str:
    pod = await kube.get_pod(api, ns, name)
    return str(pod["spec"].get("nodeName") or "")


async def unschedulable_message(api: client.ApiClient, ns: str, name: str) -> str:
    pg = await kube.request(api, "GET", f"{kube.collection_path(PG, 'podgroups', ns)}/{name}")
    conds = pg.get("status", {}).get("conditions") or []
    return next((str(c.get("message", "")) for c in conds if c.get("type") == "Unschedulable"), "")


async def test_a_gpu_node_keeps_cpu_for_its_idle_gpus(
    fit_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    queues: list[str],
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    [gpu_node] = await fake_nodes(1, cpu="6", memory="64Gi", gpus=4, labels=labels)
    queue = f"gpu-{test_id}"[:63]
    await create_queue(kube_api, queues, queue, {"weight": 1})
    # 4 cpu would leave 2 < 4 idle GPUs × 1 cpu: held back, and the PodGroup says why.
    [cpu_pod] = await create_group(kube_api, namespace, "cpu-only", 1, queue, labels, cpu="4", memory="1Gi")
    expected = f"node {gpu_node} would keep 2 cpu < 4 idle {GPU} × 1 cpu"

    async def told() -> str:
        message = await unschedulable_message(kube_api, namespace, "cpu-only")
        return message if expected in message else ""

    message = await kube.wait_for(told, 30, message="the proportional reason on the cpu-only PodGroup")
    assert f"{GPU} nodes keep cpu for their idle {GPU}" in message
    # A GPU pod is placed on the same node; the cpu-only pod stays held back (5 - 4 = 1 < 3 × 1).
    [gpu_pod] = await create_group(
        kube_api, namespace, "trainer", 1, queue, labels, cpu="1", memory="1Gi", gpus=1
    )
    assert (
        await kube.wait_for(lambda: node_of(kube_api, namespace, gpu_pod), 30, message="GPU pod bound")
        == gpu_node
    )

    async def retold() -> str:
        message = await unschedulable_message(kube_api, namespace, "cpu-only")
        return message if f"would keep 1 cpu < 3 idle {GPU}" in message else ""

    await kube.wait_for(retold, 30, message="the reason after the GPU pod took a GPU")
    assert await node_of(kube_api, namespace, cpu_pod) == ""


async def test_a_queue_with_required_node_group_affinity_lands_only_on_its_group(
    fit_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    queues: list[str],
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    # The other group's node is the biggest and comes first: without the rule the gang would use it.
    other = await fake_nodes(1, prefix=f"{test_id}-a", cpu="16", labels={**labels, NODEGROUP_LABEL: "other"})
    mine = await fake_nodes(2, prefix=f"{test_id}-b", cpu="4", labels={**labels, NODEGROUP_LABEL: "mine"})
    queue = f"ng-{test_id}"[:63]
    affinity = {"nodeGroupAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["mine"]}}
    await create_queue(kube_api, queues, queue, {"weight": 1, "affinity": affinity})
    pods = await create_group(kube_api, namespace, "gang", 4, queue, labels, cpu="2", memory="1Gi")

    async def all_bound() -> list[str] | None:
        nodes = [await node_of(kube_api, namespace, p) for p in pods]
        return nodes if all(nodes) else None

    nodes = await kube.wait_for(all_bound, 30, message="the gang bound")
    assert set(nodes) <= set(mine)
    assert other[0] not in nodes
    # A fifth pod has no room in its group and the big node is not for it: the reason names the rule's
    # nodes' shortfall, never the other group's room.
    await create_group(kube_api, namespace, "extra", 1, queue, labels, cpu="2", memory="1Gi")

    async def told() -> str:
        message = await unschedulable_message(kube_api, namespace, "extra")
        return message if "needs cpu 2, best node" in message else ""

    message = await kube.wait_for(told, 30, message="the extra pod's reason")
    assert other[0] not in message
