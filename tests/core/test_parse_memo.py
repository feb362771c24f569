"""The spec memo is exact (hypothesis): random pods, built from a few variants of every spec field
:func:`~extender.core.parse.parse_pod` reads (so specs that differ in one field alone meet the memo), parse
to the same Pod, field by field, or fail with the same message, with and without a
:class:`~extender.core.pod_spec.SpecMemo`; and the specs the memo takes no key for."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.core.errors import InvalidObject
from extender.core.model import Pod
from extender.core.parse import parse_pod
from extender.core.pod_spec import SpecMemo, read_spec, spec_key

Obj = dict[str, Any]

# A few values of each field a spec reader reads, bad ones among them (a failure must never be remembered).
_REQUESTS = [
    {"cpu": "100m", "memory": "128Mi"},
    {"cpu": "100m", "memory": "256Mi"},
    {"cpu": "1", "memory": "128Mi"},
    {"cpu": 1},
    {"cpu": 1.5},
    {"cpu": True},
    {"cpu": "100m", "memory": "128Mi", "nvidia.com/gpu": "1"},
    {},
]
_LIMITS = [{"memory": "128Mi"}, {"volcano.sh/vgpu-number": "1"}, {"volcano.sh/vgpu-number": 2}, {}]
_FIELDS: dict[str, list[Any]] = {
    "schedulerName": ["volcano", "default-scheduler", ""],
    "priority": [0, 10, 1000],
    "preemptionPolicy": ["PreemptLowerPriority", "Never"],
    "priorityClassName": ["", "high", "low"],
    "overhead": [{"cpu": "10m"}, {"memory": "1Mi"}],
    "nodeSelector": [{"zone": "a"}, {"zone": "b"}, {"zone": "a", "disk": "ssd"}, {}],
    "tolerations": [
        [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}],
        [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
        [{"key": "gpu", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
        [{"key": "gpu", "operator": "Equal", "value": "b", "effect": "NoSchedule"}],
        [],
    ],
    "affinity": [
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}},
        {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "preference": {
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]}},
        {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "train"}}}]}},
        {},
    ],
    "topologySpreadConstraints": [
        [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "train"}}}],
    ],
    "schedulingGates": [[{"name": "volcano.sh/gang"}], []],
}  # fmt: skip
# Values no reader takes (a failure must never be remembered) or that JSON cannot tell from null.
_BAD: dict[str, list[Any]] = {
    "priority": [True, "high", math.nan, math.inf, -math.inf],
    "overhead": ["bad", {"cpu": "lots"}],
    "tolerations": [["bad"], "bad"],
    "nodeSelector": ["bad"],
    "affinity": [{"nodeAffinity": "bad"}],
}
_ANNOTATIONS: dict[str, list[str]] = {
    "volcano.sh/numa-topology-policy": ["best-effort", "none", "single-numa-node"],
    "hami.io/gpu-scheduler-policy": ["binpack", "spread", "odd"],
    "volcano.sh/task-spec": ["worker", "ps"],
    "volcano.sh/task-index": ["0", "1", "7"],
}
_LABELS: dict[str, list[str]] = {"app": ["train", "web"], "volcano.sh/task-index": ["0", "1", "7"]}


@st.composite
def _container(draw: st.DrawFn) -> Any:
    shape = draw(st.sampled_from(["requests", "both", "none", "null", "requests", "both", "bad"]))
    c: Obj = {"name": "main", "image": "pause"}
    if shape == "none":
        return c
    if shape == "null":
        return {**c, "resources": None}
    if shape == "bad":
        return draw(
            st.sampled_from(
                [{**c, "resources": "bad"}, "bad", {**c, "resources": {"requests": {"cpu": "lots"}}}]
            )
        )
    resources: Obj = {"requests": dict(draw(st.sampled_from(_REQUESTS)))}
    if shape == "both":
        resources["limits"] = dict(draw(st.sampled_from(_LIMITS)))
    return {**c, "resources": resources}


def _field(draw: st.DrawFn, spec: Obj, key: str) -> None:
    """Set (or leave out: a third of the time, or null) one spec field."""
    if key in ("containers", "initContainers"):
        spec[key] = draw(st.lists(_container(), max_size=2))
    elif key == "limits":  # the first container's limits alone (its requests unchanged)
        first = (spec.get("containers") or [None])[0]
        if isinstance(first, dict) and isinstance(first.get("resources"), dict):
            first["resources"]["limits"] = dict(draw(st.sampled_from(_LIMITS)))
    elif draw(st.integers(0, 3)) == 0:
        spec.pop(key, None)
    elif key in _BAD and draw(st.integers(0, 5)) == 0:
        spec[key] = copy.deepcopy(draw(st.sampled_from(_BAD[key])))
    else:
        spec[key] = copy.deepcopy(draw(st.sampled_from([*_FIELDS[key], None])))


_EVERY: list[str] = ["containers", "initContainers", *_FIELDS]


@st.composite
def pods(draw: st.DrawFn) -> list[Obj]:
    """A base pod and pods that differ from it in one spec field each (what meets the memo's key)."""
    spec: Obj = {}
    for key in _EVERY:
        _field(draw, spec, key)
    out = []
    for i in range(draw(st.integers(2, 10))):
        variant = copy.deepcopy(spec)
        if i and draw(st.booleans()):
            _field(draw, variant, draw(st.sampled_from([*_EVERY, "limits"])))
        variant["nodeName"] = draw(st.sampled_from(["", "n-1", "n-2"]))
        meta: Obj = {
            "name": f"p-{i}",
            "namespace": "ns",
            "uid": f"u-{i}",
            "annotations": {
                k: draw(st.sampled_from(v)) for k, v in _ANNOTATIONS.items() if draw(st.booleans())
            },
            "labels": {k: draw(st.sampled_from(v)) for k, v in _LABELS.items() if draw(st.booleans())},
        }
        status: Obj = {"phase": draw(st.sampled_from(["Running", "Pending"]))}
        out.append({"metadata": meta, "spec": variant, "status": status})
    return out


def _pod(spec: Obj) -> Obj:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec, "status": {}}


def _limits(limits: Obj) -> Obj:
    return _pod({"containers": [{"resources": {"requests": {"cpu": "1"}, "limits": limits}}]})


def _outcome(obj: Obj, memo: SpecMemo | None) -> Pod | str:
    try:
        return parse_pod(obj, memo)
    except InvalidObject as e:
        return f"InvalidObject: {e}"


@settings(max_examples=1000, deadline=None)
@given(pods())
# Pairs a search meets seldom: specs that differ in a container's limits alone (a GPU family named there),
# and in a value JSON writes as null (NaN, infinities) where the other has null.
@example([_limits({"memory": "1Mi"}), _limits({"volcano.sh/vgpu-number": "1"})])
@example([_pod({"priority": None}), _pod({"priority": math.nan})])
@example([_pod({"overhead": None}), _pod({"overhead": {"cpu": math.inf}})])
def test_a_memo_parses_every_pod_as_parse_pod_does(objs: list[Obj]) -> None:
    memo = SpecMemo(size=4)  # small, so that eviction is exercised too
    for obj in objs + objs:  # the second time round, every spec that read is remembered
        want, got = _outcome(obj, None), _outcome(obj, memo)
        if isinstance(want, str) or isinstance(got, str):
            assert got == want
            continue
        assert isinstance(got, Pod)
        for f in dataclasses.fields(Pod):
            assert getattr(got, f.name) == getattr(want, f.name), f.name


def test_specs_json_cannot_tell_apart_get_no_key() -> None:
    base: Obj = {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}
    assert spec_key(base) is not None
    assert spec_key({**base, "priority": None}) is None
    assert spec_key({**base, "priority": math.nan}) is None
    assert spec_key({**base, "priority": 2**70}) is None
    assert spec_key({**base, "containers": ["bad"]}) is None
    assert spec_key({**base, "containers": ({"resources": {}},)}) is None
    assert spec_key({**base, "nodeSelector": {1: "a"}}) is None

    class Text(str):
        pass

    assert spec_key({**base, "schedulerName": Text("volcano")}) is None
    # What read_spec does not read is not in the key (a gang's pods differ there).
    assert spec_key({**base, "nodeName": "n-1", "hostname": "a"}) == spec_key({**base, "nodeName": "n-2"})
    # Absent and null resources read alike, and key alike.
    assert spec_key({"containers": [{}]}) == spec_key({"containers": [{"resources": None}]})


def test_a_failure_is_never_remembered() -> None:
    memo = SpecMemo()
    bad: Obj = {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}
    for _ in range(2):
        with pytest.raises(InvalidObject):
            memo.read(bad)
    good: Obj = {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}
    assert memo.read(good) is memo.read(good) == read_spec(good)
