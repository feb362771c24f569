"""Queue admission of node group rules: ``spec.affinity`` and ``volcano.sh/nodegroup-resource-limits``,
one row per rule, with the text a user sees."""

from __future__ import annotations

from typing import Any

import pytest

from admission import queues
from extender.api import labels as L
from tests.admission.builders import lookup, queue_obj

REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
LIMITS = f"metadata.annotations[{L.NODEGROUP_LIMITS_ANNOTATION}]"

CASES: list[tuple[str, dict[str, Any], str | None, list[str]]] = [
    ("no affinity", {}, None, []),
    ("good affinity", {"affinity": {"nodeGroupAffinity": {REQ: ["a100"], PREF: ["t4"]}}}, None, []),
    ("affinity not an object", {"affinity": ["a"]}, None, ["spec.affinity: must be an object"]),
    (
        "unknown part",
        {"affinity": {"nodeAffinity": {}}},
        None,
        ["spec.affinity: unknown field(s) ['nodeAffinity']; known: nodeGroupAffinity, nodeGroupAntiAffinity"],
    ),
    (
        "list expected",
        {"affinity": {"nodeGroupAffinity": {REQ: "a100"}}},
        None,
        [f"spec.affinity.nodeGroupAffinity.{REQ}: must be a list of node group names"],
    ),
    (
        "bad group name",
        {"affinity": {"nodeGroupAntiAffinity": {PREF: ["ok", "-bad"]}}},
        None,
        [
            f"spec.affinity.nodeGroupAntiAffinity.{PREF}[1]: '-bad' is not a node group name (a "
            f"{L.NODEGROUP_LABEL} label value: up to 63 letters, digits, '-', '_' or '.', "
            "starting and ending with a letter or digit)"
        ],
    ),
    (
        "required and forbidden",
        {"affinity": {"nodeGroupAffinity": {REQ: ["a", "b"]}, "nodeGroupAntiAffinity": {REQ: ["b"]}}},
        None,
        [
            f"spec.affinity.nodeGroupAntiAffinity.{REQ}: node group(s) b are both required and forbidden; "
            "remove them from one of the two lists"
        ],
    ),
    ("good limits", {}, '{"a100": {"nvidia.com/gpu": "16", "cpu": "64"}}', []),
    (
        "limits not JSON",
        {},
        '{"a100": {"cpu":',
        [
            f"{LIMITS}: is not JSON (Expecting value: line 1 column 17 (char 16)); write it like "
            '{"a100": {"nvidia.com/gpu": "16", "cpu": "64"}}'
        ],
    ),
    (
        "limits not a map",
        {},
        '["a100"]',
        [
            f"{LIMITS}: must map node group names to resource lists, like "
            '{"a100": {"nvidia.com/gpu": "16", "cpu": "64"}}'
        ],
    ),
    (
        "bad quantity",
        {},
        '{"a100": {"cpu": "lots"}}',
        [f"{LIMITS}[a100][cpu]: 'lots' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
]


@pytest.mark.parametrize(("spec", "annotation", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_node_group_rules(spec: dict[str, Any], annotation: str | None, want: list[str]) -> None:
    ann = {L.NODEGROUP_LIMITS_ANNOTATION: annotation} if annotation is not None else None
    obj = queue_obj("q1", annotations=ann, spec=spec)
    assert [str(e) for e in queues.validate(obj, None, lookup())] == want
