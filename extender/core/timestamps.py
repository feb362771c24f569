"""RFC 3339 timestamps as the API server writes them (``2026-11-22T10:00:00Z``), to and from epoch seconds.

Pure: callers pass the time in, so the core never reads the clock.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float:
    """Seconds since the epoch; 0 when absent or unreadable."""
    if not text:
        return 0.0
    if text.endswith("Z"):  # (the API server's: UTC, so the same answer whatever the process's zone)
        return _utc_epoch(text)
    return _read(text)


def _read(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


# Many objects share a second (a gang's pods are created, scheduled and started together): each distinct
# UTC time is read once. A memo of a pure function (a time in UTC reads alike in every zone).
@functools.lru_cache(maxsize=4096)
def _utc_epoch(text: str) -> float:
    return _read(text)
