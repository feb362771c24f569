"""Readers of one field of a decoded object, shared by the parsers of the core (``parse``, ``numa``) and of
the vcjob and flow models (:mod:`extender.jobs.model`, :mod:`extender.flows.model`): a field of the wrong
type raises :class:`InvalidObject` naming where it is, so one bad object is that object's problem.

A leaf: it imports nothing of the core but its errors, so a model that only reads fields (and admission,
which checks objects through those models) does not pull in the scheduler's numpy core."""

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


def list_field(obj: Obj, key: str, where: str) -> list[Any]:
    """``obj[key]`` when it is a list, ``[]`` when absent."""
    v = obj.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InvalidObject(f"{where}.{key}: expected a list, got {type(v).__name__}")
    return v


def object_item(v: object, where: str) -> Obj:
    """A list element that must be an object."""
    if not isinstance(v, Mapping):
        raise InvalidObject(f"{where}: expected an object, got {type(v).__name__}")
    return v
