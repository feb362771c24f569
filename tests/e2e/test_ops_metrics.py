"""pumice's /metrics on the real control plane: a gang that kube-scheduler binds (pumice's bind verb not
configured) shows in pumice_binds_total, its PodGroup's wait and its queue's allocation are observed, and
the whole exposition parses with prometheus_client's parser."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane, _http
from tests.e2e.test_gang import _all_bound, create_gang, podgroup

pytestmark = pytest.mark.e2e


def _scrape(cp: ControlPlane) -> dict[str, list[Any]]:
    status, body = _http("GET", f"{cp._pumice.extender_url}/metrics")
    assert status == 200
    out: dict[str, list[Any]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append(s)
    return out


async def test_binds_waits_and_queue_figures_show_in_metrics(
    control_plane: ControlPlane,
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    test_id: str,
) -> None:
    before = await asyncio.to_thread(_scrape, control_plane)
    binds_before = sum(s.value for s in before.get("pumice_binds_total", []))
    waits_before = sum(s.value for s in before.get("pumice_podgroup_wait_seconds_count", []))
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    pods = await create_gang(kube_api, namespace, "m", 2, cpu="1", selector=node_labels(test_id))
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, pods), 30, message="both pods bound")

    async def running() -> bool:
        pg = await podgroup(kube_api, namespace, "m")
        return bool(pg.get("status", {}).get("phase") == "Running")

    await kube.wait_for(running, 30, message="PodGroup Running")

    def allocated_cpu(samples: dict[str, list[Any]]) -> float:
        return float(
            sum(
                s.value
                for s in samples.get("pumice_queue_allocated", [])
                if s.labels == {"queue": "default", "resource": "cpu"}
            )
        )

    async def observed() -> dict[str, list[Any]] | None:
        # Per-queue figures are computed at most once a second (one computation per scrape): poll.
        after = await asyncio.to_thread(_scrape, control_plane)
        binds = sum(s.value for s in after.get("pumice_binds_total", []))
        waits = sum(s.value for s in after.get("pumice_podgroup_wait_seconds_count", []))
        done = binds >= binds_before + 2 and waits >= waits_before + 1 and allocated_cpu(after) >= 2.0
        return after if done else None

    after = await kube.wait_for(
        observed, 15, message="binds, the PodGroup wait and the allocation in /metrics"
    )
    assert after["pumice_build_info"][0].value == 1
    assert after["pumice_scheduling_cycle_duration_seconds_count"][0].value >= 1
