"""How to reach one API server: its URL, the TLS to speak to it, the ``Authorization`` of each request, a
proxy. :class:`Connection` is what :class:`~controllers.kube.client.KubeClient` is built from and what the
kubeconfig loader (:mod:`controllers.kube.kubeconfig`) produces.

The credential is asked for on every request (:data:`Authorization`), so one that changes under a running
process is picked up: a service-account token the kubelet rotates in its file (:class:`TokenFile`, re-read
once a minute as client-go and kubernetes-asyncio do), or what kubernetes-asyncio refreshes for an exec
plugin or an OIDC provider. The TLS context is built once, when the connection is: a bad CA or client
certificate fails the loading of the config, not the first request.

The TLS rules are kubernetes-asyncio's (which pumice used for everything before): the system's trusted CAs
unless the kubeconfig names a CA, hostname checks on, both off with ``insecure-skip-tls-verify``.
"""

from __future__ import annotations

import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

# The value of a request's Authorization header ("Bearer …", "Basic …"), or None to send none.
Authorization = Callable[[], Awaitable[str | None]]

# How long a token read from a file is used before the file is read again (client-go's period).
TOKEN_FILE_PERIOD_SECONDS: Final = 60.0


async def anonymous() -> str | None:
    """No credential: the request goes without an Authorization header."""
    return None


@dataclass(frozen=True, slots=True)
class StaticAuthorization:
    """A credential that never changes (a kubeconfig's ``token``)."""

    header: str

    async def __call__(self) -> str | None:
        return self.header


@dataclass(slots=True)
class TokenFile:
    """A bearer token in a file that may be replaced while we run (a projected service-account token),
    read again when the last reading is older than ``period`` seconds."""

    path: Path
    period: float = TOKEN_FILE_PERIOD_SECONDS
    clock: Callable[[], float] = time.monotonic
    _header: str = field(default="", init=False)
    _read_at: float = field(default=float("-inf"), init=False)

    def read(self) -> str:
        """The header from the file now; OSError or ValueError (an empty file) when there is none."""
        token = self.path.read_text().strip()
        if not token:
            raise ValueError(f"token file {self.path} is empty")
        self._header, self._read_at = f"Bearer {token}", self.clock()
        return self._header

    async def __call__(self) -> str | None:
        if self.clock() - self._read_at >= self.period:
            try:
                self.read()
            except (OSError, ValueError):
                # Being rewritten this instant, say: the token we hold is the best we have (the server
                # says 401 if it is no longer good). The first reading (at load) raised instead.
                if not self._header:
                    raise
        return self._header


@dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """One API server and how to talk to it (see the module docstring)."""

    host: str  # scheme://host[:port], no trailing slash
    tls: ssl.SSLContext | None = None  # None: aiohttp's default (the system's CAs, verified)
    authorization: Authorization = anonymous
    proxy: str | None = None
    proxy_headers: Mapping[str, str] | None = None
    server_hostname: str | None = None  # the name to verify the server's certificate against, if not host's


@dataclass(frozen=True, slots=True, kw_only=True)
class Tls:
    """What a kubeconfig or the service account says about TLS: CA and client certificate (a file or the
    PEM itself each), and whether to verify the server at all."""

    ca_file: str | None = None
    ca_pem: bytes | None = None
    cert_file: str | None = None
    cert_pem: bytes | None = None
    key_file: str | None = None
    key_pem: bytes | None = None
    verify: bool = True


def tls_context(tls: Tls) -> ssl.SSLContext:
    """The client's SSL context. ``ssl.SSLError`` (an OSError) for a certificate or key that cannot be
    loaded; OSError for a file that cannot be read."""
    ctx = ssl.create_default_context(
        cafile=tls.ca_file, cadata=None if tls.ca_pem is None else tls.ca_pem.decode("ascii", "replace")
    )
    if tls.cert_file or tls.cert_pem:
        _load_client_certificate(ctx, tls)
    if not tls.verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load_client_certificate(ctx: ssl.SSLContext, tls: Tls) -> None:
    if tls.cert_pem is None and tls.key_pem is None:
        ctx.load_cert_chain(tls.cert_file or "", keyfile=tls.key_file)
        return
    # The ssl module loads certificates and keys from files only: inline ones go through a private
    # directory that is gone once they are loaded (kubernetes-asyncio kept such files until exit).
    with tempfile.TemporaryDirectory(prefix="pumice-tls-") as tmp:
        cert = tls.cert_file or _write(Path(tmp) / "client.crt", tls.cert_pem or b"")
        key = tls.key_file if tls.key_pem is None else _write(Path(tmp) / "client.key", tls.key_pem)
        ctx.load_cert_chain(cert, keyfile=key)


def _write(path: Path, data: bytes) -> str:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return str(path)
