"""``extender.api.limits``: the settings, the nesting depth (iterative) and how a path is spelt."""

from __future__ import annotations

import pytest

from extender.api.limits import DEFAULT_LIMITS, MAX_DEPTH_CEILING, Limits, field_path, nesting_depth, too_deep
from tests.fuzz.strategies import nested


def test_defaults() -> None:
    assert (
        Limits(max_replicas=10_000, max_depth=64, max_object_bytes=1_572_864, max_quantity=2**62)
        == DEFAULT_LIMITS
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_replicas": 0}, "limit max_replicas must be a positive integer, got 0"),
        ({"max_depth": True}, "limit max_depth must be a positive integer, got True"),
        ({"max_depth": MAX_DEPTH_CEILING + 1}, "limit max_depth must be at most 200, got 201"),
        ({"max_object_bytes": -1}, "limit max_object_bytes must be a positive integer, got -1"),
        ({"max_quantity": 2**63}, f"limit max_quantity must be at most {2**62}, got {2**63}"),
        ({"max_replicas": 1.5}, "limit max_replicas must be a positive integer, got 1.5"),
    ],
)
def test_bad_limits_fail_at_startup(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        Limits(**kwargs)  # type: ignore[arg-type]  # the point: values of the wrong type


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ("x", 0),
        (None, 0),
        ({}, 1),
        ([], 1),
        ([1, 2], 1),
        ({"a": []}, 2),
        ({"a": [{"b": 1}], "c": {}}, 3),
        ((1, (2,)), 2),
        (nested(5), 5),
    ],
)
def test_nesting_depth(value: object, depth: int) -> None:
    assert nesting_depth(value) == depth


def test_depth_100000_needs_no_recursion() -> None:
    deep = nested(100_000)
    assert nesting_depth(deep) == 100_000
    assert nesting_depth(deep, stop_above=64) == 65
    path = too_deep({"spec": deep}, 64)
    assert path is not None and len(path) == 64
    assert path[:3] == ("spec", 0, "a")


@pytest.mark.parametrize(
    ("value", "max_depth", "path"),
    [
        ({"a": {"b": 1}}, 2, None),
        ({"a": {"b": {}}}, 2, ("a", "b")),
        ([[], [[1]]], 2, (1, 0)),
        (5, 1, None),
        ({"a": 1}, 0, ()),
    ],
)
def test_too_deep(value: object, max_depth: int, path: tuple[str | int, ...] | None) -> None:
    assert too_deep(value, max_depth) == path


@pytest.mark.parametrize(
    ("parts", "text"),
    [
        (("spec", "tasks", 0, "name"), "spec.tasks[0].name"),
        (("metadata", "annotations", "volcano.sh/x"), "metadata.annotations[volcano.sh/x]"),
        (("spec", "capability", "cpu"), "spec.capability[cpu]"),
        (("spec", "odd key", 1), "spec[odd key][1]"),
        ((0,), "[0]"),
        ((), "object"),
    ],
)
def test_field_path(parts: tuple[str | int, ...], text: str) -> None:
    assert field_path(parts) == text
