"""The forecast's prefilter counts copies of a pod in the free room over the rows that can hold one
(``forecast_room.Room``): the same counts as over every node (``copies`` here, the count the prefilter
made before the rows were kept), whatever the room, the request and the order the requests are asked in
(the rows kept per set of asked resources are reused)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from controllers.simulate.forecast_room import Room

_COLUMNS = 4


def copies(free: npt.NDArray[np.int64], smallest: npt.NDArray[np.int64]) -> int:
    """How many pods of request ``smallest`` the nodes' ``free`` room holds, over every node: the
    reference."""
    if (smallest < 0).any():
        return 0
    asked = smallest > 0
    if not asked.any():
        return len(free) * 1_000_000
    return int((free[:, asked] // smallest[asked]).min(axis=1).sum())


@given(
    st.lists(
        st.lists(st.sampled_from([0, 0, 1, 2, 3, 7, 8, 96]), min_size=_COLUMNS, max_size=_COLUMNS),
        max_size=30,
    ),
    st.lists(
        st.lists(st.sampled_from([-1, 0, 0, 1, 2, 4, 8]), min_size=_COLUMNS, max_size=_COLUMNS),
        min_size=1,
        max_size=12,
    ),
)
def test_copies_over_the_rows_that_hold_some_are_those_over_every_node(
    free: list[list[int]], asks: list[list[int]]
) -> None:
    matrix = np.array(free, dtype=np.int64).reshape(len(free), _COLUMNS)
    room = Room(matrix)
    for ask in asks:
        smallest = np.array(ask, dtype=np.int64)
        if (smallest < 0).any():
            smallest = np.full(_COLUMNS, -1, dtype=np.int64)  # how _shape marks a resource no node has
        assert room.copies(smallest) == copies(matrix, smallest)


def test_a_node_with_none_of_one_asked_resource_holds_no_copy() -> None:
    free = np.array([[8, 0, 4], [8, 2, 0], [1, 1, 1]], dtype=np.int64)
    room = Room(free)
    assert (
        room.copies(np.array([1, 1, 0], dtype=np.int64))
        == 2 + 1
        == copies(free, np.array([1, 1, 0], dtype=np.int64))
    )
    assert room.copies(np.array([0, 0, 0], dtype=np.int64)) == 3 * 1_000_000
