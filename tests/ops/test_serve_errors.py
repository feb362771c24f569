"""``pumice serve`` given bad input says what is wrong in one line on stderr and exits 2, no traceback:
a missing or broken kubeconfig (named by path), a port in use (named, with its flag), an unreachable API
server, a bad flag value; ``--help`` shows the defaults."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
"""


def serve(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home or ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "extender.main", "serve", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )


def one_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr
    return lines[-1]


@pytest.fixture
def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return path


LOCAL = ("--extender-bind=127.0.0.1:0", "--webhook-bind=127.0.0.1:0", "--metrics-bind=127.0.0.1:0")


def test_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    line = one_error(serve(f"--kubeconfig={missing}", *LOCAL))
    assert line == f"pumice: kubeconfig {missing} (--kubeconfig) does not exist or is not a file"


def test_no_kubeconfig_at_all_says_where_it_looked(tmp_path: Path) -> None:
    line = one_error(serve(*LOCAL, home=tmp_path))
    assert str(tmp_path / ".kube" / "config") in line and "--kubeconfig" in line


@pytest.mark.parametrize(("text", "why"), [("a: [b", "is not YAML"), ("{}", "names no clusters")])
def test_broken_kubeconfig_is_named(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    line = one_error(serve(f"--kubeconfig={path}", *LOCAL))
    assert line.startswith(f"pumice: kubeconfig {path} (--kubeconfig) {why}")


@pytest.mark.parametrize("flag", ["--extender-bind", "--webhook-bind", "--metrics-bind"])
def test_a_taken_port_is_named_with_its_flag(kubeconfig: Path, flag: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        args = [a for a in LOCAL if not a.startswith(flag)] + [f"{flag}=127.0.0.1:{port}"]
        line = one_error(serve(f"--kubeconfig={kubeconfig}", *args))
    assert line == f"pumice: cannot listen on 127.0.0.1:{port} ({flag}): the port is in use"


def test_an_unreachable_api_server_is_one_line(kubeconfig: Path) -> None:
    line = one_error(serve(f"--kubeconfig={kubeconfig}", *LOCAL))
    assert line.startswith("pumice: cannot reach the API server") and "127.0.0.1:1" in line


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--log-level=verbose"], "argument --log-level: invalid choice"),
        (["--log-format=xml"], "argument --log-format: invalid choice"),
        (["--metrics-bind=nowhere"], "'nowhere' is not HOST:PORT"),
    ],
)
def test_bad_flag_values_are_refused_by_the_parser(args: list[str], says: str) -> None:
    line = one_error(serve(*args))
    assert says in line


def test_help_shows_the_defaults() -> None:
    result = serve("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    for default in ("0.0.0.0:8888", "0.0.0.0:8443", "0.0.0.0:9090", "(default: INFO)", "(default: text)"):
        assert default in text, default
    assert "(default: None)" not in text
