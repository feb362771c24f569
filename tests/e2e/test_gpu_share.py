"""GPU sharing end to end (deviceshare): a real kube-apiserver + kube-scheduler, fake GPU nodes whose
capacity is what Volcano's device plugins register (gpushare: ``volcano.sh/gpu-number`` and
``volcano.sh/gpu-memory`` in the Node's status; vGPU: the ``volcano.sh/node-vgpu-register`` annotation),
a fake kubelet, and pumice on a conf with ``deviceshare``.

What is asserted is what a device plugin relies on:

- card-level accounting: pods sharing a card never ask more than its memory, although the node-level
  extended resource (all cards' memory summed, which is all kube-scheduler checks) would admit more, and a
  pod refused for that says so (the reason names ``deviceshare``);
- a card given whole (``volcano.sh/gpu-number``) is shared with nobody;
- the decision annotations (``volcano.sh/gpu-index`` and ``volcano.sh/predicate-time``; for vGPU
  ``volcano.sh/vgpu-ids-new`` and ``volcano.sh/bind-phase: allocating``) are on every pod in the very
  object version that first shows it bound: a watch started before the pods exist records each pod as it
  was at its first ``spec.nodeName``. Both ways a pod binds are covered: kube-scheduler binding after the
  filter admitted the planned node (gpushare tests) and pumice's ``/bind`` (the vGPU test);
- after a restart pumice recounts the cards from the bound pods' annotations: a new pod does not go on a
  full card.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from kubernetes_asyncio import client

from tests.e2e import kube
from tests.e2e.conftest import FakeNodes, node_labels
from tests.e2e.controlplane import ControlPlane
from tests.e2e.fake_kubelet import FakeKubelet
from tests.e2e.pumice import ensure_pumice

pytestmark = pytest.mark.e2e

PG = "scheduling.volcano.sh/v1beta1"
GPU_MEMORY = "volcano.sh/gpu-memory"
GPU_NUMBER = "volcano.sh/gpu-number"
GPU_INDEX = "volcano.sh/gpu-index"
PREDICATE_TIME = "volcano.sh/predicate-time"
VGPU_NUMBER = "volcano.sh/vgpu-number"
VGPU_MEMORY = "volcano.sh/vgpu-memory"
VGPU_IDS = "volcano.sh/vgpu-ids-new"
BIND_PHASE = "volcano.sh/bind-phase"
CARD_MEMORY = 16000  # every fake card below: 2 cards, 32000 in all

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
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.GPUNumberEnable: true
      deviceshare.VGPUEnable: true
      deviceshare.SchedulePolicy: binpack
      deviceshare.ScheduleWeight: 10
"""

GPUSHARE_NODE = {GPU_NUMBER: "2", GPU_MEMORY: str(2 * CARD_MEMORY)}
VGPU_REGISTER = (
    f"GPU-aaa,4,{CARD_MEMORY},NVIDIA-A100,true,hami-core:GPU-bbb,4,{CARD_MEMORY},NVIDIA-A100,true,hami-core:"
)
VGPU_NODE = {VGPU_NUMBER: "8", VGPU_MEMORY: str(2 * CARD_MEMORY), "volcano.sh/vgpu-cores": "200"}


@pytest.fixture
def gpu_pumice(control_plane: ControlPlane) -> None:
    ensure_pumice(control_plane, scheduler_conf=CONF)


class FirstBound:
    """Each pod of a namespace as the watch first showed it with ``spec.nodeName``: a watch started
    before the pods exist sees every version, so an annotation written after the bind would be missing
    from the recorded one."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.pods: dict[str, dict[str, Any]] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        path = kube.collection_path("v1", "pods", self.namespace)
        rv = (await kube.list_objects(self.api, path))["metadata"]["resourceVersion"]
        self._task = asyncio.create_task(self._watch(path, rv))

    async def _watch(self, path: str, rv: str) -> None:
        # One watch for the whole test (it is not resumed): its window must outlast a slow run's restarts.
        async for event in kube.watch_events(self.api, path, resource_version=rv, timeout_seconds=900):
            pod = event.get("object") or {}
            name = (pod.get("metadata") or {}).get("name")
            if event.get("type") in ("ADDED", "MODIFIED") and (pod.get("spec") or {}).get("nodeName"):
                self.pods.setdefault(str(name), pod)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait(self, names: list[str], count: int) -> list[str]:
        """The names of those of ``names`` seen bound, once ``count`` of them are."""

        async def check() -> list[str] | None:
            placed = [n for n in names if n in self.pods]
            return placed if len(placed) >= count else None

        return await kube.wait_for(check, 30, message=f"{count} of {names} bound")

    def annotations(self, name: str) -> dict[str, str]:
        return dict(self.pods[name]["metadata"].get("annotations") or {})


@pytest_asyncio.fixture(loop_scope="function")
async def first_bound(kube_api: client.ApiClient, namespace: str) -> AsyncIterator[FirstBound]:
    watch = FirstBound(kube_api, namespace)
    await watch.start()
    yield watch
    await watch.stop()


async def gpu_nodes(
    api: client.ApiClient,
    fake_nodes: FakeNodes,
    test_id: str,
    resources: dict[str, str],
    annotations: dict[str, str] | None = None,
) -> tuple[str, dict[str, str]]:
    """One fake node with ``resources`` in capacity and allocatable (and node ``annotations``, as a
    device plugin writes them); its name and the labels pods select it by."""
    labels = node_labels(test_id)
    [node] = await fake_nodes(1, cpu="16", memory="64Gi", labels=labels, extra_resources=resources)
    if annotations:
        body = {"metadata": {"annotations": annotations}}
        await kube.request(
            api, "PATCH", f"/api/v1/nodes/{node}", body=body, content_type="application/merge-patch+json"
        )
    return node, labels


async def gpu_pod(
    api: client.ApiClient, ns: str, name: str, selector: dict[str, str], resources: dict[str, str]
) -> None:
    """A pod asking ``resources`` (requests = limits, as extended resources must be) in its own
    PodGroup of one."""
    body = {
        "apiVersion": PG,
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"minMember": 1, "queue": "default"},
    }
    await kube.request(api, "POST", kube.collection_path(PG, "podgroups", ns), body=body)
    manifest = kube.pod_manifest(
        name,
        scheduler_name="volcano",
        annotations={"scheduling.k8s.io/group-name": name},
        node_selector=selector,
    )
    for c in manifest["spec"]["containers"]:
        c["resources"]["requests"].update(resources)
        c["resources"]["limits"].update(resources)
    await kube.create_pod(api, ns, manifest)


async def pods_by_node(api: client.ApiClient, ns: str, names: list[str]) -> dict[str, str]:
    return {n: str((await kube.get_pod(api, ns, n))["spec"].get("nodeName") or "") for n in names}


async def unschedulable_message(api: client.ApiClient, ns: str, group: str) -> str:
    pg = await kube.request(api, "GET", f"{kube.collection_path(PG, 'podgroups', ns)}/{group}")
    conds = pg.get("status", {}).get("conditions") or []
    return next((str(c.get("message", "")) for c in conds if c.get("type") == "Unschedulable"), "")


async def describe(api: client.ApiClient, ns: str) -> str:
    """Every pod of the namespace: its node and GPU annotations (what a failed assertion shows)."""
    pods = (await kube.list_objects(api, kube.collection_path("v1", "pods", ns)))["items"]
    return "; ".join(
        f"{p['metadata']['name']} on {p['spec'].get('nodeName') or '-'} "
        f"{ {k: v for k, v in (p['metadata'].get('annotations') or {}).items() if 'volcano.sh' in k} }"
        for p in pods
    )


async def wait_refused_by_deviceshare(api: client.ApiClient, ns: str, pod: str) -> str:
    """The pending pod's reason once it names deviceshare: its PodGroup's Unschedulable condition. (The
    pod's own PodScheduled message is kube-scheduler's: the extender's reason on 1.24, "blocked due to
    non-empty scheduling gates" from 1.27 on, where pumice keeps an unplaced gang gated.)"""
    seen: list[str] = []

    async def check() -> str:
        message = await unschedulable_message(api, ns, pod)
        seen.append(message)
        unbound = not (await kube.get_pod(api, ns, pod))["spec"].get("nodeName")
        return message if unbound and "deviceshare" in message else ""

    try:
        return await kube.wait_for(check, 20, message=lambda: f"a deviceshare reason; last seen {seen[-1:]}")
    except TimeoutError as err:
        raise AssertionError(f"{err}; pods: {await describe(api, ns)}") from None


async def test_fractional_pods_share_a_card_up_to_its_memory_with_the_cards_written_before_bind(
    gpu_pumice: None,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    first_bound: FirstBound,
    test_id: str,
) -> None:
    node, selector = await gpu_nodes(kube_api, fake_nodes, test_id, GPUSHARE_NODE)
    names = [f"share-{i}" for i in range(5)]
    for name in names:
        await gpu_pod(kube_api, namespace, name, selector, {GPU_MEMORY: "6000"})
    # Two 6000 pods per 16000 card: 4 fit. The node's 32000 in all would take a 5th (30000): only
    # counting card by card refuses it.
    placed = await first_bound.wait(names, 4)
    unplaced = [n for n in names if n not in placed]
    assert len(unplaced) == 1, await describe(kube_api, namespace)
    left = unplaced[0]
    message = await wait_refused_by_deviceshare(kube_api, namespace, left)
    assert f"node {node}" in message, message
    await asyncio.sleep(2)  # kube-scheduler has retried by now; it still may not bind
    assert (await pods_by_node(kube_api, namespace, names))[left] == ""
    assert sorted(first_bound.pods) == sorted(placed)

    per_card: dict[str, int] = {}
    for name in placed:
        assert first_bound.pods[name]["spec"]["nodeName"] == node
        annotations = first_bound.annotations(name)
        # On the pod in the version that first shows it bound: the device plugin can read them at start.
        assert PREDICATE_TIME in annotations, (name, annotations)
        cards = annotations.get(GPU_INDEX, "").split(",")
        assert len(cards) == 1 and cards[0] in ("0", "1"), (name, annotations)
        per_card[cards[0]] = per_card.get(cards[0], 0) + 6000
    assert per_card == {"0": 12000, "1": 12000}


async def test_a_whole_card_is_shared_with_nobody_also_after_a_restart(
    gpu_pumice: None,
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    first_bound: FirstBound,
    test_id: str,
) -> None:
    _, selector = await gpu_nodes(kube_api, fake_nodes, test_id, GPUSHARE_NODE)
    # Binpack puts the first share on card 0, so the whole-card pod must take the idle card 1.
    await gpu_pod(kube_api, namespace, "share-a", selector, {GPU_MEMORY: "6000"})
    await first_bound.wait(["share-a"], 1)
    await gpu_pod(kube_api, namespace, "whole", selector, {GPU_NUMBER: "1"})
    await first_bound.wait(["whole"], 1)
    assert first_bound.annotations("share-a").get(GPU_INDEX) == "0"
    assert first_bound.annotations("whole").get(GPU_INDEX) == "1"
    await gpu_pod(kube_api, namespace, "share-b", selector, {GPU_MEMORY: "6000"})
    await first_bound.wait(["share-b"], 1)
    assert first_bound.annotations("share-b").get(GPU_INDEX) == "0"
    # Card 0 has 4000 left and card 1 is held whole (its memory untouched, and the node's 12000 of
    # 32000 would admit the pod): a 6000 share fits nowhere.
    await gpu_pod(kube_api, namespace, "share-c", selector, {GPU_MEMORY: "6000"})
    message = await wait_refused_by_deviceshare(kube_api, namespace, "share-c")
    assert "6000" in message, message

    # A restarted pumice has no plans: it recounts the cards from the bound pods' annotations. A pod
    # created after the restart fits card 0's 4000 exactly; the older share-c, looked at by the same
    # cycles, still fits nowhere.
    ensure_pumice(control_plane, restart=True, scheduler_conf=CONF)
    await gpu_pod(kube_api, namespace, "share-d", selector, {GPU_MEMORY: "4000"})
    await first_bound.wait(["share-d"], 1)
    assert first_bound.annotations("share-d").get(GPU_INDEX) == "0"
    await asyncio.sleep(1)
    bound_after_restart = "share-c" in first_bound.pods
    assert not bound_after_restart, await describe(kube_api, namespace)
    assert "deviceshare" in await unschedulable_message(kube_api, namespace, "share-c")


async def test_vgpu_slices_never_exceed_a_card_and_are_written_before_pumice_binds(
    control_plane: ControlPlane,
    kube_api: client.ApiClient,
    namespace: str,
    fake_nodes: FakeNodes,
    fake_kubelet: FakeKubelet,
    first_bound: FirstBound,
    test_id: str,
) -> None:
    # pumice's /bind binds here: it writes the decision, then binds.
    ensure_pumice(control_plane, bind_verb=True, scheduler_conf=CONF)
    try:
        node, selector = await gpu_nodes(
            kube_api, fake_nodes, test_id, VGPU_NODE, {"volcano.sh/node-vgpu-register": VGPU_REGISTER}
        )
        names = [f"vgpu-{i}" for i in range(3)]
        for name in names:
            await gpu_pod(kube_api, namespace, name, selector, {VGPU_NUMBER: "1", VGPU_MEMORY: "10000"})
        # One 10000 slice per 16000 card: 2 fit, although each card takes 4 sharers and the node's
        # 32000 in all would take 30000.
        placed = await first_bound.wait(names, 2)
        unplaced = [n for n in names if n not in placed]
        assert len(unplaced) == 1, await describe(kube_api, namespace)
        left = unplaced[0]
        await wait_refused_by_deviceshare(kube_api, namespace, left)
        per_card: dict[str, int] = {}
        for name in placed:
            annotations = first_bound.annotations(name)
            assert annotations.get(BIND_PHASE) == "allocating", (name, annotations)
            assert annotations.get("volcano.sh/vgpu-node") == node, (name, annotations)
            # "uuid,NVIDIA,memory,cores:" per card: one card with 10000.
            [device] = [d for d in annotations.get(VGPU_IDS, "").split(":") if d]
            uuid, _, memory, _ = device.split(",")
            per_card[uuid] = per_card.get(uuid, 0) + int(memory)
        assert per_card == {"GPU-aaa": 10000, "GPU-bbb": 10000}
    finally:
        ensure_pumice(control_plane, scheduler_conf=CONF)  # kube-scheduler binds itself again
