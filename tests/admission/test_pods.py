"""Pod admission rules: ours-only, Volcano's budget annotations, the gang scheduling gate."""

from __future__ import annotations

from typing import Any

import pytest

from admission import pods
from admission.lookup import StaticLookup
from tests.admission.builders import Raw, judged, lookup, pod_obj

MIN = "volcano.sh/jdb-min-available"
MAX = "volcano.sh/jdb-max-unavailable"
POSITIVE_OR_PERCENT = "must be a positive integer or a percentage from 1% to 99%"

VALIDATE_CASES: list[tuple[str, Raw, list[str]]] = [
    ("no annotations", pod_obj(), []),
    ("count", pod_obj(annotations={MIN: "3"}), []),
    ("percentage", pod_obj(annotations={MAX: "25%"}), []),
    ("edges of the percentage range", pod_obj(annotations={MIN: "1%"}), []),
    ("99%", pod_obj(annotations={MAX: "99%"}), []),
    (
        "zero",
        pod_obj(annotations={MIN: "0"}),
        [f"metadata.annotations[{MIN}]: must be a positive integer, got '0'"],
    ),
    (
        "negative",
        pod_obj(annotations={MIN: "-1"}),
        [f"metadata.annotations[{MIN}]: {POSITIVE_OR_PERCENT}, got '-1'"],
    ),
    (
        "0%",
        pod_obj(annotations={MAX: "0%"}),
        [f"metadata.annotations[{MAX}]: {POSITIVE_OR_PERCENT}, got '0%'"],
    ),
    (
        "100%",
        pod_obj(annotations={MAX: "100%"}),
        [f"metadata.annotations[{MAX}]: {POSITIVE_OR_PERCENT}, got '100%'"],
    ),
    (
        "text",
        pod_obj(annotations={MIN: "half"}),
        [f"metadata.annotations[{MIN}]: {POSITIVE_OR_PERCENT}, got 'half'"],
    ),
    (
        "both set",
        pod_obj(annotations={MIN: "2", MAX: "1"}),
        [f"metadata.annotations[{MAX}]: set only one of {MIN} and {MAX}"],
    ),
    (
        "both set, one invalid: the invalid value is reported",
        pod_obj(annotations={MIN: "x", MAX: "1"}),
        [f"metadata.annotations[{MIN}]: {POSITIVE_OR_PERCENT}, got 'x'"],
    ),
    (
        "another scheduler's pod is not checked",
        pod_obj(scheduler="default-scheduler", annotations={MIN: "0"}),
        [],
    ),
    (
        "a pod naming a missing PodGroup is allowed (Volcano dropped that check)",
        pod_obj(group="not-created-yet"),
        [],
    ),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in VALIDATE_CASES], ids=[c[0] for c in VALIDATE_CASES])
def test_validate(obj: Raw, want: list[str]) -> None:
    assert [str(e) for e in judged("/pods/validate")(obj, None, lookup())] == want


def test_scheduler_names_come_from_the_lookup() -> None:
    obj = pod_obj(scheduler="pumice", annotations={MIN: "0"})
    validate = judged("/pods/validate")
    assert validate(obj, None, lookup()) == []
    assert len(validate(obj, None, StaticLookup(scheduler_names=frozenset({"pumice", "volcano"})))) == 1


GATE = {"name": "pumice.dev/gang"}

MUTATE_CASES: list[tuple[str, Raw, bool, list[dict[str, Any]]]] = [
    (
        "gang pod",
        pod_obj(group="pg"),
        True,
        [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
    ),
    (
        "volcano group annotation",
        pod_obj(annotations={"scheduling.volcano.sh/group-name": "pg"}),
        True,
        [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
    ),
    (
        "null gate list",
        pod_obj(group="pg", schedulingGates=None),
        True,
        [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
    ),
    (
        "other gates are kept",
        pod_obj(group="pg", schedulingGates=[{"name": "example.com/other"}]),
        True,
        [{"op": "add", "path": "/spec/schedulingGates/-", "value": GATE}],
    ),
    ("already gated", pod_obj(group="pg", schedulingGates=[{"name": "x"}, GATE]), True, []),
    ("no gates on this API server", pod_obj(group="pg"), False, []),
    ("not in a group", pod_obj(), True, []),
    ("empty group name", pod_obj(group=""), True, []),
    ("another scheduler's pod", pod_obj(scheduler="default-scheduler", group="pg"), True, []),
    ("already bound", pod_obj(group="pg", nodeName="n1"), True, []),
    ("gate list malformed", pod_obj(group="pg", schedulingGates="x"), True, []),
]


@pytest.mark.parametrize(
    ("obj", "gates", "want"), [c[1:] for c in MUTATE_CASES], ids=[c[0] for c in MUTATE_CASES]
)
def test_mutate(obj: Raw, gates: bool, want: list[dict[str, Any]]) -> None:
    assert pods.mutate(obj, lookup(gates=gates)) == want


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"spec": None},
        {"spec": "x", "metadata": {"annotations": "x"}},
        {"metadata": {"annotations": {MIN: 5}}},
    ],
)
def test_garbage_never_raises(obj: Raw) -> None:
    ours = {**obj, "spec": {"schedulerName": "volcano"}}
    for o in (obj, ours):
        pods.validate(o, None, lookup(gates=True))
        pods.mutate(o, lookup(gates=True))
