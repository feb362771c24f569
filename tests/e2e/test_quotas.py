"""The resourcequota plugin on a real kube-apiserver: a PodGroup whose minResources is over its
namespace's ResourceQuota stays Pending with the quota named in its condition, while one that fits is
admitted. (No quota controller runs here: the quota's ``status.used`` stays empty, which reads as 0.)"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client

from extender.framework.conf import DEFAULT_CONF
from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

PG = "scheduling.volcano.sh/v1beta1"
# pumice's default conf with resourcequota in the first tier.
QUOTA_CONF = DEFAULT_CONF.replace(
    "  - name: conformance\n", "  - name: conformance\n  - name: resourcequota\n"
)


@pytest.fixture
def quota_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=QUOTA_CONF)


async def _podgroup(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    pg: dict[str, Any] = await kube.request(api, "GET", f"{kube.collection_path(PG, 'podgroups', ns)}/{name}")
    return pg


async def test_a_group_over_its_namespace_quota_stays_pending_with_the_quota_named(
    quota_pumice: None, kube_api: client.ApiClient, namespace: str, fake_nodes: FakeNodes, test_id: str
) -> None:
    assert "resourcequota" in QUOTA_CONF
    # Room in the cluster for both: only the quota tells them apart (overcommit admits neither without).
    await fake_nodes(1, cpu="16", labels=node_labels(test_id))
    await kube.request(
        kube_api,
        "POST",
        kube.collection_path("v1", "resourcequotas", namespace),
        body={
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "rq"},
            "spec": {"hard": {"requests.cpu": "4"}},
        },
    )
    pgs = kube.collection_path(PG, "podgroups", namespace)
    for name, cpu in (("wide", "6"), ("narrow", "2")):
        spec = {"minMember": 2, "minResources": {"cpu": cpu}}
        body = {"apiVersion": PG, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}
        await kube.request(kube_api, "POST", pgs, body=body)
    expected = f"namespace {namespace}: resourcequota rq: requests.cpu 6 > 4 left of 4"
    seen: list[Any] = []

    async def refused_with_the_quota() -> bool:
        pg = await _podgroup(kube_api, namespace, "wide")
        conds = pg.get("status", {}).get("conditions") or []
        seen[:] = conds
        return any(c.get("type") == "Unschedulable" and c.get("message") == expected for c in conds)

    await kube.wait_for(refused_with_the_quota, 20, message=lambda: f"the quota named; conditions {seen}")
    assert (await _podgroup(kube_api, namespace, "wide")).get("status", {}).get(
        "phase", "Pending"
    ) == "Pending"

    async def narrow_admitted() -> bool:
        pg = await _podgroup(kube_api, namespace, "narrow")
        return bool(pg.get("status", {}).get("phase") == "Inqueue")

    await kube.wait_for(narrow_admitted, 20, message="the group that fits the quota admitted (Inqueue)")
