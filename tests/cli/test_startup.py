"""The CLI starts at once: ``pumice --help`` and ``pumice job list`` import none of the server.

Each case runs the real entry point in a fresh interpreter under ``python -X importtime`` (which lists
every module the run imported) against a kubeconfig whose API server is a closed loopback port, so the
command goes all the way to its first API call, fails it, and exits. What it imported up to there must not
include what only ``pumice serve`` (or another command) needs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from controllers.cli.parser import SHARE_PLUGINS
from extender.plugins import queue_shares

ROOT = Path(__file__).resolve().parents[2]

# Only `pumice serve` (and the commands that compute shares or explain) need these.
SERVER = (
    "aiohttp.web",
    "extender.server",
    "extender.serve",
    "extender.wiring",
    "extender.families",
    "admission",
    "controllers.scheduling",
    "controllers.reconcilers",
    "controllers.state",
    "controllers.simulate.cli",
    "extender.framework",
    "extender.plugins",
    "numpy",
    "cryptography",
    "prometheus_client",
)
# Talking to a cluster: what --help has no use for.
CLIENT = (
    "aiohttp",
    "kubernetes_asyncio",
    "controllers.kube.client",
    "controllers.kube.connection",
    "controllers.kube.kubeconfig",
    "controllers.cli.kubeconfig",
)

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
users: [{name: u, user: {token: x}}]
"""


def imported(*argv: str) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules ``pumice <argv>`` imports, from ``-X importtime``'s report on stderr."""
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "extender.main", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = {m[1] for m in re.finditer(r"^import time:\s*\d+ \|\s*\d+ \|\s*(\S+)$", run.stderr, re.M)}
    assert "extender.serve_args" in modules, run.stderr[-2000:]  # the report was read (main runs as __main__)
    return modules, run


def loaded(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == p or m.startswith(p + ".") for p in packages))


def test_help_imports_neither_the_server_nor_a_client() -> None:
    modules, run = imported("--help")
    assert run.returncode == 0, run.stderr[-2000:]
    assert not loaded(modules, SERVER + CLIENT)


@pytest.mark.parametrize("argv", [["job", "list"], ["job", "list", "-A", "-o", "wide"]])
def test_job_list_reaches_the_cluster_without_the_server(tmp_path: Path, argv: list[str]) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    modules, run = imported(*argv, "--kubeconfig", str(kubeconfig))
    assert run.returncode == 1 and "cannot reach the API server" in run.stderr, run.stderr[-2000:]
    assert "controllers.cli.jobs" in modules and "controllers.kube.client" in modules
    assert not loaded(modules, SERVER)
    # A kubeconfig with a token is read by controllers.kube.kubeconfig: kubernetes-asyncio's package (every
    # generated model) is imported only for the credentials that loader leaves to it.
    assert not loaded(modules, ("kubernetes_asyncio",))


def test_the_parser_offers_the_share_plugins_of_the_core() -> None:
    # The parser names them itself: importing extender.plugins would load numpy for every command.
    assert SHARE_PLUGINS == queue_shares.SHARE_PLUGINS
