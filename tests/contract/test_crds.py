"""Our CRD manifests against Volcano's API and against our own model.

Three contracts:

1. Shape: every manifest is a structural apiextensions.k8s.io/v1 CRD carrying Volcano's group, version, kind,
   names, scope, status subresource and printer columns.
2. Drift: every field :mod:`extender.core.parse` reads and every status field our controllers write
   resolves in the CRD schema with the expected type, every field of the model dataclasses is accounted
   for, and the parsers' defaults agree with the schema defaults. The read set is checked twice: by a
   table, and by recording what the parsers actually touch.
3. Compatibility: Volcano users' manifests (written here) validate against our schemas, with a small
   walker over the structural-schema subset we use, and parse to the expected model values.

CEL rules (``x-kubernetes-validations``) are evaluated by a Python twin per rule (``CEL_TWINS``): a rule
without one fails the tests, so a new rule is also checked for the bounds that keep the API server's cost
estimate within budget (1.25+ refuses a CRD otherwise; tests/e2e/test_manifests_apply.py applies them).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from extender.api.crds import crd_documents, crd_yaml
from extender.core import model
from extender.core.parse import parse_podgroup, parse_queue

Schema = Mapping[str, Any]

# ----------------------------------------------------------------------------------------------------------
# Loading


def _crds() -> dict[str, dict[str, Any]]:
    return {doc["spec"]["names"]["kind"]: doc for doc in crd_documents()}


CRDS = _crds()


def _schema(kind: str) -> Schema:
    schema: Schema = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _kind_of(api_version: str, kind: str) -> str:
    for k, doc in CRDS.items():
        if k == kind and api_version == f"{doc['spec']['group']}/{doc['spec']['versions'][0]['name']}":
            return k
    raise KeyError(f"no CRD serves {api_version} {kind}")


# ----------------------------------------------------------------------------------------------------------
# 1. Shape: names, versions, scope, subresources, printer columns


@dataclass(frozen=True, kw_only=True)
class Names:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    short_names: tuple[str, ...]
    scope: str
    status_subresource: bool
    # (name, type, jsonPath, priority)
    columns: tuple[tuple[str, str, str, int], ...] = ()


AGE = ".metadata.creationTimestamp"

VOLCANO_NAMES = (
    Names(
        group="scheduling.volcano.sh",
        version="v1beta1",
        kind="PodGroup",
        plural="podgroups",
        singular="podgroup",
        short_names=("pg", "podgroup-v1beta1"),
        scope="Namespaced",
        # Volcano updates PodGroup status through the main resource, so it has no status subresource.
        status_subresource=False,
        columns=(
            ("STATUS", "string", ".status.phase", 0),
            ("minMember", "integer", ".spec.minMember", 0),
            ("RUNNINGS", "integer", ".status.running", 0),
            ("AGE", "date", AGE, 0),
            ("QUEUE", "string", ".spec.queue", 1),
        ),
    ),
    Names(
        group="scheduling.volcano.sh",
        version="v1beta1",
        kind="Queue",
        plural="queues",
        singular="queue",
        short_names=("q", "queue-v1beta1"),
        scope="Cluster",
        status_subresource=True,
        columns=(("PARENT", "string", ".spec.parent", 0),),
    ),
    Names(
        group="batch.volcano.sh",
        version="v1alpha1",
        kind="Job",
        plural="jobs",
        singular="job",
        short_names=("vcjob", "vj"),
        scope="Namespaced",
        status_subresource=True,
        columns=(
            ("STATUS", "string", ".status.state.phase", 0),
            ("minAvailable", "integer", ".status.minAvailable", 0),
            ("RUNNINGS", "integer", ".status.running", 0),
            ("AGE", "date", AGE, 0),
            ("QUEUE", "string", ".spec.queue", 1),
        ),
    ),
    Names(
        group="bus.volcano.sh",
        version="v1alpha1",
        kind="Command",
        plural="commands",
        singular="command",
        short_names=(),
        scope="Namespaced",
        status_subresource=False,
    ),
    Names(
        group="flow.volcano.sh",
        version="v1alpha1",
        kind="JobFlow",
        plural="jobflows",
        singular="jobflow",
        short_names=("jf",),
        scope="Namespaced",
        status_subresource=True,
        columns=(("Status", "string", ".status.state.phase", 0), ("Age", "date", AGE, 0)),
    ),
    Names(
        group="batch.volcano.sh",
        version="v1alpha1",
        kind="CronJob",
        plural="cronjobs",
        singular="cronjob",
        short_names=("cronvcjob", "cronvj"),
        scope="Namespaced",
        status_subresource=True,
    ),
    Names(
        group="flow.volcano.sh",
        version="v1alpha1",
        kind="JobTemplate",
        plural="jobtemplates",
        singular="jobtemplate",
        short_names=("jt",),
        scope="Namespaced",
        status_subresource=True,
    ),
    Names(
        group="topology.volcano.sh",
        version="v1alpha1",
        kind="HyperNode",
        plural="hypernodes",
        singular="hypernode",
        short_names=("hn",),
        scope="Cluster",
        status_subresource=True,
        columns=(
            ("Tier", "string", ".spec.tier", 0),
            ("TierName", "string", ".spec.tierName", 0),
            ("NodeCount", "integer", ".status.nodeCount", 0),
            ("Age", "date", AGE, 0),
        ),
    ),
    Names(
        group="nodeinfo.volcano.sh",
        version="v1alpha1",
        kind="Numatopology",
        plural="numatopologies",
        singular="numatopology",
        short_names=("numatopo",),
        scope="Cluster",
        status_subresource=False,
    ),
)


def test_one_crd_per_volcano_kind() -> None:
    assert sorted(CRDS) == sorted(n.kind for n in VOLCANO_NAMES)
    assert len(crd_documents()) == len(VOLCANO_NAMES)


def test_crd_yaml_is_the_same_documents_as_a_stream() -> None:
    assert list(yaml.safe_load_all(crd_yaml())) == crd_documents()


@pytest.mark.parametrize("want", VOLCANO_NAMES, ids=lambda n: n.kind)
def test_names_match_volcano(want: Names) -> None:
    doc = CRDS[want.kind]
    assert doc["apiVersion"] == "apiextensions.k8s.io/v1"
    assert doc["kind"] == "CustomResourceDefinition"
    assert doc["metadata"]["name"] == f"{want.plural}.{want.group}"
    spec = doc["spec"]
    assert spec["group"] == want.group
    assert spec["scope"] == want.scope
    names = spec["names"]
    assert names["kind"] == want.kind
    assert names["listKind"] == f"{want.kind}List"
    assert names["plural"] == want.plural
    assert names["singular"] == want.singular
    assert tuple(names.get("shortNames", ())) == want.short_names


@pytest.mark.parametrize("want", VOLCANO_NAMES, ids=lambda n: n.kind)
def test_one_served_storage_version(want: Names) -> None:
    versions = CRDS[want.kind]["spec"]["versions"]
    assert len(versions) == 1
    v = versions[0]
    assert (v["name"], v["served"], v["storage"]) == (want.version, True, True)


@pytest.mark.parametrize("want", VOLCANO_NAMES, ids=lambda n: n.kind)
def test_status_subresource_where_volcano_has_it(want: Names) -> None:
    sub = CRDS[want.kind]["spec"]["versions"][0].get("subresources") or {}
    assert ("status" in sub) is want.status_subresource
    if want.status_subresource:
        assert sub["status"] == {}


@pytest.mark.parametrize("want", VOLCANO_NAMES, ids=lambda n: n.kind)
def test_printer_columns(want: Names) -> None:
    cols = CRDS[want.kind]["spec"]["versions"][0].get("additionalPrinterColumns", [])
    got = tuple((c["name"], c["type"], c["jsonPath"], c.get("priority", 0)) for c in cols)
    assert got == want.columns
    for _, _, path, _ in want.columns:
        if not path.startswith(".metadata."):
            resolve(_schema(want.kind), path.lstrip("."))


# -- structural schema rules -------------------------------------------------------------------------------

# Kubernetes' resource.Quantity grammar, as the API server checks it.
_NUMBER = r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
QUANTITY_PATTERN = rf"^(\+|-)?{_NUMBER}(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?{_NUMBER}))?$"


_TYPES = {"object", "array", "string", "integer", "number", "boolean"}
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]


def _structural_errors(node: Schema, path: str) -> Iterator[str]:
    """Violations of the structural-schema rules (and of our own house style) below ``node``."""
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    if int_or_string:
        if "type" in node:
            yield f"{path}: int-or-string must not also set a type"
        if node.get("anyOf") != _INT_OR_STRING_ANY_OF:
            yield f"{path}: int-or-string must spell anyOf as [integer, string]"
    elif node.get("type") not in _TYPES:
        yield f"{path}: every property needs a type, got {node.get('type')!r}"
    elif "anyOf" in node or "oneOf" in node or "allOf" in node or "not" in node:
        yield f"{path}: logic junctors are only used for int-or-string"
    if preserve and node.get("type") != "object":
        yield f"{path}: preserve-unknown-fields only on objects"
    typ = node.get("type")
    if ("properties" in node or "additionalProperties" in node) and typ != "object":
        yield f"{path}: properties on a non-object"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}: properties and additionalProperties are exclusive"
    if typ == "array" and not isinstance(node.get("items"), Mapping):
        yield f"{path}: array without an items schema"
    if "items" in node and typ != "array":
        yield f"{path}: items on a non-array"
    if "additionalProperties" in node and not isinstance(node["additionalProperties"], Mapping):
        yield f"{path}: additionalProperties must be a schema"
    for key in node.get("required", []):
        if key not in node.get("properties", {}):
            yield f"{path}: required field {key!r} is not a property"
    for key in ("default", "enum"):
        if key in node:
            values = node[key] if key == "enum" else [node[key]]
            for v in values:
                for err in validate(v, node, f"{path}.{key}"):
                    yield f"{path}: {key} {v!r} does not validate: {err}"
    for name, child in node.get("properties", {}).items():
        yield from _structural_errors(child, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _structural_errors(node["additionalProperties"], f"{path}{{}}")
    if isinstance(node.get("items"), Mapping):
        yield from _structural_errors(node["items"], f"{path}[]")


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_schema_is_structural(kind: str) -> None:
    schema = _schema(kind)
    assert schema["type"] == "object"
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert schema["properties"]["apiVersion"]["type"] == "string"
    assert schema["properties"]["kind"]["type"] == "string"
    assert list(_structural_errors(schema, kind)) == []


def _walk(node: Schema, path: str) -> Iterator[tuple[str, Schema]]:
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _walk(node["additionalProperties"], f"{path}{{}}")
    if isinstance(node.get("items"), Mapping):
        yield from _walk(node["items"], f"{path}[]")


def _unbounded_above(
    node: Schema, path: str, unbounded: tuple[str, ...]
) -> Iterator[tuple[str, Schema, tuple[str, ...]]]:
    """Every node with the lists and maps at or above it that carry no maxItems / maxProperties."""
    if node.get("type") == "array" and "maxItems" not in node:
        unbounded = (*unbounded, path)
    if isinstance(node.get("additionalProperties"), Mapping) and "maxProperties" not in node:
        unbounded = (*unbounded, path)
    yield path, node, unbounded
    for name, child in node.get("properties", {}).items():
        yield from _unbounded_above(child, f"{path}.{name}", unbounded)
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _unbounded_above(node["additionalProperties"], f"{path}{{}}", unbounded)
    if isinstance(node.get("items"), Mapping):
        yield from _unbounded_above(node["items"], f"{path}[]", unbounded)


def _cel_rules() -> list[tuple[str, str, tuple[str, ...]]]:
    """(path, rule, unbounded lists and maps above it) for every CEL rule of every CRD."""
    return [
        (path, rule["rule"], unbounded)
        for kind in sorted(CRDS)
        for path, node, unbounded in _unbounded_above(_schema(kind), kind, ())
        for rule in node.get("x-kubernetes-validations", [])
    ]


def test_every_cel_rule_has_a_python_twin() -> None:
    rules = [rule for _, rule, _ in _cel_rules()]
    assert rules, "no CEL rules left: drop CEL_TWINS and this test"
    assert set(rules) == set(CEL_TWINS)


@pytest.mark.parametrize(("path", "rule", "unbounded"), _cel_rules(), ids=[p for p, _, _ in _cel_rules()])
def test_cel_rules_sit_below_bounded_lists_and_maps(path: str, rule: str, unbounded: tuple[str, ...]) -> None:
    """From 1.25 the API server multiplies a rule's cost by how many times it can run: through an unbounded
    list that is estimated from the 3 MB request limit, and v1.28 refused our HyperNode rule at 2.8x the
    budget. A bound on every list and map above a rule keeps the estimate far from the limit."""
    assert unbounded == (), f"{path}: {rule!r} runs under unbounded {unbounded}"


def test_hypernode_members_bound_admits_every_storable_object() -> None:
    """The bound exists for the cost estimate only: an object with more members would not fit in etcd
    (1.5 MiB per value by default) even with the smallest member there is, so no Volcano object is lost."""
    members = resolve(_schema("HyperNode"), "spec.members")
    smallest_member = len('{"type":"Node"},')
    assert members["maxItems"] * smallest_member > 3 * 2**20 // 2


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_resource_lists_are_int_or_string_quantities(kind: str) -> None:
    for path, node in _walk(_schema(kind), kind):
        if node.get("x-kubernetes-int-or-string"):
            assert node.get("pattern") == QUANTITY_PATTERN, path


def _without_defaults(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: _without_defaults(v) for k, v in node.items() if k != "default"}
    if isinstance(node, list):
        return [_without_defaults(v) for v in node]
    return node


def test_job_spec_is_the_same_everywhere_it_is_embedded() -> None:
    """A vcjob, a JobTemplate, a CronJob's jobTemplate and a JobFlow step's patch all carry Volcano's JobSpec:
    one schema, 4 copies. The patch's top-level fields have no defaults: a default there would override the
    template's value (queue, maxRetry) in every patch that does not mention it."""
    job = resolve(_schema("Job"), "spec")
    assert resolve(_schema("JobTemplate"), "spec") == job
    assert resolve(_schema("CronJob"), "spec.jobTemplate.spec") == job
    patch = resolve(_schema("JobFlow"), "spec.flows[].patch.jobSpec")
    assert _without_defaults(patch) == _without_defaults(job)
    assert not [k for k, v in patch["properties"].items() if "default" in v]


# ----------------------------------------------------------------------------------------------------------
# Schema lookups


def resolve(schema: Schema, path: str) -> Schema:
    """The schema node at a dotted path; ``[]`` steps into array items, a key under a map into its values."""
    node = schema
    for step in re.findall(r"[^.\[\]]+|\[\]", path):
        if step == "[]":
            assert node.get("type") == "array", f"{path}: {step} on a non-array"
            node = node["items"]
        elif step in node.get("properties", {}):
            node = node["properties"][step]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            raise AssertionError(f"{path}: no field {step!r} in the schema")
    return node


def _type_of(node: Schema) -> str:
    """A short name for what a schema node holds, to compare with what our code expects there."""
    if node.get("x-kubernetes-int-or-string"):
        return "quantity"
    typ = str(node.get("type"))
    if typ == "string" and node.get("format") == "date-time":
        return "time"
    if typ == "object" and isinstance(node.get("additionalProperties"), Mapping):
        return f"map[{_type_of(node['additionalProperties'])}]"
    if typ == "array":
        return f"[{_type_of(node['items'])}]"
    return typ


# ----------------------------------------------------------------------------------------------------------
# 2. Drift: what parse.py reads and what our controllers write exist in the schemas

Fields = tuple[tuple[str, str], ...]  # (path, type as _type_of names it)

_CONDITION: Fields = (
    ("status.conditions[].type", "string"),
    ("status.conditions[].status", "string"),
    ("status.conditions[].reason", "string"),
    ("status.conditions[].message", "string"),
    ("status.conditions[].lastTransitionTime", "time"),
    ("status.conditions[].transitionID", "string"),
)

# Model field -> the CRD fields parse_podgroup fills it from.
PODGROUP_READS: dict[str, Fields] = {
    "min_member": (("spec.minMember", "integer"),),
    "min_task_member": (("spec.minTaskMember", "map[integer]"),),
    "queue": (("spec.queue", "string"),),
    "priority_class": (("spec.priorityClassName", "string"),),
    "min_resources": (("spec.minResources", "map[quantity]"),),
    "phase": (("status.phase", "string"),),
    "conditions": _CONDITION,
    "running": (("status.running", "integer"),),
    "succeeded": (("status.succeeded", "integer"),),
    "failed": (("status.failed", "integer"),),
    "network_topology": (
        ("spec.networkTopology.mode", "string"),
        ("spec.networkTopology.highestTierAllowed", "integer"),
        ("spec.networkTopology.highestTierName", "string"),
    ),
    "sub_group_policy": (
        ("spec.subGroupPolicy[].name", "string"),
        ("spec.subGroupPolicy[].labelSelector.matchLabels", "map[string]"),
        ("spec.subGroupPolicy[].labelSelector.matchExpressions[].key", "string"),
        ("spec.subGroupPolicy[].labelSelector.matchExpressions[].operator", "string"),
        ("spec.subGroupPolicy[].labelSelector.matchExpressions[].values", "[string]"),
        ("spec.subGroupPolicy[].matchLabelKeys", "[string]"),
        ("spec.subGroupPolicy[].subGroupSize", "integer"),
        ("spec.subGroupPolicy[].minSubGroups", "integer"),
        ("spec.subGroupPolicy[].networkTopology.mode", "string"),
        ("spec.subGroupPolicy[].networkTopology.highestTierAllowed", "integer"),
        ("spec.subGroupPolicy[].networkTopology.highestTierName", "string"),
    ),
}
# Model fields that do not come from spec or status, and why.
PODGROUP_COMPUTED = {
    "namespace": "metadata.namespace",
    "name": "metadata.name",
    "uid": "metadata.uid",
    "created": "metadata.creationTimestamp",
    "implicit": "set for the one-pod group of a plain pod, which has no API object",
    "sla_waiting_time": "metadata.annotations[volcano.sh/sla-waiting-time] (the sla plugin)",
    "task_topology": "metadata.annotations[volcano.sh/task-topology-*] (the task-topology plugin)",
}

QUEUE_READS: dict[str, Fields] = {
    "weight": (("spec.weight", "integer"),),
    "capability": (("spec.capability", "map[quantity]"),),
    "deserved": (("spec.deserved", "map[quantity]"),),
    "guarantee": (("spec.guarantee.resource", "map[quantity]"),),
    "parent": (("spec.parent", "string"),),
    "reclaimable": (("spec.reclaimable", "boolean"),),
    "priority": (("spec.priority", "integer"),),
    "state": (("status.state", "string"),),
    "node_group_affinity": tuple(
        (f"spec.affinity.{part}.{when}DuringSchedulingIgnoredDuringExecution", "[string]")
        for part in ("nodeGroupAffinity", "nodeGroupAntiAffinity")
        for when in ("required", "preferred")
    ),
}
QUEUE_COMPUTED = {
    "name": "metadata.name",
    "created": "metadata.creationTimestamp",
    "hierarchy": "metadata.annotations[volcano.sh/hierarchy] (drf with enableHierarchy)",
    "hierarchy_weights": "metadata.annotations[volcano.sh/hierarchy-weights] (drf with enableHierarchy)",
    "node_group_limits": "metadata.annotations[volcano.sh/nodegroup-resource-limits] (the nodegroup plugin)",
}

# What our PodGroup and Queue controllers write, as Volcano's controllers do.
PODGROUP_STATUS_WRITES: Fields = (
    ("status.phase", "string"),
    *_CONDITION,
    ("status.running", "integer"),
    ("status.succeeded", "integer"),
    ("status.failed", "integer"),
)
QUEUE_STATUS_WRITES: Fields = (
    ("status.state", "string"),
    ("status.allocated", "map[quantity]"),
    ("status.pending", "integer"),
    ("status.running", "integer"),
    ("status.inqueue", "integer"),
    ("status.completed", "integer"),
    ("status.unknown", "integer"),
)

# ObjectMeta is validated by the API server itself (the CRD says only `type: object`).
OBJECT_META = {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "labels", "annotations"}

DRIFT = {
    "PodGroup": (model.PodGroup, PODGROUP_READS, PODGROUP_COMPUTED),
    "Queue": (model.Queue, QUEUE_READS, QUEUE_COMPUTED),
}


@pytest.mark.parametrize("kind", sorted(DRIFT))
def test_every_model_field_is_mapped(kind: str) -> None:
    """Adding a field to the model without saying where it comes from in the CRD fails here."""
    cls, reads, computed = DRIFT[kind]
    fields = {f.name for f in dataclasses.fields(cls)}
    assert not set(reads) & set(computed)
    assert fields == set(reads) | set(computed)


def _fields(table: Mapping[str, Fields]) -> Fields:
    return tuple(f for fs in table.values() for f in fs)


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("PodGroup", _fields(PODGROUP_READS)),
        ("Queue", _fields(QUEUE_READS)),
        ("PodGroup", PODGROUP_STATUS_WRITES),
        ("Queue", QUEUE_STATUS_WRITES),
    ],
    ids=["podgroup-reads", "queue-reads", "podgroup-status-writes", "queue-status-writes"],
)
def test_fields_resolve_with_their_type(kind: str, fields: Fields) -> None:
    schema = _schema(kind)
    for path, typ in fields:
        assert _type_of(resolve(schema, path)) == typ, path


def test_phase_and_state_enums_match_the_model() -> None:
    assert set(resolve(_schema("PodGroup"), "status.phase")["enum"]) == {p.value for p in model.GroupPhase}
    assert set(resolve(_schema("Queue"), "status.state")["enum"]) == {s.value for s in model.QueueState}


# -- what the parsers actually touch -----------------------------------------------------------------------


class _Recorder(Mapping[str, Any]):
    """A read-only view of a decoded object that records the path of every key looked up, present or not."""

    def __init__(self, data: Mapping[str, Any], path: str, seen: set[str]) -> None:
        self._data, self._path, self._seen = data, path, seen

    def __getitem__(self, key: str) -> Any:
        path = f"{self._path}.{key}" if self._path else key
        self._seen.add(path)
        return _record(self._data[key], path, self._seen)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _record(value: Any, path: str, seen: set[str]) -> Any:
    if isinstance(value, Mapping):
        return _Recorder(value, path, seen)
    if isinstance(value, list):
        return [_record(v, f"{path}[]", seen) for v in value]
    return value


def _normalise(schema: Schema, path: str) -> str:
    """``path`` cut where it enters a map's values: ``spec.minResources.cpu`` is ``spec.minResources``."""
    node, kept = schema, ""
    for step in re.findall(r"[^.\[\]]+|\[\]", path):
        if step == "[]":
            node = node["items"]
            kept += "[]"
            continue
        if step not in node.get("properties", {}):
            assert isinstance(node.get("additionalProperties"), Mapping), f"{path}: no field {step!r}"
            return kept
        node = node["properties"][step]
        kept = f"{kept}.{step}" if kept else step
    return kept


def _touched(parse: Callable[[Mapping[str, Any]], object], obj: Mapping[str, Any], kind: str) -> set[str]:
    seen: set[str] = set()
    parse(_Recorder(obj, "", seen))
    leaves = {p for p in seen if not any(q != p and q.startswith((p + ".", p + "[]")) for q in seen)}
    meta = {p for p in leaves if p.startswith("metadata.")}
    assert {p.split(".")[1] for p in meta} <= OBJECT_META
    schema = _schema(kind)
    return {_normalise(schema, p) for p in leaves - meta}


def test_parse_podgroup_reads_exactly_the_mapped_fields() -> None:
    touched = _touched(parse_podgroup, _doc(PODGROUP_WITH_STATUS), "PodGroup")
    assert touched == {path for path, _ in _fields(PODGROUP_READS)}


def test_parse_queue_reads_exactly_the_mapped_fields() -> None:
    touched = _touched(parse_queue, _doc(QUEUE_WITH_STATUS), "Queue")
    assert touched == {path for path, _ in _fields(QUEUE_READS)}


# ----------------------------------------------------------------------------------------------------------
# 3. Compatibility: Volcano users' manifests validate against our schemas

_PY_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}


def _one_selector(selector: Mapping[str, Any]) -> bool:
    return sum(key in selector for key in ("exactMatch", "regexMatch", "labelMatch")) == 1


# Every CEL rule in our CRDs, with what it means in Python. CEL's has(self.f) is "f is set".
CEL_TWINS: dict[str, Callable[[Any], bool]] = {
    "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0) + (has(self.labelMatch) ? 1 : 0) == 1": (
        _one_selector
    ),
}


def validate(value: Any, node: Schema, path: str = "") -> list[str]:
    """Errors of ``value`` against a structural schema: type, enum, bounds, pattern, required, unknown fields,
    and CEL rules through their ``CEL_TWINS``.

    A preserve-unknown-fields node stops the walk (the API server or another component validates what is
    below it), after its own rules.
    """
    errors: list[str] = []
    if node.get("x-kubernetes-int-or-string"):
        if not (_PY_TYPES["integer"](value) or isinstance(value, str)):
            return [f"{path}: expected an integer or a string, got {value!r}"]
    elif not _PY_TYPES[node["type"]](value):
        return [f"{path}: expected {node['type']}, got {value!r}"]
    rule_errors = [
        f"{path}: {rule['message']}"
        for rule in node.get("x-kubernetes-validations", [])
        if not CEL_TWINS[rule["rule"]](value)
    ]
    if node.get("x-kubernetes-preserve-unknown-fields"):
        return rule_errors
    if "enum" in node and value not in node["enum"]:
        errors.append(f"{path}: {value!r} is not one of {node['enum']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in node and value < node["minimum"]:
            errors.append(f"{path}: {value} is below {node['minimum']}")
        if "maximum" in node and value > node["maximum"]:
            errors.append(f"{path}: {value} is above {node['maximum']}")
    if isinstance(value, str):
        if "minLength" in node and len(value) < node["minLength"]:
            errors.append(f"{path}: shorter than {node['minLength']}")
        if "maxLength" in node and len(value) > node["maxLength"]:
            errors.append(f"{path}: longer than {node['maxLength']}")
        if "pattern" in node and not re.search(node["pattern"], value):
            errors.append(f"{path}: {value!r} does not match {node['pattern']}")
    if isinstance(value, list):
        if "minItems" in node and len(value) < node["minItems"]:
            errors.append(f"{path}: fewer than {node['minItems']} items")
        if "maxItems" in node and len(value) > node["maxItems"]:
            errors.append(f"{path}: more than {node['maxItems']} items")
        for i, item in enumerate(value):
            errors += validate(item, node["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        if "maxProperties" in node and len(value) > node["maxProperties"]:
            errors.append(f"{path}: more than {node['maxProperties']} properties")
        for key in node.get("required", []):
            if key not in value:
                errors.append(f"{path}.{key}: required")
        for key, item in value.items():
            if key in props:
                errors += validate(item, props[key], f"{path}.{key}")
            elif isinstance(extra, Mapping):
                errors += validate(item, extra, f"{path}.{key}")
            else:
                errors.append(f"{path}.{key}: unknown field")
    return rule_errors + errors


def with_defaults(value: Any, node: Schema) -> Any:
    """``value`` with the schema's defaults filled in, as the API server does on create."""
    if node.get("x-kubernetes-preserve-unknown-fields") or node.get("x-kubernetes-int-or-string"):
        return value
    if isinstance(value, dict):
        out = dict(value)
        for key, child in node.get("properties", {}).items():
            if key not in out and "default" in child:
                out[key] = child["default"]
            if key in out:
                out[key] = with_defaults(out[key], child)
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key in out.keys() - node.get("properties", {}).keys():
                out[key] = with_defaults(out[key], extra)
        return out
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [with_defaults(v, node["items"]) for v in value]
    return value


def _doc(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    assert isinstance(doc, dict)
    return doc


def validate_object(doc: Mapping[str, Any], kind: str) -> list[str]:
    """:func:`validate` for a whole object; its ObjectMeta is the API server's to check, not the CRD's."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not meta.get("name"):
        return [f"{kind}.metadata.name: required"]
    return validate({k: v for k, v in doc.items() if k != "metadata"}, _schema(kind), kind)


def _errors(text: str) -> list[str]:
    doc = _doc(text)
    return validate_object(doc, _kind_of(doc["apiVersion"], doc["kind"]))


QUEUE_FULL = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: research
spec:
  weight: 4
  reclaimable: false
  parent: root
  priority: 10
  capability:
    cpu: "64"
    memory: 256Gi
    nvidia.com/gpu: 8
  deserved:
    cpu: 32
    memory: 128Gi
  guarantee:
    resource:
      cpu: 8000m
      memory: 32Gi
  affinity:
    nodeGroupAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [a100, h100]
      preferredDuringSchedulingIgnoredDuringExecution: [h100]
    nodeGroupAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution: [t4]
      preferredDuringSchedulingIgnoredDuringExecution: [v100]
"""

QUEUE_WITH_STATUS = (
    QUEUE_FULL
    + """
status:
  state: Closing
  allocated:
    cpu: "10"
  pending: 1
  running: 2
  inqueue: 0
  completed: 3
  unknown: 0
"""
)

QUEUE_MINIMAL = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata:
  name: default
spec: {}
"""

PODGROUP_FULL = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: mpi-train
  namespace: team-a
  uid: 0d6b1b5c-3a59-4a1e-9a3b-7f9c2d1e4a10
  creationTimestamp: "2025-01-02T03:04:05Z"
spec:
  minMember: 5
  minTaskMember:
    master: 1
    worker: 4
  queue: research
  priorityClassName: high-priority
  minResources:
    cpu: 9500m
    memory: 20Gi
    nvidia.com/gpu: "4"
  networkTopology:
    mode: hard
    highestTierAllowed: 2
    highestTierName: spine
  subGroupPolicy:
    - name: worker
      labelSelector:
        matchLabels:
          volcano.sh/task-spec: worker
        matchExpressions:
          - key: volcano.sh/partition-id
            operator: In
            values: ["0", "1"]
      matchLabelKeys: [volcano.sh/partition-id]
      subGroupSize: 2
      minSubGroups: 2
      networkTopology:
        mode: hard
        highestTierAllowed: 1
        highestTierName: leaf
"""

PODGROUP_WITH_STATUS = (
    PODGROUP_FULL
    + """
status:
  phase: Inqueue
  running: 2
  succeeded: 1
  failed: 0
  conditions:
    - type: Unschedulable
      status: "True"
      reason: NotEnoughResources
      message: "3/5 tasks in gang unschedulable"
      lastTransitionTime: "2025-01-02T03:05:00Z"
      transitionID: 7a1c5d8e-0000-4000-8000-000000000001
"""
)

PODGROUP_MINIMAL = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: solo
  namespace: default
spec:
  minMember: 1
"""

VCJOB = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: tf-dist
  namespace: team-a
spec:
  schedulerName: volcano
  queue: research
  minAvailable: 3
  maxRetry: 5
  ttlSecondsAfterFinished: 600
  priorityClassName: high-priority
  plugins:
    env: []
    svc: ["--publish-not-ready-addresses=true"]
    ssh: []
  policies:
    - event: PodEvicted
      action: RestartJob
    - events: [PodFailed, TaskFailed]
      action: AbortJob
      timeout: 10m
  volumes:
    - mountPath: /data
      volumeClaim:
        accessModes: [ReadWriteOnce]
        resources:
          requests:
            storage: 10Gi
  tasks:
    - name: ps
      replicas: 1
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: tf
              image: tensorflow/tensorflow:2.15.0
              resources:
                requests: {cpu: "1", memory: 2Gi}
    - name: worker
      replicas: 2
      minAvailable: 2
      maxRetry: 2
      topologyPolicy: best-effort
      dependsOn:
        name: [ps]
      policies:
        - event: TaskCompleted
          action: CompleteJob
        - exitCode: 137
          action: RestartTask
      template:
        metadata:
          labels: {role: worker}
        spec:
          containers:
            - name: tf
              image: tensorflow/tensorflow:2.15.0
              resources:
                limits: {nvidia.com/gpu: 1}
"""

JOBTEMPLATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobTemplate
metadata:
  name: prepare
  namespace: team-a
spec:
  minAvailable: 1
  tasks:
    - name: main
      replicas: 1
      template:
        spec:
          containers:
            - name: main
              image: busybox:1.36
              command: [sh, -c, "echo prepared"]
"""

JOBFLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata:
  name: pipeline
  namespace: team-a
spec:
  jobRetainPolicy: delete
  flows:
    - name: prepare
    - name: train
      dependsOn:
        targets: [prepare]
        probe:
          taskStatusList:
            - taskName: main
              phase: Succeeded
      patch:
        jobSpec:
          queue: research
          tasks:
            - name: main
              replicas: 4
    - name: report
      dependsOn:
        targets: [train]
"""

COMMAND = """
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata:
  name: tf-dist-abort-x7k2p
  namespace: team-a
action: AbortJob
reason: UserRequest
message: aborted from vcctl
target:
  apiVersion: batch.volcano.sh/v1alpha1
  kind: Job
  name: tf-dist
  uid: 4f9a2c1e-1111-4222-8333-944455556666
  controller: true
"""

HYPERNODE_RACK = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: rack-1
spec:
  tier: 1
  tierName: rack
  members:
    - type: Node
      selector:
        exactMatch:
          name: node-0
    - type: Node
      selector:
        regexMatch:
          pattern: "^rack1-node-[0-9]+$"
"""

HYPERNODE_SPINE = """
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata:
  name: spine-a
spec:
  tier: 2
  members:
    - type: HyperNode
      selector:
        labelMatch:
          matchLabels:
            topology.example.com/spine: a
"""

# As Volcano's resource exporter writes it for a 2-socket node (cpus 0-3 on NUMA node 0, 4-7 on 1).
NUMATOPOLOGY = """\
apiVersion: nodeinfo.volcano.sh/v1alpha1
kind: Numatopology
metadata:
  name: node-0
spec:
  policies: {CPUManagerPolicy: static, TopologyManagerPolicy: single-numa-node}
  resReserved: {cpu: "1", memory: 1Gi}
  numares:
    cpu: {allocatable: "1-3,5-7", capacity: 8}
  cpuDetail:
    "0": {numa: 0, socket: 0, core: 0}
    "1": {numa: 0, socket: 0, core: 1}
    "2": {numa: 0, socket: 0, core: 2}
    "3": {numa: 0, socket: 0, core: 3}
    "4": {numa: 1, socket: 1, core: 0}
    "5": {numa: 1, socket: 1, core: 1}
    "6": {numa: 1, socket: 1, core: 2}
    "7": {numa: 1, socket: 1, core: 3}
"""

USER_MANIFESTS = {
    "queue": QUEUE_FULL,
    "queue-with-status": QUEUE_WITH_STATUS,
    "queue-minimal": QUEUE_MINIMAL,
    "podgroup": PODGROUP_FULL,
    "podgroup-with-status": PODGROUP_WITH_STATUS,
    "podgroup-minimal": PODGROUP_MINIMAL,
    "vcjob": VCJOB,
    "jobtemplate": JOBTEMPLATE,
    "jobflow": JOBFLOW,
    "command": COMMAND,
    "hypernode-rack": HYPERNODE_RACK,
    "hypernode-spine": HYPERNODE_SPINE,
    "numatopology": NUMATOPOLOGY,
}


@pytest.mark.parametrize("name", sorted(USER_MANIFESTS))
def test_volcano_manifest_validates(name: str) -> None:
    assert _errors(USER_MANIFESTS[name]) == []


@pytest.mark.parametrize("name", sorted(USER_MANIFESTS))
def test_defaulted_manifest_still_validates(name: str) -> None:
    doc = _doc(USER_MANIFESTS[name])
    kind = _kind_of(doc["apiVersion"], doc["kind"])
    assert validate_object(with_defaults(doc, _schema(kind)), kind) == []


# The walker must be able to say no, or the tests above prove nothing.
INVALID = {
    "queue weight below 1": (QUEUE_MINIMAL.replace("spec: {}", "spec: {weight: 0}"), ".spec.weight"),
    "queue bad quantity": (QUEUE_MINIMAL.replace("spec: {}", "spec: {capability: {cpu: 1.5.3}}"), "cpu"),
    "queue unknown field": (QUEUE_MINIMAL.replace("spec: {}", "spec: {wieght: 2}"), ".spec.wieght"),
    "queue reclaimable as string": (
        QUEUE_MINIMAL.replace("spec: {}", 'spec: {reclaimable: "yes"}'),
        ".spec.reclaimable",
    ),
    "queue bad state": (QUEUE_MINIMAL + "status: {state: Paused}\n", ".status.state"),
    "podgroup negative minMember": (PODGROUP_MINIMAL.replace("minMember: 1", "minMember: -1"), ".minMember"),
    "podgroup bad queue name": (PODGROUP_MINIMAL.replace("minMember: 1", "queue: Team_A"), ".spec.queue"),
    "podgroup bad phase": (PODGROUP_MINIMAL + "status: {phase: Scheduled}\n", ".status.phase"),
    "vcjob no tasks": (VCJOB.split("  tasks:")[0] + "  tasks: []\n", ".spec.tasks"),
    "vcjob bad event": (VCJOB.replace("event: PodEvicted", "event: PodGone"), ".event"),
    "vcjob bad task name": (VCJOB.replace("- name: ps", "- name: PS"), ".name"),
    "vcjob volume without mountPath": (
        VCJOB.replace("- mountPath: /data", "- volumeClaimName: x"),
        "mountPath",
    ),
    "jobflow step without name": (JOBFLOW.replace("- name: prepare\n", "- {}\n", 1), ".name"),
    "command target without uid": (
        COMMAND.replace("  uid: 4f9a2c1e-1111-4222-8333-944455556666\n", ""),
        "uid",
    ),
    "hypernode without tier": (HYPERNODE_SPINE.replace("  tier: 2\n", ""), ".spec.tier"),
    "hypernode bad member type": (HYPERNODE_SPINE.replace("type: HyperNode", "type: Rack"), ".type"),
    "hypernode two selectors": (
        HYPERNODE_RACK.replace(
            "          name: node-0\n", "          name: node-0\n        regexMatch: {pattern: x}\n"
        ),
        ".selector: set exactly one",
    ),
    "hypernode empty selector": (
        HYPERNODE_SPINE.split("      selector:")[0] + "      selector: {}\n",
        ".selector: set exactly one",
    ),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_manifest_is_rejected(case: str) -> None:
    text, where = INVALID[case]
    errors = _errors(text)
    assert errors, case
    assert any(where in e for e in errors), errors


def test_hypernode_members_over_the_bound_are_rejected() -> None:
    doc = _doc(HYPERNODE_SPINE)
    limit = resolve(_schema("HyperNode"), "spec.members")["maxItems"]
    doc["spec"]["members"] = [{"type": "HyperNode"}] * limit
    assert validate_object(doc, "HyperNode") == []
    doc["spec"]["members"].append({"type": "HyperNode"})
    assert validate_object(doc, "HyperNode") == [f"HyperNode.spec.members: more than {limit} items"]


# -- and they parse to what a Volcano user means -----------------------------------------------------------

GI = 2**30


def test_queue_parses() -> None:
    q = parse_queue(_doc(QUEUE_WITH_STATUS))
    assert q == model.Queue(
        name="research",
        weight=4,
        capability={"cpu": 64_000, "memory": 256 * GI, "nvidia.com/gpu": 8},
        deserved={"cpu": 32_000, "memory": 128 * GI},
        guarantee={"cpu": 8_000, "memory": 32 * GI},
        parent="root",
        reclaimable=False,
        priority=10,
        state=model.QueueState.CLOSING,
        node_group_affinity=model.NodeGroupAffinity(
            required=("a100", "h100"), preferred=("h100",), anti_required=("t4",), anti_preferred=("v100",)
        ),
    )


def test_podgroup_parses() -> None:
    pg = parse_podgroup(_doc(PODGROUP_WITH_STATUS))
    assert pg == model.PodGroup(
        namespace="team-a",
        name="mpi-train",
        uid="0d6b1b5c-3a59-4a1e-9a3b-7f9c2d1e4a10",
        min_member=5,
        min_task_member={"master": 1, "worker": 4},
        queue="research",
        priority_class="high-priority",
        min_resources={"cpu": 9_500, "memory": 20 * GI, "nvidia.com/gpu": 4},
        phase=model.GroupPhase.INQUEUE,
        conditions=(
            model.Condition(
                type="Unschedulable",
                status="True",
                reason="NotEnoughResources",
                message="3/5 tasks in gang unschedulable",
                last_transition_time="2025-01-02T03:05:00Z",
                transition_id="7a1c5d8e-0000-4000-8000-000000000001",
            ),
        ),
        running=2,
        succeeded=1,
        failed=0,
        created="2025-01-02T03:04:05Z",
        network_topology=model.NetworkTopology(hard=True, highest_tier=2, highest_tier_name="spine"),
        sub_group_policy=(
            model.SubGroupPolicy(
                name="worker",
                selector=model.LabelSelector(
                    match_labels=(("volcano.sh/task-spec", "worker"),),
                    match_expressions=(
                        model.Requirement(key="volcano.sh/partition-id", operator="In", values=("0", "1")),
                    ),
                ),
                match_label_keys=("volcano.sh/partition-id",),
                size=2,
                min_groups=2,
                network_topology=model.NetworkTopology(hard=True, highest_tier=1, highest_tier_name="leaf"),
            ),
        ),
    )


@pytest.mark.parametrize(
    ("kind", "text", "parse"),
    [
        ("Queue", QUEUE_MINIMAL, parse_queue),
        ("Queue", QUEUE_FULL, parse_queue),
        ("PodGroup", PODGROUP_MINIMAL, parse_podgroup),
        ("PodGroup", PODGROUP_FULL, parse_podgroup),
    ],
    ids=["queue-minimal", "queue-full", "podgroup-minimal", "podgroup-full"],
)
def test_parser_defaults_agree_with_schema_defaults(
    kind: str, text: str, parse: Callable[[Mapping[str, Any]], object]
) -> None:
    """An object read before and after the API server fills in the schema defaults means the same thing."""
    doc = _doc(text)
    assert parse(doc) == parse(with_defaults(doc, _schema(kind)))


def test_schema_defaults_that_the_parsers_rely_on() -> None:
    queue = with_defaults(_doc(QUEUE_MINIMAL), _schema("Queue"))
    assert queue["spec"]["weight"] == 1
    assert queue["spec"]["reclaimable"] is True
    pg = with_defaults(_doc(PODGROUP_MINIMAL), _schema("PodGroup"))
    assert pg["spec"]["queue"] == "default"
