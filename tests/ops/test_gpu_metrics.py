"""GPU cards on /metrics: per card memory, use and sharers, the cluster's fragmentation and stranded asks,
from the holds the cache keeps (bound pods' volcano.sh/gpu-index annotations)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from admission.server import make_admission_app
from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.plugins.registry import load_conf
from extender.wiring import Process
from tests.ops.test_metrics_exposition import SETTINGS, podgroup, queue, value


def gpu_node(name: str, cards: int = 2, memory: int = 16000) -> dict[str, Any]:
    capacity = {"cpu": "16", "memory": "64Gi", "pods": "110"}
    capacity |= {"volcano.sh/gpu-number": str(cards), "volcano.sh/gpu-memory": str(cards * memory)}
    return {
        "metadata": {"name": name, "uid": f"n-{name}"},
        "status": {"allocatable": capacity, "capacity": capacity},
    }


def share_pod(name: str, memory: int, node: str = "", card: str = "") -> dict[str, Any]:
    annotations = {"scheduling.k8s.io/group-name": f"g-{name}"}
    if card:
        annotations["volcano.sh/gpu-index"] = card
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"p-{name}", "annotations": annotations,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "schedulerName": "volcano",
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"limits": {"volcano.sh/gpu-memory": str(memory)}}}],
        },
        "status": {"phase": "Running" if node else "Pending"},
    }  # fmt: skip


@pytest.fixture
async def text() -> AsyncIterator[str]:
    kube = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(SETTINGS, load_conf(), kube)
        proc.register_metrics(make_admission_app(proc.lookup, proc.limits))
        h = proc.cache.handlers()
        h["nodes"].replace([gpu_node("n1"), gpu_node("n2")])
        h["queues"].replace([queue("default")])
        h["podgroups"].replace(
            [
                podgroup(f"g-{n}", "default", p)
                for n, p in (("a", "Running"), ("b", "Running"), ("big", "Inqueue"))
            ]
        )
        # n1: card 0 holds 12000 of 16000, card 1 idle; n2: card 0 holds 4000. Free: 4000 + 16000 + 12000
        # + 16000; of it 16000 on partly used cards. A 17000 ask fits the free total, no card.
        h["pods"].replace(
            [share_pod("a", 12000, "n1", "0"), share_pod("b", 4000, "n2", "0"), share_pod("big", 17000)]
        )
        yield proc.metrics.render()
    finally:
        await kube.close()


def test_cards_fragmentation_and_stranded_asks(text: str) -> None:
    assert value(text, "pumice_gpu_card_memory", node="n1", card="0", family="gpushare") == 16000
    assert value(text, "pumice_gpu_card_memory_used", node="n1", card="0", family="gpushare") == 12000
    assert value(text, "pumice_gpu_card_memory_used", node="n1", card="1", family="gpushare") == 0
    assert value(text, "pumice_gpu_card_pods", node="n2", card="0", family="gpushare") == 1
    assert value(text, "pumice_gpu_fragmentation") == pytest.approx(16000 / 48000)
    assert value(text, "pumice_gpu_pending_asks") == 1
    assert value(text, "pumice_gpu_stranded_asks") == 1
