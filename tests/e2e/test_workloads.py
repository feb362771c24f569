"""Workloads get PodGroups, and the scheduler conf reloads live, end to end.

- A ReplicaSet's pods (``schedulerName: volcano``, the owner annotated ``group-min-member: "3"``) get the
  PodGroup ``podgroup-<owner uid>``, owned by the ReplicaSet, and bind together or not at all. No
  kube-controller-manager needed: the test plays the ReplicaSet controller, creating the ReplicaSet object
  and its pods with the controller owner reference, as that controller would.
- With kube-controller-manager (skipped, naming it, where the assets have none), a real Deployment: its
  ReplicaSet's pods get the group, bind together, and deleting the Deployment takes the group with it
  (garbage collection).
- Editing the ``--scheduler-conf`` file changes a decision within seconds without a restart (the
  overcommit factor decides whether a PodGroup is admitted), and a broken edit changes nothing and is
  reported (a Warning Event on pumice's Pod).

What is asserted is what a user sees in the API server.
"""

from __future__ import annotations

import time
from typing import Any

from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.pumice import PUMICE_POD_NAME, ensure_pumice, scheduler_conf_path

SCHEDULING = "scheduling.volcano.sh/v1beta1"
MIN_MEMBER = "scheduling.volcano.sh/group-min-member"
GROUP_NAME = "scheduling.k8s.io/group-name"


def template(test_id: str, app: str) -> dict[str, Any]:
    pod = kube.pod_manifest(
        "x",
        cpu="1",
        scheduler_name="volcano",
        labels={"app": app},
        node_selector=node_labels(test_id),
        restart_policy="Always",
    )
    return {"metadata": {"labels": {"app": app}}, "spec": pod["spec"]}


async def podgroup(api: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    path = kube.collection_path(SCHEDULING, "podgroups", ns)
    result: dict[str, Any] = await kube.request(api, "GET", f"{path}/{name}")
    return result


async def pods_of(api: client.ApiClient, ns: str, app: str) -> list[dict[str, Any]]:
    listed = await kube.list_objects(api, kube.collection_path("v1", "pods", ns), labelSelector=f"app={app}")
    return list(listed["items"])


async def unschedulable(api: client.ApiClient, ns: str, name: str) -> str:
    conds = (await podgroup(api, ns, name)).get("status", {}).get("conditions") or []
    return next((str(c.get("message")) for c in conds if c.get("type") == "Unschedulable"), "")


async def gang_of_three(
    api: client.ApiClient, ns: str, app: str, group: str, fake_nodes: FakeNodes, test_id: str
) -> None:
    """With room for two of the three pods none binds; with a third node all three do."""
    await kube.wait_for(lambda: unschedulable(api, ns, group), 30, message=f"{group} reported waiting")
    assert [p["metadata"]["name"] for p in await pods_of(api, ns, app) if p["spec"].get("nodeName")] == []
    await fake_nodes(1, cpu="1", labels=node_labels(test_id))

    async def all_bound() -> bool:
        pods = await pods_of(api, ns, app)
        return len(pods) == 3 and all(p["spec"].get("nodeName") for p in pods)

    await kube.wait_for(all_bound, 30, message="all three pods bound")
    nodes = {p["spec"]["nodeName"] for p in await pods_of(api, ns, app)}
    assert len(nodes) == 3


async def test_a_replicasets_pods_get_a_podgroup_and_bind_together(
    pumice: None, kube_api: client.ApiClient, namespace: str, fake_nodes: FakeNodes, test_id: str
) -> None:
    """No kube-controller-manager needed: the test creates the pods as the ReplicaSet controller would."""
    await fake_nodes(2, cpu="1", labels=node_labels(test_id))
    rs = await kube.request(
        kube_api,
        "POST",
        kube.collection_path("apps/v1", "replicasets", namespace),
        body={
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "annotations": {MIN_MEMBER: "3"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web"}},
                "template": template(test_id, "web"),
            },
        },
    )
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": rs["metadata"]["uid"]}
    for i in range(3):
        manifest = kube.pod_manifest(
            f"web-{i}",
            cpu="1",
            scheduler_name="volcano",
            labels={"app": "web"},
            node_selector=node_labels(test_id),
        )
        manifest["metadata"]["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
        await kube.create_pod(kube_api, namespace, manifest)
    group = f"podgroup-{rs['metadata']['uid']}"
    pg = await kube.wait_for(lambda: podgroup(kube_api, namespace, group), 30, message=f"PodGroup {group}")
    assert pg["spec"]["minMember"] == 3
    assert pg["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]

    async def annotated() -> bool:
        return all(
            p["metadata"].get("annotations", {}).get(GROUP_NAME) == group
            for p in await pods_of(kube_api, namespace, "web")
        )

    await kube.wait_for(annotated, 30, message="every pod annotated with its group")
    await gang_of_three(kube_api, namespace, "web", group, fake_nodes, test_id)


async def test_a_deployment_gets_a_podgroup_that_goes_with_it(
    pumice: None,
    controller_manager: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    test_id: str,
) -> None:
    await fake_nodes(2, cpu="1", labels=node_labels(test_id))
    deployments = kube.collection_path("apps/v1", "deployments", namespace)
    await kube.request(
        kube_api,
        "POST",
        deployments,
        body={
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {MIN_MEMBER: "3"}},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "dep"}},
                "template": template(test_id, "dep"),
            },
        },
    )

    async def the_replicaset() -> dict[str, Any] | None:
        items = (
            await kube.list_objects(kube_api, kube.collection_path("apps/v1", "replicasets", namespace))
        )["items"]
        return items[0] if items else None

    rs = await kube.wait_for(the_replicaset, 30, message="the Deployment's ReplicaSet")
    group = f"podgroup-{rs['metadata']['uid']}"
    pg = await kube.wait_for(lambda: podgroup(kube_api, namespace, group), 30, message=f"PodGroup {group}")
    # The Deployment's annotation reaches the group through its ReplicaSet (the deployment controller
    # copies it).
    assert pg["spec"]["minMember"] == 3
    assert pg["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
    await gang_of_three(kube_api, namespace, "dep", group, fake_nodes, test_id)

    await kube.request(kube_api, "DELETE", f"{deployments}/web", body={"propagationPolicy": "Background"})

    async def group_gone() -> bool:
        try:
            await podgroup(kube_api, namespace, group)
        except client.exceptions.ApiException as e:
            return e.status == 404
        return False

    await kube.wait_for(group_gone, 30, message="the PodGroup garbage-collected with its Deployment")


CONF = """actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
    arguments: {overcommit-factor: %s}
  - name: drf
  - name: predicates
  - name: nodeorder
"""


async def test_editing_the_conf_file_changes_decisions_without_a_restart(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    test_id: str,
) -> None:
    ensure_pumice(control_plane, scheduler_conf=CONF % "1.0")
    pid = control_plane.processes["pumice"].pid
    path = scheduler_conf_path(control_plane)
    try:
        await fake_nodes(2, cpu="4", labels=node_labels(test_id))

        async def gang(name: str) -> None:
            # 9 cpu of minResources: over 8 x 1.0, within 8 x 2.0.
            await kube.request(
                kube_api,
                "POST",
                kube.collection_path(SCHEDULING, "podgroups", namespace),
                body={
                    "apiVersion": SCHEDULING,
                    "kind": "PodGroup",
                    "metadata": {"name": name},
                    "spec": {"minMember": 1, "minResources": {"cpu": "9"}},
                },
            )
            manifest = kube.pod_manifest(
                f"{name}-0",
                cpu="1",
                scheduler_name="volcano",
                labels={"app": name},
                annotations={GROUP_NAME: name},
                node_selector=node_labels(test_id),
            )
            await kube.create_pod(kube_api, namespace, manifest)

        async def bound(name: str) -> bool:
            return bool((await kube.get_pod(kube_api, namespace, f"{name}-0"))["spec"].get("nodeName"))

        async def phase(name: str) -> str:
            return str((await podgroup(kube_api, namespace, name)).get("status", {}).get("phase") or "")

        await gang("a")
        await kube.wait_for(
            lambda: unschedulable(kube_api, namespace, "a"), 30, message="a refused admission"
        )
        assert await phase("a") == "Pending" and not await bound("a")

        path.write_text(CONF % "2.0")
        t0 = time.monotonic()
        await kube.wait_for(lambda: bound("a"), 20, message="a bound after the conf edit")
        print(f"conf edit to bind: {time.monotonic() - t0:.1f}s")

        # A broken edit: rejected, reported on pumice's Pod, and the running conf (factor 2.0) stays.
        path.write_text((CONF % "1.0").replace("overcommit-factor", "overcommit-fctor"))

        async def rejected() -> bool:
            events = await kube.list_objects(kube_api, "/apis/events.k8s.io/v1/namespaces/default/events")
            return any(
                e.get("reason") == "SchedulerConfRejected"
                and (e.get("regarding") or {}).get("name") == PUMICE_POD_NAME
                and "overcommit-fctor" in (e.get("note") or "")
                for e in events["items"]
            )

        await kube.wait_for(rejected, 20, message="a SchedulerConfRejected Event naming the bad argument")
        await gang("b")
        await kube.wait_for(lambda: bound("b"), 20, message="b bound under the conf still running")
        assert control_plane.processes["pumice"].pid == pid, "pumice restarted"
    finally:
        # The file no longer holds the conf ensure_pumice recorded: a later test asking for any restarts.
        control_plane._pumice_scheduler_conf = "edited by test_workloads"
