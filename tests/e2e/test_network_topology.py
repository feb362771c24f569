"""network-topology-aware end to end: a real kube-apiserver + kube-scheduler, fake nodes grouped into two
leaves, a fake kubelet, pumice on a conf with the plugin.

The leaves interleave the nodes by name, so the usual placement (emptiest node, then lowest name) would
cross them. Leaves come from HyperNode objects (the informer and the CRD) in one test and from a node
label the conf names (discovery) in the other. What is asserted is what a user sees: where the pods are
bound, and the reason on the PodGroup of a hard gang no leaf can hold.
"""

from __future__ import annotations

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
TOPOLOGY = "topology.volcano.sh/v1alpha1"
LEAF_LABEL = "pumice.e2e/leaf"

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
  - name: network-topology-aware
    arguments:
      hypernode.discovery.labels: {LEAF_LABEL}
"""


@pytest.fixture
def topology_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=CONF)


@pytest_asyncio.fixture(loop_scope="function")
async def hypernodes(kube_api: client.ApiClient) -> AsyncIterator[list[str]]:
    """Names of HyperNodes to delete after the test (they are cluster-scoped)."""
    names: list[str] = []
    yield names
    for name in names:
        try:
            await kube.request(kube_api, "DELETE", f"{kube.collection_path(TOPOLOGY, 'hypernodes')}/{name}")
        except ApiException as err:
            if err.status != 404:
                raise


async def create_hypernode(
    api: client.ApiClient, names: list[str], name: str, tier: int, members: list[Any]
) -> None:
    body = {
        "apiVersion": TOPOLOGY,
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }
    await kube.request(api, "POST", kube.collection_path(TOPOLOGY, "hypernodes"), body=body)
    names.append(name)


async def create_gang(
    api: client.ApiClient, ns: str, name: str, size: int, topology: dict[str, Any], selector: dict[str, str]
) -> list[str]:
    body = {
        "apiVersion": PG,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": size, "queue": "default", "networkTopology": topology},
    }
    await kube.request(api, "POST", kube.collection_path(PG, "podgroups", ns), body=body)
    names = [f"{name}-{i}" for i in range(size)]
    for p in names:
        manifest = kube.pod_manifest(
            p,
            cpu="2",
            memory="1Gi",
            scheduler_name="volcano",
            annotations={"scheduling.k8s.io/group-name": name},
            node_selector=selector,
        )
        await kube.create_pod(api, ns, manifest)
    return names


async def bound(api: client.ApiClient, ns: str, pods: list[str]) -> list[str] | None:
    nodes = [str((await kube.get_pod(api, ns, p))["spec"].get("nodeName") or "") for p in pods]
    return nodes if all(nodes) else None


async def unschedulable_message(api: client.ApiClient, ns: str, name: str) -> str:
    pg = await kube.request(api, "GET", f"{kube.collection_path(PG, 'podgroups', ns)}/{name}")
    conds = pg.get("status", {}).get("conditions") or []
    return next((str(c.get("message", "")) for c in conds if c.get("type") == "Unschedulable"), "")


async def test_hard_gang_lands_under_one_hypernode_and_a_larger_one_is_refused(
    topology_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    hypernodes: list[str],
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    nodes = await fake_nodes(4, cpu="4", memory="16Gi", labels=labels)
    leaf_x, leaf_y = f"{test_id}-x"[:63], f"{test_id}-y"[:63]
    # Interleaved: x holds nodes 0 and 2, y nodes 1 and 3; the spine (tier 2) both.
    await create_hypernode(
        kube_api,
        hypernodes,
        leaf_x,
        1,
        [{"type": "Node", "selector": {"exactMatch": {"name": n}}} for n in nodes[0::2]],
    )
    await create_hypernode(
        kube_api,
        hypernodes,
        leaf_y,
        1,
        [{"type": "Node", "selector": {"regexMatch": {"pattern": f"^({nodes[1]}|{nodes[3]})$"}}}],
    )
    spine = f"{test_id}-s"[:63]
    await create_hypernode(
        kube_api,
        hypernodes,
        spine,
        2,
        [{"type": "HyperNode", "selector": {"exactMatch": {"name": h}}} for h in (leaf_x, leaf_y)],
    )
    hard = {"mode": "hard", "highestTierAllowed": 1}
    pods = await create_gang(kube_api, namespace, "fits", 4, hard, labels)
    placed = await kube.wait_for(lambda: bound(kube_api, namespace, pods), 30, message="the 4-pod gang bound")
    assert set(placed) in ({nodes[0], nodes[2]}, {nodes[1], nodes[3]})
    # 6 x 2 cpu: the other leaf has 8 cpu free; hard at tier 1 never crosses to the spine.
    big = await create_gang(kube_api, namespace, "big", 6, hard, labels)
    expected = "network topology hard, highestTierAllowed 1: no tier-1 HyperNode has room for 6 pods of cpu 2"

    async def told() -> str:
        message = await unschedulable_message(kube_api, namespace, "big")
        return message if expected in message else ""

    message = await kube.wait_for(told, 30, message="the hard refusal on the big PodGroup")
    assert "(best " in message
    assert await bound(kube_api, namespace, big[:1]) is None


async def test_soft_gang_from_discovered_leaves_spreads_only_when_it_must(
    topology_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    x = await fake_nodes(
        1, prefix=f"{test_id}-a", cpu="4", memory="16Gi", labels={**labels, LEAF_LABEL: f"{test_id}-x"[:63]}
    )
    y = await fake_nodes(
        1, prefix=f"{test_id}-b", cpu="4", memory="16Gi", labels={**labels, LEAF_LABEL: f"{test_id}-y"[:63]}
    )
    x += await fake_nodes(
        1, prefix=f"{test_id}-c", cpu="4", memory="16Gi", labels={**labels, LEAF_LABEL: f"{test_id}-x"[:63]}
    )
    y += await fake_nodes(
        1, prefix=f"{test_id}-d", cpu="4", memory="16Gi", labels={**labels, LEAF_LABEL: f"{test_id}-y"[:63]}
    )
    soft = {"mode": "soft"}
    pods = await create_gang(kube_api, namespace, "fits", 4, soft, labels)
    placed = await kube.wait_for(lambda: bound(kube_api, namespace, pods), 30, message="the 4-pod gang bound")
    assert set(placed) in (set(x), set(y))
    # The other leaf is free (8 cpu); 6 x 2 cpu fits no leaf and there is not room for it at all until
    # the first gang goes: delete it, then the soft gang spreads over both leaves.
    for p in pods:
        await kube.request(
            kube_api, "DELETE", f"/api/v1/namespaces/{namespace}/pods/{p}", params={"gracePeriodSeconds": 0}
        )
    wide = await create_gang(kube_api, namespace, "wide", 6, soft, labels)
    spread = await kube.wait_for(lambda: bound(kube_api, namespace, wide), 30, message="the 6-pod gang bound")
    assert set(spread) & set(x) and set(spread) & set(y)
