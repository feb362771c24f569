"""Self-signed TLS material: a private CA and the certificates it signs, for the webhook and extender servers.

kube-apiserver calls webhooks only over TLS and checks the serving certificate against the ``caBundle`` of
the webhook configuration, by subject alternative name (the common name is ignored). So the serving
certificate lists every name kube-apiserver may dial (``<svc>.<ns>.svc`` for a Service reference, the host of
a URL), and the CA's PEM is what goes into ``caBundle``. Keys are ECDSA P-256; the key file is written 0600.
:func:`generate_serving_certs` makes a new CA every call (one replica's self-signed start);
:func:`new_ca_pem` and :func:`issue_pem` make the certificate contract's material, kept in Secrets and
shared by every replica (``controllers.tls_secrets``): a CA once, leaves issued (and renewed) from it.

The extender is authenticated both ways (mutual TLS): :func:`generate_mtls_bundle` makes one CA that signs
pumice's serving certificate (``serverAuth``) and kube-scheduler's client certificate (``clientAuth``), and
:func:`mtls_server_context` builds the server side that refuses any client without a certificate from that
CA. OpenSSL checks the extended key usage of the peer's certificate, so neither certificate can stand in for
the other.

Who uses it: the composition root (:mod:`extender.serve_tls`), which builds both servers' SSL contexts and
hands them over, ``controllers.tls_secrets``, which keeps the Secrets, and :mod:`extender.deploy`, which
generates the extender's material for ``pumice manifests deploy``. Neither server imports it, and it imports
neither a server, the controllers nor the deploy package (an import-linter contract), so the deploy package
uses it without reaching into admission or the runtime.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

CA_FILE: Final = "ca.crt"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
# The identity kube-scheduler presents to the extender.
EXTENDER_CLIENT_COMMON_NAME: Final = "pumice-kube-scheduler"
_SKEW: Final = dt.timedelta(minutes=5)

StrPath = str | os.PathLike[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServingCerts:
    """Where the files are, and the CA PEM for the webhook configurations' ``caBundle``."""

    ca_cert: Path
    cert: Path
    key: Path
    ca_pem: bytes


def service_dns_names(name: str, namespace: str) -> list[str]:
    """The names a Service answers to inside the cluster (kube-apiserver dials ``<name>.<ns>.svc``)."""
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc", f"{name}.{namespace}.svc.cluster.local"]


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(path: Path, data: bytes, mode: int) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _validity(days: int, now: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    start = (now or dt.datetime.now(dt.UTC)) - _SKEW
    return start, start + dt.timedelta(days=days) + _SKEW


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _new_ca(
    common_name: str, start: dt.datetime, end: dt.datetime
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _new_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    *,
    common_name: str,
    usage: ObjectIdentifier,
    sans: Sequence[x509.GeneralName],
    start: dt.datetime,
    end: dt.datetime,
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A certificate ``ca_cert`` signs for one extended key usage (server or client authentication)."""
    key = ec.generate_private_key(ec.SECP256R1())
    ca_ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.add_extension(
        x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
    ).sign(ca_key, hashes.SHA256())
    return key, cert


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _server_sans(dns_names: Sequence[str], ip_addresses: Sequence[str]) -> list[x509.GeneralName]:
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    ips = [ipaddress.ip_address(a) for a in ip_addresses]  # ValueError names a bad address
    return [*(x509.DNSName(n) for n in dns_names), *(x509.IPAddress(ip) for ip in ips)]


def _leaf_name(dns_names: Sequence[str], ip_addresses: Sequence[str]) -> str:
    return dns_names[0] if dns_names else str(ipaddress.ip_address(ip_addresses[0]))


def generate_serving_certs(
    directory: Path,
    *,
    dns_names: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1",),
    days: int = 365,
    now: dt.datetime | None = None,
) -> ServingCerts:
    """Write ``ca.crt``, ``tls.crt`` and ``tls.key`` into ``directory`` (created if needed)."""
    sans = _server_sans(dns_names, ip_addresses)
    start, end = _validity(days, now)
    ca_key, ca_cert = _new_ca("pumice-admission-ca", start, end)
    key, cert = _new_leaf(
        ca_key,
        ca_cert,
        common_name=_leaf_name(dns_names, ip_addresses),
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        sans=sans,
        start=start,
        end=end,
    )

    directory.mkdir(parents=True, exist_ok=True)
    ca_pem = _cert_pem(ca_cert)
    files = ServingCerts(
        ca_cert=directory / CA_FILE, cert=directory / CERT_FILE, key=directory / KEY_FILE, ca_pem=ca_pem
    )
    _write(files.key, _key_pem(key), 0o600)
    _write(files.cert, _cert_pem(cert), 0o644)
    _write(files.ca_cert, ca_pem, 0o644)
    return files


def server_ssl_context(certs: ServingCerts) -> ssl.SSLContext:
    """A TLS server context for aiohttp (``web.TCPSite(..., ssl_context=...)``), TLS 1.2 at least."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile=certs.cert, keyfile=certs.key)
    return ctx


@dataclass(frozen=True, slots=True, kw_only=True)
class MutualTLSBundle:
    """PEM bytes of one CA and the two certificates it signed: the extender's serving certificate and key,
    and the client certificate and key kube-scheduler presents. Kept in memory: the caller decides where
    they go (files, a Secret)."""

    ca_cert: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes


def generate_mtls_bundle(
    *,
    dns_names: Sequence[str],
    ip_addresses: Sequence[str] = (),
    client_common_name: str = EXTENDER_CLIENT_COMMON_NAME,
    days: int = 365,
    now: dt.datetime | None = None,
) -> MutualTLSBundle:
    """A fresh CA, a server certificate for ``dns_names``/``ip_addresses`` (``serverAuth``) and a client
    certificate named ``client_common_name`` (``clientAuth``, no alternative names), all signed by that CA.

    Every call makes a new CA, so certificates from two calls never trust each other. ``now`` fixes the
    validity window (for tests); the keys are random regardless.
    """
    sans = _server_sans(dns_names, ip_addresses)
    if not client_common_name:
        raise ValueError("client_common_name must not be empty")
    start, end = _validity(days, now)
    ca_key, ca_cert = _new_ca("pumice-extender-ca", start, end)
    server_key, server_cert = _new_leaf(
        ca_key,
        ca_cert,
        common_name=_leaf_name(dns_names, ip_addresses),
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
        sans=sans,
        start=start,
        end=end,
    )
    client_key, client_cert = _new_leaf(
        ca_key,
        ca_cert,
        common_name=client_common_name,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        sans=(),
        start=start,
        end=end,
    )
    return MutualTLSBundle(
        ca_cert=_cert_pem(ca_cert),
        server_cert=_cert_pem(server_cert),
        server_key=_key_pem(server_key),
        client_cert=_cert_pem(client_cert),
        client_key=_key_pem(client_key),
    )


def mtls_server_context(cert_file: StrPath, key_file: StrPath, client_ca_file: StrPath) -> ssl.SSLContext:
    """A TLS server context (TLS 1.2 at least) that serves ``cert_file``/``key_file`` and completes a
    handshake only with a client whose certificate ``client_ca_file`` signed for ``clientAuth``.

    For aiohttp: ``web.TCPSite(runner, host, port, ssl_context=mtls_server_context(...))``. The files are
    read here, once: new certificates take a new context (pumice reads them at start-up).
    """
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile=cert_file, keyfile=key_file)
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cafile=client_ca_file)
    return ctx


def mtls_client_context(cert_file: StrPath, key_file: StrPath, ca_file: StrPath) -> ssl.SSLContext:
    """The client side of :func:`mtls_server_context`: trusts only ``ca_file`` for the server and presents
    ``cert_file``/``key_file`` (what kube-scheduler does with the extender's ``tlsConfig``)."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca_file)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile=cert_file, keyfile=key_file)
    return ctx


# --- the certificate contract: PEM material kept in Secrets (controllers.tls_secrets) --------------------

# The CA outlives its leaves by far: a renewed leaf is signed by the same CA, so nobody's trust changes.
CA_DAYS: Final = 3650
LEAF_DAYS: Final = 365


def new_ca_pem(
    common_name: str = "pumice-ca", *, days: int = CA_DAYS, now: dt.datetime | None = None
) -> tuple[bytes, bytes]:
    """A new CA: its certificate and key, PEM."""
    start, end = _validity(days, now)
    key, cert = _new_ca(common_name, start, end)
    return _cert_pem(cert), _key_pem(key)


def issue_pem(
    ca_cert: bytes,
    ca_key: bytes,
    *,
    common_name: str,
    client: bool = False,
    dns_names: Sequence[str] = (),
    ip_addresses: Sequence[str] = (),
    days: int = LEAF_DAYS,
    now: dt.datetime | None = None,
) -> tuple[bytes, bytes]:
    """A certificate the CA (PEM) signs: for serving ``dns_names``/``ip_addresses``, or a client certificate
    named ``common_name`` (``client``); its certificate and key, PEM."""
    authority = x509.load_pem_x509_certificate(ca_cert)
    signer = serialization.load_pem_private_key(ca_key, password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an ECDSA key this module can sign with")
    start, end = _validity(days, now)
    key, cert = _new_leaf(
        signer,
        authority,
        common_name=common_name,
        usage=ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH,
        sans=() if client else _server_sans(dns_names, ip_addresses),
        start=start,
        end=end,
    )
    return _cert_pem(cert), _key_pem(key)


def not_after(cert: bytes) -> float:
    """When a PEM certificate expires, in epoch seconds (the expiry metric)."""
    return x509.load_pem_x509_certificate(cert).not_valid_after_utc.timestamp()


def covers(cert: bytes, dns_names: Sequence[str], ip_addresses: Sequence[str] = ()) -> bool:
    """Whether a serving certificate names every one of ``dns_names`` and ``ip_addresses``."""
    try:
        sans = x509.load_pem_x509_certificate(cert).extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        )
    except x509.ExtensionNotFound:
        return not dns_names and not ip_addresses
    have_dns = set(sans.value.get_values_for_type(x509.DNSName))
    have_ips = {str(a) for a in sans.value.get_values_for_type(x509.IPAddress)}
    return set(dns_names) <= have_dns and {str(ipaddress.ip_address(a)) for a in ip_addresses} <= have_ips


def issued_by(cert: bytes, ca_cert: bytes) -> bool:
    """Whether ``cert`` was signed by ``ca_cert`` (false for anything unreadable)."""
    try:
        x509.load_pem_x509_certificate(cert).verify_directly_issued_by(
            x509.load_pem_x509_certificate(ca_cert)
        )
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def write_pair(directory: Path, name: str, cert: bytes, key: bytes) -> tuple[Path, Path]:
    """Write a certificate and its key as ``<name>.crt`` and ``<name>.key`` (0600) in ``directory``, for an
    SSL context to load (``ssl`` reads files only); their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    _write(key_path, key, 0o600)
    _write(cert_path, cert, 0o644)
    return cert_path, key_path
