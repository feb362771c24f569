"""The single values of a trace file, read and checked: mappings, lists, names, counts, durations,
resource lists, a pool's GPU cards and topology, where a job's pods may go (``nodeSelector``, ``affinity``,
``tolerations``: read as the scheduler reads a pod's, so what it cannot read fails here) (see
:mod:`controllers.simulate.trace` for the format).

Each reader returns the value as the simulator uses it, or raises :class:`TraceError` naming where it is
(``jobs[3].tasks[0].replicas``) and what was expected, so a bad trace fails before anything runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from extender.core.durations import parse_duration
from extender.core.errors import InvalidObject, InvalidQuantity
from extender.core.gpus import GPU_MEMORY
from extender.core.parse_affinity import node_constraints, pod_affinity
from extender.core.quantity import to_units
from extender.core.resources import parse_resource_list


class TraceError(ValueError):
    """The trace cannot be simulated as written; the message says where and why."""


def mapping(v: object, where: str) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise TraceError(f"{where}: expected a mapping, got {type(v).__name__}")
    return v


def items(v: object, where: str) -> Sequence[Any]:
    if v is None:
        return ()
    if not isinstance(v, list):
        raise TraceError(f"{where}: expected a list, got {type(v).__name__}")
    return v


def name(v: object, where: str) -> str:
    if not isinstance(v, str) or not v:
        raise TraceError(f"{where}: a non-empty name is required")
    return v


def count(v: object, where: str, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise TraceError(f"{where}: expected an integer >= {minimum}, got {v!r}")
    return v


def forever(v: object, where: str) -> float | None:
    """A job's ``duration``: seconds or a duration, or None (absent, null or ``forever``: it never ends)."""
    return None if v is None or v == "forever" else seconds(v, where)


def until(text: str) -> float:
    """``--until``: plain seconds (``10``, ``2.5``) or a duration (``90s``, ``1h30m``)."""
    try:
        value = float(text)
    except ValueError:
        value = parse_duration(text)
    if not 0 <= value < float("inf"):
        raise ValueError(f"--until {text!r}: expected seconds >= 0 or a duration such as 24h")
    return value


def seconds(v: object, where: str) -> float:
    if isinstance(v, bool):
        raise TraceError(f"{where}: expected seconds or a duration such as 90s or 1h30m, got {v!r}")
    if isinstance(v, int | float):
        if v < 0:
            raise TraceError(f"{where}: must not be negative")
        return float(v)
    if isinstance(v, str):
        try:
            return parse_duration(v)
        except ValueError as e:
            raise TraceError(f"{where}: {e}") from None
    raise TraceError(f"{where}: expected seconds or a duration such as 90s or 1h30m, got {v!r}")


def resources(v: object, where: str) -> dict[str, str]:
    out = {str(k): str(q) for k, q in mapping(v, where).items()}
    try:
        parse_resource_list(out)
    except ValueError as e:
        raise TraceError(f"{where}: {e}") from None
    return out


def known(m: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    """Every key of ``m`` is one of ``known``; else the error names the first unknown one and the known
    key it most likely misspells (a typo in a trace would otherwise silently mean a default)."""
    unknown = sorted(str(k) for k in set(m) - set(known))
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise TraceError(f"{where}: unknown fields {unknown}{hint} (known: {', '.join(known)})")


def gpus(raw: object, where: str) -> tuple[int, int]:
    """A pool's ``gpus``: (cards per node, memory per card)."""
    m = mapping(raw, where)
    known(m, ("cards", "memory"), where)
    cards = count(m.get("cards"), f"{where}.cards", 1)
    memory = m.get("memory")
    units: int | None = None
    if isinstance(memory, int | str) and not isinstance(memory, bool):
        try:
            units = to_units(GPU_MEMORY, memory)
        except InvalidQuantity:
            units = None
    if units is None or units < 1:
        raise TraceError(
            f"{where}.memory: expected a positive integer or quantity (81920, 80Gi), got {memory!r}"
        )
    return cards, units


def topology(raw: object, where: str) -> tuple[int, int]:
    """A pool's ``topology``: (nodes per leaf, leaves per spine; 0 for no spine)."""
    m = mapping(raw, where)
    known(m, ("leaf", "spine"), where)
    return count(m.get("leaf"), f"{where}.leaf", 1), count(m.get("spine", 0), f"{where}.spine")


# Where a job's (or a task's) pods may go: the pod spec fields, as a Volcano Job's task template has them.
PLACEMENT = ("nodeSelector", "affinity", "tolerations")


def placement(m: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The ``nodeSelector``, ``affinity`` and ``tolerations`` of ``m`` that are given, checked by the
    readers the scheduler uses for a pod's spec (a term it cannot read is refused here, never dropped)."""
    out: dict[str, Any] = {}
    if m.get("nodeSelector") is not None:
        out["nodeSelector"] = {
            str(k): str(v) for k, v in mapping(m["nodeSelector"], f"{where}.nodeSelector").items()
        }
    if m.get("affinity") is not None:
        out["affinity"] = dict(mapping(m["affinity"], f"{where}.affinity"))
    if m.get("tolerations") is not None:
        out["tolerations"] = [
            dict(mapping(t, f"{where}.tolerations[{i}]"))
            for i, t in enumerate(items(m["tolerations"], where))
        ]
    try:
        node_constraints(out)
        pod_affinity(out, "default", {})
    except InvalidObject as e:
        raise TraceError(f"{where}: {e}") from None
    return out
