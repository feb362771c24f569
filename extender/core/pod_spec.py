"""What a pod's spec alone decides for the scheduler, read once per distinct spec: the pods of one task are
alike, so the 2nd..Nth pod of a gang costs a lookup instead of a parse.

:func:`read_spec` is the definition (the readers :func:`~extender.core.parse.parse_pod` calls). A
:class:`SpecMemo` keys its results by the exact sub-objects those readers look at (:func:`spec_key`), so a
hit is what :func:`read_spec` would return for that spec:

- the scalars ``schedulerName``, ``priority``, ``preemptionPolicy``, ``priorityClassName``;
- ``overhead``, ``nodeSelector``, ``affinity`` and ``tolerations`` whole (more than is read of them: a key
  can only tell more specs apart, never fewer);
- of each container and init container its ``resources`` alone, in order (requests are summed, the largest
  init container's taken, and only a GPU family's name is looked for in its limits and requests).

A key is those sub-objects as JSON bytes: exact for decoded JSON (what the informers hand over). Anything
JSON cannot tell apart is left out of the memo (no key): a ``null`` (NaN and infinities encode as it too),
a container that is not an object, a subclass of a JSON type, a non-string key, an integer beyond 64 bits.
Failures are never remembered: a spec that cannot be read raises on every parse.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from extender.core.fields import Obj
from extender.core.fields import int_field as _int
from extender.core.fields import list_field as _list
from extender.core.fields import list_item as _item
from extender.core.fields import object_field as _map
from extender.core.fields import resource_list as _resources
from extender.core.gpus import names_a_family
from extender.core.model import NodeConstraints
from extender.core.parse_affinity import node_constraints
from extender.core.resources import add

_i = sys.intern


def pod_requests(spec: Obj) -> dict[str, int]:
    """What a pod asks of its node: sum over containers, at least the largest init container, plus
    overhead, plus one ``pods`` slot (kube-scheduler's NodeResourcesFit accounting)."""
    total: dict[str, int] = {}
    for i, c in enumerate(_list(spec, "containers", "spec")):
        where = f"spec.containers[{i}]"
        requests = _map(_item(c, where), "resources", where).get("requests")
        total = add(total, _resources(requests, f"{where}.resources.requests"))
    for i, c in enumerate(_list(spec, "initContainers", "spec")):
        where = f"spec.initContainers[{i}]"
        init = _resources(
            _map(_item(c, where), "resources", where).get("requests"), f"{where}.resources.requests"
        )
        for k, v in init.items():
            if v > total.get(k, 0):
                total[k] = v
    total = add(total, _resources(spec.get("overhead"), "spec.overhead"))
    total["pods"] = 1
    return _shared_requests(tuple((k, v) for k, v in total.items() if v))


# One dict per distinct request (pods of a task ask alike): shared by the pods that ask it, which is why
# a Pod's ``requests`` is a Mapping nobody writes to. A memo of a pure function.
@functools.lru_cache(maxsize=4096)
def _shared_requests(items: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return dict(items)


@dataclass(frozen=True, slots=True)
class SpecParts:
    """The parts of a Pod that its spec alone decides (field names as :class:`~extender.core.model.Pod`'s;
    ``asks_devices``: whether any container names a GPU family, without which the pod asks no cards)."""

    scheduler_name: str
    requests: Mapping[str, int]
    priority: int
    constraints: NodeConstraints
    asks_devices: bool
    preemption_policy: str
    priority_class: str


def read_spec(spec: Obj) -> SpecParts:
    """The spec's parts, read (raises :class:`~extender.core.errors.InvalidObject` naming a bad field)."""
    return SpecParts(
        scheduler_name=_i(str(spec.get("schedulerName") or "default-scheduler")),
        requests=pod_requests(spec),
        priority=_int(spec, "priority", "spec", 0),
        constraints=node_constraints(spec),
        asks_devices=names_a_family(spec),
        preemption_policy=_i(str(spec.get("preemptionPolicy") or "")),
        priority_class=_i(str(spec.get("priorityClassName") or "")),
    )


# The spec's fields the readers take whole (the containers' ``resources`` are added apart).
_WHOLE: Final = ("schedulerName", "priority", "preemptionPolicy", "priorityClassName", "overhead",
                 "nodeSelector", "affinity", "tolerations")  # fmt: skip
# Subclasses of str/int/dict/list raise rather than encode as their base type.
_EXACT: Final = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)
_NO_RESOURCES: Final[dict[str, Any]] = {}


def _container_resources(spec: Obj, key: str) -> list[Any] | None:
    items = spec.get(key)
    if items is None:
        return []
    if type(items) is not list:
        return None
    out: list[Any] = []
    for c in items:
        if type(c) is not dict:
            return None
        r = c.get("resources")
        # (absent and null read alike: no requests, no limits)
        out.append(_NO_RESOURCES if r is None else r)
    return out


def spec_key(spec: Obj) -> bytes | None:
    """The key of what :func:`read_spec` reads of ``spec``, or None when it has none (see the module)."""
    containers, init = _container_resources(spec, "containers"), _container_resources(spec, "initContainers")
    if containers is None or init is None:
        return None
    try:
        key = orjson.dumps([{k: spec[k] for k in _WHOLE if k in spec}, containers, init], option=_EXACT)
    except TypeError:
        return None
    return None if b"null" in key else key


class SpecMemo:
    """:func:`read_spec` remembered for the ``size`` specs seen last (a bounded memo of a pure function)."""

    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._parts: dict[bytes, SpecParts] = {}

    def read(self, spec: Obj) -> SpecParts:
        key = spec_key(spec)
        if key is None:
            return read_spec(spec)
        parts = self._parts.get(key)
        if parts is None:
            parts = read_spec(spec)
            if len(self._parts) >= self._size:
                del self._parts[next(iter(self._parts))]  # the oldest
            self._parts[key] = parts
        return parts
