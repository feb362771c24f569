"""Readers of one field of a decoded object, shared by the parsers of the core (``parse``,
``parse_affinity``, ``numa``) and of the vcjob and flow models: a field of the wrong type raises
:class:`InvalidObject` naming where it is, so one bad object is that object's problem.

A leaf of the numpy-free part of the core (errors, durations, resource maps), so a model that only reads
fields (and admission, which checks objects through those models) does not pull in the scheduler's numpy
core."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.durations import parse_duration
from extender.core.errors import InvalidObject, InvalidQuantity
from extender.core.resource_maps import parse_resource_list

Obj = Mapping[str, Any]


# ``isinstance(v, (dict, Mapping))`` rather than against the ABC alone: the same answer, and decoded JSON
# is dicts, which the first check takes without the ABC's slower machinery (these run ~40 times a pod).


def object_field(obj: Obj, key: str, where: str) -> Obj:
    """``obj[key]`` when it is an object, ``{}`` when absent."""
    v = obj.get(key)
    if v is None:
        return {}
    if not isinstance(v, (dict, Mapping)):
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


def list_item(v: object, where: str) -> Obj:
    """A list element that must be an object."""
    if not isinstance(v, (dict, Mapping)):
        raise InvalidObject(f"{where}: expected an object, got {type(v).__name__}")
    return v


def resource_list(raw: object, where: str) -> dict[str, int]:
    """A ResourceList (``{"cpu": "500m", ...}``) in integer units; ``{}`` when absent."""
    if raw is None:
        return {}
    if not isinstance(raw, (dict, Mapping)):
        raise InvalidObject(f"{where}: expected a resource list")
    try:
        return parse_resource_list(raw)
    except InvalidQuantity as e:
        raise InvalidObject(f"{where}: {e}") from None


def metadata(obj: Obj, kind: str) -> Obj:
    """The ``metadata`` of an object of ``kind``, which must have a name."""
    list_item(obj, kind)
    meta = object_field(obj, "metadata", kind)
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InvalidObject(f"{kind}.metadata.name: required")
    return meta


def int_field(obj: Obj, key: str, where: str, default: int) -> int:
    """``obj[key]`` when it is an integer (a bool is not), ``default`` when absent."""
    v = obj.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidObject(f"{where}.{key}: expected an integer, got {v!r}")
    return v


def positive_duration(ann: Obj, keys: tuple[str, ...]) -> float | None:
    """The first of ``keys`` whose value reads as a positive Go duration, in seconds; None when none
    does (an unreadable value is skipped, as Volcano skips it)."""
    for key in keys:
        raw = ann.get(key)
        if raw is None:
            continue
        try:
            seconds = parse_duration(str(raw))
        except ValueError:
            continue
        if seconds > 0:
            return seconds
    return None
