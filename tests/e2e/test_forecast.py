"""When will my job start (#26), on a real control plane: three gangs queued behind a running job with an
expected runtime get positions 1 to 3 and estimated starts, shown on their PodGroups, by ``pumice job list
-o wide`` and by the forecast endpoint, which answers a reader only for the namespaces the API server lets
it ``get podgroups`` in (a ServiceAccount's token here; the control plane runs with RBAC).

The e2e pumice forecasts every 3 s (``--forecast-interval``; 30 s by default) when something changed, so
the estimates show within seconds of the jobs' creation.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes_asyncio import client

from controllers.cli import estimates
from extender.core.timestamps import epoch
from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice
from tests.e2e.test_cli import Cli, cli  # noqa: F401  # the fixture, shared
from tests.e2e.test_jobs import BATCH, PG, create_job, task, wait_phase

pytestmark = pytest.mark.e2e

RUNTIME = "pumice.dev/expected-runtime"


def job_spec(queue: str, selector: dict[str, str], replicas: int, cpu: str, runtime: str) -> dict[str, Any]:
    t = task("worker", replicas, selector=selector, cpu=cpu)
    t["template"]["metadata"] = {"annotations": {RUNTIME: runtime}}
    return {"minAvailable": replicas, "queue": queue, "schedulerName": "volcano", "tasks": [t]}


async def podgroups(api: client.ApiClient, ns: str) -> dict[str, dict[str, Any]]:
    listing = await kube.list_objects(api, kube.collection_path(PG, "podgroups", ns))
    out = {}
    for pg in listing.get("items") or []:
        owners = pg["metadata"].get("ownerReferences") or [{}]
        out[owners[0].get("name", pg["metadata"]["name"])] = pg
    return out


async def reader_token(api: client.ApiClient, ns: str) -> str:
    """A ServiceAccount of ``ns`` that may get and list PodGroups there, and a token for it."""
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}}
    await kube.request(api, "POST", kube.collection_path("v1", "serviceaccounts", ns), body=sa)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "podgroup-reader"},
        "rules": [
            {"apiGroups": ["scheduling.volcano.sh"], "resources": ["podgroups"], "verbs": ["get", "list"]}
        ],
    }
    await kube.request(
        api, "POST", kube.collection_path("rbac.authorization.k8s.io/v1", "roles", ns), body=role
    )
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "podgroup-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "podgroup-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
    }
    await kube.request(
        api, "POST", kube.collection_path("rbac.authorization.k8s.io/v1", "rolebindings", ns), body=binding
    )
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    issued = await kube.request(
        api, "POST", f"{kube.collection_path('v1', 'serviceaccounts', ns)}/reader/token", body=request
    )
    return str(issued["status"]["token"])


def get(url: str, token: str | None) -> tuple[int, Any]:
    """GET over TLS (pumice's self-signed webhook certificate is not checked)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


async def test_three_gangs_behind_a_running_job(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
    cli: Cli,  # noqa: F811  # the fixture imported above
) -> None:
    pumice = ensure_pumice(control_plane)
    labels = node_labels(test_id)
    await fake_nodes(1, cpu="4", labels=labels)
    queue = f"fq-{test_id}"[:60]
    await kube.request(
        kube_api,
        "POST",
        kube.collection_path(PG, "queues"),
        body={"apiVersion": PG, "kind": "Queue", "metadata": {"name": queue}, "spec": {"weight": 1}},
    )
    try:
        await create_job(kube_api, namespace, "long", job_spec(queue, labels, 1, "4", "10m"))
        await wait_phase(kube_api, namespace, "long", "Running", within=60)
        for i in (1, 2, 3):
            await create_job(kube_api, namespace, f"gang{i}", job_spec(queue, labels, 2, "2", "5m"))

        conditions: dict[str, Any] = {}

        async def estimated() -> dict[str, Any] | None:
            groups = await podgroups(kube_api, namespace)
            for n, pg in groups.items():  # what the groups show, for the message of a timeout
                conditions[n] = [
                    (c.get("type"), c.get("message")) for c in pg.get("status", {}).get("conditions") or []
                ]
            shown = {n: estimates.shown(groups.get(n)) for n in ("gang1", "gang2", "gang3")}
            return shown if all(s is not None and s.start is not None for s in shown.values()) else None

        shown = await kube.wait_for(
            estimated, 120, interval=2.0, message=lambda: f"StartEstimate on the three gangs: {conditions}"
        )
        running = (await podgroups(kube_api, namespace))["long"]
        began = epoch(
            next(c["lastTransitionTime"] for c in running["status"]["conditions"] if c["type"] == "Scheduled")
        )
        # The node holds one gang at a time: the first when the long job ends, then one per five minutes.
        for i, name in enumerate(("gang1", "gang2", "gang3")):
            s = shown[name]
            assert (s.in_queue, s.queue) == (i + 1, queue), s.message
            assert s.start == pytest.approx(began + 600 + 300 * i, abs=90), s.message

        listed = await cli("job", "list", "-n", namespace, "-o", "wide")
        assert listed.code == 0, listed.err
        header, *rows = listed.out.splitlines()
        cols = header.index("POSITION")
        by_name = {r.split()[0]: r[cols:].split() for r in rows}
        assert [by_name[f"gang{i}"][0] for i in (1, 2, 3)] == ["1", "2", "3"]
        assert all(by_name[f"gang{i}"][1] == "in" for i in (1, 2, 3))

        base = f"{pumice.webhook_url}/apis/forecast.pumice.dev/v1/namespaces"
        token = await reader_token(kube_api, namespace)
        status, doc = get(f"{base}/{namespace}/podgroups", token)
        assert status == 200, doc
        items = [i for i in doc["items"] if i["queue"] == queue]
        assert [i["position"]["queue"] for i in items] == [1, 2, 3]
        assert all(i["estimatedStart"] for i in items)
        # Another namespace: the reader may not get podgroups there, so neither its forecasts.
        other = f"{namespace}-other"[:63]
        await kube.create_namespace(kube_api, other)
        try:
            status, doc = get(f"{base}/{other}/podgroups", token)
            assert status == 403, doc
            assert 'cannot get resource "podgroups"' in doc["message"]
        finally:
            await kube.delete_namespace(kube_api, other)
        assert get(f"{base}/{namespace}/podgroups", None)[0] == 401
    finally:
        for name in ("long", "gang1", "gang2", "gang3"):
            with contextlib.suppress(client.ApiException):
                await kube.request(
                    kube_api, "DELETE", f"{kube.collection_path(BATCH, 'jobs', namespace)}/{name}"
                )

        async def queue_gone() -> bool:
            # Admission refuses to delete a queue with PodGroups: pumice deletes a deleted job's group.
            try:
                await kube.request(kube_api, "DELETE", f"{kube.collection_path(PG, 'queues')}/{queue}")
            except client.ApiException as e:
                return e.status == 404
            return True

        with contextlib.suppress(TimeoutError):
            await kube.wait_for(queue_gone, 30, interval=1.0)
