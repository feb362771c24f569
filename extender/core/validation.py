"""The vocabulary of validating a decoded Kubernetes object: field errors, never-raising readers of raw JSON,
the nesting bound, and checks of one typed field.

Admission (every kind's rules in :mod:`admission`) and the job rules (:mod:`extender.jobs.rules`, which the
job controller also runs on stored jobs) speak it, so a problem is worded the same wherever it is found.

Invariants: nothing here raises, whatever JSON value it is given (a field of the wrong type reads as absent
or is reported, naming its path); every message is one bounded line, however large the value it quotes
(:func:`shown`); field paths follow the Kubernetes convention (``spec.tasks[0].name``,
``metadata.annotations[volcano.sh/x]``), so a denial points at the exact thing to fix. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from extender.api.limits import Limits, field_path, too_deep

# A Kubernetes object as decoded JSON. ``Any`` stops here: rules check every value they read.
Obj = Mapping[str, Any]

# Volcano's counts (replicas, minAvailable, minMember, maxRetry, ...) are int32.
INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldError:
    """One reason to refuse an object: the field at fault and what to do about it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


# --- reading raw JSON ---------------------------------------------------------------------------------------
def mapping(obj: object, key: str) -> Obj:
    """``obj[key]`` when both are JSON objects, else an empty mapping."""
    if isinstance(obj, Mapping):
        v = obj.get(key)
        if isinstance(v, Mapping):
            return v
    return {}


def string(obj: object, key: str) -> str:
    """``obj[key]`` when it is a string, else ``""``."""
    if isinstance(obj, Mapping):
        v = obj.get(key)
        if isinstance(v, str):
            return v
    return ""


def is_int(v: object) -> bool:
    """A JSON integer (``true`` is not one, although Python thinks so)."""
    return isinstance(v, int) and not isinstance(v, bool)


def as_int(value: object) -> int | None:
    """``value`` when it is a JSON integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_SHOWN_TEXT: Final = 100


def shown(value: object) -> str:
    """``value`` for a message, bounded: a short repr of a scalar, the kind of a container (a message must
    stay a line, whatever the user sent)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN_TEXT else repr(value[:_SHOWN_TEXT]) + "..."
    if isinstance(value, bool | float) or value is None:
        return repr(value)
    if isinstance(value, int):
        # Python refuses to print an int of more than 4300 digits; nobody needs to read one.
        return repr(value) if value.bit_length() <= 256 else "a very large integer"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


# --- the nesting bound ------------------------------------------------------------------------------------
_SHOWN_LEVELS: Final = 10


def depth_errors(obj: object, limits: Limits) -> list[FieldError]:
    """A container nested deeper than ``limits.max_depth``, named by its path (the first one found)."""
    path = too_deep(obj, limits.max_depth)
    if path is None:
        return []
    # The first levels say which field it is; all of them would make a line of a hundred keys.
    where = field_path(path) if len(path) <= _SHOWN_LEVELS else field_path(path[:_SHOWN_LEVELS]) + "..."
    return [
        FieldError(
            field=where,
            message=f"nested more than {limits.max_depth} levels deep, the most pumice accepts "
            "(Kubernetes objects nest about 20); flatten this value",
        )
    ]


# --- one typed field ----------------------------------------------------------------------------------------
def int_field(
    obj: Obj, key: str, at: str, minimum: int, maximum: int = INT32_MAX
) -> tuple[int | None, list[FieldError]]:
    """``obj[key]`` when it is an integer from ``minimum`` to ``maximum``; None (and maybe an error)
    otherwise."""
    v = obj.get(key)
    if v is None:
        return None, []
    if not is_int(v) or v < minimum:
        return None, [
            FieldError(field=f"{at}.{key}", message=f"must be an integer >= {minimum}, got {shown(v)}")
        ]
    if v > maximum:
        return None, [FieldError(field=f"{at}.{key}", message=f"must be at most {maximum}, got {shown(v)}")]
    return int(v), []


def string_errors(obj: Obj, keys: Sequence[str], at: str) -> list[FieldError]:
    """Each of ``keys`` is a string when set."""
    return [
        FieldError(field=f"{at}.{k}", message=f"must be a string, got {shown(obj[k])}")
        for k in keys
        if obj.get(k) is not None and not isinstance(obj[k], str)
    ]


def string_map_errors(obj: Obj, key: str, at: str) -> list[FieldError]:
    """``obj[key]``, when set, maps strings to strings (labels, annotations)."""
    raw = obj.get(key)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field=f"{at}.{key}", message="must be a map of string keys to string values")]
    return [
        FieldError(field=f"{at}.{key}[{k}]", message=f"must be a string, got {shown(v)}")
        for k, v in raw.items()
        if not isinstance(v, str)
    ]


def object_list_errors(obj: Obj, key: str, at: str, what: str) -> list[FieldError]:
    """``obj[key]``, when the key is there, is a list of objects. pumice appends to such lists (volumes,
    env, mounts, ports), so unlike a field it only reads, null does not pass for empty."""
    if key not in obj:
        return []
    raw = obj[key]
    if not isinstance(raw, list):
        return [FieldError(field=f"{at}.{key}", message=f"must be a list of {what}, got {shown(raw)}")]
    return [
        FieldError(field=f"{at}.{key}[{j}]", message="must be an object")
        for j, item in enumerate(raw)
        if not isinstance(item, Mapping)
    ]


def network_topology_errors(nt: object, at: str) -> list[FieldError]:
    """A Volcano ``networkTopology`` (of a Job, a task's partition policy, a PodGroup or its subgroups)
    sets at most one of ``highestTierAllowed`` and ``highestTierName``."""
    if isinstance(nt, Mapping) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return [FieldError(field=at, message="set either highestTierAllowed or highestTierName, not both")]
    return []
