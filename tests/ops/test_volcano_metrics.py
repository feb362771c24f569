"""Volcano's dashboards work on pumice's /metrics: every series (name and labels) that Volcano's published
scheduler dashboards query is there after a small scheduling run, with Volcano's units.

The list below was written from reading the two scheduler dashboards Volcano's Helm chart ships to
Grafana ("Volcano Scheduler Internal Metrics" and "Volcano Queue Metrics"): each series they query, the
labels their queries and legends use, and the label values they filter on. It is our own list of facts,
not their JSON.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from admission.server import make_admission_app
from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.plugins.registry import load_conf
from extender.wiring import Process
from tests.ops.test_metrics_exposition import SETTINGS, pod, podgroup, queue

# series -> (labels every sample carries, label values some sample must have)
VOLCANO_DASHBOARD_SERIES: dict[str, tuple[set[str], dict[str, str]]] = {
    # Scheduler internals.
    "volcano_e2e_scheduling_latency_milliseconds_bucket": ({"le"}, {}),
    "volcano_e2e_job_scheduling_duration": ({"job_name", "queue", "job_namespace"}, {}),
    "volcano_e2e_job_scheduling_latency_milliseconds_bucket": ({"le"}, {}),
    "volcano_total_preemption_attempts": (set(), {}),
    "volcano_pod_preemption_victims": (set(), {}),
    "volcano_plugin_scheduling_latency_milliseconds_bucket": ({"le", "plugin", "OnSession"}, {}),
    "volcano_action_scheduling_latency_milliseconds_bucket": ({"le", "action"}, {}),
    # Queues.
    "volcano_queue_request_milli_cpu": ({"queue_name"}, {}),
    "volcano_queue_allocated_milli_cpu": ({"queue_name"}, {}),
    "volcano_queue_deserved_milli_cpu": ({"queue_name"}, {}),
    "volcano_queue_request_memory_bytes": ({"queue_name"}, {}),
    "volcano_queue_allocated_memory_bytes": ({"queue_name"}, {}),
    "volcano_queue_deserved_memory_bytes": ({"queue_name"}, {}),
    "volcano_queue_request_scalar_resources": ({"queue_name", "resource"}, {"resource": "nvidia.com/gpu"}),
    "volcano_queue_allocated_scalar_resources": ({"queue_name", "resource"}, {"resource": "nvidia.com/gpu"}),
    "volcano_queue_deserved_scalar_resources": ({"queue_name", "resource"}, {"resource": "nvidia.com/gpu"}),
    "volcano_queue_capacity_milli_cpu": ({"queue_name"}, {}),
    "volcano_queue_real_capacity_milli_cpu": ({"queue_name"}, {}),
    "volcano_queue_capacity_memory_bytes": ({"queue_name"}, {}),
    "volcano_queue_real_capacity_memory_bytes": ({"queue_name"}, {}),
    "volcano_queue_capacity_scalar_resources": ({"queue_name", "resource"}, {"resource": "nvidia.com/gpu"}),
    "volcano_queue_real_capacity_scalar_resources": (
        {"queue_name", "resource"},
        {"resource": "nvidia.com/gpu"},
    ),
    "volcano_queue_share": ({"queue_name"}, {}),
}
GPU = "nvidia.com/gpu"


def gpu_node(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"n-{name}"},
        "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110", GPU: "8"}},
    }


def gpu_pod(name: str, group: str, node_name: str = "") -> dict[str, Any]:
    p = pod(name, group, node_name, "2")
    p["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    p["spec"]["containers"][0]["resources"]["limits"] = {GPU: "1"}
    return p


@pytest.fixture
async def after_a_run() -> AsyncIterator[tuple[Process, str]]:
    """Two GPU nodes, two queues (one with a capability in cpu, memory and GPUs), a running gang and a
    waiting one; one cycle plans the waiting gang, then the watch shows it Running and a vcjob complete."""
    kube = KubeClient(Connection(host="http://localhost"))
    try:
        proc = Process(SETTINGS, load_conf(), kube)
        proc.register_metrics(make_admission_app(proc.lookup, proc.limits))
        handlers = {i.name: i.handler for i in proc.informers}
        handlers["nodes"].replace([gpu_node("n1"), gpu_node("n2")])
        handlers["queues"].replace(
            [
                queue("default"),
                queue("research", 3, {"cpu": "24", "memory": "96Gi", GPU: "12"}),
                queue("prod", 1),
            ]
        )
        handlers["podgroups"].replace(
            [podgroup("running", "prod", "Running"), podgroup("new", "research", "Inqueue")]
        )
        handlers["pods"].replace([gpu_pod("r0", "running", "n1"), gpu_pod("w0", "new"), gpu_pod("w1", "new")])
        proc.scheduler.loop.cycle()
        handlers["podgroups"].upsert(podgroup("new", "research", "Running"))
        job = {
            "metadata": {
                "name": "train",
                "namespace": "ns",
                "uid": "j1",
                "creationTimestamp": "2026-01-01T00:00:00Z",
            },
            "spec": {"queue": "research"},
            "status": {"state": {"phase": "Running"}},
        }
        handlers["jobs"].upsert(job)
        handlers["jobs"].upsert({**job, "status": {"state": {"phase": "Completed"}}})
        yield proc, proc.metrics.render()
    finally:
        await kube.close()


def samples(text: str) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append(dict(s.labels))
    return out


def value(text: str, name: str, **labels: str) -> float:
    found = [
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    ]
    assert len(found) == 1, (name, labels, found)
    return float(found[0])


def test_every_series_volcanos_scheduler_dashboards_query_is_exported(
    after_a_run: tuple[Process, str],
) -> None:
    exported = samples(after_a_run[1])
    for name, (labels, values) in VOLCANO_DASHBOARD_SERIES.items():
        assert name in exported, f"{name} missing from /metrics"
        assert all(labels <= set(s) for s in exported[name]), (name, exported[name][:3])
        assert any(all(s.get(k) == v for k, v in values.items()) for s in exported[name]), (name, values)


def test_volcanos_units_and_labels(after_a_run: tuple[Process, str]) -> None:
    text = after_a_run[1]
    # The running gang holds 2 cpu, 1 GiB, 1 GPU in prod; the planned one asks 4 cpu and 2 GPUs in research.
    assert value(text, "volcano_queue_allocated_milli_cpu", queue_name="prod") == 2000
    assert value(text, "volcano_queue_allocated_memory_bytes", queue_name="prod") == 2**30
    assert value(text, "volcano_queue_allocated_scalar_resources", queue_name="prod", resource=GPU) == 1
    assert value(text, "volcano_queue_capacity_milli_cpu", queue_name="research") == 24000
    assert value(text, "volcano_queue_capacity_scalar_resources", queue_name="research", resource=GPU) == 12
    assert value(text, "volcano_queue_request_milli_cpu", queue_name="research") >= 4000
    assert value(text, "volcano_queue_weight", queue_name="research") == 3
    assert value(text, "volcano_queue_pod_group_running_count", queue_name="prod") == 1
    # pumice's own names beside them, in base units.
    assert value(text, "pumice_queue_allocated", queue="prod", resource="cpu") == 2.0
    assert value(text, "pumice_queue_weight", queue="research") == 3
    assert value(text, "pumice_queue_state", queue="research", state="Open") == 1
    # The wait the watch saw, per queue, and per PodGroup under Volcano's names.
    assert value(text, "pumice_podgroup_wait_seconds_count", queue="research") == 1
    assert (
        value(
            text, "volcano_e2e_job_scheduling_duration", job_name="new", queue="research", job_namespace="ns"
        )
        > 0
    )
    assert value(text, "volcano_job_completed_phase_count", job_name="train", queue_name="research") == 1
    assert value(text, "volcano_schedule_attempts_total", result="scheduled") == 2
    assert value(text, "volcano_action_scheduling_latency_milliseconds_count", action="allocate") == 1


def test_process_and_runtime_metrics(after_a_run: tuple[Process, str]) -> None:
    exported = samples(after_a_run[1])
    for name in ("process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"):
        assert name in exported, name
    assert "python_gc_collections_total" in exported


def test_wait_buckets_reach_a_week(after_a_run: tuple[Process, str]) -> None:
    text = after_a_run[1]
    les = {
        s.labels["le"]
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "pumice_podgroup_wait_seconds_bucket"
    }
    for bound in ("3600.0", "21600.0", "43200.0", "86400.0", "172800.0", "345600.0", "604800.0"):
        assert bound in les, bound
