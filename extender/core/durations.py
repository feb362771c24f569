"""Go ``time.Duration`` strings (``90s``, ``5m``, ``1h30m``), as Volcano's specs and conf write them."""

from __future__ import annotations

import re
from typing import Final

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_S: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# Go's time.Duration is int64 nanoseconds: Volcano cannot hold a longer timeout, and a longer one would
# overflow the reconciler's wake-up arithmetic (a float of "1" * 400 hours is inf).
MAX_DURATION_S: Final = (2**63 - 1) / 1e9


def parse_duration(text: str) -> float:
    """A Go ``time.Duration`` string (``90s``, ``5m``, ``1h30m``) as metav1.Duration writes it, in seconds."""
    s = text.strip()
    if not s:
        raise ValueError("empty duration")
    pos, total = 0, 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_S[m.group(2)]
        pos = m.end()
    if pos != len(s) or pos == 0:
        if s == "0":
            return 0.0
        shown = text if len(text) <= 64 else text[:64] + "..."
        raise ValueError(f"invalid duration {shown!r} (want e.g. 30s, 5m, 1h30m)")
    if not total <= MAX_DURATION_S:
        raise ValueError("duration longer than Go's longest (about 2562047h)")
    return total
