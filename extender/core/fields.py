"""Readers of one field of a decoded object, shared by the parsers of the core (``parse``, ``numa``): a
field of the wrong type raises :class:`InvalidObject` naming where it is, so one bad object is that
object's problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.errors import InvalidObject

Obj = Mapping[str, Any]


def object_field(obj: Obj, key: str, where: str) -> Obj:
    """``obj[key]`` when it is an object, ``{}`` when absent."""
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise InvalidObject(f"{where}.{key}: expected an object, got {type(v).__name__}")
    return v
