"""Poison objects: every field of a valid object of every kind the cache reads, swapped for a value of
every other type (and an absurd quantity, and a deeply nested value), fed through the cache's watch
handlers and then a scheduling cycle. Nothing may escape: an object the cache cannot read is skipped and
remembered as unreadable, and one it can read must not break the cycle.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controllers.scheduling.scheduler import Scheduler, build_scheduler
from controllers.state.cluster import cluster_state
from extender.plugins.registry import load_conf
from tests.fuzz.strategies import paths

Obj = dict[str, Any]


def _deep(levels: int) -> Any:
    v: Any = "x"
    for _ in range(levels):
        v = {"a": v}
    return v


SWAPS: list[object] = [
    None,
    0,
    -1,
    2**70,
    1.5,
    "x",
    "1e400",
    "-3",
    True,
    [],
    [1, "x"],
    {},
    {"k": []},
    _deep(300),
]

BASES: dict[str, Obj] = {
    "nodes": {
        "metadata": {"name": "n1", "labels": {"zone": "a", "kubernetes.io/hostname": "n1"}},
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}], "unschedulable": False},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "1"}},
    },
    "pods": {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "p",
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "a"},
            "annotations": {"scheduling.k8s.io/group-name": "g", "volcano.sh/task-spec": "w"},
        },
        "spec": {
            "schedulerName": "volcano",
            "priority": 5,
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                        ]
                    }
                },
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": "a"}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                },
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                }
            ],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
            "overhead": {"cpu": "100m"},
        },
        "status": {"phase": "Pending"},
    },
    "podgroups": {
        "metadata": {"name": "g", "namespace": "ns", "uid": "g", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {
            "minMember": 1,
            "minTaskMember": {"w": 1},
            "queue": "q",
            "priorityClassName": "high",
            "minResources": {"cpu": "1", "memory": "1Gi"},
        },
        "status": {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True"}]},
    },
    "queues": {
        "metadata": {"name": "q"},
        "spec": {
            "weight": 2,
            "capability": {"cpu": "8"},
            "deserved": {"cpu": "4"},
            "guarantee": {"resource": {"cpu": "1"}},
            "reclaimable": True,
            "parent": "root",
            "priority": 1,
        },
        "status": {"state": "Open"},
    },
    "priorityclasses": {"metadata": {"name": "high"}, "value": 100},
}


def _swapped(base: Obj, path: tuple[object, ...], value: object) -> Obj:
    out = copy.deepcopy(base)
    cur: Any = out
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = copy.deepcopy(value)
    return out


def _fresh() -> Scheduler:
    state = cluster_state(frozenset({"volcano"}))
    handlers = state.cache.handlers()
    for kind, base in BASES.items():
        handlers[kind].replace([copy.deepcopy(base)])
    return build_scheduler(state, load_conf(), None)  # type: ignore[arg-type]  # no executor: no writes here


CASES = [
    (kind, path)
    for kind, base in BASES.items()
    for path in paths(base)
    if path[0] != "metadata" or len(path) > 1
]


@pytest.mark.parametrize(("kind", "path"), CASES, ids=[f"{k}:{'.'.join(map(str, p))}" for k, p in CASES])
def test_a_poisoned_field_never_escapes(kind: str, path: tuple[object, ...]) -> None:
    sched = _fresh()
    sched.loop.ensure_fresh()
    handler = sched.shared.cache.handlers()[kind]
    for value in SWAPS:
        handler.upsert(_swapped(BASES[kind], path, value))
        sched.loop.ensure_fresh()  # a readable odd object must not break the cycle either
        handler.replace(
            [
                _swapped(BASES[kind], path, value),
                copy.deepcopy(BASES[kind])
                | {"metadata": {"name": "other", "namespace": "ns", "uid": "other"}},
            ]
        )
        sched.loop.ensure_fresh()
    assert sched.shared.stats.cycles >= 1


def test_the_suite_covers_every_kind_and_many_fields() -> None:
    assert {k for k, _ in CASES} == set(BASES) and len(CASES) > 80


def test_an_unreadable_object_is_remembered() -> None:
    sched = _fresh()
    sched.shared.cache.handlers()["podgroups"].upsert(
        _swapped(BASES["podgroups"], ("spec", "minResources", "cpu"), "1e400")
    )
    assert ("PodGroup", "ns/g") in sched.shared.cache.unreadable()
