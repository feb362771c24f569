"""Resource lists in admitted objects: well-formed, non-negative, whole where Kubernetes wants whole.

Mirrors what Volcano's queue webhook asks of every quantity (Kubernetes' ``ValidateResourceQuantityValue``):
a parsable quantity, not negative, and an integer for integer resources (``pods`` and extended resources
such as ``nvidia.com/gpu``). Values are kept exact (``Fraction``) so comparisons between lists, such as
``deserved <= capability``, are exact like ``resource.Quantity.Cmp``; messages quote the user's own text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil

from admission.base import FieldError
from extender.core.errors import InvalidQuantity
from extender.core.quantity import MILLI_RESOURCES, parse_quantity

_INTEGER_NATIVE = frozenset({"pods"})
# Bounds that keep exact parsing cheap: "1e999999999" would otherwise build a billion-digit integer.
_MAX_TEXT = 64
_EXPONENT = re.compile(r"[eE]([+-]?\d+)$")
_MAX_EXPONENT = 30


def _parse(value: object) -> Fraction | None:
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:
            return None
        m = _EXPONENT.search(value.strip())
        if m and abs(int(m.group(1))) > _MAX_EXPONENT:
            return None
    try:
        return parse_quantity(value)
    except (InvalidQuantity, ValueError, OverflowError):  # ValueError: float inf/nan
        return None


@dataclass(frozen=True, slots=True)
class Quantities:
    """One checked resource list: the exact value and the text the user wrote, per resource name."""

    exact: Mapping[str, Fraction] = field(default_factory=dict)
    text: Mapping[str, str] = field(default_factory=dict)

    def units(self) -> dict[str, int]:
        """Accounted integer amounts (milli-CPU, bytes, counts), as the scheduler core sees them."""
        return {k: ceil(v * 1000 if k in MILLI_RESOURCES else v) for k, v in self.exact.items()}


def is_integer_resource(name: str) -> bool:
    """Kubernetes' rule: ``pods`` and extended resources (domain-qualified, outside ``kubernetes.io/``)."""
    if name in _INTEGER_NATIVE:
        return True
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def check_resource_list(raw: object, where: str) -> tuple[Quantities, list[FieldError]]:
    """The valid entries of ``raw`` and one error per invalid entry; ``where`` is the field path."""
    if raw is None:
        return Quantities(), []
    if not isinstance(raw, Mapping):
        return Quantities(), [FieldError(field=where, message="must be a map of resource name to quantity")]
    exact: dict[str, Fraction] = {}
    text: dict[str, str] = {}
    errors: list[FieldError] = []
    for name, value in raw.items():
        at = f"{where}[{name}]"
        shown = value if isinstance(value, str) else str(value)
        if len(shown) > _MAX_TEXT:
            shown = shown[:_MAX_TEXT] + "..."
        q = _parse(value)
        if q is None:
            msg = f"{shown!r} is not a quantity (examples: 500m, 2, 4Gi)"
            errors.append(FieldError(field=at, message=msg))
            continue
        if q < 0:
            errors.append(FieldError(field=at, message=f"must not be negative, got {shown}"))
            continue
        if is_integer_resource(str(name)) and q.denominator != 1:
            errors.append(FieldError(field=at, message=f"must be a whole number, got {shown}"))
            continue
        exact[str(name)] = q
        text[str(name)] = shown
    return Quantities(exact, text), errors
