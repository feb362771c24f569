"""/metrics renders every registered metric (a missing counter once made it, and the loop, raise)."""

from __future__ import annotations

import dataclasses

from kubernetes_asyncio import client as k8s

from admission.server import make_admission_app
from controllers.kube.client import KubeClient
from extender.main import Process
from extender.plugins.registry import load_conf
from extender.settings import ServeSettings

SETTINGS = ServeSettings(
    kubeconfig=None, extender_host="127.0.0.1", extender_port=0, extender_tls_cert=None,
    extender_tls_key=None, webhook_host="127.0.0.1", webhook_port=0, tls_cert=None, tls_key=None,
    cert_dir="/tmp", webhook_url_base=None, webhook_service=None, scheduler_conf=None,
    scheduler_names=frozenset({"volcano"}), default_queue="default", log_level="INFO",
)  # fmt: skip


async def test_every_metric_renders() -> None:
    kube = KubeClient(k8s.Configuration())
    try:
        proc = Process(SETTINGS, load_conf(), kube)
        proc.register_metrics(make_admission_app(proc.lookup, proc.limits))
        text = proc.metrics.render()
    finally:
        await kube.close()
    for name in (
        "pumice_binds_refused_total",
        "pumice_cycle_errors_total",
        "pumice_unreadable_objects_total",
        "pumice_informer_errors_total",
        "pumice_events_total",
        "pumice_job_invalid_total",
    ):
        assert f"\n{name}" in text or text.startswith(name), name
    assert dataclasses.replace(SETTINGS, max_job_replicas=5).max_job_replicas == 5
