"""Small readers of watched objects shared by the workflow controllers (JobFlow, CronJob)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def namespace(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "default")


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def newer(obj: Mapping[str, Any], cached: Mapping[str, Any] | None) -> bool:
    """Whether a watch event may replace the cached object: not when it is older than the object our own
    write returned (same UID, smaller resourceVersion)."""
    if cached is None or meta(obj).get("uid") != meta(cached).get("uid"):
        return True
    return _rv(obj) >= _rv(cached)
