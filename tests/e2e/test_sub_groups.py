"""Sub-groups end to end: a vcjob whose task has a ``partitionPolicy`` (the job controller turns it into
the PodGroup's ``subGroupPolicy``) on a real kube-apiserver + kube-scheduler, fake nodes in three leaves
(discovered from a node label, as in :mod:`tests.e2e.test_network_topology`), a fake kubelet.

Each partition of two 4-cpu pods must fit inside one leaf of two 4-cpu nodes. With one node cordoned in
each of two leaves, four nodes are free, enough for the job's four pods but not for its two partitions (only
the third leaf holds one): the job is held back, and its PodGroup says which sub-group could not be placed.
Once a cordoned node is uncordoned its leaf holds the second partition and the job runs, each partition
inside a leaf of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice
from tests.e2e.test_network_topology import CONF, LEAF_LABEL, PG, unschedulable_message

pytestmark = pytest.mark.e2e

BATCH = "batch.volcano.sh/v1alpha1"
PARTITION = "volcano.sh/partition-id"


@pytest.fixture
def topology_pumice(control_plane: ControlPlane) -> None:
    # The network topology tests' conf: the shared pumice is not restarted between the two files.
    ensure_pumice(control_plane, scheduler_conf=CONF)


async def cordon(api: client.ApiClient, node: str, on: bool) -> None:
    await kube.request(
        api,
        "PATCH",
        f"/api/v1/nodes/{node}",
        body={"spec": {"unschedulable": on}},
        content_type="application/merge-patch+json",
    )


async def job_pods(api: client.ApiClient, ns: str, job: str) -> list[dict[str, Any]]:
    listing = await kube.list_objects(
        api, kube.collection_path("v1", "pods", ns), labelSelector=f"volcano.sh/job-name={job}"
    )
    return list(listing.get("items") or [])


async def job_podgroup(api: client.ApiClient, ns: str, job: str) -> str | None:
    listing = await kube.list_objects(api, kube.collection_path(PG, "podgroups", ns))
    names = [str(g["metadata"]["name"]) for g in listing.get("items") or []]
    return next((n for n in names if n.startswith(f"{job}-")), None)


async def test_a_vcjob_waits_until_every_partition_fits_in_a_leaf_then_runs(
    topology_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    labels = node_labels(test_id)
    leaf_of: dict[str, str] = {}
    for leaf in ("a", "b", "c"):
        name = f"{test_id}-{leaf}"[:63]
        for node in await fake_nodes(
            2, prefix=f"{test_id}-{leaf}", cpu="4", memory="16Gi", labels={**labels, LEAF_LABEL: name}
        ):
            leaf_of[node] = name
    by_leaf: dict[str, list[str]] = {}
    for node, leaf in sorted(leaf_of.items()):
        by_leaf.setdefault(leaf, []).append(node)
    a, b, _ = (by_leaf[k] for k in sorted(by_leaf))
    await cordon(kube_api, a[1], True)
    await cordon(kube_api, b[1], True)

    spec = {
        "schedulerName": "volcano",
        "minAvailable": 4,
        "tasks": [
            {
                "name": "t0",
                "replicas": 4,
                "partitionPolicy": {
                    "totalPartitions": 2,
                    "partitionSize": 2,
                    "minPartitions": 2,
                    "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
                },
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "nodeSelector": labels,
                        "containers": [
                            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "4"}}}
                        ],
                    }
                },
            }
        ],
    }
    body = {"apiVersion": BATCH, "kind": "Job", "metadata": {"name": "parts"}, "spec": spec}
    await kube.request(kube_api, "POST", kube.collection_path(BATCH, "jobs", namespace), body=body)

    pg = await kube.wait_for(lambda: job_podgroup(kube_api, namespace, "parts"), 30, message="the PodGroup")
    wanted = "sub-group t0[volcano.sh/partition-id="

    async def held() -> str:
        message = await unschedulable_message(kube_api, namespace, pg)
        return message if wanted in message else ""

    message = await kube.wait_for(held, 30, message="the PodGroup's reason naming a partition")
    assert "subGroupPolicy t0: 1 of minSubGroups 2 sub-groups whole" in message
    pods = await job_pods(kube_api, namespace, "parts")
    assert not any(p["spec"].get("nodeName") for p in pods)

    await cordon(kube_api, b[1], False)

    async def all_bound() -> list[dict[str, Any]] | None:
        pods = await job_pods(kube_api, namespace, "parts")
        return pods if len(pods) == 4 and all(p["spec"].get("nodeName") for p in pods) else None

    pods = await kube.wait_for(all_bound, 30, message="the job's four pods bound")
    leaves: dict[str, set[str]] = {}
    for p in pods:
        leaves.setdefault(p["metadata"]["labels"][PARTITION], set()).add(leaf_of[p["spec"]["nodeName"]])
    assert sorted(leaves) == ["0", "1"]
    assert all(len(v) == 1 for v in leaves.values())  # each partition inside one leaf
    assert leaves["0"] != leaves["1"]
