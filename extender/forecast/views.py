"""The forecast as the HTTP endpoint serves it: one JSON item per waiting PodGroup, and paging.

An item (``kind: PodGroupForecastList`` of ``apiVersion: forecast.pumice.dev/v1``)::

    {"namespace": "team-a", "name": "train-1", "queue": "research", "outlook": "Estimated",
     "position": {"queue": 2, "cluster": 5}, "ahead": ["train-0"],
     "estimatedStart": "2026-01-02T10:00:00Z", "earliestStart": "...", "latestStart": "...",
     "waitSeconds": 1800, "reason": null}

``ahead`` names the groups right ahead of it in its queue that are in its own namespace (the reader may
see those; how many are ahead in all is ``position.queue - 1``). Pages are ``limit`` items; ``continue``
is an opaque token bound to the forecast it was cut from: a newer forecast makes it expire (the endpoint
answers 410, as the API server does for an expired continue), and the client lists again. Pure.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, Final

from extender.core.timestamps import rfc3339
from extender.forecast.model import GroupForecast, Outlook

API_VERSION: Final = "forecast.pumice.dev/v1"
LIST_KIND: Final = "PodGroupForecastList"
ITEM_KIND: Final = "PodGroupForecast"


def _when(t: float | None) -> str | None:
    return None if t is None else rfc3339(t)


def item(f: GroupForecast, now: float) -> dict[str, Any]:
    namespace, _, name = f.key.partition("/")
    p = f.position
    start = None if f.start is None else max(f.start, now)
    known = f.outlook in (Outlook.RUNNING, Outlook.ESTIMATED) and start is not None
    return {
        "namespace": namespace,
        "name": name,
        "queue": f.queue,
        "outlook": f.outlook.value,
        "position": None if p is None else {"queue": p.in_queue, "cluster": p.in_cluster},
        "ahead": []
        if p is None
        else [k.partition("/")[2] for k in p.ahead if k.partition("/")[0] == namespace],
        "estimatedStart": _when(start) if known else None,
        "earliestStart": _when(max(f.earliest or now, now)) if known else None,
        "latestStart": _when(max(f.latest or now, now)) if known else None,
        "waitSeconds": round(start - now) if known and start is not None else None,
        "reason": f.reason or None,
    }


def continue_token(computed_at: float, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{computed_at!r}:{offset}".encode()).decode()


def continue_offset(token: str, computed_at: float) -> int | None:
    """The offset ``token`` continues at, or None when it is not a token of this forecast."""
    try:
        at, _, offset = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        return int(offset) if float(at) == computed_at and int(offset) >= 0 else None
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


def page(
    groups: Sequence[GroupForecast], *, computed_at: float, now: float, offset: int, limit: int
) -> dict[str, Any]:
    """One page of ``groups`` (already in order and filtered) as the list document."""
    chunk = groups[offset : offset + limit]
    end = offset + len(chunk)
    meta: dict[str, Any] = {"computedAt": _when(computed_at) if computed_at else None}
    if end < len(groups):
        meta["continue"] = continue_token(computed_at, end)
        meta["remainingItemCount"] = len(groups) - end
    return {
        "apiVersion": API_VERSION,
        "kind": LIST_KIND,
        "metadata": meta,
        "items": [item(f, now) for f in chunk],
    }
