"""The docs site stays true to the code: the generated reference pages (conf, CLI, metrics) are what
hack/gen-docs.py writes now, the Volcano metric mapping names every volcano_* family pumice exports, the
README's links resolve, and the LICENSE is the license pyproject.toml declares. (hack/verify.sh builds the
site itself with mkdocs --strict, which checks every link between pages.)"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.ops.test_dashboard import exported  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "src"


def test_generated_pages_are_current() -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "hack" / "gen-docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr or run.stdout


def test_the_generated_references_cover_the_code() -> None:
    conf = (DOCS / "reference" / "configuration.md").read_text()
    for heading in ("### binpack", "### proportion", "### deviceshare", "### allocate", "### preempt"):
        assert heading in conf, heading
    assert "| `binpack.weight` | integer | `1` |" in conf  # from binpack's own argument table
    assert "| `overcommit-factor` | number | `1.2` |" in conf
    cli = (DOCS / "reference" / "cli.md").read_text()
    for command in (
        "## pumice serve",
        "## pumice manifests",
        "## pumice simulate",
        "### pumice job run",
        "`--dry-run`",
    ):
        assert command in cli, command
    metrics = (DOCS / "reference" / "metrics.md").read_text()
    for name in (
        "`pumice_queue_allocated`",
        "`volcano_queue_allocated_milli_cpu`",
        "`process_resident_memory_bytes`",
    ):
        assert name in metrics, name


def test_volcano_mapping_names_every_volcano_family(exported: set[str]) -> None:  # noqa: F811
    page = (DOCS / "reference" / "volcano-metrics.md").read_text()
    mapped, not_exported = page.split("## Not exported")
    named = set(re.findall(r"`(volcano_[a-z0-9_]+)`", mapped))
    series = {n for n in exported if n.startswith("volcano_")}
    histograms = {n.removesuffix("_bucket") for n in series if n.endswith("_bucket")}
    ours = (series - {h + s for h in histograms for s in ("_bucket", "_sum", "_count")}) | histograms
    assert ours - named == set(), "exported but not in the mapping"
    assert named - ours == set(), "in the mapping but not exported"
    assert not set(re.findall(r"`(volcano_[a-z0-9_]+)`", not_exported)) & ours


def test_readme_links_resolve_and_claims_hold() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert links
    for link in links:
        if not link.startswith("http"):
            assert (ROOT / link).exists(), link
    # The README once listed as "Not yet" what later sections documented; keep it to what is true.
    assert "Not yet: JobFlow" not in readme
    for path in ("examples/simulate/two-teams.yaml", "hack/test.sh", "manifests/helm/pumice"):
        assert path in readme and (ROOT / path).exists(), path


def test_license_matches_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]["text"]
    assert declared == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")))
def test_every_page_is_in_the_nav(page: str) -> None:
    assert page in (ROOT / "docs" / "mkdocs.yml").read_text(), page
