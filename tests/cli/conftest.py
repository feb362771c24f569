"""The CLI's tests run ``pumice`` against the in-process API server (:mod:`tests.fakeapi`; the ``fake_api``
and ``kube`` fixtures are in ``tests/conftest.py``).

Fixtures: ``kubeconfig`` (a file whose current context points at the fake with namespace ``team-a``) and
``cli`` (run ``pumice <argv>`` in a worker thread, as ``main`` would, returning exit code, stdout and stderr).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from controllers.cli.parser import add_cli_parsers
from tests.fakeapi import CREATED_AT, FakeApiServer

__all__ = ["CREATED_AT", "Cli", "CliResult", "FakeApiServer", "parse"]


@pytest.fixture
def kubeconfig(fake_api: FakeApiServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": fake_api.url}}],
        "users": [{"name": "me", "user": {"token": "t0ken"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": "fake", "user": "me", "namespace": "team-a"}}],
        "current-context": "ctx",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[CliResult]]


def parse(*argv: str) -> argparse.Namespace:
    """The arguments as ``pumice`` parses them (argparse errors raise SystemExit(2))."""
    parser = argparse.ArgumentParser(prog="pumice")
    add_cli_parsers(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


@pytest.fixture
def cli(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    async def run(*argv: str) -> CliResult:
        args = parse(*argv, "--kubeconfig", str(kubeconfig))
        capsys.readouterr()
        # The command runs its own event loop (asyncio.run), as under `pumice`; the fake server keeps
        # serving on this one.
        code = await asyncio.to_thread(lambda: int(args.func(args)))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
