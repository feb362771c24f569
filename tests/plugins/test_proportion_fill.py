"""proportion's water-filling in plain floats is the array formula it replaced, bit for bit.

:func:`_array_fill` is that formula (numpy arrays throughout), kept here as the reference; the plugin's
:func:`extender.plugins.proportion._water_fill` writes each numpy operation out per column. Random queues
(weights, wants below and past the total, guarantees that pin) over random totals: every deserved share
has the same bytes (signed zeros included).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.plugins.proportion import _water_fill


def _array_fill(
    total: npt.NDArray[np.float64],
    want: Mapping[str, npt.NDArray[np.float64]],
    weights: Mapping[str, int],
    floors: Mapping[str, npt.NDArray[np.float64]],
) -> dict[str, npt.NDArray[np.float64]]:
    """The water-filling as the plugin wrote it before, numpy arrays throughout: the reference."""
    r = len(total)
    fixed: dict[str, npt.NDArray[np.float64]] = {q: np.zeros(r) for q in want}
    pinned = {q: np.zeros(r, dtype=np.bool_) for q in want}
    while True:
        left = total - sum((np.where(pinned[q], fixed[q], 0.0) for q in want), np.zeros(r))
        left = np.maximum(left, 0.0)
        share = {q: np.where(pinned[q], fixed[q], 0.0) for q in want}
        active = {q for q in want if ((want[q] > 0) & ~pinned[q]).any()}
        while active and left.any():
            wsum = np.zeros(r)
            for q in active:
                wsum += np.where(pinned[q] | (share[q] >= want[q]), 0.0, weights[q])
            given = np.zeros(r)
            for q in list(active):
                part = np.where(wsum > 0, left * weights[q] / np.where(wsum > 0, wsum, 1.0), 0.0)
                add = np.where(pinned[q], 0.0, np.clip(want[q] - share[q], 0.0, part))
                share[q] += add
                given += add
                if ((share[q] >= want[q]) | pinned[q]).all():
                    active.discard(q)
            left = left - given
            if given.sum() <= 1e-9:
                break
        below = {q: (share[q] < floors[q]) & ~pinned[q] for q in want}
        if not any(b.any() for b in below.values()):
            return {q: np.maximum(share[q], floors[q]) for q in want}
        for q, b in below.items():
            fixed[q] = np.where(b, floors[q], fixed[q])
            pinned[q] |= b


_amount = st.one_of(
    st.integers(0, 64), st.integers(0, 1 << 40), st.floats(0, 1e6, allow_nan=False, allow_infinity=False)
)


@st.composite
def _fills(
    draw: st.DrawFn,
) -> tuple[
    npt.NDArray[np.float64],
    dict[str, npt.NDArray[np.float64]],
    dict[str, int],
    dict[str, npt.NDArray[np.float64]],
]:
    r = draw(st.integers(1, 5))
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=5, unique=True))
    vec = st.lists(_amount, min_size=r, max_size=r).map(lambda v: np.array(v, dtype=np.float64))
    total = draw(vec)
    want = {q: draw(vec) for q in names}
    weights = {q: draw(st.integers(1, 8)) for q in names}
    floors = {q: draw(st.one_of(st.just(np.zeros(r)), vec)) for q in names}
    return total, want, weights, floors


@settings(max_examples=600, deadline=None)
@given(_fills())
@example(
    (
        np.array([8.0, 3.0]),
        {"a": np.array([8.0, 0.0]), "b": np.array([2.0, 3.0])},
        {"a": 1, "b": 3},
        {"a": np.zeros(2), "b": np.array([0.0, 2.0])},
    )
)
def test_plain_floats_give_the_array_formula_bit_for_bit(
    fill: tuple[
        npt.NDArray[np.float64],
        dict[str, npt.NDArray[np.float64]],
        dict[str, int],
        dict[str, npt.NDArray[np.float64]],
    ],
) -> None:
    total, want, weights, floors = fill
    plain = _water_fill(total, want, weights, floors)
    arrays = _array_fill(total, want, weights, floors)
    assert plain.keys() == arrays.keys()
    for q in arrays:
        assert plain[q].dtype == arrays[q].dtype and plain[q].tobytes() == arrays[q].tobytes(), q
