"""``pumice serve`` settings: parsed once from the command line into a frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    kubeconfig: str | None
    extender_host: str
    extender_port: int
    extender_tls_cert: str | None
    extender_tls_key: str | None
    # mTLS: only callers with a client certificate signed by this CA may call the extender.
    extender_client_ca: str | None = None
    extender_max_body: int = 8 * 1024 * 1024
    webhook_host: str
    webhook_port: int
    tls_cert: str | None
    tls_key: str | None
    cert_dir: str
    webhook_url_base: str | None
    webhook_service: tuple[str, str] | None
    scheduler_conf: str | None
    scheduler_names: frozenset[str]
    default_queue: str
    log_level: str
    max_job_replicas: int = 10_000


def split_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)
