"""``pumice serve``'s TLS: the listeners' SSL contexts, the webhooks' caBundle, the client side of forwarding
to the leader, the certificates' expiry, and their reload.

Three sources, by flags:

- ``--tls-secrets-prefix`` (the certificate contract, several replicas): the four Secrets of
  :mod:`controllers.tls_secrets`, created when missing and shared by every replica. The webhooks serve their
  certificate; the extender serves mutual TLS when ``--extender-service`` names its Service (kube-scheduler,
  and a standby forwarding to the leader, present the client certificate of the ``-kube-scheduler-tls``
  Secret), else plain HTTP. When a Secret changes, the contexts are reloaded in place (new handshakes get
  the new certificates; no restart) and, if the CA changed, the leader registers the new caBundle;
- ``--tls-cert-file``/``--extender-tls-cert-file`` and friends: the files, read once;
- neither: a self-signed CA and webhook certificate made at start (one replica only: every start makes a new
  CA), and a plain-HTTP extender.

Part of the composition root: only :mod:`extender.serve` imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from controllers.kube.client import KubeClient
from controllers.tls_secrets import Names, TlsMaterial, TlsSecrets, expiry
from extender.process.settings import ServeSettings
from extender.process.tls import (
    generate_serving_certs,
    mtls_server_context,
    not_after,
    server_ssl_context,
    service_dns_names,
    write_pair,
)


@dataclass(slots=True, kw_only=True)
class ServingTls:
    """What the listeners serve with; the contexts are the ones the sites hold, reloaded in place."""

    webhook: ssl.SSLContext
    extender: ssl.SSLContext | None
    # The client side of forwarding to the leader's extender (None: plain HTTP, or no client pair).
    forward: ssl.SSLContext | None
    forward_hostname: str | None
    ca_pem: bytes  # the webhook configurations' caBundle
    expiry: list[tuple[str, float]] = field(default_factory=list)
    # Set when the CA bundle changed: the leader registers the webhook configurations again.
    ca_changed: asyncio.Event = field(default_factory=asyncio.Event)
    reloads: int = 0
    secrets: TlsSecrets | None = None
    material: TlsMaterial | None = None
    cert_dir: Path = Path(".")


def _ssl_context(cert: str | Path, key: str | Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    return ctx


def _client_context(
    ca: bytes | None, cert: str | Path, key: str | Path, *, check_hostname: bool = True
) -> ssl.SSLContext:
    """The client side of forwarding: trusts ``ca`` (the system's store without), presents ``cert``. A
    standby dials the leader's pod address, which its certificate may not name: without the Service's name
    to check (``check_hostname`` False) the chain is still verified against the private CA."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca.decode() if ca else None)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = check_hostname
    ctx.load_cert_chain(cert, key)
    return ctx


def _url_host(url: str | None) -> tuple[list[str], list[str]]:
    """The host of ``--webhook-url-base`` as a DNS name or an IP address for the certificate."""
    host = urlsplit(url).hostname if url else None
    if not host:
        return [], []
    return ([], [host]) if host.replace(".", "").isdigit() or ":" in host else ([host], [])


def _names(settings: ServeSettings) -> Names:
    dns, ips = _url_host(settings.webhooks.url_base)
    webhook_dns = ["localhost", *dns]
    if settings.webhooks.service:
        ns, name = settings.webhooks.service
        webhook_dns = [*service_dns_names(name, ns), *webhook_dns]
    extender_dns: list[str] = []
    if settings.extender.service:
        ns, name = settings.extender.service
        extender_dns = service_dns_names(name, ns)
    return Names(
        webhook_dns=tuple(webhook_dns),
        webhook_ips=("127.0.0.1", *ips),
        extender_dns=tuple(extender_dns),
    )


def _forward_hostname(settings: ServeSettings) -> str | None:
    """The name a standby checks the leader's extender certificate against (it dials the pod's IP)."""
    if settings.extender.service:
        ns, name = settings.extender.service
        return f"{name}.{ns}.svc"
    return None


async def serving_tls(settings: ServeSettings, client: KubeClient) -> ServingTls:
    """The contexts and CA for the flags given (see the module docstring)."""
    cert_dir = Path(settings.webhooks.cert_dir)
    if settings.tls_secrets is not None:
        keeper = TlsSecrets(
            client,
            namespace=settings.tls_secrets.namespace,
            prefix=settings.tls_secrets.prefix,
            names=_names(settings),
        )
        material = await keeper.ensure()
        tls = _from_material(settings, material, cert_dir)
        tls.secrets = keeper
        return tls
    return _from_files(settings, cert_dir)


def _from_material(settings: ServeSettings, m: TlsMaterial, cert_dir: Path) -> ServingTls:
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_file = cert_dir / "ca.crt"
    ca_file.write_bytes(m.ca)
    wc, wk = write_pair(cert_dir, "webhook", m.webhook.cert, m.webhook.key)
    cc, ck = write_pair(cert_dir, "client", m.client.cert, m.client.key)
    extender = forward = None
    if settings.extender.service:
        ec, ek = write_pair(cert_dir, "extender", m.extender.cert, m.extender.key)
        extender = mtls_server_context(ec, ek, ca_file)
        forward = _client_context(m.ca, cc, ck)
    return ServingTls(
        webhook=_ssl_context(wc, wk),
        extender=extender,
        forward=forward,
        forward_hostname=_forward_hostname(settings),
        ca_pem=m.ca,
        expiry=expiry(m),
        material=m,
        cert_dir=cert_dir,
    )


def reload(tls: ServingTls, m: TlsMaterial) -> None:
    """New material from the Secrets: the contexts the listeners hold load it (new connections get it),
    the caBundle and the expiry follow, and a changed CA is told (the leader registers it)."""
    old = tls.material
    ca_file = tls.cert_dir / "ca.crt"
    ca_file.write_bytes(m.ca)
    wc, wk = write_pair(tls.cert_dir, "webhook", m.webhook.cert, m.webhook.key)
    tls.webhook.load_cert_chain(wc, wk)
    if tls.extender is not None:
        ec, ek = write_pair(tls.cert_dir, "extender", m.extender.cert, m.extender.key)
        tls.extender.load_cert_chain(ec, ek)
        tls.extender.load_verify_locations(cadata=m.ca.decode())
    if tls.forward is not None:
        cc, ck = write_pair(tls.cert_dir, "client", m.client.cert, m.client.key)
        tls.forward.load_cert_chain(cc, ck)
        tls.forward.load_verify_locations(cadata=m.ca.decode())
    tls.material, tls.ca_pem, tls.expiry = m, m.ca, expiry(m)
    tls.reloads += 1
    if old is None or old.ca != m.ca:
        tls.ca_changed.set()


async def watch(tls: ServingTls) -> None:
    """Reload whenever the Secrets change (a root task with ``--tls-secrets-prefix``; else it sleeps)."""
    if tls.secrets is None or tls.material is None:
        await asyncio.Event().wait()
        return
    await tls.secrets.watch(lambda m: reload(tls, m), current=tls.material)


def _from_files(settings: ServeSettings, cert_dir: Path) -> ServingTls:
    w = settings.webhooks
    if w.tls_cert and w.tls_key:
        webhook, ca_pem, webhook_cert = (
            _ssl_context(w.tls_cert, w.tls_key),
            Path(w.tls_cert).read_bytes(),
            None,
        )
    else:
        names = _names(settings)
        certs = generate_serving_certs(
            cert_dir, dns_names=list(names.webhook_dns), ip_addresses=list(names.webhook_ips)
        )
        webhook, ca_pem, webhook_cert = server_ssl_context(certs), certs.ca_pem, certs.cert
    e = settings.extender
    extender = forward = None
    if e.tls_cert and e.tls_key:
        extender = (
            mtls_server_context(e.tls_cert, e.tls_key, e.client_ca)
            if e.client_ca
            else _ssl_context(e.tls_cert, e.tls_key)
        )
        if e.client_cert and e.client_key:
            ca = Path(e.client_ca).read_bytes() if e.client_ca else None
            forward = _client_context(
                ca, e.client_cert, e.client_key, check_hostname=_forward_hostname(settings) is not None
            )
    out: list[tuple[str, float]] = []
    for label, path in (
        ("webhook", webhook_cert or (Path(w.tls_cert) if w.tls_cert else None)),
        ("extender", Path(e.tls_cert) if e.tls_cert else None),
    ):
        with contextlib.suppress(OSError, ValueError):
            if path is not None:
                out.append((label, not_after(path.read_bytes())))
    return ServingTls(
        webhook=webhook,
        extender=extender,
        forward=forward,
        forward_hostname=_forward_hostname(settings),
        ca_pem=ca_pem,
        expiry=out,
        cert_dir=cert_dir,
    )
