"""Resource lists (``requests``, ``limits``, a queue's ``capability``, a PodGroup's ``minResources``, ...)
as admitted objects must write them, checked the same way for every kind.

Mirrors what Volcano's queue webhook asks (Kubernetes' ``ValidateResourceQuantityValue``): a parsable
quantity, not negative, an integer for integer resources (``pods`` and extended resources such as
``nvidia.com/gpu``), and ours: at most ``limits.max_quantity`` base units. Values are exact (``Fraction``),
so comparisons such as ``deserved <= capability`` are exact like ``resource.Quantity.Cmp``.

Invariants: :func:`check_resource_list` never raises and never does work beyond a bound whatever the text
(``1e999999999`` is refused without building its billion digits); every invalid entry gets one error
naming ``where[name]``, and only the valid entries come back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil, isfinite
from typing import Final

from extender.api.limits import Limits
from extender.core.errors import InvalidQuantity
from extender.core.quantity import MILLI_RESOURCES, format_units, parse_quantity
from extender.core.validation import FieldError, shown

_INTEGER_NATIVE: Final = frozenset({"pods"})
# Bounds that keep exact parsing cheap: "1e999999999" would otherwise build a billion-digit integer.
_MAX_TEXT: Final = 64
_EXPONENT: Final = re.compile(r"^([^eE]*)[eE]([+-]?\d+)$")
# 10**30 is beyond any limit (2**62 base units is about 4.6e18), so a larger exponent need not be computed.
_MAX_EXPONENT: Final = 30


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


_OUT_OF_RANGE: Final = "out of range"


def _parse(value: object) -> Fraction | str:
    """The exact value of a quantity, :data:`_OUT_OF_RANGE` for one too large to compute, or ``""`` for
    anything that is not a quantity."""
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:
            return ""
        m = _EXPONENT.match(value.strip())
        if m and int(m.group(2)) > _MAX_EXPONENT:
            try:
                mantissa = parse_quantity(m.group(1))
            except (InvalidQuantity, ValueError):
                return ""
            # Only the sign matters: zero is zero, a negative value is refused as negative.
            return mantissa if mantissa <= 0 else _OUT_OF_RANGE
    if isinstance(value, float) and not isfinite(value):
        return ""
    try:
        return parse_quantity(value)
    except (InvalidQuantity, ValueError, OverflowError):
        return ""


def _quantity_text(value: object) -> str:
    """The user's text for a message: as written, cut at :data:`_MAX_TEXT` characters."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping | list | tuple):
        return "a list" if isinstance(value, list | tuple) else "an object"
    else:
        text = shown(value)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


def check_resource_list(raw: object, where: str, limits: Limits) -> tuple[Quantities, list[FieldError]]:
    """The valid entries of ``raw`` and one error per invalid entry; ``where`` is the field path."""
    if raw is None:
        return Quantities(), []
    if not isinstance(raw, Mapping):
        return Quantities(), [FieldError(field=where, message="must be a map of resource name to quantity")]
    exact: dict[str, Fraction] = {}
    text: dict[str, str] = {}
    errors: list[FieldError] = []
    for key, value in raw.items():
        name = str(key)
        at = f"{where}[{name}]"
        shown_text = _quantity_text(value)
        q = _parse(value)
        if isinstance(q, str):
            if q == _OUT_OF_RANGE:
                errors.append(_too_large(at, name, shown_text, limits))
            else:
                msg = f"{shown_text!r} is not a quantity (examples: 500m, 2, 4Gi)"
                if isinstance(value, Mapping | list | tuple | bool) or value is None:
                    msg = f"must be a quantity such as 500m, 2 or 4Gi, got {shown_text}"
                errors.append(FieldError(field=at, message=msg))
            continue
        if q < 0:
            errors.append(FieldError(field=at, message=f"must not be negative, got {shown_text}"))
            continue
        if ceil(q * 1000 if name in MILLI_RESOURCES else q) > limits.max_quantity:
            errors.append(_too_large(at, name, shown_text, limits))
            continue
        if is_integer_resource(name) and q.denominator != 1:
            errors.append(FieldError(field=at, message=f"must be a whole number, got {shown_text}"))
            continue
        exact[name] = q
        text[name] = shown_text
    return Quantities(exact, text), errors


def _too_large(at: str, name: str, text: str, limits: Limits) -> FieldError:
    return FieldError(
        field=at,
        message=f"{text} is out of range; pumice accepts at most {format_units(name, limits.max_quantity)}",
    )
