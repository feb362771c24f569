"""Queue admission (``scheduling.volcano.sh/v1beta1`` ``queues``): defaults on CREATE, checks on every write.

Mirrors Volcano's queue webhooks.

mutate (CREATE): ``spec.weight`` 1 when absent or 0, ``spec.reclaimable`` true when absent; with the legacy
``volcano.sh/hierarchy`` / ``volcano.sh/hierarchy-weights`` annotations both set and the path not starting
at ``root``, both are prefixed with the root level (``root/…``, ``1/…``). Like Volcano, ``spec.parent`` is
not defaulted: an empty parent already means "child of root".

validate, CREATE and UPDATE (after the dispatch's checks of the object's nesting depth and size,
:mod:`admission.dispatch`): ``spec`` is an object; ``spec.weight`` within Volcano's CRD bounds 1..65535; every
quantity of ``capability``, ``deserved`` and ``guarantee.resource`` valid and within the limits; per resource
guarantee <= deserved <= capability (a guaranteed resource must also be deserved; an uncapped resource is
unlimited); ``status.state`` Open or Closed (on UPDATE the state the controller already wrote is accepted as
it is); hierarchy annotations well-formed; ``spec.affinity`` and ``volcano.sh/nodegroup-resource-limits``
well-formed (:mod:`admission.queue_nodegroups`). Then the hierarchy (:mod:`admission.queue_tree`): on CREATE
or a parent change the parent chain, on CREATE or a change of parent or resources the resource bounds against
parent and children. ``root``'s resources cannot change.

validate_delete: ``root`` and the default queue stay; a queue with child queues or with PodGroups cannot go
(Volcano checks children; PodGroups are our addition so no group is left pointing at a missing queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from admission.base import PatchOp, annotations_of, name_of, pointer
from admission.lookup import Lookup
from admission.queue_nodegroups import node_group_errors
from admission.queue_tree import check_parent, check_resources
from extender.api import labels as L
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.quantity_checks import Quantities, check_resource_list
from extender.core.validation import FieldError, Obj, is_int, mapping, shown, string

HIERARCHY_ANNOTATION: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION: Final = "volcano.sh/hierarchy-weights"

MAX_WEIGHT: Final = 65535
_STATES: Final = ("Open", "Closed")


def mutate(obj: Obj, lookup: Lookup) -> list[PatchOp]:
    """Defaults for a new Queue."""
    ops: list[PatchOp] = []
    ann = annotations_of(obj)
    hierarchy, weights = ann.get(HIERARCHY_ANNOTATION), ann.get(HIERARCHY_WEIGHTS_ANNOTATION)
    legacy = isinstance(hierarchy, str) and isinstance(weights, str) and bool(hierarchy) and bool(weights)
    if legacy and not str(hierarchy).startswith(L.ROOT_QUEUE):
        ops.append(
            {
                "op": "add",
                "path": pointer("metadata", "annotations", HIERARCHY_ANNOTATION),
                "value": f"{L.ROOT_QUEUE}/{hierarchy}",
            }
        )
        ops.append(
            {
                "op": "add",
                "path": pointer("metadata", "annotations", HIERARCHY_WEIGHTS_ANNOTATION),
                "value": f"1/{weights}",
            }
        )
    spec = obj.get("spec")
    if spec is None:
        ops.append({"op": "add", "path": "/spec", "value": {"reclaimable": True, "weight": 1}})
        return ops
    if not isinstance(spec, Mapping):  # leave it to validation to report
        return ops
    if spec.get("reclaimable") is None:
        ops.append({"op": "add", "path": "/spec/reclaimable", "value": True})
    if spec.get("weight") is None or (is_int(spec["weight"]) and spec["weight"] == 0):
        ops.append({"op": "add", "path": "/spec/weight", "value": 1})
    return ops


def validate(new: Obj, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS) -> list[FieldError]:
    """Why this Queue write must be refused; empty when it may proceed."""
    name = name_of(new)
    spec = mapping(new, "spec")
    errors, lists = _spec_errors(new, old, limits)
    if errors:
        return errors
    if old is None:
        resources_changed = True
    else:
        old_errors, old_lists = _resource_lists(mapping(old, "spec"), limits)
        resources_changed = bool(old_errors) or any(
            a.exact != b.exact for a, b in zip(old_lists, lists, strict=True)
        )
    if old is not None and name == L.ROOT_QUEUE and resources_changed:
        return [
            FieldError(
                field="spec",
                message="the capability, deserved and guarantee of the root queue cannot be changed",
            )
        ]
    parent = string(spec, "parent")
    parent_changed = old is None or string(mapping(old, "spec"), "parent") != parent
    if parent_changed:
        errors = check_parent(name, parent, lookup)
        if errors:
            return errors
    if name != L.ROOT_QUEUE and (parent_changed or resources_changed):
        cap, des, gua = lists
        errors = check_resources(
            name=name,
            parent=parent,
            capability=cap.units(),
            deserved=des.units(),
            guarantee=gua.units(),
            lookup=lookup,
        )
    return errors


def validate_delete(old: Obj, lookup: Lookup) -> list[FieldError]:
    """Why this Queue must not be deleted; empty when it may."""
    name = name_of(old)
    if name == L.ROOT_QUEUE:
        return [FieldError(field="metadata.name", message="the root queue cannot be deleted")]
    if name in (L.DEFAULT_QUEUE, lookup.default_queue):
        return [FieldError(field="metadata.name", message=f"the default queue {name!r} cannot be deleted")]
    children = sorted(q.name for q in lookup.queue_children(name) if q.name != name)
    if children:
        return [
            FieldError(
                field="metadata.name",
                message=f"queue {name!r} still has child queues ({', '.join(children)}); "
                "delete them or change their spec.parent first",
            )
        ]
    if lookup.queue_has_podgroups(name):
        return [
            FieldError(
                field="metadata.name",
                message=f"queue {name!r} still has PodGroups; delete them (or the jobs that own them) first",
            )
        ]
    return []


Lists = tuple[Quantities, Quantities, Quantities]


def _resource_lists(spec: Obj, limits: Limits) -> tuple[list[FieldError], Lists]:
    """capability, deserved and guarantee of a spec, with the errors of their entries."""
    cap, e1 = check_resource_list(spec.get("capability"), "spec.capability", limits)
    des, e2 = check_resource_list(spec.get("deserved"), "spec.deserved", limits)
    guarantee = spec.get("guarantee")
    e0: list[FieldError] = []
    if guarantee is not None and not isinstance(guarantee, Mapping):
        e0 = [FieldError(field="spec.guarantee", message="must be an object with a resource map")]
    gua, e3 = check_resource_list(
        mapping(spec, "guarantee").get("resource"), "spec.guarantee.resource", limits
    )
    return e1 + e2 + e0 + e3, (cap, des, gua)


def _spec_errors(new: Obj, old: Obj | None, limits: Limits) -> tuple[list[FieldError], Lists]:
    """Checks of the object alone: shapes, quantities, their order, state, hierarchy annotations."""
    raw_spec = new.get("spec")
    if raw_spec is not None and not isinstance(raw_spec, Mapping):
        return [FieldError(field="spec", message="must be an object")], (
            Quantities(),
            Quantities(),
            Quantities(),
        )
    spec = mapping(new, "spec")
    errors: list[FieldError] = []
    weight = spec.get("weight")
    if weight is not None and (not is_int(weight) or not 1 <= weight <= MAX_WEIGHT):
        errors.append(
            FieldError(
                field="spec.weight", message=f"must be an integer from 1 to {MAX_WEIGHT}, got {shown(weight)}"
            )
        )
    if spec.get("reclaimable") is not None and not isinstance(spec["reclaimable"], bool):
        errors.append(FieldError(field="spec.reclaimable", message="must be true or false"))
    parent = spec.get("parent")
    if parent is not None and not isinstance(parent, str):
        errors.append(FieldError(field="spec.parent", message="must be a queue name"))
    list_errors, (cap, des, gua) = _resource_lists(spec, limits)
    errors += list_errors
    errors += _order_errors(cap, des, gua)
    errors += _state_errors(new, old)
    errors += _hierarchy_errors(new)
    errors += node_group_errors(new, limits)
    return errors, (cap, des, gua)


def _order_errors(cap: Quantities, des: Quantities, gua: Quantities) -> list[FieldError]:
    errors: list[FieldError] = []
    for r, g in sorted(gua.exact.items()):
        d = des.exact.get(r)
        if d is None:
            errors.append(
                FieldError(
                    field=f"spec.deserved[{r}]",
                    message=f"must be set and at least spec.guarantee.resource[{r}] {gua.text[r]}",
                )
            )
        elif d < g:
            errors.append(
                FieldError(
                    field=f"spec.deserved[{r}]",
                    message=f"{des.text[r]} is below spec.guarantee.resource[{r}] {gua.text[r]}; "
                    "deserved must be at least the guarantee",
                )
            )
    for r, d in sorted(des.exact.items()):
        c = cap.exact.get(r)
        if c is not None and d > c:
            errors.append(
                FieldError(
                    field=f"spec.deserved[{r}]",
                    message=f"{des.text[r]} is above spec.capability[{r}] {cap.text[r]}; "
                    "deserved must be at most the capability",
                )
            )
    return errors


def _state_errors(new: Obj, old: Obj | None) -> list[FieldError]:
    state = mapping(new, "status").get("state")
    if state is None or state == "" or state in _STATES:
        return []
    if old is not None and state == mapping(old, "status").get("state"):
        return []  # written by the queue controller through the status subresource
    return [FieldError(field="status.state", message=f"must be Open or Closed, got {shown(state)}")]


def _hierarchy_errors(obj: Obj) -> list[FieldError]:
    ann = annotations_of(obj)
    hierarchy = ann.get(HIERARCHY_ANNOTATION) or ""
    weights = ann.get(HIERARCHY_WEIGHTS_ANNOTATION) or ""
    if not hierarchy and not weights:
        return []
    at = f"metadata.annotations[{HIERARCHY_WEIGHTS_ANNOTATION}]"
    if not isinstance(hierarchy, str) or not isinstance(weights, str):
        return [FieldError(field=at, message="hierarchy annotations must be strings")]
    levels, parts = hierarchy.split("/"), weights.split("/")
    if len(levels) != len(parts):
        return [
            FieldError(
                field=at,
                message=f"{shown(weights)} has {len(parts)} weights but {HIERARCHY_ANNOTATION} "
                f"{shown(hierarchy)} has {len(levels)} levels; give one weight per level",
            )
        ]
    for w in parts:
        try:
            value = float(w)
        except ValueError:
            value = float("nan")
        if not value > 0:  # also rejects NaN
            return [
                FieldError(
                    field=at, message=f"weight {shown(w)} in {shown(weights)} must be a number above 0"
                )
            ]
    return []
