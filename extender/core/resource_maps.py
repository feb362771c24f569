"""Resource lists as integer maps: a resource name to its accounted integer amount (milli-CPU, bytes,
counts; see :mod:`extender.core.quantity`), parsed from and formatted to Kubernetes ResourceLists.

Plain dicts, no numpy: the readers of single objects (the workload groups, the job controller's PodGroup,
admission's queue tree) use these without pulling in the scheduler's matrices, which
:mod:`extender.core.resources` builds over the same maps.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.core.quantity import format_units, human, to_units

Resources = Mapping[str, int]


def parse_resource_list(raw: Mapping[str, object] | None) -> dict[str, int]:
    """Integer amounts of a Kubernetes ResourceList (raises InvalidQuantity on a bad value)."""
    if not raw:
        return {}
    return {str(name): to_units(str(name), value) for name, value in raw.items()}


def add(a: Resources, b: Resources) -> dict[str, int]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def format_resource_list(res: Resources) -> dict[str, str]:
    """A Kubernetes ResourceList (quantity strings) for a status field."""
    return {k: format_units(k, v) for k, v in sorted(res.items())}


def describe(res: Resources) -> str:
    """``cpu 3, memory 4Gi`` for a reason message."""
    return ", ".join(f"{k} {human(k, v)}" for k, v in sorted(res.items()) if v)
