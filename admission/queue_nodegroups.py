"""Queue admission for node groups: ``spec.affinity`` and the ``volcano.sh/nodegroup-resource-limits``
annotation (read by the nodegroup scheduler plugin, :mod:`extender.plugins.nodegroup`).

- ``spec.affinity`` holds ``nodeGroupAffinity`` and ``nodeGroupAntiAffinity``, each with
  ``requiredDuringSchedulingIgnoredDuringExecution`` / ``preferredDuringSchedulingIgnoredDuringExecution``
  lists of node group names (values of the ``volcano.sh/nodegroup-name`` node label, so label values);
  a group both required and required-not (anti-affinity) is a contradiction the user must resolve.
- The annotation is JSON mapping a group name to a ResourceList of valid, non-negative quantities.

Volcano's webhook does not check either; the scheduler would refuse every node to a queue with a bad
annotation, so it is refused here, where the user can see why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from admission.base import annotations_of
from extender.api import labels as L
from extender.api.limits import Limits
from extender.core.names import is_label_value
from extender.core.quantity_checks import check_resource_list
from extender.core.validation import FieldError, Obj, mapping, shown

_PARTS: Final = ("nodeGroupAffinity", "nodeGroupAntiAffinity")
_WHEN: Final = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)


def node_group_errors(obj: Obj, limits: Limits) -> list[FieldError]:
    """Every problem of ``spec.affinity`` and the node group limits annotation of Queue ``obj``."""
    return _affinity_errors(mapping(obj, "spec")) + _limit_errors(obj, limits)


def _affinity_errors(spec: Obj) -> list[FieldError]:
    raw = spec.get("affinity")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field="spec.affinity", message="must be an object")]
    errors: list[FieldError] = []
    unknown = sorted(set(raw) - set(_PARTS))
    if unknown:
        errors.append(
            FieldError(
                field="spec.affinity", message=f"unknown field(s) {unknown}; known: {', '.join(_PARTS)}"
            )
        )
    lists: dict[tuple[str, str], list[str]] = {}
    for part in _PARTS:
        rules = raw.get(part)
        if rules is None:
            continue
        at = f"spec.affinity.{part}"
        if not isinstance(rules, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        for when in _WHEN:
            names = rules.get(when)
            if names is None:
                continue
            if not isinstance(names, list):
                errors.append(FieldError(field=f"{at}.{when}", message="must be a list of node group names"))
                continue
            good: list[str] = []
            for i, name in enumerate(names):
                if not isinstance(name, str) or not is_label_value(name):
                    errors.append(
                        FieldError(
                            field=f"{at}.{when}[{i}]",
                            message=f"{shown(name)} is not a node group name (a {L.NODEGROUP_LABEL} label "
                            "value: up to 63 letters, digits, '-', '_' or '.', starting and ending "
                            "with a letter or digit)",
                        )
                    )
                else:
                    good.append(name)
            lists[(part, when)] = good
    both = sorted(set(lists.get((_PARTS[0], _WHEN[0]), ())) & set(lists.get((_PARTS[1], _WHEN[0]), ())))
    if both:
        errors.append(
            FieldError(
                field=f"spec.affinity.{_PARTS[1]}.{_WHEN[0]}",
                message=f"node group(s) {', '.join(both)} are both required and forbidden; "
                "remove them from one of the two lists",
            )
        )
    return errors


def _limit_errors(obj: Obj, limits: Limits) -> list[FieldError]:
    raw = annotations_of(obj).get(L.NODEGROUP_LIMITS_ANNOTATION)
    if raw is None or raw == "":
        return []
    at = f"metadata.annotations[{L.NODEGROUP_LIMITS_ANNOTATION}]"
    example = '{"a100": {"nvidia.com/gpu": "16", "cpu": "64"}}'
    if not isinstance(raw, str):
        return [FieldError(field=at, message="must be a string")]
    try:
        doc = json.loads(raw)
    except ValueError as e:
        return [FieldError(field=at, message=f"is not JSON ({e}); write it like {example}")]
    if not isinstance(doc, dict):
        return [FieldError(field=at, message=f"must map node group names to resource lists, like {example}")]
    errors: list[FieldError] = []
    for group, resources in doc.items():
        if not is_label_value(group):
            errors.append(
                FieldError(field=f"{at}[{group}]", message=f"{shown(group)} is not a node group name")
            )
        _, problems = check_resource_list(resources, f"{at}[{group}]", limits)
        errors += problems
    return errors
