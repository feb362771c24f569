"""PodGroups for workloads, the pure part (Volcano's pg-controller ``buildPodGroupFromPod`` and
``GeneratePodgroupName``), and the rule that a workload's pod waits for its group instead of running
alone in an implicit one."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.parse import parse_pod
from extender.core.workloads import (
    Owner,
    annotation_patch,
    desired_podgroup,
    pod_group_name,
    spec_patch,
    workload_owner,
)
from tests.core.builders import node, pod, podgroup, run

Raw = dict[str, Any]
RS = Owner(api_version="apps/v1", kind="ReplicaSet", name="web-7d9", uid="rs-uid")


def ref(kind: str = "ReplicaSet", api: str = "apps/v1", uid: str = "rs-uid", controller: Any = True) -> Raw:
    r: Raw = {"apiVersion": api, "kind": kind, "name": "owner", "uid": uid}
    if controller is not None:
        r["controller"] = controller
    return r


def owned(raw: Raw, *refs: Raw) -> Raw:
    raw["metadata"]["ownerReferences"] = list(refs)
    return raw


def owner_obj(**annotations: str) -> Raw:
    return {
        "metadata": {"name": "web-7d9", "namespace": "default", "uid": "rs-uid", "annotations": annotations}
    }


@pytest.mark.parametrize(
    ("refs", "expected"),
    [
        ([ref()], "podgroup-rs-uid"),
        ([ref("StatefulSet")], "podgroup-rs-uid"),
        ([ref("Job", "batch/v1")], "podgroup-rs-uid"),
        # Not the controller: a pod adopted by nobody keeps its implicit group.
        ([ref(controller=False)], None),
        ([ref(controller=None)], None),
        # Kinds pumice does not group: DaemonSets, a Spark executor owned by its driver pod, a vcjob.
        ([ref("DaemonSet")], None),
        ([ref("Pod", "v1")], None),
        ([ref("Job", "batch.volcano.sh/v1alpha1")], None),
        ([ref("ReplicaSet", "extensions/v1beta1")], None),
        # The first controller reference decides (there is only ever one).
        ([ref("DaemonSet"), ref()], None),
        ([ref(controller=False), ref(uid="sts")], "podgroup-sts"),
        ([ref(uid="")], None),
        ([], None),
    ],
)
def test_pod_group_name_from_the_controller_owner(refs: list[Raw], expected: str | None) -> None:
    assert pod_group_name(owned(pod("p"), *refs)["metadata"]) == expected


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"scheduling.k8s.io/group-name": "mine"}, "mine"),
        ({"scheduling.volcano.sh/group-name": "vc"}, "vc"),
        ({"scheduling.k8s.io/group-name": "k8s", "scheduling.volcano.sh/group-name": "vc"}, "k8s"),
        ({"scheduling.k8s.io/group-name": ""}, "podgroup-rs-uid"),
        ({}, "podgroup-rs-uid"),
    ],
)
def test_a_named_group_wins_over_the_owner(annotations: dict[str, str], expected: str) -> None:
    raw = owned(pod("p"), ref())
    raw["metadata"].setdefault("annotations", {}).update(annotations)
    assert pod_group_name(raw["metadata"]) == expected


def test_spark_pods_keep_the_group_spark_made() -> None:
    # Spark's VolcanoFeatureStep creates <appId>-podgroup itself and annotates driver and executors;
    # executors are owned by the driver pod.
    driver = pod("spark-driver", group="spark-a1-podgroup")
    executor = owned(pod("spark-exec-1", group="spark-a1-podgroup"), ref("Pod", "v1", uid="driver"))
    assert parse_pod(driver).group_name == parse_pod(executor).group_name == "spark-a1-podgroup"


def test_parse_keys_a_workload_pod_by_its_owner_group() -> None:
    assert parse_pod(owned(pod("p"), ref())).group_name == "podgroup-rs-uid"
    assert parse_pod(pod("plain")).group_name is None
    assert workload_owner(owned(pod("p"), ref())["metadata"]) == Owner(
        api_version="apps/v1", kind="ReplicaSet", name="owner", uid="rs-uid"
    )


def test_a_workload_pod_waits_for_its_group_instead_of_running_alone() -> None:
    pods = [owned(pod(f"w{i}", cpu="1"), ref()) for i in range(3)]
    before = run([node("n0", cpu="8")], pods)
    assert before.placements == {} and before.admitted == set()
    after = run([node("n0", cpu="8")], pods, [podgroup("podgroup-rs-uid", 3)])
    assert sorted(after.placements) == ["w0", "w1", "w2"]
    # Two of three fit: the gang waits whole.
    short = run([node("n0", cpu="2", pods=2)], pods, [podgroup("podgroup-rs-uid", 3)])
    assert short.placements == {}


def test_desired_group_default_is_one_member_sized_by_the_pod() -> None:
    raw = owned(pod("p", cpu="500m", memory="1Gi"), ref())
    d = desired_podgroup(raw, RS, owner_obj(), parse_pod(raw).requests)
    assert d.problems == ()
    assert d.name == "podgroup-rs-uid"
    assert d.body == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "podgroup-rs-uid",
            "namespace": "default",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d9",
                    "uid": "rs-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {"minMember": 1, "minResources": {"cpu": "500m", "memory": "1Gi", "pods": "1"}},
    }


@pytest.mark.parametrize(
    ("annotations", "min_member", "resources", "problem"),
    [
        ({"scheduling.volcano.sh/group-min-member": "3"}, 3, {"cpu": "3", "memory": "3Gi", "pods": "3"}, ""),
        (
            {"scheduling.volcano.sh/group-min-member": " 2 "},
            2,
            {"cpu": "2", "memory": "2Gi", "pods": "2"},
            "",
        ),
        (
            {"scheduling.volcano.sh/group-min-member": "0"},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "'0'",
        ),
        (
            {"scheduling.volcano.sh/group-min-member": "-2"},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "-2",
        ),
        (
            {"scheduling.volcano.sh/group-min-member": "three"},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "three",
        ),
        (
            {
                "scheduling.volcano.sh/group-min-member": "4",
                "scheduling.volcano.sh/group-min-resources": '{"memory": "8Gi", "cpu": "2"}',
            },
            4,
            {"cpu": "2", "memory": "8Gi"},
            "",
        ),
        (
            {"scheduling.volcano.sh/group-min-resources": '{"cpu": "lots"}'},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "not a JSON ResourceList",
        ),
        (
            {"scheduling.volcano.sh/group-min-resources": "cpu=2"},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "not a JSON ResourceList",
        ),
        (
            {"scheduling.volcano.sh/group-min-resources": '["cpu"]'},
            1,
            {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "not a JSON ResourceList",
        ),
    ],
)
def test_owner_annotations_size_the_group(
    annotations: dict[str, str], min_member: int, resources: dict[str, str], problem: str
) -> None:
    raw = owned(pod("p"), ref())
    d = desired_podgroup(raw, RS, owner_obj(**annotations), parse_pod(raw).requests)
    assert d.body["spec"]["minMember"] == min_member
    assert d.body["spec"]["minResources"] == resources
    if problem:
        assert len(d.problems) == 1 and problem in d.problems[0]
    else:
        assert d.problems == ()


@pytest.mark.parametrize(
    ("pod_queue", "owner_queue", "expected"),
    [("q1", "q2", "q1"), (None, "q2", "q2"), (None, None, None)],
)
def test_queue_from_the_pod_then_the_owner(
    pod_queue: str | None, owner_queue: str | None, expected: str | None
) -> None:
    raw = owned(pod("p", queue=pod_queue), ref())
    ann = {"scheduling.volcano.sh/queue-name": owner_queue} if owner_queue else {}
    spec = desired_podgroup(raw, RS, owner_obj(**ann), {}).body["spec"]
    assert spec.get("queue") == expected


def test_annotations_labels_and_priority_class_follow_volcano() -> None:
    raw = owned(pod("p", labels={"volcano.sh/preemptable": "true", "app": "web"}), ref())
    raw["metadata"]["annotations"] = {
        "volcano.sh/cooldown-time": "600s",
        "volcano.sh/jdb-min-available": "2",
        "volcano.sh/jdb-max-unavailable": "1",
        "other/annotation": "x",
    }
    raw["spec"]["priorityClassName"] = "high"
    owner = owner_obj(**{"volcano.sh/sla-waiting-time": "1h", "volcano.sh/cooldown-time": "1s", "team": "a"})
    body = desired_podgroup(raw, RS, owner, {}).body
    # The owner's volcano.sh/ annotations are inherited; the pod's own override them; one budget key.
    assert body["metadata"]["annotations"] == {
        "volcano.sh/sla-waiting-time": "1h",
        "volcano.sh/cooldown-time": "600s",
        "volcano.sh/jdb-min-available": "2",
    }
    assert body["metadata"]["labels"] == {"volcano.sh/preemptable": "true"}
    assert body["spec"]["priorityClassName"] == "high"


def test_spec_patch_only_on_a_difference() -> None:
    raw = owned(pod("p"), ref())
    want = desired_podgroup(
        raw, RS, owner_obj(**{"scheduling.volcano.sh/group-min-member": "2"}), {"cpu": 1000}
    )
    same = {"spec": {"minMember": 2, "minResources": {"cpu": "2000m"}, "queue": "other"}}
    assert spec_patch(same, want) is None
    grown = {"spec": {"minMember": 1, "minResources": {"cpu": "1", "memory": "1Gi"}}}
    assert spec_patch(grown, want) == {"spec": {"minMember": 2, "minResources": {"memory": None, "cpu": "2"}}}
    assert spec_patch({"spec": {"minMember": 2, "minResources": {"cpu": "bad"}}}, want) == {
        "spec": {"minResources": {"cpu": "2"}}
    }


def test_annotation_patch() -> None:
    assert annotation_patch("podgroup-x") == {
        "metadata": {"annotations": {"scheduling.k8s.io/group-name": "podgroup-x"}}
    }
