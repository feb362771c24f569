"""The Hardening issue's reproductions on a real control plane: no caller binds what pumice did not plan,
phantom pods in request bodies take nothing, one odd object stops nothing, an undecodable LIST deletes
nothing.

Two tests remove pumice's webhook configurations for a while, as a cluster without them (or with them
failing open) would be, to write objects admission would have refused; they restart pumice afterwards,
which registers them again.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane, _http
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice
from tests.e2e.test_gang import PG, _all_bound, create_gang
from tests.e2e.test_jobs import BATCH, create_job, job_pods, task, wait_phase

pytestmark = pytest.mark.e2e


def _post(url: str, body: object) -> tuple[int, Any]:
    status, raw = _http("POST", url, None, body)
    return status, json.loads(raw) if raw.startswith((b"{", b"[")) else raw.decode()


def _drop_webhooks(cp: ControlPlane) -> None:
    base = f"{cp.server_url}/apis/admissionregistration.k8s.io/v1"
    for kind, name in (("mutatingwebhookconfigurations", "pumice-mutating"),
                       ("validatingwebhookconfigurations", "pumice-validating")):  # fmt: skip
        status, _ = _http("DELETE", f"{base}/{kind}/{name}", cp.token)
        assert status in (200, 404)


def _raw_request(
    cp: ControlPlane, method: str, path: str, data: bytes, content_type: str
) -> tuple[int, bytes]:
    """A request with a body we encode ourselves (json.dumps refuses what these tests must send)."""
    return _http(method, f"{cp.server_url}{path}", cp.token, timeout=10, raw=data, content_type=content_type)


def _pumice_alive(cp: ControlPlane) -> bool:
    proc = cp.processes["pumice"]
    healthy = _http("GET", f"{cp._pumice.extender_url}/healthz")[0] == 200
    return bool(proc.running and healthy)


async def test_an_unplanned_bind_binds_nothing(
    control_plane: ControlPlane, pumice: None, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, test_id: str,
) -> None:  # fmt: skip
    [node] = await fake_nodes(1, cpu="4", labels=node_labels(test_id))
    # Nobody schedules this pod: only a forged bind could place it.
    created = await kube.create_pod(
        kube_api, namespace, kube.pod_manifest("victim", cpu="1", scheduler_name="nobody")
    )
    uid = created["metadata"]["uid"]
    ext = control_plane._pumice.extender_url
    for args in (
        {"PodName": "victim", "PodNamespace": namespace, "PodUID": "x", "Node": node},
        {"PodName": "victim", "PodNamespace": namespace, "PodUID": uid, "Node": node},
        {"PodName": "victim", "PodNamespace": namespace, "PodUID": uid, "Node": "no-such-node"},
        {"PodName": "kube-dns", "PodNamespace": "kube-system", "PodUID": uid, "Node": node},
    ):
        status, body = await asyncio.to_thread(_post, f"{ext}/bind", args)
        assert status == 200 and body["Error"], args
        assert uid not in body["Error"] or args["PodUID"] == uid, "no API-server text echoed"
    await asyncio.sleep(0.5)
    assert not (await kube.get_pod(kube_api, namespace, "victim"))["spec"].get("nodeName")


async def test_phantom_pods_posted_to_filter_do_not_stop_a_real_gang(
    control_plane: ControlPlane, pumice: None, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, fake_kubelet: FakeKubelet, test_id: str,
) -> None:  # fmt: skip
    nodes = await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    ext = control_plane._pumice.extender_url
    for i, node in enumerate(nodes):
        phantom = kube.pod_manifest(f"phantom-{i}", cpu="4", scheduler_name="volcano")
        phantom["metadata"].update(namespace=namespace, uid=f"phantom-{test_id}-{i}")
        phantom["spec"]["nodeName"] = node
        phantom["status"] = {"phase": "Running"}
        status, body = await asyncio.to_thread(_post, f"{ext}/filter", {"Pod": phantom, "NodeNames": nodes})
        assert status == 200 and body["NodeNames"] == []
    pods = await create_gang(kube_api, namespace, "real", 2, cpu="3", selector=node_labels(test_id))
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, pods), 30, message="the real gang bound")


async def test_a_podgroup_patched_to_an_absurd_quantity_leaves_pumice_scheduling(
    control_plane: ControlPlane, pumice: None, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, fake_kubelet: FakeKubelet, test_id: str,
) -> None:  # fmt: skip
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    pg_path = f"{kube.collection_path(PG, 'podgroups', namespace)}/odd"
    pg = {"apiVersion": PG, "kind": "PodGroup", "metadata": {"name": "odd"}, "spec": {"minMember": 1}}
    await kube.request(kube_api, "POST", kube.collection_path(PG, "podgroups", namespace), body=pg)
    patch = b'{"spec": {"minResources": {"cpu": "1e400"}}}'
    # Admission now validates updates too, and says which field is wrong.
    status, body = await asyncio.to_thread(
        _raw_request, control_plane, "PATCH", pg_path, patch, "application/merge-patch+json"
    )
    assert status == 400 and b"minResources" in body, body[:300]
    # Without the webhooks (a cluster where they are absent), the object gets in: pumice must not fall over.
    _drop_webhooks(control_plane)
    try:
        status, body = await asyncio.to_thread(
            _raw_request, control_plane, "PATCH", pg_path, patch, "application/merge-patch+json"
        )
        assert status == 200, body[:300]
        await asyncio.sleep(1.0)
        assert _pumice_alive(control_plane), control_plane.processes["pumice"].tail(30)
        pods = await create_gang(kube_api, namespace, "after", 2, cpu="1", selector=node_labels(test_id))
        await kube.wait_for(
            lambda: _all_bound(kube_api, namespace, pods), 30, message="a later gang still binds"
        )
        _, metrics = await asyncio.to_thread(_http, "GET", f"{control_plane._pumice.extender_url}/metrics")
        unreadable = [
            ln for ln in metrics.decode().splitlines() if ln.startswith("pumice_unreadable_objects_total")
        ]
        assert unreadable and float(unreadable[0].split()[-1]) >= 1
    finally:
        ensure_pumice(control_plane, restart=True)  # registers the webhooks again


async def test_a_job_list_that_cannot_be_decoded_deletes_nothing(
    control_plane: ControlPlane, kube_api: client.ApiClient, namespace: str,
    fake_nodes: FakeNodes, fake_kubelet: FakeKubelet, test_id: str,
) -> None:  # fmt: skip
    ensure_pumice(control_plane)
    sel = node_labels(test_id)
    await fake_nodes(2, cpu="8", labels=sel)
    await create_job(kube_api, namespace, "healthy", {"tasks": [task("w", 3, selector=sel)]})
    await wait_phase(kube_api, namespace, "healthy", "Running", within=60)
    before = sorted(p["metadata"]["uid"] for p in await job_pods(kube_api, namespace, "healthy"))
    assert len(before) == 3
    # A job nested deeper than any JSON decoder pumice uses accepts (orjson: 1024 levels).
    levels = 1100
    deep = b'{"a":' * levels + b'"x"' + b"}" * levels
    body = (
        b'{"apiVersion":"%s","kind":"Job","metadata":{"name":"deep"},"spec":{"tasks":[{"name":"t","replicas":1,'
        b'"template":{"metadata":{},"spec":{"containers":[{"name":"c","image":"x"}],"deep":%s}}}]}}'
        % (BATCH.encode(), deep)
    )
    jobs = kube.collection_path(BATCH, "jobs", namespace)
    _drop_webhooks(control_plane)
    try:
        status, text = await asyncio.to_thread(
            _raw_request, control_plane, "POST", jobs, body, "application/json"
        )
        assert status == 201, text[:300]
        # A restart makes pumice LIST jobs again: the list cannot be decoded as a whole.
        ensure_pumice(control_plane, restart=True)
        await asyncio.sleep(3.0)
        after = sorted(p["metadata"]["uid"] for p in await job_pods(kube_api, namespace, "healthy"))
        assert after == before, "the healthy job's pods were deleted"
        assert _pumice_alive(control_plane)
        # And jobs still work beside the unreadable one.
        await create_job(kube_api, namespace, "later", {"tasks": [task("w", 1, selector=sel)]})
        await wait_phase(kube_api, namespace, "later", "Running", within=60)
    finally:
        await asyncio.to_thread(
            _http, "DELETE", f"{control_plane.server_url}{jobs}/deep", control_plane.token
        )
        ensure_pumice(control_plane, restart=True)


async def test_an_invalid_job_written_past_admission_says_why(
    control_plane: ControlPlane, kube_api: client.ApiClient, namespace: str, test_id: str
) -> None:
    ensure_pumice(control_plane)
    spec = {
        "tasks": [task("w", 1, selector=node_labels(test_id)), task("w", 1, selector=node_labels(test_id))]
    }
    with pytest.raises(ApiException) as denied:
        await create_job(kube_api, namespace, "dup", spec)
    assert denied.value.status == 400
    _drop_webhooks(control_plane)
    try:
        await create_job(kube_api, namespace, "dup", spec)

        async def reason() -> str:
            state = (
                (await kube.request(kube_api, "GET", f"{kube.collection_path(BATCH, 'jobs', namespace)}/dup"))
                .get("status", {})
                .get("state", {})
            )
            return str(state.get("message", "")) if state.get("reason") == "InvalidSpec" else ""

        message = await kube.wait_for(reason, 30, message="an InvalidSpec reason on the job")
        assert "duplicate" in message and "spec.tasks[1].name" in message
        assert await job_pods(kube_api, namespace, "dup") == []
    finally:
        ensure_pumice(control_plane, restart=True)
