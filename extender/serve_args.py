"""The flags of ``pumice serve`` and the :class:`~extender.process.settings.ServeSettings` they make.

Only argparse and plain data: building ``pumice``'s parser imports none of what ``serve`` runs (the
server, the controllers, admission), so every other command starts without them. Flags that parse but do
not make sense together are argparse usage errors (exit 2), before anything starts.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

from extender.api import labels as L
from extender.process.logs import FORMATS, LEVELS
from extender.process.settings import (
    ExtenderListener,
    MetricsListener,
    SchedulingSettings,
    ServeSettings,
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
        "--metrics-bind",
        "--metrics-listen",
        default="0.0.0.0:9090",
        help="HOST:PORT for /metrics, /healthz and /readyz over plain HTTP (Prometheus); '' for none",
    )
    p.add_argument(
        "--log-level", default="INFO", type=str.upper, choices=LEVELS, help="least severe level logged"
    )
    p.add_argument(
        "--log-format",
        default="text",
        choices=FORMATS,
        help="text: logfmt key=value lines; json: one JSON object per line",
    )


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
    if args.max_job_replicas < 1 or args.extender_max_body_bytes < 64 * 1024:
        parser.error("--max-job-replicas must be >= 1 and --extender-max-body-bytes >= 65536")
    service = None
    if args.webhook_service:
        ns, _, name = args.webhook_service.partition("/")
        if not ns or not name:
            parser.error("--webhook-service must be NAMESPACE/NAME")
        service = (ns, name)
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
            self_pod=(
                (os.environ["POD_NAMESPACE"], os.environ["POD_NAME"])
                if os.environ.get("POD_NAMESPACE") and os.environ.get("POD_NAME")
                else None
            ),
        ),
    )
