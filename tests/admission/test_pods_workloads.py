"""The pod webhook names a workload's PodGroup at creation (the annotation Volcano's PodGroup controller
patches in afterwards) and gates the pod like any gang pod."""

from __future__ import annotations

from typing import Any

import pytest

from admission import pods
from tests.admission.builders import Raw, lookup, pod_obj

GATE = {"name": "pumice.dev/gang"}
RS_REF = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "rs-1", "controller": True}
ANNOTATE = {
    "op": "add",
    "path": "/metadata/annotations/scheduling.k8s.io~1group-name",
    "value": "podgroup-rs-1",
}


def owned(obj: Raw, *refs: dict[str, Any]) -> Raw:
    obj["metadata"]["ownerReferences"] = list(refs)
    return obj


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        (
            owned(pod_obj(), RS_REF),
            [
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                ANNOTATE,
                {"op": "add", "path": "/spec/schedulingGates", "value": [GATE]},
            ],
        ),
        (
            owned(pod_obj(annotations={"a": "b"}, schedulingGates=[{"name": "x"}]), RS_REF),
            [ANNOTATE, {"op": "add", "path": "/spec/schedulingGates/-", "value": GATE}],
        ),
        (owned(pod_obj(annotations={"a": "b"}, schedulingGates=[GATE]), RS_REF), [ANNOTATE]),
        # A pod that names its group (Spark, LeaderWorkerSet) keeps it.
        (
            owned(pod_obj(group="spark-1-podgroup"), RS_REF),
            [{"op": "add", "path": "/spec/schedulingGates", "value": [GATE]}],
        ),
        (owned(pod_obj(), {**RS_REF, "kind": "DaemonSet"}), []),
        (owned(pod_obj(), {**RS_REF, "controller": False}), []),
        (owned(pod_obj(scheduler="default-scheduler"), RS_REF), []),
        (owned(pod_obj(nodeName="n1"), RS_REF), []),
    ],
)
def test_workload_pods_get_their_group_and_the_gate(obj: Raw, want: list[dict[str, Any]]) -> None:
    assert pods.mutate(obj, lookup(gates=True)) == want


def test_nothing_without_scheduling_gates() -> None:
    # Before 1.28 pumice registers no pod webhooks; the workload controller patches the annotation.
    assert pods.mutate(owned(pod_obj(), RS_REF), lookup(gates=False)) == []


@pytest.mark.parametrize("refs", ["x", [None, 3, "x"], [{"controller": True, "kind": 5}]])
def test_garbage_owner_references_never_raise(refs: Any) -> None:
    obj = pod_obj()
    obj["metadata"]["ownerReferences"] = refs
    assert pods.mutate(obj, lookup(gates=True)) == []
