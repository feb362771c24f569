"""The workload PodGroup controller against the in-process API server (tests.fakeapi): one group per owner,
sized from the owner's annotations, pods annotated, idempotent across restarts, scaled-to-zero groups
deleted, one bad owner never stops the others."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from controllers.events import EventRecorder, Ref
from controllers.kube.client import KubeClient
from controllers.reconcilers.workload_groups import WorkloadGroupController
from controllers.state.indexes import watched_objects
from tests.fakeapi import FakeApiServer

Obj = dict[str, Any]
PG = "/apis/scheduling.volcano.sh/v1beta1/namespaces/ns/podgroups"


def rs(name: str, uid: str, replicas: int = 3, annotations: dict[str, str] | None = None) -> Obj:
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "annotations": dict(annotations or {})},
        "spec": {"replicas": replicas},
    }


def rs_pod(name: str, owner: str, uid: str, *, scheduler: str = "volcano", **annotations: str) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"pod-{name}",
            "creationTimestamp": f"2026-01-01T00:00:0{name[-1]}Z",
            "annotations": annotations,
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": uid, "controller": True}
            ],
        },
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
    }


def pod_path(name: str) -> str:
    return f"/api/v1/namespaces/ns/pods/{name}"


def rs_path(name: str) -> str:
    return f"/apis/apps/v1/namespaces/ns/replicasets/{name}"


def world(api: FakeApiServer, *pods: Obj, owners: tuple[Obj, ...] = ()) -> FakeApiServer:
    """The API server holding these pods and owners, and nothing else."""
    api.objects.clear()
    for p in pods:
        api.seed(pod_path(p["metadata"]["name"]), p)
    for o in owners:
        api.seed(rs_path(o["metadata"]["name"]), o)
    return api


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str, str]] = []

    def record(self, ref: Ref, *, type_: str, reason: str, note: str, action: str) -> None:
        self.seen.append((f"{ref.kind}/{ref.name}", type_, reason, note))


def controller(kube: KubeClient, events: Events | None = None) -> WorkloadGroupController:
    return WorkloadGroupController(
        kube,
        watched_objects(frozenset({"volcano"})),
        scheduler_names=frozenset({"volcano"}),
        workers=2,
        events=cast(EventRecorder, events),
    )


async def settle(wg: WorkloadGroupController, api: FakeApiServer) -> None:
    """Feed the watches from the fake API's pods and groups, run the workers until the queue is idle."""
    h = wg.store.handlers()
    h["pods"].replace([o for p, o in api.objects.items() if "/pods/" in p])
    h["podgroups"].replace([o for p, o in api.objects.items() if "/podgroups/" in p])
    task = asyncio.create_task(wg.run())
    try:
        for _ in range(200):
            await asyncio.sleep(0.005)
            if wg.queue.idle:
                break
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_one_group_per_owner_sized_from_its_annotations(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = world(
        fake_api,
        *(rs_pod(f"web-{i}", "web", "u1") for i in range(3)),
        rs_pod("db-0", "db", "u2"),
        owners=(rs("web", "u1", annotations={"scheduling.volcano.sh/group-min-member": "3"}), rs("db", "u2")),
    )
    wg = controller(kube)
    await settle(wg, api)
    web = api.objects[f"{PG}/podgroup-u1"]
    assert web["spec"] == {"minMember": 3, "minResources": {"cpu": "3", "memory": "3Gi", "pods": "3"}}
    assert web["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert api.objects[f"{PG}/podgroup-u2"]["spec"]["minMember"] == 1
    for i in range(3):
        ann = api.objects[pod_path(f"web-{i}")]["metadata"]["annotations"]
        assert ann["scheduling.k8s.io/group-name"] == "podgroup-u1"
    # One owner GET per owner, not per pod.
    assert sum(1 for m, p in api.hits() if m == "GET" and "replicasets" in p) == 2
    assert wg.stats["created"] == 2 and wg.stats["annotated"] == 4


async def test_restart_is_idempotent_and_follows_a_changed_annotation(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = world(fake_api, *(rs_pod(f"web-{i}", "web", "u1") for i in range(2)), owners=(rs("web", "u1"),))
    await settle(controller(kube), api)
    api.requests.clear()
    # A restart: nothing to create, nothing to annotate again.
    wg = controller(kube)
    await settle(wg, api)
    assert [m for m, _ in api.hits()] == ["GET"] and wg.stats["created"] == 0
    # The owner's min-member changes: the group follows.
    api.objects[rs_path("web")]["metadata"]["annotations"]["scheduling.volcano.sh/group-min-member"] = "2"
    await settle(controller(kube), api)
    assert api.objects[f"{PG}/podgroup-u1"]["spec"]["minMember"] == 2
    assert api.objects[f"{PG}/podgroup-u1"]["spec"]["minResources"]["cpu"] == "2"


async def test_pods_in_someone_elses_group_and_other_schedulers_are_left_alone(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    api = world(
        fake_api,
        rs_pod("spark-1", "s", "u3", **{"scheduling.k8s.io/group-name": "spark-a-podgroup"}),
        rs_pod("plain-1", "p", "u4", scheduler="default-scheduler"),
        owners=(rs("s", "u3"), rs("p", "u4")),
    )
    await settle(controller(kube), api)
    assert api.hits() == []


async def test_a_bad_owner_does_not_stop_the_others(fake_api: FakeApiServer, kube: KubeClient) -> None:
    api = world(
        fake_api,
        rs_pod("bad-1", "bad", "u5"),
        rs_pod("good-1", "good", "u6"),
        owners=(
            rs("bad", "u5"),
            rs("good", "u6", annotations={"scheduling.volcano.sh/group-min-member": "x"}),
        ),
    )
    api.fail[rs_path("bad")] = 500
    events = Events()
    wg = controller(kube, events)
    await settle(wg, api)
    assert f"{PG}/podgroup-u6" in api.objects and f"{PG}/podgroup-u5" not in api.objects
    assert wg.stats["errors"] >= 1 and wg.queue.failures
    # The bad annotation fell back to 1, and the owner carries a Warning saying so.
    assert api.objects[f"{PG}/podgroup-u6"]["spec"]["minMember"] == 1
    assert [e[:3] for e in events.seen] == [("ReplicaSet/good", "Warning", "InvalidAnnotation")]
    assert "'x' is not an integer >= 1" in events.seen[0][3]


async def test_a_gone_or_replaced_owner_gets_no_group(fake_api: FakeApiServer, kube: KubeClient) -> None:
    api = world(fake_api, rs_pod("web-1", "web", "u1"), owners=(rs("web", "other-uid"),))
    await settle(controller(kube), api)
    assert not any("/podgroups/" in p for p in api.objects)
    api = world(fake_api, rs_pod("web-1", "web", "u1"))
    await settle(controller(kube), api)
    assert not any("/podgroups/" in p for p in api.objects)


async def test_group_of_a_replicaset_scaled_to_zero_is_deleted(
    fake_api: FakeApiServer, kube: KubeClient
) -> None:
    pod = rs_pod("web-1", "web", "u1")
    api = world(fake_api, pod, owners=(rs("web", "u1", replicas=1),))
    wg = controller(kube)
    await settle(wg, api)
    assert f"{PG}/podgroup-u1" in api.objects
    task = asyncio.create_task(wg.run())
    try:
        api.objects[rs_path("web")]["spec"]["replicas"] = 0
        del api.objects[pod_path("web-1")]
        wg.store.handlers()["pods"].remove(pod)
        for _ in range(100):
            await asyncio.sleep(0.005)
            if f"{PG}/podgroup-u1" not in api.objects:
                break
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert f"{PG}/podgroup-u1" not in api.objects and wg.stats["deleted"] == 1


async def test_a_group_deleted_by_hand_is_made_again(fake_api: FakeApiServer, kube: KubeClient) -> None:
    api = world(fake_api, rs_pod("web-1", "web", "u1"), owners=(rs("web", "u1"),))
    wg = controller(kube)
    await settle(wg, api)
    group = api.objects.pop(f"{PG}/podgroup-u1")
    task = asyncio.create_task(wg.run())
    try:
        wg.store.handlers()["podgroups"].remove(group)
        for _ in range(100):
            await asyncio.sleep(0.005)
            if f"{PG}/podgroup-u1" in api.objects:
                break
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert f"{PG}/podgroup-u1" in api.objects
