"""controllers.kube.kubeconfig: the cluster and its credentials from the service account or a kubeconfig.

The TLS cases make real requests through :class:`~controllers.kube.client.KubeClient` to an HTTPS server on
127.0.0.1 that requires a client certificate signed by its CA (``extender.process.tls``'s mutual TLS), so
"the CA, the client certificate and the key were loaded" is proved by a handshake, not by reading fields.
The cases the loader leaves to kubernetes-asyncio (an exec plugin, a proxy) check that the connection it
builds carries what kubernetes-asyncio loaded.
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestServer

from controllers.kube.client import KubeClient
from controllers.kube.connection import Connection, StaticAuthorization, TokenFile, anonymous
from controllers.kube.kubeconfig import KubeConfigError, in_cluster, load_config
from extender.process.tls import MutualTLSBundle, generate_mtls_bundle, mtls_server_context

CLIENT_NAME = "alice"


@dataclass(frozen=True, slots=True)
class Seen:
    """What the server saw of one request: the client certificate's common name, the Authorization."""

    client: str | None
    authorization: str | None


@pytest.fixture(scope="module")
def pki() -> MutualTLSBundle:
    return generate_mtls_bundle(
        dns_names=["api.internal"], ip_addresses=["127.0.0.1"], client_common_name=CLIENT_NAME
    )


async def _serve(tmp: Path, pki: MutualTLSBundle, *, require_client: bool) -> AsyncIterator[str]:
    """An HTTPS server answering ``/version`` with what it saw; yields its URL."""
    for name, data in (("tls.crt", pki.server_cert), ("tls.key", pki.server_key), ("ca.crt", pki.ca_cert)):
        (tmp / name).write_bytes(data)
    ctx = mtls_server_context(tmp / "tls.crt", tmp / "tls.key", tmp / "ca.crt")
    if not require_client:
        ctx.verify_mode = ssl.CERT_OPTIONAL

    async def version(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        subject = dict(item for rdn in (peer or {}).get("subject", ()) for item in rdn)
        seen = {"client": subject.get("commonName"), "authorization": request.headers.get("Authorization")}
        return web.json_response(seen)

    app = web.Application()
    app.router.add_get("/version", version)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server(ssl=ctx)
    try:
        yield f"https://127.0.0.1:{server.port}"
    finally:
        await server.close()


@pytest.fixture
async def mtls_url(tmp_path: Path, pki: MutualTLSBundle) -> AsyncIterator[str]:
    """A server that completes a handshake only with a client certificate its CA signed."""
    server = tmp_path / "server"
    server.mkdir()
    async for url in _serve(server, pki, require_client=True):
        yield url


@pytest.fixture
async def tls_url(tmp_path: Path, pki: MutualTLSBundle) -> AsyncIterator[str]:
    """A server that takes any client (a bearer token is the credential)."""
    server = tmp_path / "server"
    server.mkdir()
    async for url in _serve(server, pki, require_client=False):
        yield url


async def _ask(conn: Connection) -> Seen:
    client = KubeClient(conn, pool=1)
    try:
        body = await client.get("/version")
    finally:
        await client.close()
    return Seen(client=body.get("client"), authorization=body.get("authorization"))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _kubeconfig(
    path: Path,
    *,
    cluster: dict[str, Any],
    user: dict[str, Any] | None = None,
    current: str | None = "ctx",
    contexts: dict[str, str] | None = None,
    name: str = "c",
) -> Path:
    """A kubeconfig with one cluster and one user (both named ``name``) and contexts using them."""
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user or {}}],
        "contexts": [
            {"name": ctx, "context": {"cluster": c, "user": c}}
            for ctx, c in (contexts or {"ctx": name}).items()
        ],
    }
    if current:
        doc["current-context"] = current
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _pki_files(directory: Path, pki: MutualTLSBundle) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "ca.crt").write_bytes(pki.ca_cert)
    (directory / "client.crt").write_bytes(pki.client_cert)
    (directory / "client.key").write_bytes(pki.client_key)


async def test_client_certificate_and_ca_from_files_beside_the_kubeconfig(
    tmp_path: Path, pki: MutualTLSBundle, mtls_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / ".kube"
    _pki_files(home / "pki", pki)
    kc = _kubeconfig(
        home / "config",
        cluster={"server": mtls_url, "certificate-authority": "pki/ca.crt"},
        user={"client-certificate": "pki/client.crt", "client-key": str(home / "pki" / "client.key")},
    )
    monkeypatch.chdir(tmp_path)  # relative paths start at the kubeconfig's directory, not the cwd
    assert await _ask(await load_config(str(kc))) == Seen(client=CLIENT_NAME, authorization=None)


async def test_client_certificate_and_ca_inline(tmp_path: Path, pki: MutualTLSBundle, mtls_url: str) -> None:
    kc = _kubeconfig(
        tmp_path / "kc",
        cluster={"server": mtls_url, "certificate-authority-data": _b64(pki.ca_cert)},
        user={"client-certificate-data": _b64(pki.client_cert), "client-key-data": _b64(pki.client_key)},
    )
    assert await _ask(await load_config(str(kc))) == Seen(client=CLIENT_NAME, authorization=None)


async def test_data_wins_over_a_file(tmp_path: Path, pki: MutualTLSBundle, mtls_url: str) -> None:
    kc = _kubeconfig(
        tmp_path / "kc",
        cluster={
            "server": mtls_url,
            "certificate-authority": "missing.crt",
            "certificate-authority-data": _b64(pki.ca_cert),
        },
        user={"client-certificate-data": _b64(pki.client_cert), "client-key-data": _b64(pki.client_key)},
    )
    assert (await _ask(await load_config(str(kc)))).client == CLIENT_NAME


async def test_bearer_token_and_the_server_name_to_verify(
    tmp_path: Path, pki: MutualTLSBundle, tls_url: str
) -> None:
    cluster = {"server": tls_url, "certificate-authority-data": _b64(pki.ca_cert)}
    kc = _kubeconfig(
        tmp_path / "kc", cluster={**cluster, "tls-server-name": "api.internal"}, user={"token": "t0k"}
    )
    assert await _ask(await load_config(str(kc))) == Seen(client=None, authorization="Bearer t0k")
    # A name the certificate does not carry fails the handshake.
    kc = _kubeconfig(
        tmp_path / "kc", cluster={**cluster, "tls-server-name": "other.internal"}, user={"token": "x"}
    )
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _ask(await load_config(str(kc)))


async def test_token_file_relative_to_the_kubeconfig(tmp_path: Path, tls_url: str) -> None:
    (tmp_path / "token").write_text("from-file\n")
    kc = _kubeconfig(
        tmp_path / "kc",
        cluster={"server": tls_url, "insecure-skip-tls-verify": True},
        user={"tokenFile": "token"},
    )
    assert (await _ask(await load_config(str(kc)))).authorization == "Bearer from-file"


async def test_insecure_skip_tls_verify(tmp_path: Path, tls_url: str) -> None:
    # The server's CA is in no trust store: only skipping verification lets the request through.
    secure = _kubeconfig(tmp_path / "secure", cluster={"server": tls_url}, user={"token": "t"})
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await _ask(await load_config(str(secure)))
    insecure = _kubeconfig(
        tmp_path / "insecure",
        cluster={"server": tls_url, "insecure-skip-tls-verify": True},
        user={"token": "t"},
    )
    assert await _ask(await load_config(str(insecure))) == Seen(client=None, authorization="Bearer t")


async def test_plain_http_and_no_user(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", cluster={"server": "http://127.0.0.1:8080/"})
    conn = await load_config(str(kc))
    assert (conn.host, conn.tls, conn.authorization) == ("http://127.0.0.1:8080", None, anonymous)


async def test_merged_kubeconfig_list_follows_kubectl(tmp_path: Path) -> None:
    # The first file to set current-context chooses it; the first to define a name owns it; each file's
    # relative paths start at its own directory.
    first = _kubeconfig(
        tmp_path / "a" / "config",
        cluster={"server": "http://first:1"},
        user={"token": "first"},
        current="dev",
        contexts={"other": "c"},
    )
    (tmp_path / "b" / "token").parent.mkdir()
    (tmp_path / "b" / "token").write_text("second")
    second = _kubeconfig(
        tmp_path / "b" / "config",
        cluster={"server": "http://second:2"},
        user={"tokenFile": "token"},
        current="other",
        contexts={"dev": "d", "other": "d"},
        name="d",
    )
    env = {"KUBECONFIG": f"{first}:{tmp_path / 'missing'}:{second}"}
    conn = await load_config(None, environ=env)
    assert (conn.host, await conn.authorization()) == ("http://second:2", "Bearer second")
    # --context picks another; "other" belongs to the first file, which defined it first.
    conn = await load_config(None, "other", environ=env)
    assert (conn.host, await conn.authorization()) == ("http://first:1", "Bearer first")
    # The CLI passes the files it found joined the same way.
    assert (await load_config(f"{first}:{second}", environ={})).host == "http://second:2"


@pytest.mark.parametrize(
    ("cluster", "user", "context", "message"),
    [
        ({"server": "http://x"}, {}, "nope", 'context "nope" does not exist'),
        ({}, {}, None, 'cluster "c" has no server'),
        (
            {"server": "https://x", "certificate-authority": "ca.crt"},
            {},
            None,
            "certificate-authority .* does not exist",
        ),
        (
            {"server": "https://x", "certificate-authority-data": "$$$"},
            {},
            None,
            "certificate-authority-data is not base64",
        ),
        (
            {"server": "https://x", "certificate-authority-data": _b64(b"not a pem")},
            {},
            None,
            'cannot load the CA or client certificate of context "ctx"',
        ),
        ({"server": "http://x"}, {"tokenFile": "absent"}, None, "tokenFile .* does not exist"),
    ],
)
async def test_unusable_kubeconfigs_say_why(
    tmp_path: Path, cluster: dict[str, Any], user: dict[str, Any], context: str | None, message: str
) -> None:
    kc = _kubeconfig(tmp_path / "kc", cluster=cluster, user=user)
    with pytest.raises(KubeConfigError, match=f"cannot load cluster credentials from {kc}: .*{message}"):
        await load_config(str(kc), context)


async def test_no_current_context_and_no_file(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", cluster={"server": "http://x"}, current=None)
    with pytest.raises(KubeConfigError, match="sets no current-context"):
        await load_config(str(kc))
    with pytest.raises(KubeConfigError, match="no kubeconfig file"):
        await load_config(None, environ={"KUBECONFIG": str(tmp_path / "absent")})


def _service_account(directory: Path, pki: MutualTLSBundle, token: str = "sa-token") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(pki.ca_cert)
    return directory


async def test_in_cluster(tmp_path: Path, pki: MutualTLSBundle, tls_url: str) -> None:
    account = _service_account(tmp_path / "sa", pki)
    port = tls_url.rsplit(":", 1)[1]
    conn = in_cluster({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}, account)
    assert conn.host == tls_url and isinstance(conn.authorization, TokenFile)
    assert await _ask(conn) == Seen(client=None, authorization="Bearer sa-token")
    ipv6 = in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}, account)
    assert ipv6.host == "https://[fd00::1]:443"


@pytest.mark.parametrize(
    ("env", "remove", "message"),
    [
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, None, "must both be set"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "token", "token"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "ca.crt", "ca.crt"),
    ],
)
def test_in_cluster_without_credentials(
    tmp_path: Path, pki: MutualTLSBundle, env: dict[str, str], remove: str | None, message: str
) -> None:
    account = _service_account(tmp_path / "sa", pki)
    if remove:
        (account / remove).unlink()
    with pytest.raises(KubeConfigError, match=message):
        in_cluster(env, account)


async def test_load_config_prefers_a_kubeconfig_then_the_service_account(tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", cluster={"server": "http://explicit"})
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443", "KUBECONFIG": str(kc)}
    assert (await load_config(str(kc), environ=env)).host == "http://explicit"
    # In a pod without --kubeconfig: the service account (absent here, so the error names it).
    with pytest.raises(KubeConfigError, match="from the in-cluster service account"):
        await load_config(None, environ=env)


async def test_a_token_file_is_read_again_once_a_minute(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one")
    now = [0.0]
    source = TokenFile(path, clock=lambda: now[0])
    assert await source() == "Bearer one"
    path.write_text("two")  # the kubelet rotated it
    now[0] = 59.0
    assert await source() == "Bearer one"
    now[0] = 60.0
    assert await source() == "Bearer two"
    path.unlink()  # mid-rotation: the last token read stands
    now[0] = 200.0
    assert await source() == "Bearer two"


async def test_an_exec_plugin_is_left_to_kubernetes_asyncio(tmp_path: Path) -> None:
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": {"token": "from-exec"},
    }
    plugin = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": sys.executable,
        "args": ["-c", f"print({json.dumps(json.dumps(credential))})"],
    }
    kc = _kubeconfig(tmp_path / "kc", cluster={"server": "http://127.0.0.1:1"}, user={"exec": plugin})
    conn = await load_config(str(kc))
    assert conn.host == "http://127.0.0.1:1"
    assert not isinstance(conn.authorization, StaticAuthorization | TokenFile)
    assert await conn.authorization() == "Bearer from-exec"


async def test_a_proxy_is_left_to_kubernetes_asyncio(tmp_path: Path) -> None:
    cluster = {"server": "http://127.0.0.1:1", "proxy-url": "http://proxy.internal:3128"}
    kc = _kubeconfig(tmp_path / "kc", cluster=cluster, user={"token": "t"})
    conn = await load_config(str(kc))
    assert (conn.proxy, await conn.authorization()) == ("http://proxy.internal:3128", "Bearer t")


async def test_the_fallback_loads_the_context_chosen_here(tmp_path: Path) -> None:
    # kubernetes-asyncio alone would take the last file's current-context; the loader passes kubectl's.
    first = _kubeconfig(
        tmp_path / "a",
        cluster={"server": "http://first:1", "proxy-url": "http://p:1"},
        user={"token": "first"},
        current="ctx",
    )
    second = _kubeconfig(
        tmp_path / "b",
        cluster={"server": "http://second:2"},
        current="late",
        contexts={"late": "d"},
        name="d",
    )
    conn = await load_config(f"{first}:{second}")
    assert (conn.host, await conn.authorization()) == ("http://first:1", "Bearer first")
