"""task-topology and numa-aware end to end: a real kube-apiserver + kube-scheduler, fake nodes, a fake
kubelet, pumice on a conf with both plugins.

What is asserted is what a user sees: where the pods are bound. The usual placement (emptiest node, then
lowest name) would spread the affine roles and put the NUMA pod on the first node.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

PG = "scheduling.volcano.sh/v1beta1"
NODEINFO = "nodeinfo.volcano.sh/v1alpha1"

CONF = """\
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
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: numa-aware
"""


@pytest.fixture
def topo_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=CONF)


@pytest_asyncio.fixture(loop_scope="function")
async def numatopologies(kube_api: client.ApiClient) -> AsyncIterator[list[str]]:
    """Names of Numatopologies to delete after the test (they are cluster-scoped)."""
    names: list[str] = []
    yield names
    for name in names:
        try:
            await kube.request(
                kube_api, "DELETE", f"{kube.collection_path(NODEINFO, 'numatopologies')}/{name}"
            )
        except ApiException as err:
            if err.status != 404:
                raise


async def bound(api: client.ApiClient, ns: str, pods: list[str]) -> list[str] | None:
    nodes = [str((await kube.get_pod(api, ns, p))["spec"].get("nodeName") or "") for p in pods]
    return nodes if all(nodes) else None


async def test_affine_roles_bind_to_one_node(
    topo_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    await fake_nodes(3, cpu="4", memory="16Gi", labels=labels)
    body = {
        "apiVersion": PG,
        "kind": "PodGroup",
        "metadata": {"name": "tf", "annotations": {"volcano.sh/task-topology-affinity": "ps,worker"}},
        "spec": {"minMember": 3, "queue": "default"},
    }
    await kube.request(kube_api, "POST", kube.collection_path(PG, "podgroups", namespace), body=body)
    pods = []
    for role, i in (("ps", 0), ("worker", 0), ("worker", 1)):
        name = f"tf-{role}-{i}"
        annotations = {"scheduling.k8s.io/group-name": "tf", "volcano.sh/task-spec": role}
        manifest = kube.pod_manifest(
            name,
            cpu="1",
            memory="1Gi",
            scheduler_name="volcano",
            annotations=annotations,
            node_selector=labels,
        )
        await kube.create_pod(kube_api, namespace, manifest)
        pods.append(name)
    placed = await kube.wait_for(lambda: bound(kube_api, namespace, pods), 30, message="the job bound")
    assert len(set(placed)) == 1, placed


def _numatopology(node: str, free: str) -> dict[str, Any]:
    detail = {str(c): {"numa": c // 4, "socket": c // 4, "core": c % 4} for c in range(8)}
    return {
        "apiVersion": NODEINFO,
        "kind": "Numatopology",
        "metadata": {"name": node},
        "spec": {
            "policies": {"CPUManagerPolicy": "static", "TopologyManagerPolicy": "single-numa-node"},
            "numares": {"cpu": {"allocatable": free, "capacity": 8}},
            "cpuDetail": detail,
        },
    }


async def test_single_numa_node_pod_binds_where_one_numa_node_holds_it(
    topo_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    numatopologies: list[str],
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    nodes = await fake_nodes(2, cpu="8", memory="16Gi", labels=labels)
    # The first node has 3 free cpus on each NUMA node, the second 4 on NUMA node 0.
    for node, free in zip(nodes, ("1-3,5-7", "0-3"), strict=True):
        path = kube.collection_path(NODEINFO, "numatopologies")
        await kube.request(kube_api, "POST", path, body=_numatopology(node, free))
        numatopologies.append(node)
    manifest = kube.pod_manifest(
        "numa",
        cpu="4",
        memory="1Gi",
        scheduler_name="volcano",
        annotations={"volcano.sh/numa-topology-policy": "single-numa-node"},
        node_selector=labels,
    )
    for c in manifest["spec"]["containers"]:
        c["resources"]["limits"] = dict(c["resources"]["requests"])  # Guaranteed
    await kube.create_pod(kube_api, namespace, manifest)
    placed = await kube.wait_for(lambda: bound(kube_api, namespace, ["numa"]), 30, message="the pod bound")
    assert placed == [nodes[1]]
    # The decision was written on the pod before the bind, in Volcano's shape (4 cpus of NUMA node 0).
    annotations = (await kube.get_pod(kube_api, namespace, "numa"))["metadata"].get("annotations") or {}
    assert json.loads(annotations["volcano.sh/topology-decision"]) == {"numa": {"0": {"cpu": "4"}}}
