"""Quantities: exact parsing, integer accounting, canonical formatting."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from extender.core.errors import InvalidQuantity
from extender.core.quantity import format_units, human, parse_quantity, to_units

INT64_MAX = 2**63 - 1
RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage")


@pytest.mark.parametrize(
    ("resource", "value", "units"),
    [
        ("cpu", "1", 1000),
        ("cpu", "1500m", 1500),
        ("cpu", "0.5", 500),
        ("cpu", ".25", 250),
        ("cpu", "1.", 1000),
        ("cpu", "100u", 1),  # rounds up: never under-count
        ("cpu", "1n", 1),
        ("cpu", "0", 0),
        ("cpu", 2, 2000),
        ("cpu", 0.5, 500),
        ("cpu", "2e3", 2_000_000),
        ("cpu", "1E-3", 1),
        ("cpu", "+1", 1000),
        ("memory", "1Ki", 1024),
        ("memory", "1Mi", 2**20),
        ("memory", "1Gi", 2**30),
        ("memory", "1.5Gi", 3 * 2**29),
        ("memory", "1Ti", 2**40),
        ("memory", "1Pi", 2**50),
        ("memory", "1Ei", 2**60),
        ("memory", "1k", 1000),
        ("memory", "1M", 10**6),
        ("memory", "1G", 10**9),
        ("memory", "1T", 10**12),
        ("memory", "1P", 10**15),
        ("memory", "1E", 10**18),  # exa, not an exponent
        ("memory", "129e6", 129_000_000),
        ("memory", "0.1", 1),
        ("memory", " 2Gi ", 2 * 2**30),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "8", 8),
        ("cpu", "-1", -1000),
    ],
    ids=lambda v: str(v),
)
def test_to_units(resource: str, value: object, units: int) -> None:
    assert to_units(resource, value) == units


@pytest.mark.parametrize(
    "value",
    [
        "",
        "abc",
        "1.2.3",
        "1Gb",
        "1gi",
        "1 Gi",
        "Gi",
        "1e",
        "1e3Gi",
        "--1",
        "0x10",
        "1_000",
        None,
        True,
        [1],
        {"a": 1},
        float("inf"),
        float("-inf"),
        float("nan"),
        "1e99999999",  # must not hang computing 10**99999999
        "1e-99999999",
        "1" * 5000,  # longer than Python's int-string limit: still InvalidQuantity
    ],
    ids=lambda v: repr(v)[:20],
)
def test_bad_quantity_raises(value: object) -> None:
    with pytest.raises(InvalidQuantity):
        to_units("cpu", value)


@pytest.mark.parametrize(
    ("resource", "value"),
    [("cpu", "9223372036854775807"), ("cpu", "10P"), ("memory", "8Ei"), ("memory", "-8Ei"), ("pods", "1e19")],
    ids=lambda v: str(v),
)
def test_amount_beyond_int64_raises(resource: str, value: str) -> None:
    """Matrices are int64: an amount that cannot be stored is a bad quantity for that object, not an
    OverflowError that breaks snapshot building for the whole cluster."""
    with pytest.raises(InvalidQuantity):
        to_units(resource, value)


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", 1000, "1"),
        ("cpu", 1500, "1500m"),
        ("cpu", 0, "0"),
        ("cpu", 1, "1m"),
        ("memory", 2**30, "1Gi"),
        ("memory", 3 * 2**29, "1536Mi"),
        ("memory", 1000, "1000"),
        ("memory", 0, "0"),
        ("memory", 2**60, "1Ei"),
        ("pods", 1024, "1024"),  # counts never get a binary suffix
        ("nvidia.com/gpu", 2, "2"),
    ],
    ids=lambda v: str(v),
)
def test_format_units(resource: str, amount: int, text: str) -> None:
    assert format_units(resource, amount) == text


@pytest.mark.parametrize(
    ("resource", "amount", "text"),
    [
        ("cpu", 1500, "1.5"),
        ("cpu", 250, "0.25"),
        ("memory", 4 * 2**30, "4Gi"),
        ("memory", 512 * 2**20, "512Mi"),
        ("memory", 1000, "1000"),
        ("ephemeral-storage", 2**30, "1Gi"),
        ("nvidia.com/gpu", 3, "3"),
    ],
    ids=lambda v: str(v),
)
def test_human(resource: str, amount: int, text: str) -> None:
    assert human(resource, amount) == text


amounts = st.integers(min_value=-(2**62), max_value=2**62)
resources = st.sampled_from(RESOURCES)
suffixes = st.sampled_from(["", "m", "k", "M", "G", "T", "Ki", "Mi", "Gi", "Ti", "n", "u"])
# Up to 10**6 Gi: in range (int64) even as milli-cpu.
quantities = st.builds(
    lambda n, frac, s: f"{n}{'.' + frac if frac else ''}{s}",
    st.integers(min_value=0, max_value=10**6),
    st.text("0123456789", max_size=4),
    st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "n", "u"]),
)


@given(resources, amounts)
def test_format_then_parse_round_trips(resource: str, amount: int) -> None:
    assert to_units(resource, format_units(resource, amount)) == amount


@given(resources, quantities)
def test_parse_format_parse_is_stable(resource: str, text: str) -> None:
    units = to_units(resource, text)
    assert to_units(resource, format_units(resource, units)) == units


@given(resources, quantities)
def test_units_never_under_count(resource: str, text: str) -> None:
    exact = parse_quantity(text) * (1000 if resource == "cpu" else 1)
    units = to_units(resource, text)
    assert exact <= units < exact + 1


@given(resources, quantities, quantities)
def test_units_preserve_order(resource: str, a: str, b: str) -> None:
    if parse_quantity(a) <= parse_quantity(b):
        assert to_units(resource, a) <= to_units(resource, b)


@given(st.integers(min_value=0, max_value=10**9), suffixes)
def test_suffix_scales_exactly(n: int, suffix: str) -> None:
    scales: dict[str, int | Fraction] = {
        "": 1,
        "m": Fraction(1, 1000),
        "n": Fraction(1, 10**9),
        "u": Fraction(1, 10**6),
        "k": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
    }
    assert parse_quantity(f"{n}{suffix}") == n * scales[suffix]


@given(st.integers(min_value=0, max_value=INT64_MAX // 1000))
def test_int_and_string_agree(n: int) -> None:
    assert to_units("cpu", n) == to_units("cpu", str(n)) == n * 1000


@given(st.text(alphabet="0123456789.eE+-kMGTPmunKi ", max_size=12))
def test_arbitrary_text_parses_or_raises_invalid_quantity(text: str) -> None:
    try:
        value = parse_quantity(text)
    except InvalidQuantity:
        return
    assert isinstance(value, Fraction)


@given(
    st.sampled_from(["cpu", "memory", "pods"]), st.text(alphabet="0123456789.eE+-kMGTPmunKi ", max_size=12)
)
def test_remembered_strings_give_what_a_fresh_parse_gives(resource: str, text: str) -> None:
    """to_units remembers the units of a string (every pod of a job repeats the same few): the same
    integer, or the same refusal, every time, as parsing it afresh."""
    from extender.core.quantity import _units

    for _ in range(2):
        try:
            got: int | str = to_units(resource, text)
        except InvalidQuantity as e:
            got = f"invalid: {e}"
        try:
            fresh: int | str = _units(resource, text)
        except InvalidQuantity as e:
            fresh = f"invalid: {e}"
        assert got == fresh
