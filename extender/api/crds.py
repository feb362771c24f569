"""The CustomResourceDefinitions pumice serves: Volcano's API groups, kinds and fields, in our own manifests.

Responsibility: find the CRD manifests and hand them out, parsed (:func:`crd_documents`) or as one
multi-document YAML stream (:func:`crd_yaml`, what ``pumice manifests crds`` prints). The manifests themselves
live in ``manifests/crds`` (one file per CRD, named ``<group>_<plural>.yaml``); a wheel carries the same
directory as ``extender/api/crds`` (see the force-include in ``pyproject.toml``).

Invariants: the files are field-compatible with Volcano's CRDs (same groups, versions, kinds, names, scope,
JSON field names, types, defaults and printer columns), so a Volcano user's YAML applies unchanged; and every
field that :mod:`extender.core.parse` reads or our controllers write exists in them. Both are checked by
``tests/contract/test_crds.py``.

Reading these files is a start-up or CLI concern, never a scheduling one: nothing on a hot path calls this.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def _crd_dir() -> Path:
    packaged = Path(__file__).parent / "crds"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "manifests" / "crds"


def _crd_files() -> list[Path]:
    return sorted(_crd_dir().glob("*.yaml"), key=lambda p: p.name)


def crd_documents() -> list[dict[str, Any]]:
    """Every CRD manifest, parsed, in file-name order."""
    docs: list[dict[str, Any]] = []
    for path in _crd_files():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: expected one YAML mapping (a CustomResourceDefinition)")
        docs.append(doc)
    return docs


def crd_yaml() -> str:
    """All CRD manifests as one multi-document YAML stream, each file's text kept as written."""
    parts = []
    for path in _crd_files():
        text = path.read_text(encoding="utf-8")
        parts.append(text if text.endswith("\n") else text + "\n")
    return "---\n".join(parts)
