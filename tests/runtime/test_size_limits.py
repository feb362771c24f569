"""Size limits of the code, kept by a test rather than by review: no module over 450 lines, no class over 250.

A module that outgrows the limit does more than one thing; split it by responsibility (as the README's layout
describes the rooms), do not raise the limit. The only exceptions are declarative tables, named below with
why: a table is read row by row, and splitting its rows across modules would only hide some of them.

Lines are the file's lines as ``wc -l`` counts them; a class runs from its ``class`` line (decorators
included) to its last line, nested classes counted with it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
PACKAGES: Final = ("extender", "admission", "controllers")
MODULE_LINES: Final = 450
CLASS_LINES: Final = 250

# Modules allowed over MODULE_LINES, each with the reason. Keep it short: a table, not a big module.
TABLES: Final = {
    # GRANTS: one row (resource, verbs, the code that calls them, why) per API call pumice makes, about 420
    # of its lines; test_rbac.py checks each row against its code. The rest builds the ClusterRole from it.
    "extender/deploy/rbac.py": "the ClusterRole as a table of grants, one row per API call",
}


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def test_no_module_over_the_limit() -> None:
    over = {
        str(p.relative_to(ROOT)): n
        for p in _modules()
        if (n := _lines(p)) > MODULE_LINES and str(p.relative_to(ROOT)) not in TABLES
    }
    assert not over, f"modules over {MODULE_LINES} lines (split them by responsibility): {over}"


def test_the_tables_are_still_tables_and_still_big() -> None:
    # An exception that no longer needs to be one (the module shrank, moved or went) is taken off the list.
    for name in TABLES:
        path = ROOT / name
        assert path.is_file(), f"{name} is gone: take it off TABLES"
        assert _lines(path) > MODULE_LINES, f"{name} is within the limit now: take it off TABLES"


def test_no_class_over_the_limit() -> None:
    over: dict[str, int] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                if (n := node.end_lineno - start + 1) > CLASS_LINES:
                    over[f"{path.relative_to(ROOT)}:{node.name}"] = n
    assert not over, f"classes over {CLASS_LINES} lines (split them by responsibility): {over}"
