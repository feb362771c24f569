"""A pod's copy of its task's template is deepcopy's: equal, and sharing nothing mutable with the template
(a job plugin edits the pod, never the template), for any decoded JSON."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.jobs.pods import _copied

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


def _containers(value: Any) -> list[int]:
    """The identities of every dict and list in ``value``."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _json, max_size=5))
def test_the_copy_is_deepcopys(template: dict[str, Any]) -> None:
    copied = _copied(template)
    assert copied == copy.deepcopy(template)
    assert repr(copied) == repr(template)  # (the same types: True stays True, 1.0 stays a float)
    assert not set(_containers(copied)) & set(_containers(template))


def test_other_values_are_deepcopied() -> None:
    inner = {"a": [1]}
    template = {"t": (inner, inner)}
    copied = _copied(template)
    assert copied == template and copied["t"][0] is not inner and copied["t"][0] is copied["t"][1]
