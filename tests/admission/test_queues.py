"""Queue admission rules, one row per rule, with the exact denial text a user sees."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from admission import queues
from admission.lookup import StaticLookup
from extender.core.model import PodGroup, Queue, QueueState
from tests.admission.builders import Raw, judged, lookup, queue_obj

GI = 2**30


@dataclass(frozen=True)
class Case:
    id: str
    new: Raw | None
    want: list[str]
    old: Raw | None = None
    cluster: StaticLookup = field(default_factory=lookup)


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


# A small tree (cpu in cores):
#   root ─┬─ p     cap 8, deserved 6 (and 8Gi memory), guarantee 2
#         │   ├─ s1    deserved 3, guarantee 1
#         │   └─ c     cap 4
#         └─ gp    cap 4
#             └─ mid   no cap
#                 └─ leaf  cap 2
TREE = lookup(
    Queue(
        name="p", capability={"cpu": 8000}, deserved={"cpu": 6000, "memory": 8 * GI}, guarantee={"cpu": 2000}
    ),
    Queue(name="s1", parent="p", deserved={"cpu": 3000}, guarantee={"cpu": 1000}),
    Queue(name="c", parent="p", capability={"cpu": 4000}),
    Queue(name="gp", capability={"cpu": 4000}),
    Queue(name="mid", parent="gp"),
    Queue(name="leaf", parent="mid", capability={"cpu": 2000}),
)

# A chain root ── a ── b ── c ── d ── e: e is five levels below root, the most allowed.
CHAIN = lookup(
    Queue(name="a"),
    Queue(name="b", parent="a"),
    Queue(name="c", parent="b"),
    Queue(name="d", parent="c"),
    Queue(name="e", parent="d"),
)

SPEC_CASES = [
    Case("minimal", queue_obj(weight=1), []),
    Case("no spec at all", {"metadata": {"name": "q1"}}, []),
    Case("weight zero", queue_obj(weight=0), ["spec.weight: must be an integer from 1 to 65535, got 0"]),
    Case(
        "weight negative", queue_obj(weight=-2), ["spec.weight: must be an integer from 1 to 65535, got -2"]
    ),
    Case(
        "weight too big",
        queue_obj(weight=65536),
        ["spec.weight: must be an integer from 1 to 65535, got 65536"],
    ),
    Case(
        "weight a string", queue_obj(weight="2"), ["spec.weight: must be an integer from 1 to 65535, got '2'"]
    ),
    Case(
        "weight a bool", queue_obj(weight=True), ["spec.weight: must be an integer from 1 to 65535, got True"]
    ),
    Case("reclaimable not a bool", queue_obj(reclaimable="yes"), ["spec.reclaimable: must be true or false"]),
    Case("spec not an object", {"metadata": {"name": "q1"}, "spec": "x"}, ["spec: must be an object"]),
    Case(
        "bad quantity",
        queue_obj(capability={"cpu": "abc"}),
        ["spec.capability[cpu]: 'abc' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    Case(
        "negative quantity",
        queue_obj(deserved={"memory": "-1Gi"}),
        ["spec.deserved[memory]: must not be negative, got -1Gi"],
    ),
    Case(
        "fractional extended resource",
        queue_obj(capability={"nvidia.com/gpu": "0.5"}),
        ["spec.capability[nvidia.com/gpu]: must be a whole number, got 0.5"],
    ),
    Case(
        "huge exponent is refused, not computed",
        queue_obj(capability={"cpu": "1e999999999"}),
        ["spec.capability[cpu]: 1e999999999 is out of range; pumice accepts at most 4611686018427387904m"],
    ),
    Case(
        "infinite number",
        queue_obj(capability={"cpu": float("inf")}),
        ["spec.capability[cpu]: 'inf' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    Case(
        "long text is cut in the message",
        queue_obj(capability={"cpu": "9" * 100}),
        [f"spec.capability[cpu]: '{'9' * 64}...' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    Case("fractional cpu is fine", queue_obj(capability={"cpu": "0.5"}), []),
    Case(
        "resource list not a map",
        queue_obj(capability=[1]),
        ["spec.capability: must be a map of resource name to quantity"],
    ),
    Case(
        "guarantee not an object",
        queue_obj(spec={"guarantee": "x"}),
        ["spec.guarantee: must be an object with a resource map"],
    ),
    Case(
        "deserved above capability",
        queue_obj(capability={"cpu": 2}, deserved={"cpu": "4"}),
        ["spec.deserved[cpu]: 4 is above spec.capability[cpu] 2; deserved must be at most the capability"],
    ),
    Case(
        "deserved above capability by one milli-cpu",
        queue_obj(capability={"cpu": "1"}, deserved={"cpu": "1001m"}),
        [
            "spec.deserved[cpu]: 1001m is above spec.capability[cpu] 1; deserved must be at "
            "most the capability"
        ],
    ),
    Case("equal in different units", queue_obj(capability={"memory": "1Gi"}, deserved={"memory": 2**30}), []),
    Case("uncapped resource is unlimited", queue_obj(capability={"cpu": 2}, deserved={"memory": "64Gi"}), []),
    Case(
        "guarantee above deserved",
        queue_obj(deserved={"cpu": "1"}, guarantee={"cpu": "1500m"}),
        [
            "spec.deserved[cpu]: 1 is below spec.guarantee.resource[cpu] 1500m; deserved must "
            "be at least the guarantee"
        ],
    ),
    Case(
        "guarantee without deserved",
        queue_obj(guarantee={"memory": "1Gi"}),
        ["spec.deserved[memory]: must be set and at least spec.guarantee.resource[memory] 1Gi"],
    ),
    Case(
        "guarantee <= deserved <= capability",
        queue_obj(capability={"cpu": 8}, deserved={"cpu": 4}, guarantee={"cpu": 2}),
        [],
    ),
    Case(
        "every error at once",
        queue_obj(weight=0, capability={"cpu": "x"}, deserved={"memory": "2Gi"}, guarantee={"memory": "3Gi"}),
        [
            "spec.weight: must be an integer from 1 to 65535, got 0",
            "spec.capability[cpu]: 'x' is not a quantity (examples: 500m, 2, 4Gi)",
            "spec.deserved[memory]: 2Gi is below spec.guarantee.resource[memory] 3Gi; "
            "deserved must be at least the guarantee",
        ],
    ),
    Case("state Open", queue_obj(state="Open"), []),
    Case("state Closed", queue_obj(state="Closed"), []),
    Case(
        "state Closing", queue_obj(state="Closing"), ["status.state: must be Open or Closed, got 'Closing'"]
    ),
    Case(
        "state Closing kept by an update",
        queue_obj(state="Closing", weight=2),
        [],
        old=queue_obj(state="Closing", weight=1),
    ),
    Case(
        "state set to Closing by an update",
        queue_obj(state="Closing"),
        ["status.state: must be Open or Closed, got 'Closing'"],
        old=queue_obj(state="Open"),
    ),
    Case(
        "hierarchy annotations",
        queue_obj(
            annotations={"volcano.sh/hierarchy": "root/eng/dev", "volcano.sh/hierarchy-weights": "1/2/0.5"}
        ),
        [],
    ),
    Case(
        "hierarchy lengths differ",
        queue_obj(
            annotations={"volcano.sh/hierarchy": "root/eng/dev", "volcano.sh/hierarchy-weights": "1/2"}
        ),
        [
            "metadata.annotations[volcano.sh/hierarchy-weights]: '1/2' has 2 weights but "
            "volcano.sh/hierarchy "
            "'root/eng/dev' has 3 levels; give one weight per level"
        ],
    ),
    Case(
        "hierarchy weight not a number",
        queue_obj(annotations={"volcano.sh/hierarchy": "root/eng", "volcano.sh/hierarchy-weights": "1/x"}),
        ["metadata.annotations[volcano.sh/hierarchy-weights]: weight 'x' in '1/x' must be a number above 0"],
    ),
    Case(
        "hierarchy weight zero",
        queue_obj(annotations={"volcano.sh/hierarchy": "root/eng", "volcano.sh/hierarchy-weights": "1/0"}),
        ["metadata.annotations[volcano.sh/hierarchy-weights]: weight '0' in '1/0' must be a number above 0"],
    ),
]

PARENT_CASES = [
    Case("parent root", queue_obj(parent="root"), []),
    Case("parent itself", queue_obj(parent="q1"), ["spec.parent: queue 'q1' cannot be its own parent"]),
    Case("parent not a string", queue_obj(parent=7), ["spec.parent: must be a queue name"]),
    Case(
        "parent missing",
        queue_obj(parent="nope"),
        ["spec.parent: parent queue 'nope' does not exist; create it first"],
    ),
    Case(
        "ancestor missing",
        queue_obj(parent="orphan"),
        ["spec.parent: queue 'ghost', an ancestor of parent 'orphan', does not exist"],
        cluster=lookup(Queue(name="orphan", parent="ghost")),
    ),
    Case("five levels deep", queue_obj("f", parent="d"), [], cluster=CHAIN),
    Case(
        "six levels deep",
        queue_obj("f", parent="e"),
        ["spec.parent: queue 'f' would be more than 5 levels below root; choose a parent higher in the tree"],
        cluster=CHAIN,
    ),
    Case(
        "re-parent into own subtree",
        queue_obj("a", parent="c"),
        ["spec.parent: parent 'c' is below queue 'a': the hierarchy would form a loop"],
        old=queue_obj("a"),
        cluster=CHAIN,
    ),
    Case(
        "unchanged parent is not re-checked",
        queue_obj("x", parent="gone", weight=3),
        [],
        old=queue_obj("x", parent="gone", weight=1),
    ),
]

TREE_CASES = [
    Case("child within parent", queue_obj("n", parent="p", capability={"cpu": 8}), [], cluster=TREE),
    Case(
        "child capability above parent's",
        queue_obj("n", parent="p", capability={"cpu": 9}),
        ["spec.capability[cpu]: 9 exceeds the capability 8 of ancestor queue 'p'"],
        cluster=TREE,
    ),
    Case(
        "nearest ancestor that caps the resource",
        queue_obj("n", parent="mid", capability={"cpu": 5, "memory": "1Ti"}),
        ["spec.capability[cpu]: 5 exceeds the capability 4 of ancestor queue 'gp'"],
        cluster=TREE,
    ),
    Case(
        "siblings' deserved over the parent's",
        queue_obj("n", parent="p", deserved={"cpu": 4}),
        [
            "spec.deserved[cpu]: the deserved of the children of queue 'p' would sum to 7, more "
            "than its own deserved 6"
        ],
        cluster=TREE,
    ),
    Case(
        "siblings' guarantee over the parent's",
        queue_obj("n", parent="p", deserved={"cpu": "1500m"}, guarantee={"cpu": "1500m"}),
        [
            "spec.guarantee.resource[cpu]: the guarantee of the children of queue 'p' would sum to 2500m, "
            "more than its own guarantee 2"
        ],
        cluster=TREE,
    ),
    Case(
        "a resource the parent does not list counts as zero",
        queue_obj("n", parent="mid", deserved={"memory": "1Gi"}),
        [
            "spec.deserved[memory]: the deserved of the children of queue 'mid' would sum to 1Gi, "
            "more than its own deserved 0"
        ],
        cluster=TREE,
    ),
    Case(
        "an update replaces its own share in the sum",
        queue_obj("s1", parent="p", deserved={"cpu": 4}, guarantee={"cpu": 1}),
        [],
        old=queue_obj("s1", parent="p", deserved={"cpu": 3}, guarantee={"cpu": 1}),
        cluster=TREE,
    ),
    Case(
        "parent capability below a child's",
        queue_obj("p", capability={"cpu": 3}, deserved={"cpu": 3, "memory": "8Gi"}, guarantee={"cpu": 2}),
        ["spec.capability[cpu]: 3 is below the capability 4 of descendant queue 'c'"],
        old=queue_obj("p", capability={"cpu": 8}, deserved={"cpu": 6, "memory": "8Gi"}, guarantee={"cpu": 2}),
        cluster=TREE,
    ),
    Case(
        "parent capability below a descendant's, through an uncapped child",
        queue_obj("gp", capability={"cpu": 1}),
        ["spec.capability[cpu]: 1 is below the capability 2 of descendant queue 'leaf'"],
        old=queue_obj("gp", capability={"cpu": 4}),
        cluster=TREE,
    ),
    Case(
        "parent deserved below its children's sum",
        queue_obj("p", capability={"cpu": 8}, deserved={"cpu": 2, "memory": "8Gi"}, guarantee={"cpu": 2}),
        [
            "spec.deserved[cpu]: the deserved of the children of queue 'p' would sum to 3, more "
            "than its own deserved 2"
        ],
        old=queue_obj("p", capability={"cpu": 8}, deserved={"cpu": 6, "memory": "8Gi"}, guarantee={"cpu": 2}),
        cluster=TREE,
    ),
    Case(
        "weight-only update skips the tree",
        queue_obj("n", parent="mid", deserved={"memory": "1Gi"}, weight=5),
        [],
        old=queue_obj("n", parent="mid", deserved={"memory": "1Gi"}, weight=1),
        cluster=TREE,
    ),
    Case(
        "root resources cannot change",
        queue_obj("root", capability={"cpu": 100}),
        ["spec: the capability, deserved and guarantee of the root queue cannot be changed"],
        old=queue_obj("root"),
    ),
    Case("root weight may change", queue_obj("root", weight=2), [], old=queue_obj("root", weight=1)),
    Case("root is created freely", queue_obj("root", capability={"cpu": 100}), []),
]

DELETE_CASES = [
    Case("delete root", None, ["metadata.name: the root queue cannot be deleted"], old=queue_obj("root")),
    Case(
        "delete default",
        None,
        ["metadata.name: the default queue 'default' cannot be deleted"],
        old=queue_obj("default"),
    ),
    Case(
        "delete the configured default",
        None,
        ["metadata.name: the default queue 'batch' cannot be deleted"],
        old=queue_obj("batch"),
        cluster=lookup(Queue(name="batch"), default_queue="batch"),
    ),
    Case(
        "delete a parent",
        None,
        [
            "metadata.name: queue 'p' still has child queues (c, s1); delete them or change "
            "their spec.parent first"
        ],
        old=queue_obj("p"),
        cluster=TREE,
    ),
    Case(
        "delete a queue with podgroups",
        None,
        ["metadata.name: queue 'q1' still has PodGroups; delete them (or the jobs that own them) first"],
        old=queue_obj("q1"),
        cluster=lookup(Queue(name="q1"), PodGroup(namespace="ns", name="pg", queue="q1")),
    ),
    Case("delete an empty queue", None, [], old=queue_obj("q1"), cluster=lookup(Queue(name="q1"))),
    Case("delete a leaf", None, [], old=queue_obj("leaf"), cluster=TREE),
]


@pytest.mark.parametrize("case", SPEC_CASES, ids=_ids(SPEC_CASES))
def test_spec_rules(case: Case) -> None:
    assert case.new is not None  # (only the deletion cases have none)
    assert [str(e) for e in queues.validate(case.new, case.old, case.cluster)] == case.want


@pytest.mark.parametrize("case", PARENT_CASES, ids=_ids(PARENT_CASES))
def test_parent_rules(case: Case) -> None:
    assert case.new is not None  # (only the deletion cases have none)
    assert [str(e) for e in queues.validate(case.new, case.old, case.cluster)] == case.want


@pytest.mark.parametrize("case", TREE_CASES, ids=_ids(TREE_CASES))
def test_tree_rules(case: Case) -> None:
    assert case.new is not None  # (only the deletion cases have none)
    assert [str(e) for e in queues.validate(case.new, case.old, case.cluster)] == case.want


@pytest.mark.parametrize("case", DELETE_CASES, ids=_ids(DELETE_CASES))
def test_delete_rules(case: Case) -> None:
    assert [str(e) for e in judged("/queues/validate")(None, case.old, case.cluster)] == case.want


def test_closed_queue_state_from_lookup_is_not_an_error() -> None:
    cluster = lookup(Queue(name="p", state=QueueState.CLOSED, deserved={"cpu": 4000}))
    assert queues.validate(queue_obj("n", parent="p", deserved={"cpu": 1}), None, cluster) == []


MUTATE_CASES: list[tuple[str, Raw, list[dict[str, Any]]]] = [
    (
        "no spec",
        {"metadata": {"name": "q1"}},
        [{"op": "add", "path": "/spec", "value": {"reclaimable": True, "weight": 1}}],
    ),
    (
        "empty spec",
        queue_obj(),
        [
            {"op": "add", "path": "/spec/reclaimable", "value": True},
            {"op": "add", "path": "/spec/weight", "value": 1},
        ],
    ),
    (
        "weight zero",
        queue_obj(weight=0, reclaimable=False),
        [{"op": "add", "path": "/spec/weight", "value": 1}],
    ),
    (
        "reclaimable null",
        queue_obj(weight=3, reclaimable=None),
        [{"op": "add", "path": "/spec/reclaimable", "value": True}],
    ),
    ("all set", queue_obj(weight=3, reclaimable=False), []),
    ("parent is not defaulted", queue_obj(weight=3, reclaimable=True, parent=""), []),
    ("spec not an object", {"metadata": {"name": "q1"}, "spec": 5}, []),
    ("bad weight left to validation", queue_obj(weight="x", reclaimable=True), []),
    (
        "legacy hierarchy gets its root level",
        queue_obj(
            weight=1,
            reclaimable=True,
            annotations={"volcano.sh/hierarchy": "eng/dev", "volcano.sh/hierarchy-weights": "2/8"},
        ),
        [
            {"op": "add", "path": "/metadata/annotations/volcano.sh~1hierarchy", "value": "root/eng/dev"},
            {"op": "add", "path": "/metadata/annotations/volcano.sh~1hierarchy-weights", "value": "1/2/8"},
        ],
    ),
    (
        "legacy hierarchy already rooted",
        queue_obj(
            weight=1,
            reclaimable=True,
            annotations={"volcano.sh/hierarchy": "root/eng", "volcano.sh/hierarchy-weights": "1/2"},
        ),
        [],
    ),
    (
        "legacy hierarchy needs both annotations",
        queue_obj(weight=1, reclaimable=True, annotations={"volcano.sh/hierarchy": "eng"}),
        [],
    ),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in MUTATE_CASES], ids=[c[0] for c in MUTATE_CASES])
def test_mutate(obj: Raw, want: list[dict[str, Any]]) -> None:
    assert queues.mutate(obj, lookup()) == want


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"metadata": "x", "spec": {"capability": {"cpu": {"x": 1}}}},
        {
            "metadata": {"name": 5, "annotations": ["x"]},
            "spec": {"guarantee": {"resource": "x"}, "parent": None},
        },
        queue_obj(capability={"cpu": None}, deserved={"": "1"}, guarantee={"cpu": float("inf")}),
    ],
)
def test_garbage_never_raises(obj: Raw) -> None:
    for old in (None, obj):
        queues.validate(obj, old, TREE)
    queues.validate_delete(obj, TREE)
    queues.mutate(obj, TREE)
