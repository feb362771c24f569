"""Every logging call's ``extra`` keys are accepted by the logging module.

A reserved key (``name``, ``msg``, ``args``, ``module``, ...) makes ``Logger.makeRecord`` raise KeyError, so
the call that was meant to report a bad object ends the process instead (it did: ``extra={"name": ...}`` in
the cache's "skipping unreadable object" path crash-looped pumice on one odd PodGroup). The check is static,
over every call site, so a path no test reaches is covered too.
"""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("extender", "admission", "controllers")
LEVELS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


def _call_sites() -> list[tuple[str, int, ast.Call]]:
    out = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in LEVELS
                    and any(k.arg == "extra" for k in node.keywords)
                ):
                    out.append((str(path.relative_to(ROOT)), node.lineno, node))
    return out


SITES = _call_sites()


def test_there_are_call_sites_to_check() -> None:
    assert len(SITES) > 20


@pytest.mark.parametrize(("path", "line", "call"), SITES, ids=[f"{p}:{n}" for p, n, _ in SITES])
def test_extra_keys_are_not_reserved(path: str, line: int, call: ast.Call) -> None:
    extra = next(k.value for k in call.keywords if k.arg == "extra")
    assert isinstance(extra, ast.Dict), f"{path}:{line}: extra must be a dict literal so it can be checked"
    keys = [k.value for k in extra.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    assert len(keys) == len(extra.keys), f"{path}:{line}: extra keys must be string literals"
    clash = sorted(set(keys) & RESERVED)
    assert not clash, f"{path}:{line}: extra keys {clash} are reserved LogRecord attributes"


def test_the_check_catches_a_reserved_key() -> None:
    [stmt] = ast.parse('log.warning("x", extra={"name": 1})').body
    assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
    call = stmt.value
    with pytest.raises(AssertionError, match="reserved"):
        test_extra_keys_are_not_reserved("t.py", 1, call)
    with pytest.raises(KeyError):
        logging.getLogger("t").makeRecord("t", logging.INFO, "f", 1, "m", (), None, extra={"name": 1})
