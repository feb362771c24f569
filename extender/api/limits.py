"""How big an object pumice accepts: the :class:`Limits` every admitted object and every job obeys.

Limits are settings (parsed once, passed down), not rules of a kind: admission checks every Queue, PodGroup,
Job, Command and pod against them, and the job controller refuses to act on a job beyond them, with the
same words (:func:`extender.jobs.rules.job_problems`). They exist so that no input, however built, can make
pumice do unbounded work: a job of a billion replicas would make the reconciler build a billion pods, a
quantity of ``1e400`` does not fit the int64 matrices of the scheduler, and an object nested thousands of
levels deep overflows every recursive walk (``copy.deepcopy``, ``repr``, equality) on its way through.

Also here, because both admission and the pure job core need it without importing each other: the nesting
depth of a decoded JSON value, computed with an explicit stack so that depth 100 000 costs memory, not the
Python stack, and the Kubernetes-style spelling of a path into an object (``spec.tasks[0].name``,
``metadata.annotations[volcano.sh/x]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Final, TypeAlias

# Above this, an admitted object could not be encoded again: orjson refuses to encode more than 254 levels,
# and the controller wraps a pod template in a few more levels of its own.
MAX_DEPTH_CEILING: Final = 200
# Accounted amounts live in int64 matrices, and the scheduler adds a few of them (a node's requests, a
# queue's usage) before comparing. 2**62 leaves room for that sum without overflow.
MAX_QUANTITY_CEILING: Final = 2**62

PathPart = str | int
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """The largest inputs pumice accepts. The defaults fit every real workload with a wide margin."""

    max_replicas: int = 10_000
    """Replicas of one task, and also of all tasks of a job together (``pumice serve --max-job-replicas``).
    The reconciler builds every missing pod of a job in one pass, and the svc, mpi and tensorflow plugins
    write every replica's host name into each pod or ConfigMap, so the cost of a job grows with the
    square of this number."""

    max_depth: int = 64
    """JSON nesting depth of any admitted object: containers (objects and arrays) on the deepest path, the
    object itself counting 1. Real Kubernetes objects nest about 20 deep (a pod template's affinity
    terms are among the deepest); at most :data:`MAX_DEPTH_CEILING`."""

    max_object_bytes: int = 1_572_864
    """Size of an admitted object encoded as compact JSON: 1.5 MiB, etcd's default request limit, so
    nothing admitted here is refused by the store for its size."""

    max_quantity: int = MAX_QUANTITY_CEILING
    """The largest resource quantity accepted, in the base units the scheduler accounts: milli-CPU for
    ``cpu``, bytes for memory and storage, counts for everything else. A quantity that does not parse,
    is not finite, is negative or is larger than this is refused; at most :data:`MAX_QUANTITY_CEILING`."""

    def __post_init__(self) -> None:
        for name, value, ceiling in (
            ("max_replicas", self.max_replicas, None),
            ("max_depth", self.max_depth, MAX_DEPTH_CEILING),
            ("max_object_bytes", self.max_object_bytes, None),
            ("max_quantity", self.max_quantity, MAX_QUANTITY_CEILING),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, got {value!r}")
            if ceiling is not None and value > ceiling:
                raise ValueError(f"limit {name} must be at most {ceiling}, got {value}")


DEFAULT_LIMITS: Final = Limits()


# Most values of an object are scalars: ruling them out first keeps the walk off the slow ABC check.
_SCALARS: Final = (str, int, float, type(None))


def _is_container(value: object) -> bool:
    return not isinstance(value, _SCALARS) and isinstance(value, dict | list | tuple | Mapping)


def _children(value: object) -> Iterator[tuple[PathPart, object]]:
    if isinstance(value, list | tuple):
        return enumerate(value)
    assert isinstance(value, Mapping)
    return ((k if isinstance(k, str) else str(k), v) for k, v in value.items())


def nesting_depth(value: object, *, stop_above: int | None = None) -> int:
    """Containers on the deepest path of ``value``: 0 for a scalar, 1 for ``{}`` or ``[1]``, 2 for
    ``{"a": []}``. With ``stop_above``, the walk goes no deeper than ``stop_above + 1`` and returns at most
    that, which is all a limit check needs and bounds the work on a hostile object."""
    if not _is_container(value):
        return 0
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if stop_above is not None and depth > stop_above:
            return depth
        stack.extend((child, depth + 1) for _, child in _children(node) if _is_container(child))
    return deepest


# A path as a chain of (parent link, key): each level links to its parent instead of copying the path.
_Link: TypeAlias = "tuple[_Link, PathPart] | None"


def too_deep(value: object, max_depth: int) -> tuple[PathPart, ...] | None:
    """The path (keys and indexes) to a container nested deeper than ``max_depth``, or None if there is
    none. The walk stops at the first such container: it never goes below ``max_depth + 1`` levels."""
    if not _is_container(value):
        return None
    if max_depth < 1:
        return ()
    stack: list[tuple[object, int, _Link]] = [(value, 1, None)]
    while stack:
        node, depth, link = stack.pop()
        for key, child in _children(node):
            if not _is_container(child):
                continue
            here: _Link = (link, key)
            if depth + 1 > max_depth:
                parts: list[PathPart] = []
                while here is not None:
                    here, part = here
                    parts.append(part)
                return tuple(reversed(parts))
            stack.append((child, depth + 1, here))
    return None


# Fields that are maps (Go map[string]...) in Kubernetes and Volcano types: their keys are data, which
# Kubernetes writes in brackets (``spec.capability[cpu]``), not fields.
MAP_FIELDS: Final = frozenset(
    {
        "annotations",
        "capability",
        "controlledResources",
        "data",
        "deserved",
        "labels",
        "limits",
        "matchLabels",
        "minResources",
        "minTaskMember",
        "nodeSelector",
        "overhead",
        "plugins",
        "requests",
        "resource",
    }
)


def field_path(parts: tuple[PathPart, ...] | list[PathPart]) -> str:
    """``("spec", "tasks", 0, "name")`` as ``spec.tasks[0].name``: indexes, keys of :data:`MAP_FIELDS` and
    keys that are not identifiers go in brackets (``metadata.annotations[volcano.sh/x]``), as Kubernetes
    spells field paths."""
    out = ""
    previous: PathPart | None = None
    for p in parts:
        if isinstance(p, int) or previous in MAP_FIELDS or not _IDENTIFIER.match(p):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else p
        previous = p
    return out or "object"
