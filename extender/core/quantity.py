"""Kubernetes resource quantities parsed to exact integers.

Quantities are parsed once, when an object enters the cache, into integers: milli-units for CPU (the
smallest unit the scheduler accounts), plain units (bytes, counts) for everything else. Rounding is
upwards, as the API server does when it canonicalises a request, so a pod is never under-counted.
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from math import ceil, isfinite
from typing import Final

from extender.core.errors import InvalidQuantity

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_QUANTITY: Final = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)

# Kubernetes reads the exponent as an int32, but anything past this is far outside int64 either way, and
# computing 10**exponent for it would stall the caller (an admission request, the cache).
_MAX_EXPONENT: Final = 1000
# Accounted amounts live in int64 matrices.
_INT64_MAX: Final = 2**63 - 1

# Resources accounted in milli-units; every other resource is a whole-unit integer.
MILLI_RESOURCES: Final = frozenset({"cpu"})


def parse_quantity(value: object) -> Fraction:
    """The exact value of a quantity such as ``"1500m"``, ``"2Gi"``, ``"1e3"``, ``4`` or ``0.5``."""
    if isinstance(value, bool):
        raise InvalidQuantity(repr(value))
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not isfinite(value):
            raise InvalidQuantity(repr(value))
        return Fraction(str(value))
    if not isinstance(value, str):
        raise InvalidQuantity(repr(value))
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise InvalidQuantity(repr(value))
    number, exponent, suffix = m.groups()
    try:
        base = Fraction(number)
    except ValueError:  # more digits than Python converts
        raise InvalidQuantity(repr(value)) from None
    if exponent is not None:
        power = int(exponent[1:])
        if abs(power) > _MAX_EXPONENT:
            raise InvalidQuantity(repr(value))
        return base * Fraction(10) ** power
    suffix = suffix or ""
    if suffix in _BINARY:
        return base * _BINARY[suffix]
    return base * _DECIMAL[suffix]


def to_units(resource: str, value: object) -> int:
    """The integer amount of ``resource`` the scheduler accounts: milli for CPU, whole units otherwise."""
    if type(value) is str:
        return _str_units(resource, value)
    return _units(resource, value)


# Remembered, as a pure function's results: a cluster's pods repeat a few dozen quantity strings, and
# parsing one (exact fractions) cost more than the rest of a pod's parse. An invalid one is not
# remembered (the exception propagates; the next call raises it again).
@functools.lru_cache(maxsize=4096)
def _str_units(resource: str, value: str) -> int:
    return _units(resource, value)


def _units(resource: str, value: object) -> int:
    q = parse_quantity(value)
    if resource in MILLI_RESOURCES:
        q *= 1000
    units = ceil(q)
    if abs(units) > _INT64_MAX:
        raise InvalidQuantity(f"{value!r} for {resource} (out of range)")
    return units


def format_units(resource: str, amount: int) -> str:
    """The canonical quantity string for an accounted amount (the inverse of :func:`to_units`)."""
    if resource in MILLI_RESOURCES:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        unit = _BINARY[suffix]
        if amount >= unit and amount % unit == 0 and resource != "pods":
            return f"{amount // unit}{suffix}"
    return str(amount)


def human(resource: str, amount: int) -> str:
    """A short human figure for reasons: cpu in cores, memory in GiB/MiB, counts as they are."""
    if resource in MILLI_RESOURCES:
        cores = amount / 1000
        return f"{cores:g}"
    if resource == "memory" or resource.endswith("storage"):
        if amount >= 2**30:
            return f"{amount / 2**30:.3g}Gi"
        if amount >= 2**20:
            return f"{amount / 2**20:.3g}Mi"
    return str(amount)
