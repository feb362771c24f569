"""The flags of ``pumice serve`` and the :class:`~extender.process.settings.ServeSettings` they make.

Only argparse and plain data: building ``pumice``'s parser imports none of what ``serve`` runs (the
server, the controllers, admission), so every other command starts without them. Flags that parse but do
not make sense together are argparse usage errors (exit 2), before anything starts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import socket
import tempfile
from pathlib import Path
from typing import Any

from extender.api import labels as L
from extender.core.durations import parse_duration
from extender.process.logs import FORMATS, LEVELS
from extender.process.settings import (
    SWITCH_INTERVAL,
    ExtenderListener,
    LeaderElection,
    MetricsListener,
    SchedulingSettings,
    ServeSettings,
    TlsSecrets,
    WebhookListener,
    split_host_port,
)


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each default, but not an absent one (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False):
            return action.help
        return super()._get_help_string(action)


def add_serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the extender, the webhooks and the controllers",
        formatter_class=_DefaultsFormatter,
    )
    p.add_argument("--kubeconfig", default=None, help="kubeconfig (default: in-cluster, then $KUBECONFIG)")
    p.add_argument("--extender-bind", default="0.0.0.0:8888", help="HOST:PORT for the extender (plain HTTP)")
    p.add_argument(
        "--extender-tls-cert-file", default=None, help="serve the extender over TLS with this cert"
    )
    p.add_argument("--extender-tls-key-file", default=None, help="the key of --extender-tls-cert-file")
    p.add_argument(
        "--extender-client-ca-file",
        default=None,
        help="mTLS: accept only extender callers with a client certificate signed by this CA",
    )
    p.add_argument(
        "--extender-max-body-bytes",
        type=int,
        default=8 * 1024 * 1024,
        help="largest extender request accepted (413 beyond; default %(default)s)",
    )
    p.add_argument(
        "--max-job-replicas",
        type=int,
        default=10_000,
        help="admission refuses a vcjob with more replicas in a task or in all (default %(default)s)",
    )
    p.add_argument(
        "--webhook-bind", default="0.0.0.0:8443", help="HOST:PORT for the admission webhooks (TLS)"
    )
    p.add_argument(
        "--tls-cert-file", default=None, help="webhook serving cert (default: generate a self-signed CA)"
    )
    p.add_argument("--tls-key-file", default=None, help="the key of --tls-cert-file")
    p.add_argument("--cert-dir", default=None, help="where generated certs go (default: a temp dir)")
    p.add_argument(
        "--webhook-url-base",
        default=None,
        help="register our webhook configurations with this https://HOST:PORT (pumice outside the cluster)",
    )
    p.add_argument(
        "--webhook-service", default=None, help="register webhook configurations pointing at Service NS/NAME"
    )
    p.add_argument("--scheduler-conf", default=None, help="Volcano scheduler conf (actions + tiers)")
    p.add_argument(
        "--scheduler-conf-poll",
        type=float,
        default=1.0,
        help="seconds between reads of --scheduler-conf for a live reload; 0: off (default %(default)s)",
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        default=None,
        help="schedulerName(s) pumice schedules (default volcano)",
    )
    p.add_argument("--default-queue", default=L.DEFAULT_QUEUE, help="queue of a PodGroup that names none")
    p.add_argument(
        "--forecast-interval",
        type=float,
        default=30.0,
        help="seconds between forecasts of waiting jobs' starts, made only when something changed; 0: off "
        "(default %(default)s)",
    )
    p.add_argument(
        "--forecast-max-steps",
        type=int,
        default=200,
        help="scheduler steps a forecast may take at most; ends further apart are taken together beyond "
        "(default %(default)s)",
    )
    p.add_argument(
        "--forecast-in",
        choices=("process", "thread"),
        default="process",
        help="where forecasts run: process (a worker process: another core, and the extender keeps the "
        "interpreter) or thread (a worker thread of pumice's process) (default %(default)s)",
    )
    p.add_argument(
        "--switch-interval",
        type=float,
        default=SWITCH_INTERVAL,
        help="seconds a thread runs before another may take the interpreter (Python's switch interval): "
        "about the longest an extender call waits for it while a cycle runs (default %(default)s, Python's)",
    )
    p.add_argument(
        "--metrics-bind",
        "--metrics-listen",
        default="0.0.0.0:9090",
        help="HOST:PORT for /metrics, /healthz and /readyz over plain HTTP (Prometheus); '' for none",
    )
    _add_ha_flags(p)
    p.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LEVELS, help="least severe level logged"
    )
    p.add_argument(
        "--log-format",
        default="text",
        choices=FORMATS,
        help="text: logfmt key=value lines; json: one JSON object per line",
    )


def _bool(text: str) -> bool:
    """``--leader-elect=false`` as kube-scheduler spells it (Go's strconv.ParseBool)."""
    value = text.strip().lower()
    if value in ("1", "t", "true", "yes"):
        return True
    if value in ("0", "f", "false", "no"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


def _seconds(text: str) -> float:
    """A Go duration (``15s``, ``1m``) as kube-scheduler's flags take it, or plain seconds."""
    try:
        return float(text) if text.replace(".", "", 1).isdigit() else parse_duration(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _add_ha_flags(p: argparse.ArgumentParser) -> None:
    """Leader election (kube-scheduler's flags and meanings), the shutdown drain and TLS from Secrets."""
    p.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        help="elect one leader among the replicas (a Lease); --leader-elect=false: this process leads alone",
    )
    p.add_argument(
        "--leader-elect-lease-duration",
        type=_seconds,
        default=10.0,
        help="how long standbys wait after the leader's last renewal they saw before taking over (seconds "
        "or a duration such as 10s; default %(default)s)",
    )
    p.add_argument(
        "--leader-elect-renew-deadline",
        type=_seconds,
        default=7.0,
        help="the leader stops acting as one this long after its last successful renewal (less than the "
        "lease duration; default %(default)s)",
    )
    p.add_argument(
        "--leader-elect-retry-period",
        type=_seconds,
        default=2.0,
        help="how often replicas try to acquire or renew the Lease (default %(default)s)",
    )
    p.add_argument("--leader-elect-resource-name", default="pumice", help="the Lease's name")
    p.add_argument(
        "--leader-elect-resource-namespace",
        default=None,
        help="the Lease's namespace (default: this pod's, from POD_NAMESPACE or the service account; "
        "outside a pod kube-system)",
    )
    p.add_argument(
        "--extender-advertise-url",
        default=None,
        help="where the other replicas reach this replica's extender when it leads (default: "
        "http(s)://$POD_IP:PORT, else the --extender-bind address, else this host's name)",
    )
    p.add_argument(
        "--shutdown-delay",
        type=_seconds,
        default=5.0,
        help="after SIGTERM: seconds to keep serving (admission, forwarding) with /readyz 503 and the Lease "
        "released, so a Service stops sending here first (default %(default)s)",
    )
    p.add_argument(
        "--tls-secrets-prefix",
        default=None,
        help="keep the TLS material in Secrets PREFIX-ca, PREFIX-webhook-tls, PREFIX-extender-tls and "
        "PREFIX-kube-scheduler-tls of this pod's namespace, created when missing and shared by every "
        "replica; certificates reload when the Secrets change",
    )
    p.add_argument(
        "--extender-service",
        default=None,
        help="the Service NS/NAME in front of the extender: with --tls-secrets-prefix, serve the extender "
        "over mutual TLS with a certificate for its DNS names",
    )
    p.add_argument(
        "--extender-client-cert-file",
        default=None,
        help="mTLS with files: the client certificate a standby presents when it forwards to the leader",
    )
    p.add_argument("--extender-client-key-file", default=None, help="the key of --extender-client-cert-file")


SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def own_namespace() -> str | None:
    """This pod's namespace: POD_NAMESPACE (the downward API), else the service account's; None outside a
    pod."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    with contextlib.suppress(OSError):
        return Path(SERVICE_ACCOUNT_NAMESPACE).read_text().strip() or None
    return None


def _advertise_url(args: argparse.Namespace, host: str, port: int, tls: bool) -> str:
    if args.extender_advertise_url:
        return str(args.extender_advertise_url).rstrip("/")
    address = os.environ.get("POD_IP") or (
        host if host not in ("0.0.0.0", "::", "") else socket.gethostname()
    )
    if ":" in address:  # an IPv6 address
        address = f"[{address}]"
    return f"{'https' if tls else 'http'}://{address}:{port}"


def _leader_election(args: argparse.Namespace, parser: argparse.ArgumentParser, url: str) -> LeaderElection:
    from controllers.leader.decide import Timing  # client-go's checks of the three durations

    try:
        Timing(
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )
    except ValueError as e:
        parser.error(f"--leader-elect-*: {e}")
    return LeaderElection(
        enabled=args.leader_elect,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        resource_name=args.leader_elect_resource_name,
        resource_namespace=args.leader_elect_resource_namespace or own_namespace() or "kube-system",
        # Host name and a random part, as client-go's: replicas on one host never share an identity.
        identity=f"{socket.gethostname()}_{secrets.token_hex(6)}",
        advertise_url=url,
    )


def _namespaced_name(value: str | None, flag: str, parser: argparse.ArgumentParser) -> tuple[str, str] | None:
    if not value:
        return None
    ns, _, name = value.partition("/")
    if not ns or not name:
        parser.error(f"{flag} must be NAMESPACE/NAME")
    return (ns, name)


def serve_settings(args: argparse.Namespace, parser: argparse.ArgumentParser) -> ServeSettings:
    try:
        eh, ep = split_host_port(args.extender_bind)
        wh, wp = split_host_port(args.webhook_bind)
        metrics = None
        if args.metrics_bind:
            mh, mp = split_host_port(args.metrics_bind)
            metrics = MetricsListener(host=mh, port=mp)
    except ValueError as e:
        parser.error(str(e))
    if bool(args.tls_cert_file) != bool(args.tls_key_file):
        parser.error("--tls-cert-file and --tls-key-file go together")
    if bool(args.extender_tls_cert_file) != bool(args.extender_tls_key_file):
        parser.error("--extender-tls-cert-file and --extender-tls-key-file go together")
    if args.extender_client_ca_file and not args.extender_tls_cert_file:
        parser.error("--extender-client-ca-file needs --extender-tls-cert-file and --extender-tls-key-file")
    if args.forecast_interval < 0 or args.forecast_max_steps < 1:
        parser.error("--forecast-interval must be >= 0 and --forecast-max-steps >= 1")
    if not 0 < args.switch_interval <= 1:
        parser.error("--switch-interval must be > 0 and <= 1 (seconds)")
    if args.max_job_replicas < 1 or args.extender_max_body_bytes < 64 * 1024:
        parser.error("--max-job-replicas must be >= 1 and --extender-max-body-bytes >= 65536")
    if bool(args.extender_client_cert_file) != bool(args.extender_client_key_file):
        parser.error("--extender-client-cert-file and --extender-client-key-file go together")
    service = _namespaced_name(args.webhook_service, "--webhook-service", parser)
    extender_service = _namespaced_name(args.extender_service, "--extender-service", parser)
    if extender_service and not args.tls_secrets_prefix and not args.extender_tls_cert_file:
        parser.error(
            "--extender-service serves TLS: it needs --tls-secrets-prefix (or the --extender-tls-* files)"
        )
    tls_secrets = None
    if args.tls_secrets_prefix:
        if args.tls_cert_file or args.extender_tls_cert_file:
            parser.error(
                "--tls-secrets-prefix takes the certificates from Secrets: no --tls-cert-file or "
                "--extender-tls-cert-file with it"
            )
        namespace = own_namespace()
        if not namespace:
            parser.error("--tls-secrets-prefix needs this pod's namespace (POD_NAMESPACE)")
        tls_secrets = TlsSecrets(prefix=args.tls_secrets_prefix, namespace=namespace)
    extender_tls = bool(args.extender_tls_cert_file or (tls_secrets and extender_service))
    url = _advertise_url(args, eh, ep, extender_tls)
    return ServeSettings(
        kubeconfig=args.kubeconfig,
        log_level=args.log_level,
        log_format=args.log_format,
        metrics=metrics,
        extender=ExtenderListener(
            host=eh,
            port=ep,
            tls_cert=args.extender_tls_cert_file,
            tls_key=args.extender_tls_key_file,
            client_ca=args.extender_client_ca_file,
            max_body=args.extender_max_body_bytes,
            service=extender_service,
            client_cert=args.extender_client_cert_file,
            client_key=args.extender_client_key_file,
        ),
        webhooks=WebhookListener(
            host=wh,
            port=wp,
            tls_cert=args.tls_cert_file,
            tls_key=args.tls_key_file,
            cert_dir=args.cert_dir or tempfile.mkdtemp(prefix="pumice-certs-"),
            url_base=args.webhook_url_base,
            service=service,
        ),
        scheduling=SchedulingSettings(
            conf_path=args.scheduler_conf,
            scheduler_names=frozenset(args.scheduler_name or [L.DEFAULT_SCHEDULER_NAME]),
            default_queue=args.default_queue,
            max_job_replicas=args.max_job_replicas,
            conf_poll=args.scheduler_conf_poll,
            forecast_interval=args.forecast_interval,
            forecast_max_steps=args.forecast_max_steps,
            forecast_in=args.forecast_in,
            self_pod=(
                (os.environ["POD_NAMESPACE"], os.environ["POD_NAME"])
                if os.environ.get("POD_NAMESPACE") and os.environ.get("POD_NAME")
                else None
            ),
        ),
        leader=_leader_election(args, parser, url),
        shutdown_delay=args.shutdown_delay,
        tls_secrets=tls_secrets,
        switch_interval=args.switch_interval,
    )
