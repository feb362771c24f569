"""Raw objects into the model: what is read; bad objects raise InvalidObject naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.core.model import (
    GroupPhase,
    LabelSelector,
    PodAffinityTerm,
    PodPhase,
    PreferredNodeTerm,
    QueueState,
    Requirement,
    SpreadConstraint,
    Taint,
    Toleration,
    WeightedPodAffinityTerm,
)
from extender.core.parse import (
    parse_node,
    parse_pod,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    pod_requests,
)
from tests.core.builders import (
    GPU,
    HOSTNAME,
    ZONE,
    node,
    pod,
    podgroup,
    prefer_node,
    preferred,
    queue,
    required,
    spread_by,
    term,
)

GiB = 2**30


def test_pod_fields() -> None:
    raw = pod(
        "p0",
        group="job",
        cpu="1500m",
        memory="2Gi",
        node="n1",
        phase="Running",
        priority=7,
        task="worker",
        selector={"zone": "a"},
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        scheduler="volcano",
        created="2024-05-01T00:00:00Z",
        gpus=2,
        namespace="ns",
        queue="q1",
        affinity=[[{"key": "arch", "operator": "In", "values": ["amd64"]}]],
    )
    p = parse_pod(raw)
    assert (p.uid, p.namespace, p.name, p.key) == ("p0", "ns", "p0", "ns/p0")
    assert p.requests == {"cpu": 1500, "memory": 2 * GiB, GPU: 2, "pods": 1}
    assert (p.group_name, p.queue_name, p.task) == ("job", "q1", "worker")
    assert (p.node_name, p.phase, p.priority, p.scheduler_name) == ("n1", PodPhase.RUNNING, 7, "volcano")
    assert p.created == "2024-05-01T00:00:00Z"
    assert p.constraints.node_selector == (("zone", "a"),)
    assert p.constraints.tolerations == (Toleration(key="k", operator="Exists", effect="NoSchedule"),)
    assert p.constraints.affinity_terms == ((Requirement(key="arch", operator="In", values=("amd64",)),),)
    assert p.holds_resources and not p.waiting and not p.terminal


@pytest.mark.parametrize(
    ("annotations", "group", "queue_name"),
    [
        ({L.GROUP_NAME_ANNOTATION: "a"}, "a", None),
        ({L.GROUP_NAME_ANNOTATION_VOLCANO: "b"}, "b", None),
        ({L.GROUP_NAME_ANNOTATION: "a", L.GROUP_NAME_ANNOTATION_VOLCANO: "b"}, "a", None),
        ({L.QUEUE_NAME_ANNOTATION: "q"}, None, "q"),
        ({}, None, None),
    ],
    ids=["k8s-key", "volcano-key", "k8s-key-wins", "queue", "none"],
)
def test_pod_group_annotations(
    annotations: dict[str, str], group: str | None, queue_name: str | None
) -> None:
    raw = pod("p0")
    raw["metadata"]["annotations"] = annotations
    p = parse_pod(raw)
    assert (p.group_name, p.queue_name) == (group, queue_name)


def test_pod_defaults() -> None:
    p = parse_pod({"metadata": {"name": "p", "uid": "u"}})
    assert p.namespace == "default"
    assert p.scheduler_name == "default-scheduler"
    assert p.requests == {"pods": 1}
    assert p.phase == PodPhase.PENDING and p.waiting
    assert p.constraints.affinity_terms is None


@pytest.mark.parametrize(
    ("phase", "expected"),
    [("Pending", PodPhase.PENDING), ("Succeeded", PodPhase.SUCCEEDED), ("Weird", PodPhase.UNKNOWN)],
    ids=["pending", "succeeded", "unknown-string"],
)
def test_pod_phase(phase: str, expected: PodPhase) -> None:
    assert parse_pod(pod("p", phase=phase)).phase == expected


def test_pod_deleting_gated_planned() -> None:
    raw = pod("p", deleting=True)
    raw["spec"]["schedulingGates"] = [{"name": L.GANG_SCHEDULING_GATE}, "junk"]
    raw["metadata"]["annotations"][L.PLANNED_NODE_ANNOTATION] = "n3"
    p = parse_pod(raw)
    assert p.deleting and p.gated and p.planned_node == "n3" and not p.waiting


@pytest.mark.parametrize(
    ("spec", "requests"),
    [
        ({}, {"pods": 1}),
        (
            {
                "containers": [
                    {"resources": {"requests": {"cpu": "1"}}},
                    {"resources": {"requests": {"cpu": "500m"}}},
                ]
            },
            {"cpu": 1500, "pods": 1},
        ),
        (
            {
                "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                "initContainers": [{"resources": {"requests": {"cpu": "2", "memory": "512Mi"}}}],
            },
            {"cpu": 2000, "memory": GiB, "pods": 1},
        ),
        (
            {"containers": [{"resources": {"requests": {"cpu": "1"}}}], "overhead": {"cpu": "250m"}},
            {"cpu": 1250, "pods": 1},
        ),
        ({"containers": [{"resources": {"requests": {"cpu": "0"}}}]}, {"pods": 1}),
        ({"containers": [{"resources": {"limits": {"cpu": "4"}}}]}, {"pods": 1}),
        ({"containers": [{"resources": {"requests": {GPU: "1"}}}]}, {GPU: 1, "pods": 1}),
    ],
    ids=["empty", "sum-containers", "init-max", "overhead", "zero-dropped", "limits-ignored", "extended"],
)
def test_pod_requests(spec: dict[str, Any], requests: dict[str, int]) -> None:
    assert pod_requests(spec) == requests


def test_node_fields() -> None:
    raw = node(
        "n0",
        cpu="8",
        memory="16Gi",
        pods=20,
        labels={"zone": "a"},
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        unschedulable=True,
        gpus=4,
    )
    n = parse_node(raw)
    assert n.allocatable == {"cpu": 8000, "memory": 16 * GiB, "pods": 20, GPU: 4}
    assert n.labels == {"zone": "a"}
    assert n.taints == (Taint(key="k", value="v", effect="NoSchedule"),)
    assert n.unschedulable


def test_node_falls_back_to_capacity() -> None:
    n = parse_node({"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "2"}}})
    assert n.allocatable == {"cpu": 2000}


def test_podgroup_fields() -> None:
    raw = podgroup(
        "job",
        3,
        queue="q1",
        phase="Running",
        min_resources={"cpu": "3", "memory": "3Gi"},
        min_task_member={"ps": 1, "worker": 2},
        priority_class="high",
        namespace="ns",
    )
    raw["status"].update({"running": 2, "succeeded": 1, "failed": 0})
    raw["status"]["conditions"] = [
        {"type": "Unschedulable", "status": "True", "reason": "x", "transitionID": "t"}
    ]
    g = parse_podgroup(raw)
    assert g.key == "ns/job"
    assert (g.min_member, g.queue, g.priority_class, g.phase) == (3, "q1", "high", GroupPhase.RUNNING)
    assert g.min_resources == {"cpu": 3000, "memory": 3 * GiB}
    assert g.min_task_member == {"ps": 1, "worker": 2}
    assert (g.running, g.succeeded, g.failed) == (2, 1, 0)
    assert g.conditions[0].transition_id == "t" and not g.implicit


@pytest.mark.parametrize(
    ("spec", "status", "queue_name", "phase"),
    [
        ({}, {}, "default", GroupPhase.PENDING),
        ({"queue": ""}, {"phase": "Bogus"}, "default", GroupPhase.PENDING),
        ({"queue": "q"}, {"phase": "Inqueue"}, "q", GroupPhase.INQUEUE),
    ],
    ids=["defaults", "empty-queue-bad-phase", "explicit"],
)
def test_podgroup_defaults(
    spec: dict[str, Any], status: dict[str, Any], queue_name: str, phase: GroupPhase
) -> None:
    g = parse_podgroup({"metadata": {"name": "g"}, "spec": spec, "status": status})
    assert (g.min_member, g.queue, g.phase) == (1, queue_name, phase)


def test_queue_fields() -> None:
    raw = queue("q1", weight=3, capability={"cpu": "8"}, state="Closed", deserved={"cpu": "4"})
    raw["spec"]["guarantee"] = {"resource": {"cpu": "1"}}
    q = parse_queue(raw)
    assert (q.weight, q.capability, q.deserved, q.guarantee) == (
        3,
        {"cpu": 8000},
        {"cpu": 4000},
        {"cpu": 1000},
    )
    assert q.state == QueueState.CLOSED and not q.open and q.reclaimable


@pytest.mark.parametrize(
    ("state", "expected"),
    [(None, QueueState.OPEN), ("Closing", QueueState.CLOSING), ("Bogus", QueueState.UNKNOWN)],
    ids=["absent-is-open", "closing", "bogus"],
)
def test_queue_state(state: str | None, expected: QueueState) -> None:
    assert parse_queue({"metadata": {"name": "q"}, "status": {"state": state}}).state == expected


def test_priority_class() -> None:
    pc = parse_priority_class({"metadata": {"name": "high"}, "value": 1000, "globalDefault": True})
    assert (pc.name, pc.value, pc.global_default) == ("high", 1000, True)


def _pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "uid": "u"}, "spec": spec}


def _affinity(terms: Any) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


Parser = Callable[[Any], object]

BAD: list[tuple[str, Parser, Any, str]] = [
    ("pod-not-object", parse_pod, "junk", "Pod"),
    ("pod-metadata-not-object", parse_pod, {"metadata": "x"}, "Pod.metadata"),
    ("pod-no-name", parse_pod, {"metadata": {"uid": "u"}}, "Pod.metadata.name"),
    ("pod-empty-name", parse_pod, {"metadata": {"name": "", "uid": "u"}}, "Pod.metadata.name"),
    ("pod-no-uid", parse_pod, {"metadata": {"name": "p"}}, "Pod.metadata.uid"),
    ("pod-spec-not-object", parse_pod, {"metadata": {"name": "p", "uid": "u"}, "spec": []}, "Pod.spec"),
    ("containers-not-list", parse_pod, _pod(containers={}), "spec.containers"),
    ("container-not-object", parse_pod, _pod(containers=["x"]), "spec.containers[0]"),
    (
        "resources-not-object",
        parse_pod,
        _pod(containers=[{"resources": "x"}]),
        "spec.containers[0].resources",
    ),
    (
        "bad-request-quantity",
        parse_pod,
        _pod(containers=[{"resources": {"requests": {"cpu": "lots"}}}]),
        "spec.containers[0].resources.requests",
    ),
    (
        "requests-not-object",
        parse_pod,
        _pod(containers=[{"resources": {"requests": ["1"]}}]),
        "spec.containers[0].resources.requests",
    ),
    (
        "bad-init-quantity",
        parse_pod,
        _pod(initContainers=[{"resources": {"requests": {"memory": "1Gb"}}}]),
        "spec.initContainers[0].resources.requests",
    ),
    ("bad-overhead", parse_pod, _pod(overhead={"cpu": "x"}), "spec.overhead"),
    ("priority-not-int", parse_pod, _pod(priority="high"), "spec.priority"),
    ("selector-not-object", parse_pod, _pod(nodeSelector=["a"]), "spec.nodeSelector"),
    ("tolerations-not-list", parse_pod, _pod(tolerations={}), "spec.tolerations"),
    ("toleration-not-object", parse_pod, _pod(tolerations=["x"]), "spec.tolerations[0]"),
    ("affinity-terms-not-list", parse_pod, _pod(affinity=_affinity({})), "nodeSelectorTerms"),
    ("affinity-term-not-object", parse_pod, _pod(affinity=_affinity(["x"])), "nodeSelectorTerms[0]"),
    (
        "requirement-without-operator",
        parse_pod,
        _pod(affinity=_affinity([{"matchExpressions": [{"key": "a"}]}])),
        "nodeSelectorTerms",
    ),
    (
        "requirement-not-object",
        parse_pod,
        _pod(affinity=_affinity([{"matchExpressions": ["a"]}])),
        "nodeSelectorTerms",
    ),
    (
        "requirement-values-not-list",
        parse_pod,
        _pod(affinity=_affinity([{"matchExpressions": [{"key": "a", "operator": "In", "values": "abc"}]}])),
        "values",
    ),
    ("node-no-name", parse_node, {"metadata": {}}, "Node.metadata.name"),
    (
        "node-bad-allocatable",
        parse_node,
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "x"}}},
        "allocatable",
    ),
    (
        "node-huge-allocatable",
        parse_node,
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "10P"}}},
        "allocatable",
    ),
    ("node-taints-not-list", parse_node, {"metadata": {"name": "n"}, "spec": {"taints": "x"}}, "spec.taints"),
    (
        "node-taint-not-object",
        parse_node,
        {"metadata": {"name": "n"}, "spec": {"taints": ["x"]}},
        "spec.taints[0]",
    ),
    ("pg-no-name", parse_podgroup, {"metadata": {}}, "PodGroup.metadata.name"),
    (
        "pg-minmember-str",
        parse_podgroup,
        {"metadata": {"name": "g"}, "spec": {"minMember": "3"}},
        "spec.minMember",
    ),
    (
        "pg-minmember-bool",
        parse_podgroup,
        {"metadata": {"name": "g"}, "spec": {"minMember": True}},
        "spec.minMember",
    ),
    (
        "pg-mintaskmember-value",
        parse_podgroup,
        {"metadata": {"name": "g"}, "spec": {"minTaskMember": {"ps": "one"}}},
        "spec.minTaskMember.ps",
    ),
    (
        "pg-mintaskmember-not-object",
        parse_podgroup,
        {"metadata": {"name": "g"}, "spec": {"minTaskMember": [1]}},
        "spec.minTaskMember",
    ),
    (
        "pg-minresources",
        parse_podgroup,
        {"metadata": {"name": "g"}, "spec": {"minResources": {"cpu": "?"}}},
        "spec.minResources",
    ),
    (
        "pg-running-str",
        parse_podgroup,
        {"metadata": {"name": "g"}, "status": {"running": "2"}},
        "status.running",
    ),
    ("queue-no-name", parse_queue, {"metadata": {"name": 3}}, "Queue.metadata.name"),
    ("queue-weight-str", parse_queue, {"metadata": {"name": "q"}, "spec": {"weight": "2"}}, "spec.weight"),
    (
        "queue-capability",
        parse_queue,
        {"metadata": {"name": "q"}, "spec": {"capability": {"cpu": "x"}}},
        "spec.capability",
    ),
    (
        "queue-capability-list",
        parse_queue,
        {"metadata": {"name": "q"}, "spec": {"capability": [1]}},
        "spec.capability",
    ),
    (
        "queue-guarantee",
        parse_queue,
        {"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"cpu": "x"}}}},
        "spec.guarantee.resource",
    ),
    ("pc-value-str", parse_priority_class, {"metadata": {"name": "pc"}, "value": "1"}, "value"),
]


@pytest.mark.parametrize(("parser", "raw", "field"), [row[1:] for row in BAD], ids=[row[0] for row in BAD])
def test_bad_object_names_the_field(parser: Parser, raw: Any, field: str) -> None:
    with pytest.raises(
        InvalidObject, match=field.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parser(raw)


# --- task name and inter-pod rules ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "label", "task"),
    [("worker", "", "worker"), ("", "master", "master"), ("worker", "master", "worker"), ("", "", "")],
    ids=["annotation", "label-only", "annotation-wins", "neither"],
)
def test_task_from_annotation_then_label(annotation: str, label: str, task: str) -> None:
    """Volcano reads ``volcano.sh/task-spec`` from the annotation, then from the label."""
    assert parse_pod(pod("p", task=annotation, task_label=label)).task == task


def test_pod_without_inter_pod_rules_has_no_affinity() -> None:
    """The fast path: nothing but required node affinity and tolerations leaves ``affinity`` None."""
    raw = pod("p", affinity=[[{"key": "a", "operator": "Exists"}]], labels={"app": "web"})
    assert parse_pod(raw).affinity is None


def test_pod_affinity_terms() -> None:
    raw = pod(
        "p",
        namespace="ns1",
        labels={"app": "web", "rev": "7"},
        pod_affinity=required(term(ZONE, app="db")),
        anti_affinity={
            **required(term(namespaces=["other"], app="web")),
            **preferred((30, term(app="cache"))),
        },
    )
    raw["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "labelSelector"
    ]["matchExpressions"] = [{"key": "tier", "operator": "NotIn", "values": ["x"]}]
    a = parse_pod(raw).affinity
    assert a is not None
    assert a.required == (
        PodAffinityTerm(
            topology_key=ZONE,
            selector=LabelSelector(match_labels=(("app", "db"),)),
            namespaces=frozenset({"ns1"}),  # neither namespaces nor a selector: the pod's own
        ),
    )
    assert a.required_anti == (
        PodAffinityTerm(
            topology_key=HOSTNAME,
            selector=LabelSelector(
                match_labels=(("app", "web"),),
                match_expressions=(Requirement(key="tier", operator="NotIn", values=("x",)),),
            ),
            namespaces=frozenset({"other"}),
        ),
    )
    assert a.preferred_anti == (
        WeightedPodAffinityTerm(
            weight=30,
            term=PodAffinityTerm(
                topology_key=HOSTNAME,
                selector=LabelSelector(match_labels=(("app", "cache"),)),
                namespaces=frozenset({"ns1"}),
            ),
        ),
    )
    assert a.has_pod_terms and a.preferred == () and a.spread == ()


def test_namespace_selector_and_label_keys() -> None:
    t = term(app="web")
    t["namespaceSelector"] = {}
    t["matchLabelKeys"] = ["rev", "absent"]
    t["mismatchLabelKeys"] = ["team"]
    no_selector = {"topologyKey": HOSTNAME}
    raw = pod("p", labels={"app": "web", "rev": "7", "team": "a"}, anti_affinity=required(t, no_selector))
    a = parse_pod(raw).affinity
    assert a is not None
    first, second = a.required_anti
    assert first.namespaces == frozenset() and first.namespace_selector == LabelSelector()
    assert first.selector == LabelSelector(
        match_labels=(("app", "web"),),
        match_expressions=(
            Requirement(key="rev", operator="In", values=("7",)),
            Requirement(key="team", operator="NotIn", values=("a",)),
        ),
    )
    assert second.selector is None  # a missing selector matches no pod


def test_spread_constraints_and_preferred_nodes() -> None:
    c = spread_by(ZONE, max_skew=2, app="web")
    c.update(minDomains=3, nodeAffinityPolicy="Ignore", nodeTaintsPolicy="Honor", matchLabelKeys=["rev"])
    raw = pod(
        "p",
        labels={"app": "web", "rev": "7"},
        spread=[c, spread_by(HOSTNAME, hard=False)],
        preferred_nodes=[
            prefer_node(5, {"key": "disk", "operator": "In", "values": ["ssd"]}),
            prefer_node(0, {"key": "x", "operator": "Exists"}),  # weight 0: a no-op
            {"weight": 3, "preference": {}},  # an empty term matches nothing
        ],
    )
    a = parse_pod(raw).affinity
    assert a is not None
    assert a.spread == (
        SpreadConstraint(
            max_skew=2,
            topology_key=ZONE,
            selector=LabelSelector(
                match_labels=(("app", "web"),),
                match_expressions=(Requirement(key="rev", operator="In", values=("7",)),),
            ),
            hard=True,
            min_domains=3,
            honor_node_affinity=False,
            honor_taints=True,
        ),
        SpreadConstraint(max_skew=1, topology_key=HOSTNAME, selector=LabelSelector(), hard=False),
    )
    assert a.hard_spread == a.spread[:1] and a.soft_spread == a.spread[1:]
    assert a.preferred_nodes == (
        PreferredNodeTerm(weight=5, requirements=(Requirement(key="disk", operator="In", values=("ssd",)),)),
    )
    assert not a.has_pod_terms


INTER_POD_BAD = [
    (
        "term-not-object",
        {"podAffinity": required("x")},
        "podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]",
    ),
    ("term-no-key", {"podAntiAffinity": required({"labelSelector": {}})}, "topologyKey"),
    (
        "selector-not-object",
        {"podAffinity": required({"topologyKey": "k", "labelSelector": 3})},
        "labelSelector",
    ),
    (
        "weight-not-int",
        {
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": "9", "podAffinityTerm": term()}
                ]
            }
        },
        "weight",
    ),
]


@pytest.mark.parametrize(
    ("affinity", "field"), [r[1:] for r in INTER_POD_BAD], ids=[r[0] for r in INTER_POD_BAD]
)
def test_bad_inter_pod_rules_name_the_field(affinity: dict[str, Any], field: str) -> None:
    raw = pod("p")
    raw["spec"]["affinity"] = affinity
    with pytest.raises(
        InvalidObject, match=field.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")
    ):
        parse_pod(raw)


def test_bad_spread_names_the_field() -> None:
    raw = pod("p", spread=[{"maxSkew": "1", "topologyKey": ZONE}])
    with pytest.raises(InvalidObject, match=r"spec\.topologySpreadConstraints\[0\]\.maxSkew"):
        parse_pod(raw)
