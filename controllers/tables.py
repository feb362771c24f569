"""kubectl-style text: aligned tables, ages, and safe reads of API objects; what the CLI and the simulator
both print with.

Pure functions of their arguments (the clock comes in as ``now``), so every format is unit-tested. Tables
follow ``kubectl get``: uppercase headers, columns left-aligned and separated by two spaces, no trailing
blanks, missing values shown as ``<none>``. Ages follow kubectl's human durations (``45s``, ``3m20s``,
``5h``, ``4d``) so the two tools agree on the same object. A shared module of ``controllers`` beside the
rooms: it imports nothing of pumice's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

Obj = dict[str, Any]

NONE: Final = "<none>"
COLUMN_GAP: Final = "  "


def render_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Aligned columns, one line per row, ending with a newline; headers are upper-cased."""
    lines = [[h.upper() for h in headers], *([str(c) for c in row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(headers))]
    out = []
    for line in lines:
        padded = [cell.ljust(width) for cell, width in zip(line, widths, strict=True)]
        out.append(COLUMN_GAP.join(padded).rstrip())
    return "\n".join(out) + "\n"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 timestamp as the API server writes it, or None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kubectl's rounding: more precision for young objects, less as they age."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"  # the clocks disagree by more than a rounding error
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    if days < 365 * 8:
        return f"{days // 365}y{days % 365}d"
    return f"{days // 365}y"


def age(obj: Mapping[str, Any], now: datetime) -> str:
    """How long ago the object was created, as the AGE column shows it."""
    created = parse_time(metadata(obj).get("creationTimestamp"))
    if created is None:
        return "<unknown>"
    return human_duration((now - created).total_seconds())


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` when it is a mapping, else an empty one: objects from the server may lack any field."""
    return value if isinstance(value, Mapping) else {}


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(obj.get("metadata"))


def field(obj: Mapping[str, Any], *path: str) -> Any:
    """The value at a path of mapping keys, or None when any step is missing or not a mapping."""
    cur: Any = obj
    for key in path:
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(key)
    return cur


def text(value: object) -> str:
    """A table cell: ``<none>`` for missing or empty values."""
    if value is None or value == "" or value == {} or value == []:
        return NONE
    return str(value)


def count(value: object) -> str:
    """A counter cell: the API server drops zero counters, so absent means 0."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "0"


def resource_text(resources: object) -> str:
    """``cpu=4,memory=8Gi`` (the form the flags take), or ``<none>``."""
    if not isinstance(resources, Mapping) or not resources:
        return NONE
    return ",".join(f"{k}={v}" for k, v in sorted(resources.items()))
