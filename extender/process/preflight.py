"""Checks ``pumice serve`` makes before it contacts anything, so a mistake costs one clear line, not a
traceback: a kubeconfig that is missing or not a kubeconfig (named by path), a listen address that is
taken or not ours to bind (named with its flag).

Each check returns the problem as one line, or None. A port check binds and closes a socket the way
aiohttp will (``SO_REUSEADDR``, so a port in TIME_WAIT is not reported), so a port taken between the check
and the real bind is still possible: the caller reports that bind's error the same way.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Mapping
from pathlib import Path

import yaml


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def kubeconfig_problem(path: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """What is wrong with the kubeconfig ``serve`` would read: ``path``, else (outside a cluster)
    ``$KUBECONFIG``'s first file or ``~/.kube/config``. In a cluster without ``path``: nothing to check."""
    if path is None:
        if environ.get("KUBERNETES_SERVICE_HOST"):
            return None
        first = (environ.get("KUBECONFIG") or "").split(os.pathsep)[0]
        where = Path(first) if first else Path(environ.get("HOME", "~"), ".kube", "config")
        flag = "$KUBECONFIG" if first else "~/.kube/config"
        if not where.exists():
            return (
                f"no kubeconfig: {where} ({flag}) does not exist and this is not a pod in a cluster; "
                "pass --kubeconfig PATH"
            )
    else:
        where, flag = Path(path), "--kubeconfig"
    if not where.is_file():
        return f"kubeconfig {where} ({flag}) does not exist or is not a file"
    try:
        doc = yaml.safe_load(where.read_text())
    except (OSError, UnicodeDecodeError) as e:
        return f"cannot read kubeconfig {where} ({flag}): {one_line(str(e))}"
    except yaml.YAMLError as e:
        return f"kubeconfig {where} ({flag}) is not YAML: {one_line(str(e))}"
    if not isinstance(doc, dict) or not isinstance(doc.get("clusters"), list) or not doc["clusters"]:
        return f"kubeconfig {where} ({flag}) names no clusters: is it a kubeconfig?"
    return None


def listen_problem(host: str, port: int, flag: str) -> str | None:
    """Why ``host:port`` (given with ``flag``) cannot be listened on, or None."""
    if port == 0:
        return None  # any free port
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        return f"cannot listen on {host}:{port} ({flag}): {one_line(str(e))}"
    for family, kind, proto, _, addr in infos[:1]:
        with socket.socket(family, kind, proto) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(addr)
                s.listen(1)
            except OSError as e:
                why = "the port is in use" if e.errno == errno.EADDRINUSE else one_line(e.strerror or str(e))
                return f"cannot listen on {host}:{port} ({flag}): {why}"
    return None
