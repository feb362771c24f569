"""Run pumice on the e2e control plane: our CRDs, ``pumice serve``, and kube-scheduler on our config.

``ensure_pumice(control_plane)`` is idempotent: tests sharing a control plane share one pumice process
and one kube-scheduler (with the ``volcano`` and ``default-scheduler`` profiles, so the fast path for
other schedulers' pods runs through our extender too).

pumice is started as in production outside a cluster (``--webhook-url-base``): it reads the API server's
version itself and registers the webhooks that version supports (pod webhooks with ``matchConditions`` and
the scheduling-gate mutation from 1.27/1.28 on, none of them on 1.24). The scheduler config is generated in
the apiVersion this control plane's kube-scheduler loads.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from extender.api.crds import crd_documents
from extender.deploy.scheduler_config import scheduler_config
from tests.e2e.controlplane import ControlPlane, ControlPlaneError, _http, free_port


@dataclass(frozen=True)
class Pumice:
    extender_url: str
    webhook_url: str


def _status_message(body: bytes) -> str:
    """The ``message`` of a Status answer (what the API server refused, and why), else the body."""
    try:
        return str(json.loads(body)["message"])[:2000]
    except (ValueError, KeyError, TypeError):
        return repr(body[:300])


def _apply_crds(cp: ControlPlane) -> None:
    base = f"{cp.server_url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    for doc in crd_documents():
        status, body = _http("POST", base, cp.token, doc)
        if status not in (201, 409):
            raise ControlPlaneError(
                f"creating CRD {doc['metadata']['name']} on kube-apiserver {cp.version}: HTTP {status}: "
                f"{_status_message(body)}"
            )
    deadline = time.monotonic() + 30
    for doc in crd_documents():
        name = doc["metadata"]["name"]
        while True:
            status, body = _http("GET", f"{base}/{name}", cp.token)
            conds = json.loads(body).get("status", {}).get("conditions", []) if status == 200 else []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                break
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"CRD {name} not established")
            time.sleep(0.1)


def ensure_pumice(
    cp: ControlPlane,
    *,
    restart: bool = False,
    bind_verb: bool = False,
    scheduler_conf: str | None = None,
    start_scheduler: bool = True,
    extra_args: tuple[str, ...] = (),
) -> Pumice:
    """pumice running on ``cp``; restarted when ``restart`` or when ``scheduler_conf`` (Volcano conf YAML,
    given with ``--scheduler-conf``; None: pumice's default) is not the one it runs with, so a test that
    asks for a conf gets it and the tests after it, asking for none, get the default back."""
    proc = cp.processes.get("pumice")
    existing: Pumice | None = getattr(cp, "_pumice", None)
    same_conf = getattr(cp, "_pumice_scheduler_conf", None) == scheduler_conf
    if proc is not None and proc.running and existing is not None and not restart and same_conf:
        _start_scheduler(cp, existing, bind_verb)  # a no-op when that configuration already runs
        return existing
    if existing is None:
        _apply_crds(cp)
    ep = existing.extender_url.rsplit(":", 1)[1] if existing else str(free_port())
    wp = existing.webhook_url.rsplit(":", 1)[1] if existing else str(free_port())
    pumice = Pumice(extender_url=f"http://127.0.0.1:{ep}", webhook_url=f"https://127.0.0.1:{wp}")
    conf_args: list[str] = []
    if scheduler_conf is not None:
        conf_path = scheduler_conf_path(cp)
        conf_path.write_text(scheduler_conf)
        conf_args.append(f"--scheduler-conf={conf_path}")
    cp.start_process(
        "pumice",
        [
            sys.executable,
            "-m",
            "extender.main",
            "serve",
            f"--kubeconfig={cp.kubeconfig_path}",
            f"--extender-bind=127.0.0.1:{ep}",
            f"--webhook-bind=127.0.0.1:{wp}",
            # Any free port: several control planes (and restarts) run side by side on one machine.
            "--metrics-bind=127.0.0.1:0",
            f"--webhook-url-base={pumice.webhook_url}",
            f"--cert-dir={cp.workdir / 'pumice-certs'}",
            # Leader election on, as deployed (one replica leads at once); a restart drains briefly.
            "--shutdown-delay=0.5",
            # Forecasts every 3 s rather than 30: the e2e clusters are small (a forecast costs milliseconds)
            # and the forecast test then waits seconds, not half a minute.
            "--forecast-interval=3",
            *conf_args,
            *extra_args,
        ],
        cwd=Path(__file__).resolve().parents[2],
        # As the downward API sets them in a cluster: what a rejected conf reload's Event is about.
        env={"POD_NAMESPACE": "default", "POD_NAME": PUMICE_POD_NAME},
        ready_url=f"{pumice.extender_url}/readyz",
        timeout=60,
    )
    # Queues are created right after the first sync; wait for them so tests can rely on `default`.
    deadline = time.monotonic() + 30
    queues = f"{cp.server_url}/apis/scheduling.volcano.sh/v1beta1/queues/default"
    while _http("GET", queues, cp.token)[0] != 200:
        if time.monotonic() > deadline:
            raise ControlPlaneError("pumice did not create the default queue")
        time.sleep(0.1)
    if start_scheduler:
        _start_scheduler(cp, pumice, bind_verb)
    cp._pumice = pumice
    cp._pumice_scheduler_conf = scheduler_conf
    return pumice


PUMICE_POD_NAME = "pumice-e2e"


def scheduler_conf_path(cp: ControlPlane) -> Path:
    """Where ``ensure_pumice(scheduler_conf=...)`` writes the conf pumice watches (a test may edit it)."""
    return cp.workdir / "pumice-scheduler.conf"


def _start_scheduler(cp: ControlPlane, pumice: Pumice, bind_verb: bool) -> None:
    conf = scheduler_config(
        extender_url=pumice.extender_url,
        # What this control plane's kube-scheduler loads: v1 from 1.25 on, v1beta3 on 1.24.
        api_version=cp.scheduler_config_api_version,
        kubeconfig=str(cp.kubeconfig_path),
        with_default_profile=True,
        leader_elect=False,
        bind_verb=bind_verb,
    )
    cp.start_scheduler(yaml.safe_load(yaml.safe_dump(conf)))


def pumice_cli(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "extender.main", *args], check=True, capture_output=True, text=True
    ).stdout
