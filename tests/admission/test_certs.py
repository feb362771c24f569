"""Self-signed serving certificates: what kube-apiserver checks, and a real TLS round trip."""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import stat
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from admission.lookup import StaticLookup
from admission.server import make_admission_app
from extender.process.tls import generate_serving_certs, server_ssl_context, service_dns_names


def test_files_and_names(tmp_path: Path) -> None:
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    certs = generate_serving_certs(
        tmp_path / "tls",
        dns_names=["localhost", *service_dns_names("pumice", "pumice-system")],
        ip_addresses=["127.0.0.1", "::1"],
        days=30,
        now=now,
    )
    assert (certs.ca_cert.name, certs.cert.name, certs.key.name) == ("ca.crt", "tls.crt", "tls.key")
    assert certs.ca_cert.read_bytes() == certs.ca_pem
    assert stat.S_IMODE(certs.key.stat().st_mode) == 0o600

    ca = x509.load_pem_x509_certificate(certs.ca_pem)
    leaf = x509.load_pem_x509_certificate(certs.cert.read_bytes())
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    san = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == [
        "localhost",
        "pumice",
        "pumice.pumice-system",
        "pumice.pumice-system.svc",
        "pumice.pumice-system.svc.cluster.local",
    ]
    assert san.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert leaf.not_valid_before_utc < now < leaf.not_valid_after_utc
    assert leaf.not_valid_after_utc - now == dt.timedelta(days=30)


def test_every_call_makes_a_new_ca(tmp_path: Path) -> None:
    first = generate_serving_certs(tmp_path)
    second = generate_serving_certs(tmp_path)
    assert first.ca_pem != second.ca_pem
    server_ssl_context(second)  # raises unless the files on disk are the second set, key and cert together


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not appear to be an IPv4 or IPv6 address"):
        generate_serving_certs(tmp_path, ip_addresses=["not-an-ip"])
    with pytest.raises(ValueError, match="at least one DNS name or IP address"):
        generate_serving_certs(tmp_path, dns_names=[], ip_addresses=[])


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
async def test_tls_round_trip(tmp_path: Path, aiohttp_server: Any, host: str) -> None:
    certs = generate_serving_certs(tmp_path, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    server = await aiohttp_server(make_admission_app(StaticLookup), ssl=server_ssl_context(certs))
    client_ctx = ssl.create_default_context(cafile=str(certs.ca_cert))
    queues = {"group": "scheduling.volcano.sh", "version": "v1beta1", "resource": "queues"}
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "tls",
            "operation": "CREATE",
            "resource": queues,
            "object": {"metadata": {"name": "q"}},
        },
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"https://{host}:{server.port}/queues/mutate", json=review, ssl=client_ctx) as resp,
    ):
        assert resp.status == 200
        body = await resp.json()
    assert body["response"]["uid"] == "tls"
    assert body["response"]["patchType"] == "JSONPatch"
