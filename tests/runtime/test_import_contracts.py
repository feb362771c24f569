"""The import-linter contracts (pyproject.toml) catch what they are written for, and nothing hides from them.

Each case copies the package tree, injects one forbidden import and runs ``lint-imports`` on the copy: the
contract the import breaks must be reported BROKEN, so a contract that silently stopped matching (a renamed
package, a typo in a module name, an ``ignore_imports`` too wide) fails here rather than keeps passing. The
unmodified copy must pass, which also shows the runs read the copy and not the installed tree.

import-linter sees import statements only. A module imported by name at run time (``importlib``,
``__import__``) is invisible to it, so those are checked here too: none in the packages but the listed ones.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("extender", "admission", "controllers")
LINT_IMPORTS = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
    "lint-imports"
)

# (file in the copy, the import added to it, the contract that must then be broken)
CASES = [
    (
        "extender/core/model.py",
        "import kubernetes_asyncio",
        "Only controllers.kube talks to kubernetes-asyncio",
    ),
    ("extender/core/model.py", "import controllers.state.cache", "The scheduling core is pure"),
    ("extender/api/labels.py", "import extender.core.model", "Core layers"),
    ("extender/framework/votes.py", "import extender.framework.place", "The session stays below the actions"),
    ("extender/jobs/reconcile.py", "import aiohttp", "The scheduling core is pure"),
    ("controllers/reconcilers/jobs.py", "import aiohttp", "aiohttp only at the I/O edges"),
    ("admission/pods.py", "import extender.server.app", "Admission, the extender server and the controllers"),
    (
        "extender/core/validation.py",
        "import extender.jobs.rules",
        "extender.core does not import the job and flow cores",
    ),
    (
        "extender/core/fields.py",
        "import extender.flows.model",
        "extender.core does not import the job and flow cores",
    ),
    (
        "admission/dispatch.py",
        "import numpy",
        "Admission is free of extender.framework, extender.plugins and numpy",
    ),
    (
        "admission/queue_tree.py",
        "import extender.core.resources",
        "Admission is free of extender.framework, extender.plugins and numpy",
    ),
    (
        "admission/jobs.py",
        "import extender.framework.session",
        "Admission is free of extender.framework, extender.plugins and numpy",
    ),
    ("controllers/workqueue.py", "import extender.main", "Nothing imports the composition root"),
    ("extender/deploy/rbac.py", "import controllers.reconcilers.jobs", "Deploy manifests are pure-ish"),
    ("extender/deploy/workloads.py", "import extender.process.tls", "Rendering makes no keys"),
    ("extender/deploy/manifests.py", "from cryptography import x509", "Rendering makes no keys"),
    ("extender/process/tls.py", "import admission.webhooks", "TLS material is a leaf"),
    ("extender/process/settings.py", "import extender.deploy.rbac", "Settings are plain data"),
    ("controllers/cli/queues.py", "import admission.webhooks", "The CLI stays out of the servers"),
    ("controllers/cli/jobs.py", "import controllers.reconcilers.jobs", "The CLI stays out of the servers"),
    (
        "controllers/simulate/report.py",
        "import extender.server.app",
        "The simulator stays out of the servers",
    ),
    (
        "controllers/simulate/engine.py",
        "import controllers.reconcilers.jobs",
        "The simulator stays out of the servers",
    ),
    (
        "controllers/simulate/report.py",
        "import controllers.cli.output",
        "The CLI and the simulator are independent",
    ),
    (
        "controllers/cli/queues.py",
        "import controllers.simulate.report",
        "The CLI and the simulator are independent",
    ),
    ("controllers/cli/output.py", "import extender.serve", "Nothing imports the composition root"),
    (
        "controllers/kube/informer.py",
        "import extender.core.model",
        "controllers.kube is the bottom of controllers",
    ),
    ("controllers/state/cache.py", "import controllers.scheduling.executor", "controllers rooms"),
    (
        "controllers/scheduling/loop.py",
        "import controllers.scheduling.kube_executor",
        "Only the composition root builds the real executor",
    ),
    (
        "controllers/scheduling/verbs.py",
        "import controllers.kube.client",
        "The scheduling code writes through the Executor port",
    ),
    ("controllers/scheduling/writes.py", "import controllers.scheduling.loop", "Scheduling room layers"),
    (
        "controllers/state/indexes.py",
        "import controllers.state.cache",
        "The store of watched objects is not the scheduler's cache",
    ),
    (
        "controllers/reconcilers/flows.py",
        "import controllers.kube.informer",
        "Reconcilers read watched objects from the store",
    ),
    (
        "controllers/scheduling/scheduler.py",
        "import prometheus_client",
        "prometheus_client only in extender.server.metrics",
    ),
    ("controllers/leader/decide.py", "import asyncio", "Leader election's decision is pure"),
    ("controllers/leader/record.py", "import controllers.kube.client", "Leader election's decision is pure"),
    (
        "controllers/scheduling/verbs.py",
        "import controllers.leader.leadership",
        "Only the composition root wires leader election",
    ),
    ("controllers/reconcilers/status.py", "import controllers.leader.fence", "controllers rooms"),
    ("controllers/tables.py", "import extender.serve_tls", "Nothing imports the composition root"),
]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages and pyproject.toml: what ``lint-imports`` reads, with nothing installed."""
    if LINT_IMPORTS is None:
        pytest.skip("import-linter (the dev extra) is not installed")
    root = tmp_path_factory.mktemp("tree")
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS is not None
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def broken(output: str) -> set[str]:
    return {m[1].strip() for m in re.finditer(r"^(.+?)\s*BROKEN\b", output, re.MULTILINE)}


def test_the_unmodified_tree_keeps_every_contract(tree: Path) -> None:
    result = lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "contract"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_an_injected_import_breaks_its_contract(tree: Path, module: str, line: str, contract: str) -> None:
    path = tree / module
    original = path.read_text()
    path.write_text(f"{original}\n{line}  # injected by the test\n")
    try:
        result = lint(tree)
    finally:
        path.write_text(original)
    assert result.returncode != 0, result.stdout + result.stderr
    assert any(name.startswith(contract) for name in broken(result.stdout)), result.stdout


def test_every_contract_has_a_case() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [c["name"] for c in config["tool"]["importlinter"]["contracts"]]
    assert len(names) >= 10
    uncovered = [n for n in names if not any(n.startswith(contract) for _, _, contract in CASES)]
    assert not uncovered


# --- imports by name at run time ---------------------------------------------------------------------------

# None: a dependency a layer may not import is passed in by the composition root (as the deploy CLI gets the
# webhook builder and the cluster-version reader), never looked up by name.
ALLOWED: dict[str, dict[str, int]] = {}


def dynamic_imports(source: str) -> Iterator[tuple[int, str]]:
    """Every way ``source`` imports a module by name at run time; ``importlib.metadata`` (package
    versions) imports nothing of ours and is fine."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "importlib" and alias.name != "importlib.metadata":
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "importlib":
            for alias in node.names:
                if f"{node.module}.{alias.name}" != "importlib.metadata":
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute) and node.attr in ("import_module", "__import__"):
            base = node.value.id if isinstance(node.value, ast.Name) else "?"
            yield node.lineno, f"{base}.{node.attr}"
        elif isinstance(node, ast.Name) and node.id == "__import__":
            yield node.lineno, "__import__"


def test_no_imports_by_name_at_run_time() -> None:
    found: dict[str, dict[str, int]] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for _, how in dynamic_imports(path.read_text()):
                counts = found.setdefault(path.relative_to(ROOT).as_posix(), {})
                counts[how] = counts.get(how, 0) + 1
    # Use import statements, so import-linter sees the edge; a fixed site comes off ALLOWED.
    assert found == ALLOWED


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            'import importlib\nm = importlib.import_module("admission")',
            ["import importlib", "importlib.import_module"],
        ),
        ("from importlib import import_module", ["from importlib import import_module"]),
        ("import importlib.util", ["import importlib.util"]),
        ('m = __import__("controllers")', ["__import__"]),
        ('m = builtins.__import__("controllers")', ["builtins.__import__"]),
        ("from importlib import metadata\nimport importlib.metadata", []),
    ],
)
def test_the_scan_sees_imports_by_name(source: str, expected: list[str]) -> None:
    assert [how for _, how in dynamic_imports(source)] == expected
