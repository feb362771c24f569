""":func:`~extender.core.maker.maker` makes what the dataclass's ``__init__`` makes (hypothesis): for each
record made through it, random values for a random subset of its fields give an object of the same type
whose every field is the very value ``cls(**fields)`` holds (or its default); a key that names no field
is refused; classes whose ``__init__`` does more are refused. And :func:`~extender.core.model.pod_phase`
reads every value as ``PodPhase(value or "Pending")`` did (ValueError: Unknown)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controllers.state.meta import ObjectMeta
from extender.core.maker import maker
from extender.core.model import Pod, PodPhase, pod_phase
from extender.jobs.pods import PodView

# Values of every kind a field may be given (shared objects: identity must be kept, not only equality).
_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=4),
    st.sampled_from([{}, {"a": "b"}, (), ("x",), frozenset({"u"}), PodPhase.RUNNING]),
)  # fmt: skip


@pytest.mark.parametrize("cls", [Pod, PodView, ObjectMeta])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_maker_makes_what_init_makes(cls: type[Any], data: st.DataObject) -> None:
    make = maker(cls)
    fields = dataclasses.fields(cls)
    required = {
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    given_: dict[str, Any] = {}
    for f in fields:
        if f.name in required or data.draw(st.booleans()):  # every field, or some left to their default
            given_[f.name] = data.draw(_VALUES)
    got, want = make(dict(given_)), cls(**given_)
    assert type(got) is type(want)
    for f in fields:
        if f.name in given_:
            assert getattr(got, f.name) is given_[f.name], f.name
        else:
            assert getattr(got, f.name) == getattr(want, f.name), f.name
            assert type(getattr(got, f.name)) is type(getattr(want, f.name)), f.name
    assert got == want
    assert hash(got) == hash(want) if _hashable(want) else True


def _hashable(v: object) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def test_a_maker_refuses_what_init_would_refuse_or_do_otherwise() -> None:
    make = maker(PodView)
    with pytest.raises(TypeError, match="nmae"):
        make({"name": "p", "task": "t", "nmae": "typo"})
    with pytest.raises(KeyError):
        make({"name": "p"})  # a required field missing

    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass(frozen=True, slots=True)
    class NotInInit:
        a: int = dataclasses.field(init=False, default=0)

    for cls in (NoSlots, PostInit, NotInInit):
        with pytest.raises(TypeError):
            maker(cls)


def _phase_before(value: Any) -> PodPhase:
    try:
        return PodPhase(value or "Pending")
    except ValueError:
        return PodPhase.UNKNOWN


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.sampled_from([*(p.value for p in PodPhase), "", "running", "Evicted", None, 0, 1, True, 1.0]),
        st.lists(st.text(max_size=2), max_size=2),
        st.dictionaries(st.text(max_size=2), st.text(max_size=2), max_size=1),
        st.text(max_size=8),
    )
)
def test_pod_phase_reads_as_the_enum_did(value: Any) -> None:
    assert pod_phase(value) is _phase_before(value)
