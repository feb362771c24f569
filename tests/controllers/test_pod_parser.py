"""The cluster cache's pod parser (:func:`~controllers.state.compact.pod_parser`: the spec memo, the labels
shared among pods with equal ones, the Pod made through its maker) parses every pod as
:func:`~extender.core.parse.parse_pod` alone does (hypothesis, the spec memo test's random pods): field by
field, or with the same error; and pods with equal labels hold one labels mapping."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings

from controllers.state.compact import pod_parser
from extender.core.errors import InvalidObject
from extender.core.model import Pod
from extender.core.parse import parse_pod
from tests.core.test_parse_memo import pods


def _outcome(parse: Any, obj: Any) -> Pod | str:
    try:
        pod: Pod = parse(obj)
    except InvalidObject as e:
        return f"InvalidObject: {e}"
    return pod


@settings(max_examples=500, deadline=None)
@given(pods())
def test_the_cache_parses_every_pod_as_parse_pod_does(objs: list[Any]) -> None:
    parse = pod_parser()
    held: dict[tuple[tuple[str, str], ...], Any] = {}
    for obj in objs + objs:
        want, got = _outcome(parse_pod, obj), _outcome(parse, obj)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want
            continue
        assert isinstance(got, Pod) and type(got) is type(want)
        for f in dataclasses.fields(Pod):
            assert getattr(got, f.name) == getattr(want, f.name), f.name
            assert type(getattr(got, f.name)) is type(getattr(want, f.name)), f.name
        assert got == want
        key = tuple(got.labels.items())
        assert held.setdefault(key, got.labels) is got.labels  # equal labels: one mapping
