"""``patch.jobSpec`` merged onto a JobTemplate's spec: Volcano's merge table, one row per strategy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.core.errors import InvalidObject
from extender.flows.patch import apply_patch

BASE: dict[str, Any] = {
    "queue": "q1",
    "maxRetry": 2,
    "plugins": {"svc": [], "env": []},
    "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
    "volumes": [{"mountPath": "/data", "volumeClaimName": "a"}],
    "tasks": [
        {
            "name": "ml",
            "replicas": 1,
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "nodeSelector": {"zone": "a"},
                    "tolerations": [{"key": "gpu", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "main",
                            "image": "v1",
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                            "command": ["a", "b"],
                        }
                    ],
                },
            },
        }
    ],
}


def _c(spec: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = spec["tasks"][0]["template"]["spec"]["containers"][0]
    return container


TABLE: list[tuple[str, dict[str, Any], Any]] = [
    ("scalar replaced", {"queue": "q2"}, lambda s: s["queue"] == "q2" and s["maxRetry"] == 2),
    (
        "policies replaced whole",
        {"policies": [{"event": "*", "action": "AbortJob"}]},
        lambda s: s["policies"] == [{"event": "*", "action": "AbortJob"}],
    ),
    (
        "plugins merged by key",
        {"plugins": {"ssh": []}},
        lambda s: sorted(s["plugins"]) == ["env", "ssh", "svc"],
    ),
    (
        "job volume added by mountPath",
        {"volumes": [{"mountPath": "/out", "volumeClaimName": "b"}]},
        lambda s: [v["mountPath"] for v in s["volumes"]] == ["/data", "/out"],
    ),
    (
        "job volume updated by mountPath",
        {"volumes": [{"mountPath": "/data", "volumeClaimName": "z"}]},
        lambda s: s["volumes"] == [{"mountPath": "/data", "volumeClaimName": "z"}],
    ),
    (
        "container image by name",
        {"tasks": [{"name": "ml", "template": {"spec": {"containers": [{"name": "main", "image": "v2"}]}}}]},
        lambda s: _c(s)["image"] == "v2" and _c(s)["command"] == ["a", "b"],
    ),
    (
        "unnamed task = the only task",
        {"tasks": [{"template": {"spec": {"containers": [{"name": "main", "image": "v3"}]}}}]},
        lambda s: _c(s)["image"] == "v3" and len(s["tasks"]) == 1,
    ),
    (
        "env merged by name",
        {
            "tasks": [
                {
                    "name": "ml",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "env": [{"name": "B", "value": "9"}, {"name": "C", "value": "3"}],
                                }
                            ]
                        }
                    },
                }
            ]
        },
        lambda s: (
            _c(s)["env"]
            == [{"name": "A", "value": "1"}, {"name": "B", "value": "9"}, {"name": "C", "value": "3"}]
        ),
    ),
    (
        "resources merged per key",
        {
            "tasks": [
                {
                    "name": "ml",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "resources": {"requests": {"cpu": "4"}, "limits": {"cpu": "4"}},
                                }
                            ]
                        }
                    },
                }
            ]
        },
        lambda s: _c(s)["resources"] == {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "4"}},
    ),
    (
        "sidecar appended",
        {"tasks": [{"name": "ml", "template": {"spec": {"containers": [{"name": "side", "image": "s"}]}}}]},
        lambda s: [c["name"] for c in s["tasks"][0]["template"]["spec"]["containers"]] == ["main", "side"],
    ),
    (
        "pod volume added, mount added",
        {
            "tasks": [
                {
                    "name": "ml",
                    "template": {
                        "spec": {
                            "volumes": [{"name": "d", "emptyDir": {}}],
                            "containers": [
                                {"name": "main", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}
                            ],
                        }
                    },
                }
            ]
        },
        lambda s: (
            s["tasks"][0]["template"]["spec"]["volumes"] == [{"name": "d", "emptyDir": {}}]
            and _c(s)["volumeMounts"] == [{"name": "d", "mountPath": "/d"}]
        ),
    ),
    (
        "nodeSelector per key, tolerations by key",
        {
            "tasks": [
                {
                    "name": "ml",
                    "template": {
                        "spec": {
                            "nodeSelector": {"rack": "r1"},
                            "tolerations": [{"key": "gpu", "effect": "NoExecute"}],
                        }
                    },
                }
            ]
        },
        lambda s: (
            s["tasks"][0]["template"]["spec"]["nodeSelector"] == {"zone": "a", "rack": "r1"}
            and s["tasks"][0]["template"]["spec"]["tolerations"] == [{"key": "gpu", "effect": "NoExecute"}]
        ),
    ),
    (
        "template labels per key",
        {"tasks": [{"name": "ml", "template": {"metadata": {"labels": {"v": "2"}}}}]},
        lambda s: s["tasks"][0]["template"]["metadata"]["labels"] == {"app": "x", "v": "2"},
    ),
    (
        "new task appended",
        {"tasks": [{"name": "eval", "replicas": 2}]},
        lambda s: [t["name"] for t in s["tasks"]] == ["ml", "eval"],
    ),
]


@pytest.mark.parametrize(("name", "patch", "check"), TABLE, ids=[t[0] for t in TABLE])
def test_merge(name: str, patch: dict[str, Any], check: Any) -> None:
    before = copy.deepcopy(BASE)
    out = apply_patch(BASE, patch)
    assert check(out), out
    assert before == BASE  # the template is never modified


def test_no_patch_is_a_copy() -> None:
    out = apply_patch(BASE, None)
    assert out == BASE and out is not BASE


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"tasks": "x"}, "patch.jobSpec.tasks: expected a list"),
        (
            {"tasks": [{"name": "ml", "template": {"spec": {"containers": [1]}}}]},
            "patch.jobSpec.tasks[0].template.spec.containers[0]: expected an object",
        ),
    ],
)
def test_bad_patch_names_the_field(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObject, match=field.replace("[", r"\[").replace("]", r"\]")):
        apply_patch(BASE, patch)


def test_unnamed_task_needs_a_single_task_template() -> None:
    two = {**BASE, "tasks": [*BASE["tasks"], {"name": "other", "replicas": 1}]}
    with pytest.raises(InvalidObject, match=r"tasks\[0\]\.name: required when the template has 2 tasks"):
        apply_patch(two, {"tasks": [{"replicas": 3}]})
