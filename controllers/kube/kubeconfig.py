"""Finding the cluster and its credentials: :func:`load_config`, for ``pumice serve``, the CLI and
``pumice manifests --kubeconfig``.

Where to look: ``--kubeconfig`` if given (a list of files joined by ``os.pathsep``, as the CLI passes the
``$KUBECONFIG`` files it found), else the in-cluster service account when ``KUBERNETES_SERVICE_HOST`` is set,
else ``$KUBECONFIG`` (the same kind of list), else ``~/.kube/config``.

The common cases are read here, without kubernetes-asyncio, whose package imports every generated model
(a quarter of a second, most of a CLI command's start-up):

- in a pod: ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``, the service account's CA, and
  its token, read again from its file once a minute (the kubelet rotates it);
- a kubeconfig: the context (``context``, else ``current-context``), its cluster's ``server``,
  ``certificate-authority[-data]``, ``insecure-skip-tls-verify``, ``tls-server-name``, and its user's
  ``token``/``tokenFile`` and ``client-certificate[-data]``/``client-key[-data]``. Files named by a relative
  path are found beside the kubeconfig file that names them; ``*-data`` is base64 and wins over the file.

Several kubeconfig files merge as kubectl merges them: the first file that sets ``current-context`` chooses
it, and the first file that defines a cluster, context or user name owns it (the CLI's default namespace,
:mod:`controllers.cli.kubeconfig`, follows the same rule, so namespace and cluster come from one context).

Everything else a kubeconfig may say (an ``exec`` credential plugin, an ``auth-provider`` such as OIDC or
gcp, ``username``/``password``, a ``proxy-url``, keys we do not know) is loaded by kubernetes-asyncio as
before, imported only then, for the context chosen here; its credential is asked for on every request, so
its refreshing works as it did. ``pumice serve`` uses this same loader: the one credential it refreshes
itself, the service-account token, is re-read as kubernetes-asyncio re-read it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from controllers.kube.connection import (
    Authorization,
    Connection,
    StaticAuthorization,
    Tls,
    TokenFile,
    anonymous,
    tls_context,
)

log = logging.getLogger(__name__)

SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")

# What this loader reads itself; any other key of the context's cluster or user sends the whole load to
# kubernetes-asyncio. ``extensions`` is kubectl's free-form metadata, read by no client.
CLUSTER_KEYS: Final = frozenset(
    {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify",
     "tls-server-name", "extensions"}
)  # fmt: skip
USER_KEYS: Final = frozenset(
    {"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key", "client-key-data",
     "extensions"}
)  # fmt: skip


class KubeConfigError(Exception):
    """No usable cluster credentials: the message says where we looked."""


class NeedsKubernetesAsyncio(Exception):
    """The kubeconfig uses something this loader leaves to kubernetes-asyncio (the message says what)."""


@dataclass(frozen=True, slots=True)
class Entry:
    """A named cluster, context or user of a kubeconfig, with the directory of the file that defined it
    (where its relative paths start)."""

    body: Mapping[str, Any]
    base: Path


@dataclass(frozen=True, slots=True)
class KubeConfig:
    """Several kubeconfig files merged (see the module docstring)."""

    current_context: str | None
    clusters: Mapping[str, Entry]
    contexts: Mapping[str, Entry]
    users: Mapping[str, Entry]


def merge(docs: Sequence[tuple[Path, Mapping[str, Any]]]) -> KubeConfig:
    """The kubeconfig that ``docs`` (each with its file's path) make together, in kubectl's way."""
    current: str | None = None
    named: dict[str, dict[str, Entry]] = {"clusters": {}, "contexts": {}, "users": {}}
    singular = {"clusters": "cluster", "contexts": "context", "users": "user"}
    for path, doc in docs:
        current = current or _str(doc.get("current-context")) or None
        base = path.parent
        for section, entries in named.items():
            for item in doc.get(section) or ():
                if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                    raise KubeConfigError(f"{path}: every entry of {section} needs a name")
                body = item.get(singular[section])
                entries.setdefault(item["name"], Entry(body if isinstance(body, Mapping) else {}, base))
    return KubeConfig(current, named["clusters"], named["contexts"], named["users"])


def read_kubeconfigs(paths: Sequence[Path]) -> list[tuple[Path, Mapping[str, Any]]]:
    """The files of ``paths`` that exist, parsed; KubeConfigError when none does or one is not YAML."""
    docs: list[tuple[Path, Mapping[str, Any]]] = []
    for path in paths:
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as e:
            raise KubeConfigError(f"cannot read kubeconfig {path}: {e}") from None
        docs.append((path, doc if isinstance(doc, Mapping) else {}))
    if not docs:
        raise KubeConfigError(f"no kubeconfig file at {os.pathsep.join(str(p) for p in paths)}")
    return docs


def from_kubeconfig(config: KubeConfig, context: str | None = None) -> Connection:
    """The connection of ``context`` (default: the current one). KubeConfigError for a kubeconfig that
    names no usable context or cluster or whose files cannot be read; NeedsKubernetesAsyncio for the cases
    of the module docstring."""
    name = context or config.current_context
    if not name:
        raise KubeConfigError("the kubeconfig sets no current-context")
    ctx = config.contexts.get(name)
    if ctx is None:
        raise KubeConfigError(f'context "{name}" does not exist in the kubeconfig')
    cluster_name = _str(ctx.body.get("cluster"))
    cluster = config.clusters.get(cluster_name)
    if cluster is None:
        raise KubeConfigError(
            f'cluster "{cluster_name}" of context "{name}" does not exist in the kubeconfig'
        )
    # A context naming a user that is not there connects without credentials (kubernetes-asyncio did too).
    user = config.users.get(_str(ctx.body.get("user"))) or Entry({}, cluster.base)
    _only_known(cluster.body, CLUSTER_KEYS, "cluster")
    _only_known(user.body, USER_KEYS, "user")
    server = _str(cluster.body.get("server")).rstrip("/")
    if not server:
        raise KubeConfigError(f'cluster "{cluster_name}" has no server')
    skip_verify = cluster.body.get("insecure-skip-tls-verify", False)
    if not isinstance(skip_verify, bool):
        raise NeedsKubernetesAsyncio("insecure-skip-tls-verify is not a boolean")
    # As kubernetes-asyncio: a plain-http server gets no TLS material, whatever the kubeconfig says.
    tls = None
    if server.startswith("https"):
        material = Tls(
            ca_file=_file(cluster, "certificate-authority"),
            ca_pem=_data(cluster, "certificate-authority"),
            cert_file=_file(user, "client-certificate"),
            cert_pem=_data(user, "client-certificate"),
            key_file=_file(user, "client-key"),
            key_pem=_data(user, "client-key"),
            verify=not skip_verify,
        )
        try:
            tls = tls_context(material)
        except ssl.SSLError as e:
            raise KubeConfigError(
                f'cannot load the CA or client certificate of context "{name}": {e}'
            ) from None
    return Connection(
        host=server,
        tls=tls,
        authorization=_user_token(user),
        server_hostname=_str(cluster.body.get("tls-server-name")) or None,
    )


def in_cluster(environ: Mapping[str, str], account: Path = SERVICE_ACCOUNT) -> Connection:
    """The API server as a pod sees it, with its service account's token and CA."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST", ""), environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise KubeConfigError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must both be set in a pod")
    ca = account / "ca.crt"
    token = TokenFile(account / "token")
    try:
        token.read()
        if not ca.read_bytes().strip():
            raise KubeConfigError(f"the service account's CA {ca} is empty")
        tls = tls_context(Tls(ca_file=str(ca)))
    except (OSError, ValueError) as e:
        raise KubeConfigError(f"cannot read the service account's credentials: {e}") from None
    # Go's net.JoinHostPort: an IPv6 address goes in brackets.
    netloc = f"[{host}]:{port}" if ":" in host or "%" in host else f"{host}:{port}"
    return Connection(host=f"https://{netloc}", tls=tls, authorization=token)


@dataclass(frozen=True, slots=True)
class Fallback:
    """A kubeconfig for kubernetes-asyncio to load: its files (joined by ``os.pathsep``), the context chosen
    here, and why this loader did not (for a debug log)."""

    files: str
    context: str | None
    why: str


def find_connection(
    kubeconfig: str | None, context: str | None, environ: Mapping[str, str]
) -> Connection | Fallback:
    """The connection the flags and the environment name (the order of :func:`load_config`), or the
    kubeconfig to hand to kubernetes-asyncio. KubeConfigError, OSError or ValueError when there is none."""
    if not kubeconfig and environ.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster(environ)
    files = kubeconfig or environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    config = merge(read_kubeconfigs([Path(p).expanduser() for p in files.split(os.pathsep) if p]))
    try:
        return from_kubeconfig(config, context)
    except NeedsKubernetesAsyncio as e:
        return Fallback(files, context or config.current_context, str(e))


async def load_config(
    kubeconfig: str | None, context: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Connection:
    """``--kubeconfig`` if given, else in-cluster, else ``$KUBECONFIG`` / ``~/.kube/config``; ``context``
    (a kubeconfig context name, kubectl's ``--context``) instead of the files' current-context.
    KubeConfigError, saying where we looked, when no usable credentials are found."""
    env = os.environ if environ is None else environ
    if kubeconfig or not env.get("KUBERNETES_SERVICE_HOST"):
        where = kubeconfig or env.get("KUBECONFIG") or "~/.kube/config (and not in a cluster)"
    else:
        where = "the in-cluster service account"
    try:
        found = find_connection(kubeconfig, context, env)
        if isinstance(found, Connection):
            return found
        log.debug("kubeconfig loaded by kubernetes-asyncio", extra={"reason": found.why})
        return await _through_kubernetes_asyncio(found.files, found.context)
    except (KubeConfigError, OSError, ValueError) as e:
        raise KubeConfigError(f"cannot load cluster credentials from {where}: {e}") from None


async def _through_kubernetes_asyncio(files: str, context: str | None) -> Connection:
    """The context loaded by kubernetes-asyncio, as a Connection whose credential it keeps current."""
    # Imported here: only these kubeconfigs pay for its models (see the module docstring).
    from kubernetes_asyncio import client as k8s
    from kubernetes_asyncio import config as k8s_config

    cfg = k8s.Configuration()
    try:
        await k8s_config.load_kube_config(config_file=files, context=context, client_configuration=cfg)
    except k8s_config.ConfigException as e:
        raise KubeConfigError(str(e)) from None
    tls = tls_context(
        Tls(ca_file=cfg.ssl_ca_cert, cert_file=cfg.cert_file, key_file=cfg.key_file, verify=cfg.verify_ssl)
    )

    async def authorization() -> str | None:
        header: str | None = await cfg.get_api_key_with_prefix("BearerToken")
        return header or None

    return Connection(
        host=str(cfg.host),
        tls=tls,
        authorization=authorization,
        proxy=cfg.proxy,
        proxy_headers=cfg.proxy_headers,
        server_hostname=cfg.tls_server_name,
    )


def _only_known(body: Mapping[str, Any], known: frozenset[str], what: str) -> None:
    unknown = sorted(k for k, v in body.items() if k not in known and v not in (None, "", [], {}))
    if unknown:
        raise NeedsKubernetesAsyncio(f"the {what} uses {', '.join(unknown)}")


def _user_token(user: Entry) -> Authorization:
    token = _str(user.body.get("token"))
    if token:
        return StaticAuthorization(f"Bearer {token}")
    token_file = _file(user, "tokenFile")
    if token_file:
        source = TokenFile(Path(token_file))
        source.read()  # a missing or empty file fails the load, not the first request
        return source
    return anonymous


def _file(entry: Entry, key: str) -> str | None:
    """``key``'s file (relative to the kubeconfig that named it), unless ``key-data`` gives the content."""
    name = _str(entry.body.get(key))
    if not name or entry.body.get(f"{key}-data"):
        return None
    path = entry.base / name  # an absolute name stays as it is
    if not path.is_file():
        raise KubeConfigError(f"{key} {path} does not exist")
    return str(path)


def _data(entry: Entry, key: str) -> bytes | None:
    data = entry.body.get(f"{key}-data")
    if not data:
        return None
    try:
        # Line breaks and spaces (a long value folded) are not part of it; anything else outside the
        # alphabet is an error rather than skipped.
        return base64.b64decode("".join(str(data).split()), validate=True)
    except binascii.Error as e:
        raise KubeConfigError(f"{key}-data is not base64: {e}") from None


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""
