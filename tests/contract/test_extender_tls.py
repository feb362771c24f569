"""The extender's mutual TLS, end to end: real handshakes against an aiohttp server on 127.0.0.1.

The server side is ``extender.process.tls.mtls_server_context`` (what ``pumice serve`` builds from
``--extender-tls-cert-file``/``--extender-tls-key-file``/``--extender-client-ca-file``), the material is a CA,
a serving certificate for pumice's Service names and kube-scheduler's client certificate (what the TLS
Secrets of a deployed pumice hold), and the client dials the Service name kube-scheduler
dials (``server_hostname``), so the serving certificate's names are checked as they will be in the cluster.
Refusals are tried with TLS 1.2, where the handshake itself fails, and TLS 1.3, where the client finishes
its half first and learns of the refusal on its first read; either way the handler never runs.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from extender.deploy.manifests import extender_host
from extender.process.tls import (
    MutualTLSBundle,
    generate_mtls_bundle,
    mtls_client_context,
    mtls_server_context,
    service_dns_names,
)

NAMESPACE = "batch-system"
HOST = extender_host(NAMESPACE)  # pumice.batch-system.svc


def _write(directory: Path, cert: bytes, key: bytes, ca: bytes) -> tuple[Path, Path, Path]:
    """The layout of a mounted kubernetes.io/tls Secret with ca.crt."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = directory / "tls.crt", directory / "tls.key", directory / "ca.crt"
    for path, data in zip(paths, (cert, key, ca), strict=True):
        path.write_bytes(data)
    return paths


@pytest.fixture(scope="module")
def bundle() -> MutualTLSBundle:
    return generate_mtls_bundle(dns_names=service_dns_names("pumice", NAMESPACE))


@pytest.fixture
def server_files(tmp_path: Path, bundle: MutualTLSBundle) -> tuple[Path, Path, Path]:
    return _write(tmp_path / "server", bundle.server_cert, bundle.server_key, bundle.ca_cert)


@pytest.fixture
def client_files(tmp_path: Path, bundle: MutualTLSBundle) -> tuple[Path, Path, Path]:
    return _write(tmp_path / "client", bundle.client_cert, bundle.client_key, bundle.ca_cert)


@pytest.fixture
def handled() -> list[str]:
    """The client common names the handler saw: a refused client must never get that far."""
    return []


@pytest.fixture(params=[ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
def tls_version(request: pytest.FixtureRequest) -> ssl.TLSVersion:
    version: ssl.TLSVersion = request.param
    return version


def _pinned(ctx: ssl.SSLContext, version: ssl.TLSVersion) -> ssl.SSLContext:
    ctx.minimum_version = ctx.maximum_version = version
    return ctx


@pytest.fixture
async def server(aiohttp_server: Any, server_files: tuple[Path, Path, Path], handled: list[str]) -> Any:
    async def filter_(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item for rdn in (peer or {}).get("subject", ()) for item in rdn)
        handled.append(str(subject.get("commonName")))
        return web.json_response({"NodeNames": ["n1"], "Client": subject.get("commonName")})

    app = web.Application()
    app.router.add_post("/filter", filter_)
    cert, key, ca = server_files
    return await aiohttp_server(app, ssl=mtls_server_context(cert, key, ca))


async def _call(server: Any, ctx: ssl.SSLContext, *, server_hostname: str = HOST) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"https://127.0.0.1:{server.port}/filter",
            json={"Pod": {}, "NodeNames": ["n1"]},
            ssl=ctx,
            server_hostname=server_hostname,
        ) as resp,
    ):
        return resp.status, await resp.json()


async def test_kube_scheduler_client_certificate_is_accepted(
    server: Any, client_files: tuple[Path, Path, Path], handled: list[str], tls_version: ssl.TLSVersion
) -> None:
    status, body = await _call(server, _pinned(mtls_client_context(*client_files), tls_version))
    assert status == 200
    assert body == {"NodeNames": ["n1"], "Client": "pumice-kube-scheduler"}
    assert handled == ["pumice-kube-scheduler"]


async def test_client_without_certificate_is_refused(
    server: Any, client_files: tuple[Path, Path, Path], handled: list[str], tls_version: ssl.TLSVersion
) -> None:
    _, _, ca = client_files
    no_cert = ssl.create_default_context(cafile=str(ca))  # trusts pumice, presents nothing
    with pytest.raises(aiohttp.ClientError):
        await _call(server, _pinned(no_cert, tls_version))
    assert handled == []


async def test_client_certificate_from_another_ca_is_refused(
    server: Any,
    tmp_path: Path,
    client_files: tuple[Path, Path, Path],
    handled: list[str],
    tls_version: ssl.TLSVersion,
) -> None:
    other = generate_mtls_bundle(dns_names=[HOST])
    cert, key, _ = _write(tmp_path / "other", other.client_cert, other.client_key, other.ca_cert)
    _, _, our_ca = client_files
    # It trusts pumice's CA, so only the client certificate is wrong.
    with pytest.raises(aiohttp.ClientError):
        await _call(server, _pinned(mtls_client_context(cert, key, our_ca), tls_version))
    assert handled == []


async def test_serving_certificate_is_no_client_certificate(
    server: Any, server_files: tuple[Path, Path, Path], handled: list[str], tls_version: ssl.TLSVersion
) -> None:
    """Same CA, but serverAuth only: stealing pumice's own pair does not let a caller in."""
    with pytest.raises(aiohttp.ClientError):
        await _call(server, _pinned(mtls_client_context(*server_files), tls_version))
    assert handled == []


async def test_client_refuses_a_server_from_another_ca(
    aiohttp_server: Any, tmp_path: Path, client_files: tuple[Path, Path, Path]
) -> None:
    """The other direction: kube-scheduler, trusting only our CA, does not talk to an impostor."""
    other = generate_mtls_bundle(dns_names=[HOST])
    cert, key, ca = _write(tmp_path / "impostor", other.server_cert, other.server_key, other.ca_cert)
    impostor = await aiohttp_server(web.Application(), ssl=mtls_server_context(cert, key, ca))
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _call(impostor, mtls_client_context(*client_files))


async def test_client_checks_the_service_name(server: Any, client_files: tuple[Path, Path, Path]) -> None:
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _call(server, mtls_client_context(*client_files), server_hostname="pumice.other-namespace.svc")


def test_server_context_requires_client_certificates(server_files: tuple[Path, Path, Path]) -> None:
    ctx = mtls_server_context(*server_files)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert [c["subject"] for c in ctx.get_ca_certs()] == [((("commonName", "pumice-extender-ca"),),)]


def test_server_context_rejects_mismatched_files(tmp_path: Path, bundle: MutualTLSBundle) -> None:
    cert, _, ca = _write(tmp_path / "mixed", bundle.server_cert, bundle.client_key, bundle.ca_cert)
    with pytest.raises(ssl.SSLError):
        mtls_server_context(cert, tmp_path / "mixed" / "tls.key", ca)
