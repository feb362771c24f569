"""RFC 3339 timestamps as the API server writes them (``2026-11-22T10:00:00Z``), to and from epoch seconds.

Pure: callers pass the time in, so the core never reads the clock.
"""

from __future__ import annotations

from datetime import UTC, datetime


def rfc3339(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def epoch(text: str) -> float:
    """Seconds since the epoch; 0 when absent or unreadable."""
    if not text:
        return 0.0
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
