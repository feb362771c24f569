"""/metrics renders every registered metric (a missing counter once made it, and the loop, raise)."""

from __future__ import annotations

from admission.server import make_admission_app
from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection
from extender.plugins.registry import load_conf
from extender.process.settings import ExtenderListener, SchedulingSettings, ServeSettings, WebhookListener
from extender.wiring import Process

SETTINGS = ServeSettings(
    kubeconfig=None,
    log_level="INFO",
    extender=ExtenderListener(host="127.0.0.1", port=0),
    webhooks=WebhookListener(host="127.0.0.1", port=0, cert_dir="/tmp"),
    scheduling=SchedulingSettings(scheduler_names=frozenset({"volcano"}), default_queue="default"),
)


async def test_every_metric_renders() -> None:
    kube = KubeClient(Connection(host="http://localhost"))
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
