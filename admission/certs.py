"""Self-signed TLS material for the webhook server: a private CA and a serving certificate it signs.

kube-apiserver calls webhooks only over TLS and checks the serving certificate against the ``caBundle`` of
the webhook configuration, by subject alternative name (the common name is ignored). So the serving
certificate lists every name kube-apiserver may dial (``<svc>.<ns>.svc`` for a Service reference, the host of
a URL), and the CA's PEM is what goes into ``caBundle``. Keys are ECDSA P-256; the key file is written 0600.
Every call makes a new CA: each process start re-patches ``caBundle`` (replicas must share one set of files).
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
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_FILE: Final = "ca.crt"
CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
_SKEW: Final = dt.timedelta(minutes=5)


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


def generate_serving_certs(
    directory: Path,
    *,
    dns_names: Sequence[str] = ("localhost",),
    ip_addresses: Sequence[str] = ("127.0.0.1",),
    days: int = 365,
    now: dt.datetime | None = None,
) -> ServingCerts:
    """Write ``ca.crt``, ``tls.crt`` and ``tls.key`` into ``directory`` (created if needed)."""
    if not dns_names and not ip_addresses:
        raise ValueError("a serving certificate needs at least one DNS name or IP address")
    ips = [ipaddress.ip_address(a) for a in ip_addresses]  # ValueError names a bad address
    start = (now or dt.datetime.now(dt.UTC)) - _SKEW
    end = start + dt.timedelta(days=days) + _SKEW

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("pumice-admission-ca")
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ip) for ip in ips]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(dns_names[0] if dns_names else str(ips[0])))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=False,
                crl_sign=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )

    directory.mkdir(parents=True, exist_ok=True)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    files = ServingCerts(
        ca_cert=directory / CA_FILE, cert=directory / CERT_FILE, key=directory / KEY_FILE, ca_pem=ca_pem
    )
    _write(
        files.key,
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
        0o600,
    )
    _write(files.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    _write(files.ca_cert, ca_pem, 0o644)
    return files


def server_ssl_context(certs: ServingCerts) -> ssl.SSLContext:
    """A TLS server context for aiohttp (``web.TCPSite(..., ssl_context=...)``), TLS 1.2 at least."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile=certs.cert, keyfile=certs.key)
    return ctx
