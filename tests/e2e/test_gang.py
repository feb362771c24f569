"""Gang scheduling through pumice on a real kube-apiserver + kube-scheduler, fake nodes and a
fake kubelet: all-or-nothing binding, visible reasons, prompt retry when capacity appears, competing
gangs, and the fast path for pods of other schedulers."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

PG = "scheduling.volcano.sh/v1beta1"


async def create_gang(
    api: client.ApiClient,
    ns: str,
    name: str,
    size: int,
    *,
    cpu: str,
    selector: dict[str, str],
    min_member: int | None = None,
    queue: str | None = None,
) -> list[str]:
    spec: dict[str, Any] = {"minMember": min_member or size}
    if queue:
        spec["queue"] = queue
    await kube.request(
        api,
        "POST",
        kube.collection_path(PG, "podgroups", ns),
        body={"apiVersion": PG, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec},
    )
    names = [f"{name}-{i}" for i in range(size)]
    for pod in names:
        manifest = kube.pod_manifest(
            pod,
            cpu=cpu,
            scheduler_name="volcano",
            annotations={"scheduling.k8s.io/group-name": name},
            node_selector=selector,
        )
        await kube.create_pod(api, ns, manifest)
    return names


async def create_queue(api: client.ApiClient, name: str, spec: dict[str, Any]) -> None:
    body = {"apiVersion": PG, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    await kube.request(api, "POST", kube.collection_path(PG, "queues"), body=body)


async def bound(api: client.ApiClient, ns: str, names: list[str]) -> int:
    n = 0
    for name in names:
        pod = await kube.get_pod(api, ns, name)
        n += bool(pod["spec"].get("nodeName"))
    return n


async def podgroup(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    pg: dict[str, Any] = await kube.request(api, "GET", f"{kube.collection_path(PG, 'podgroups', ns)}/{name}")
    return pg


async def unschedulable_message(api: client.ApiClient, ns: str, name: str) -> str:
    pg = await podgroup(api, ns, name)
    conds = pg.get("status", {}).get("conditions") or []
    return next((str(c["message"]) for c in conds if c["type"] == "Unschedulable"), "")


async def wait_for_reason(
    api: client.ApiClient, ns: str, name: str, expected: Callable[[str], bool], within: float = 30
) -> str:
    """The PodGroup's Unschedulable message once it is the expected one (earlier messages, such as
    "waiting for more pods" while pods are still being created, are passed over)."""
    seen: list[str] = []

    async def check() -> str:
        message = await unschedulable_message(api, ns, name)
        seen.append(message)
        return message if expected(message) else ""

    return await kube.wait_for(check, within, message=lambda: f"the expected reason; last seen {seen[-1:]}")


async def test_a_gang_that_fits_is_bound_whole_and_runs(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(3, cpu="4", labels=node_labels(test_id))
    pods = await create_gang(kube_api, namespace, "g", 4, cpu="2", selector=node_labels(test_id))
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, pods), 30, message="all 4 pods bound")

    async def running() -> bool:
        pg = await podgroup(kube_api, namespace, "g")
        return bool(pg.get("status", {}).get("phase") == "Running" and pg["status"].get("running") == 4)

    await kube.wait_for(running, 30, message="PodGroup Running with 4 running")


async def _all_bound(api: client.ApiClient, ns: str, pods: list[str]) -> bool:
    return await bound(api, ns, pods) == len(pods)


async def test_gangs_bind_whole_when_binding_is_delegated_to_pumice(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    ensure_pumice(control_plane, bind_verb=True)
    try:
        await fake_nodes(2, cpu="4", labels=node_labels(test_id))
        a = await create_gang(kube_api, namespace, "a", 3, cpu="2", selector=node_labels(test_id))
        b = await create_gang(kube_api, namespace, "b", 3, cpu="2", selector=node_labels(test_id))

        async def one_whole() -> bool:
            return {await bound(kube_api, namespace, a), await bound(kube_api, namespace, b)} == {0, 3}

        await kube.wait_for(one_whole, 30, message="one gang bound whole")
        await asyncio.sleep(2)
        assert sorted([await bound(kube_api, namespace, a), await bound(kube_api, namespace, b)]) == [0, 3]
        # Room for the second gang appears: it binds whole too, through pumice's /bind.
        await fake_nodes(2, cpu="4", labels=node_labels(test_id))
        await kube.wait_for(lambda: _all_bound(kube_api, namespace, a + b), 20, message="both gangs bound")
    finally:
        ensure_pumice(control_plane)  # back to the default configuration for the other tests


async def test_a_gang_that_does_not_fit_binds_nothing_then_binds_when_a_node_is_added(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    # 3 pods of 3 cpu: two fit on two 4-cpu nodes, the third does not.
    pods = await create_gang(kube_api, namespace, "big", 3, cpu="3", selector=node_labels(test_id))

    message = await wait_for_reason(
        kube_api, namespace, "big", lambda m: m.startswith("gang 2/3 placeable: needs cpu 3, best node ")
    )
    assert message.endswith(" has cpu 1")
    await asyncio.sleep(3)  # kube-scheduler has retried by now; still nothing may be bound
    assert await bound(kube_api, namespace, pods) == 0
    pg = await podgroup(kube_api, namespace, "big")
    assert pg["status"]["phase"] == "Inqueue"

    t0 = time.monotonic()
    await fake_nodes(1, cpu="4", labels=node_labels(test_id))
    await kube.wait_for(
        lambda: _all_bound(kube_api, namespace, pods), 15, message="gang bound after node add"
    )
    assert time.monotonic() - t0 < 10, "the gang must bind within seconds of capacity appearing"


async def test_two_gangs_that_fit_alone_but_not_together_end_one_whole_one_not_at_all(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    # Each gang needs 3 x 2 cpu = 6 of the 8 cpu: either fits alone, both never.
    a = await create_gang(kube_api, namespace, "a", 3, cpu="2", selector=node_labels(test_id))
    b = await create_gang(kube_api, namespace, "b", 3, cpu="2", selector=node_labels(test_id))

    async def one_whole() -> bool:
        return {await bound(kube_api, namespace, a), await bound(kube_api, namespace, b)} == {0, 3}

    await kube.wait_for(one_whole, 30, message="one gang bound whole")
    await asyncio.sleep(3)
    counts = sorted([await bound(kube_api, namespace, a), await bound(kube_api, namespace, b)])
    assert counts == [0, 3]


async def test_default_scheduler_pods_are_unaffected(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(1, cpu="4", labels=node_labels(test_id))
    await kube.create_pod(
        kube_api, namespace, kube.pod_manifest("plain", cpu="1", node_selector=node_labels(test_id))
    )
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, ["plain"]), 20, message="default pod bound")


async def test_a_closed_queue_refuses_new_groups_and_starts_nothing_new(
    pumice: None, kube_api: client.ApiClient, namespace: str, fake_nodes: FakeNodes, test_id: str
) -> None:
    await fake_nodes(1, cpu="4", labels=node_labels(test_id))
    qname = f"q-{test_id}"[:60]
    queues = kube.collection_path(PG, "queues")
    pgs = kube.collection_path(PG, "podgroups", namespace)
    await create_queue(kube_api, qname, {"weight": 1})
    try:
        # A group admitted while the queue was open, whose pods come after the queue closed.
        body = {
            "apiVersion": PG,
            "kind": "PodGroup",
            "metadata": {"name": "early"},
            "spec": {"minMember": 1, "queue": qname},
        }
        await kube.request(kube_api, "POST", pgs, body=body)
        await kube.wait_for(
            lambda: _phase_is(kube_api, namespace, "early", "Inqueue"), 20, message="early group admitted"
        )
        await kube.request(
            kube_api,
            "PATCH",
            f"{queues}/{qname}/status",
            body={"status": {"state": "Closed"}},
            content_type="application/merge-patch+json",
        )
        late = {**body, "metadata": {"name": "late"}}

        async def closed_seen() -> bool:  # pumice's queue watch has the new state (a dry run is admitted too)
            try:
                await kube.request(kube_api, "POST", pgs, body=late, params={"dryRun": "All"})
            except client.ApiException as e:
                if e.status == 400:
                    return True
                raise
            return False

        await kube.wait_for(closed_seen, 10, interval=0.2, message="pumice to see the queue Closed")
        with pytest.raises(client.ApiException) as denied:
            await kube.request(kube_api, "POST", pgs, body=late)
        assert denied.value.status == 400 and f"queue '{qname}' is Closed" in str(denied.value.body)

        manifest = kube.pod_manifest(
            "early-0",
            cpu="1",
            scheduler_name="volcano",
            annotations={"scheduling.k8s.io/group-name": "early"},
            node_selector=node_labels(test_id),
        )
        await kube.create_pod(kube_api, namespace, manifest)

        await wait_for_reason(kube_api, namespace, "early", lambda m: m == f"queue {qname} is Closed", 20)
        await asyncio.sleep(2)
        assert await bound(kube_api, namespace, ["early-0"]) == 0
    finally:
        await kube.request(kube_api, "DELETE", f"{pgs}/early")
        await kube.delete_when_admitted(kube_api, f"{queues}/{qname}")


async def _phase_is(api: client.ApiClient, ns: str, name: str, phase: str) -> bool:
    return bool((await podgroup(api, ns, name)).get("status", {}).get("phase") == phase)


async def test_a_pumice_restart_loses_nothing(
    control_plane: ControlPlane,
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    running = await create_gang(kube_api, namespace, "running", 2, cpu="2", selector=node_labels(test_id))
    await kube.wait_for(lambda: _all_bound(kube_api, namespace, running), 30, message="first gang bound")
    waiting = await create_gang(kube_api, namespace, "waiting", 2, cpu="3", selector=node_labels(test_id))
    await kube.wait_for(
        lambda: _phase_is(kube_api, namespace, "waiting", "Inqueue"), 20, message="second gang admitted"
    )

    ensure_pumice(control_plane, restart=True)

    # Admission survived (it lives in the API server), nothing was bound or unbound meanwhile, and the
    # restarted pumice still places the waiting gang once room appears.
    assert await _phase_is(kube_api, namespace, "waiting", "Inqueue")
    assert await bound(kube_api, namespace, running) == 2
    assert await bound(kube_api, namespace, waiting) == 0
    await fake_nodes(2, cpu="4", labels=node_labels(test_id))
    await kube.wait_for(
        lambda: _all_bound(kube_api, namespace, waiting), 20, message="gang bound after restart"
    )

    async def both_running() -> bool:
        return await _phase_is(kube_api, namespace, "running", "Running") and await _phase_is(
            kube_api, namespace, "waiting", "Running"
        )

    await kube.wait_for(both_running, 20, message="both PodGroups Running")


def test_sigterm_stops_pumice_cleanly(control_plane: ControlPlane, pumice: None) -> None:
    proc = control_plane.processes["pumice"]
    assert proc.popen is not None
    proc.popen.send_signal(signal.SIGTERM)
    try:
        code = proc.popen.wait(timeout=15)
    finally:
        ensure_pumice(control_plane, restart=True)  # later tests expect it running
    assert code == 0, proc.tail(30)


async def test_a_group_over_its_queue_capability_stays_pending_with_the_reason(
    pumice: None, kube_api: client.ApiClient, namespace: str, fake_nodes: FakeNodes, test_id: str
) -> None:
    await fake_nodes(2, cpu="8", labels=node_labels(test_id))
    qname = f"cap-{test_id}"[:60]
    queues = kube.collection_path(PG, "queues")
    pgs = kube.collection_path(PG, "podgroups", namespace)
    await create_queue(kube_api, qname, {"capability": {"cpu": "4"}})
    try:
        spec = {"minMember": 2, "queue": qname, "minResources": {"cpu": "6"}}
        await kube.request(
            kube_api,
            "POST",
            pgs,
            body={"apiVersion": PG, "kind": "PodGroup", "metadata": {"name": "wide"}, "spec": spec},
        )
        # Then the sum's terms, this group's minResources last.
        expected = f"queue {qname}: cpu 6/4 over capability ("
        terms = "minResources 6)"
        await wait_for_reason(
            kube_api, namespace, "wide", lambda m: m.startswith(expected) and m.endswith(terms), 20
        )
        assert await _phase_is(kube_api, namespace, "wide", "Pending")
    finally:
        await kube.request(kube_api, "DELETE", f"{pgs}/wide")
        await kube.delete_when_admitted(kube_api, f"{queues}/{qname}")


async def test_elastic_pods_beyond_min_member_run_where_room_is_left(
    pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    test_id: str,
) -> None:
    await fake_nodes(3, cpu="2", labels=node_labels(test_id))
    # minMember 2 of 4 pods, room for 3: the gang runs and one extra replica with it.
    pods = await create_gang(
        kube_api, namespace, "elastic", 4, cpu="2", selector=node_labels(test_id), min_member=2
    )
    await kube.wait_for(lambda: _bound_count_is(kube_api, namespace, pods, 3), 30, message="3 of 4 bound")
    await asyncio.sleep(2)
    assert await bound(kube_api, namespace, pods) == 3
    await kube.wait_for(lambda: _phase_is(kube_api, namespace, "elastic", "Running"), 20)


async def _bound_count_is(api: client.ApiClient, ns: str, pods: list[str], n: int) -> bool:
    return await bound(api, ns, pods) == n
