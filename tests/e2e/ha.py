"""Several pumice replicas as the chart runs them, on one e2e control plane: :class:`HaPumice`.

Each replica is a ``pumice serve`` process with its own ports and its own API user (``pumice-a``,
``pumice-b``: the audit log tells their writes apart), leader election on one Lease, the TLS material in the
certificate contract's Secrets (``--tls-secrets-prefix``: every replica serves the same webhook
certificate), and a short drain on SIGTERM. Two :class:`~tests.e2e.router.Router` stand where the chart's
Service does: one in front of the extender listeners (kube-scheduler's extender URL points at it) and one in
front of the webhook listeners (the webhook configurations point at it, through ``--webhook-url-base``).

Replicas are started, stopped (SIGTERM), killed (SIGKILL), paused (SIGSTOP) and resumed by index; which one
leads is read from each one's ``pumice_leader`` gauge.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

from extender.deploy.scheduler_config import scheduler_config
from tests.e2e.controlplane import ControlPlane, ControlPlaneError, _http, free_port, wait_until
from tests.e2e.pumice import _apply_crds
from tests.e2e.router import Router

ROOT = Path(__file__).resolve().parents[2]
USERS = ("pumice-a", "pumice-b")
NAMESPACE = "default"
LEASE = "pumice-ha"
T = TypeVar("T")


@dataclass(frozen=True)
class Replica:
    index: int
    user: str
    extender: int
    webhook: int
    metrics: int

    @property
    def process(self) -> str:
        return self.user

    @property
    def extender_url(self) -> str:
        return f"http://127.0.0.1:{self.extender}"


def metric(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    return None


class HaPumice:
    def __init__(
        self,
        cp: ControlPlane,
        *,
        replicas: int = 2,
        shutdown_delay: float = 2.0,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.cp = cp
        self.replicas = [Replica(i, USERS[i], free_port(), free_port(), free_port()) for i in range(replicas)]
        self.shutdown_delay = shutdown_delay
        self.extra_args = extra_args
        self.extender_router = Router("extender", [("127.0.0.1", r.extender) for r in self.replicas])
        self.webhook_router = Router(
            "webhook", [("127.0.0.1", r.webhook) for r in self.replicas], scheme="https"
        )
        # Processes die with the thread that forked them (PR_SET_PDEATHSIG): every start goes through this
        # one thread, which lives as long as this object, whichever thread (a test's to_thread) asks.
        self._launcher = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="ha-launcher"
        )

    def launch(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` (which starts processes) on the launcher thread and wait for it."""
        return self._launcher.submit(fn).result()

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> None:
        self.extender_router.start()
        self.webhook_router.start()
        _apply_crds(self.cp)
        for r in self.replicas:
            self.start_replica(r.index)
        wait_until(lambda: self.leader() is not None, timeout=60, what="a pumice leader")
        queues = f"{self.cp.server_url}/apis/scheduling.volcano.sh/v1beta1/queues/default"
        wait_until(lambda: _http("GET", queues, self.cp.token)[0] == 200, timeout=30, what="default queue")
        conf = scheduler_config(
            extender_url=self.extender_router.url,
            api_version=self.cp.scheduler_config_api_version,
            kubeconfig=str(self.cp.kubeconfig_path),
            with_default_profile=True,
            leader_elect=False,
            # A frozen replica (the pause test) holds kube-scheduler's pinned connection until this passes.
            http_timeout_seconds=10,
        )
        self.launch(lambda: self.cp.start_scheduler(yaml.safe_load(yaml.safe_dump(conf)), force=True))

    def stop(self) -> None:
        for r in self.replicas:
            self.cp.stop_process(r.process, timeout=self.shutdown_delay + 10)
        self.cp.stop_scheduler()
        self.extender_router.stop()
        self.webhook_router.stop()
        self._launcher.shutdown()

    def argv(self, r: Replica) -> list[str]:
        return [
            sys.executable,
            "-m",
            "extender.main",
            "serve",
            f"--kubeconfig={self.cp.kubeconfig_for(r.user)}",
            f"--extender-bind=127.0.0.1:{r.extender}",
            f"--webhook-bind=127.0.0.1:{r.webhook}",
            f"--metrics-bind=127.0.0.1:{r.metrics}",
            f"--webhook-url-base={self.webhook_router.url}",
            f"--cert-dir={self.cp.workdir / f'certs-{r.user}'}",
            "--tls-secrets-prefix=pumice-ha",
            f"--leader-elect-resource-name={LEASE}",
            f"--shutdown-delay={self.shutdown_delay}",
            *self.extra_args,
        ]

    def start_replica(self, i: int) -> None:
        r = self.replicas[i]
        self.launch(
            lambda: self.cp.start_process(
                r.process,
                self.argv(r),
                cwd=ROOT,
                env={"POD_NAMESPACE": NAMESPACE, "POD_NAME": r.user},
                # Ready as a pod would be: listed everything (the webhooks can answer).
                ready_url=f"http://127.0.0.1:{r.metrics}/readyz",
                timeout=90,
                stop_timeout=self.shutdown_delay + 10,
            )
        )

    def stop_replica(self, i: int) -> float:
        """SIGTERM and wait for the exit (a rolling update's step); the time the signal was sent."""
        sent = time.monotonic()
        self.cp.stop_process(self.replicas[i].process, timeout=self.shutdown_delay + 10)
        return sent

    def signal(self, i: int, sig: signal.Signals) -> float:
        popen = self.cp.processes[self.replicas[i].process].popen
        assert popen is not None
        sent = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, sig)
        if sig == signal.SIGKILL:
            popen.wait(10)
        return sent

    def kill(self, i: int) -> float:
        return self.signal(i, signal.SIGKILL)

    # --- reading --------------------------------------------------------------------------------------
    def metrics(self, i: int) -> str:
        url = f"http://127.0.0.1:{self.replicas[i].metrics}/metrics"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=2) as resp:
            return str(resp.read().decode())

    def metric(self, i: int, name: str) -> float | None:
        try:
            return metric(self.metrics(i), name)
        except OSError:
            return None

    def running(self, i: int) -> bool:
        proc = self.cp.processes.get(self.replicas[i].process)
        return proc is not None and proc.running

    def leader(self) -> int | None:
        leaders = [
            i for i in range(len(self.replicas)) if self.running(i) and self.metric(i, "pumice_leader") == 1
        ]
        if len(leaders) > 1:
            raise ControlPlaneError(f"two replicas lead at once: {leaders}")
        return leaders[0] if leaders else None

    def sum_metric(self, name: str) -> float:
        return sum(self.metric(i, name) or 0.0 for i in range(len(self.replicas)) if self.running(i))
