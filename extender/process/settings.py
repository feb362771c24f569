"""``pumice serve`` settings: parsed once from the command line into frozen dataclasses, one per part
of the process, passed down explicitly."""

from __future__ import annotations

from dataclasses import dataclass

# Seconds: CPython's own default. 1 ms and 0.5 ms gave no better filter p99 in
# hack/bench/filter_under_load.py with 100 000 running pods (the machine's load decided it), and a shorter
# slice costs the cycle's thread more switches; the flag is there to tune it where that differs.
SWITCH_INTERVAL = 0.005


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtenderListener:
    """Where kube-scheduler calls the extender verbs."""

    host: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None
    # mTLS: only callers with a client certificate signed by this CA may call the extender.
    client_ca: str | None = None
    max_body: int = 8 * 1024 * 1024
    # The Service in front of the extender (namespace, name): the DNS names its certificate carries (TLS from
    # --tls-secrets-prefix), and the name a standby checks when it forwards to the leader.
    service: tuple[str, str] | None = None
    # The client pair a standby presents when it forwards to the leader's extender under mTLS (with files;
    # --tls-secrets-prefix uses the kube-scheduler client certificate of its Secrets).
    client_cert: str | None = None
    client_key: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookListener:
    """Where the API server calls the admission webhooks (always TLS), and how it is told to."""

    host: str
    port: int
    tls_cert: str | None = None
    tls_key: str | None = None
    cert_dir: str
    url_base: str | None = None
    service: tuple[str, str] | None = None  # (namespace, name) of the Service in front of pumice


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricsListener:
    """Where Prometheus scrapes ``/metrics`` (plain HTTP; also ``/healthz`` and ``/readyz``)."""

    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulingSettings:
    conf_path: str | None = None
    scheduler_names: frozenset[str]
    default_queue: str
    max_job_replicas: int = 10_000
    # How often the conf file is read for a live reload (seconds; 0: never), and pumice's own Pod
    # (namespace, name; from POD_NAMESPACE/POD_NAME, the downward API) for the reload's Events.
    conf_poll: float = 1.0
    self_pod: tuple[str, str] | None = None
    # The forecast of waiting jobs' starts: at most every this many seconds (0: off), and at most this many
    # scheduler steps each (see controllers.simulate.forecast).
    forecast_interval: float = 30.0
    forecast_max_steps: int = 200
    # Where a forecast runs: "process" (a worker process, controllers.forecast.worker: another core, and
    # the event loop keeps the GIL) or "thread" (a worker thread of this process).
    forecast_in: str = "process"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElection:
    """kube-scheduler's ``--leader-elect*`` flags, with their meanings (seconds), and where this replica's
    extender can be reached by the others (advertised on the Lease while it leads)."""

    enabled: bool = True
    lease_duration: float = 10.0
    renew_deadline: float = 7.0
    retry_period: float = 2.0
    resource_name: str = "pumice"
    resource_namespace: str = "kube-system"
    identity: str = ""
    advertise_url: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class TlsSecrets:
    """The certificate contract: the TLS material lives in four Secrets ``<prefix>-ca``,
    ``<prefix>-webhook-tls``, ``<prefix>-extender-tls`` and ``<prefix>-kube-scheduler-tls`` in
    ``namespace``, created by the first replica that finds them missing."""

    prefix: str
    namespace: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    kubeconfig: str | None
    log_level: str
    extender: ExtenderListener
    webhooks: WebhookListener
    scheduling: SchedulingSettings
    log_format: str = "text"  # text (logfmt) or json; see extender.process.logs
    metrics: MetricsListener | None = None  # None: /metrics only on the extender and webhook listeners
    # Off unless given: built by the CLI (on by default there, as kube-scheduler's); a process built
    # without it leads alone, as before leader election.
    leader: LeaderElection = LeaderElection(enabled=False)
    # After SIGTERM: seconds the process keeps serving (readiness 503, the Lease released) before it exits.
    shutdown_delay: float = 0.0
    tls_secrets: TlsSecrets | None = None
    # CPython's switch interval (sys.setswitchinterval), set once at start-up by extender.serve: the
    # longest the event loop waits for the GIL while the cycle's thread runs pure Python.
    switch_interval: float = SWITCH_INTERVAL


def split_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)
