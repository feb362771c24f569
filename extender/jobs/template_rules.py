"""The pod template of each task of a vcjob: a sanity check rather than Kubernetes' full pod validation
(which kube-apiserver applies anyway when the job's pods are created), and Volcano's rule for a NUMA
``topologyPolicy`` (``admit_job.go``'s validateTaskTopoPolicy).

Checked: containers with a unique label for a name and an image, valid resource quantities
(:mod:`extender.core.quantity_checks`) with each request at most its limit, a known ``restartPolicy``, and the
shapes of the lists pumice edits when it builds pods (volumes, env, volume mounts, ports: lists of objects),
so that pod building never meets a shape it cannot edit. Never raises; reports every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from extender.api.limits import Limits
from extender.core.names import LABEL_RULE, is_label
from extender.core.quantity_checks import check_resource_list
from extender.core.validation import (
    FieldError,
    Obj,
    mapping,
    object_list_errors,
    shown,
    string_map_errors,
)

NUMA_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")


def template_errors(task: Obj, at: str, limits: Limits) -> list[FieldError]:
    """Sanity of a task's pod template, and Volcano's rule for a NUMA ``topologyPolicy``."""
    raw = task.get("template")
    if raw is not None and not isinstance(raw, Mapping):
        return [FieldError(field=f"{at}.template", message="must be a pod template (metadata and spec)")]
    template = mapping(task, "template")
    errors: list[FieldError] = []
    meta = template.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        errors.append(FieldError(field=f"{at}.template.metadata", message="must be an object"))
    elif meta is not None:
        errors += string_map_errors(meta, "labels", f"{at}.template.metadata")
        errors += string_map_errors(meta, "annotations", f"{at}.template.metadata")
    spec_raw = template.get("spec")
    if spec_raw is not None and not isinstance(spec_raw, Mapping):
        return [*errors, FieldError(field=f"{at}.template.spec", message="must be a pod spec")]
    spec = mapping(template, "spec")
    where = f"{at}.template.spec"
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errors.append(FieldError(field=f"{where}.containers", message="must list at least one container"))
    seen: dict[str, str] = {}
    for kind in ("initContainers", "containers"):
        if kind not in spec or (kind == "containers" and not isinstance(containers, list)):
            continue
        items = spec[kind]
        if not isinstance(items, list):
            errors.append(FieldError(field=f"{where}.{kind}", message="must be a list of containers"))
            continue
        for j, c in enumerate(items):
            errors += _container_errors(c, f"{where}.{kind}[{j}]", seen, limits)
    errors += object_list_errors(spec, "volumes", where, "volumes")
    errors += check_resource_list(spec.get("overhead"), f"{where}.overhead", limits)[1]
    policy = spec.get("restartPolicy")
    if policy not in (None, "", *RESTART_POLICIES):
        errors.append(
            FieldError(
                field=f"{where}.restartPolicy",
                message=f"must be one of {', '.join(RESTART_POLICIES)}, got {shown(policy)}",
            )
        )
    return errors + _numa_errors(task, at, spec, limits)


def _container_errors(c: object, at: str, seen: dict[str, str], limits: Limits) -> list[FieldError]:
    if not isinstance(c, Mapping):
        return [FieldError(field=at, message="must be an object")]
    errors: list[FieldError] = []
    name = c.get("name")
    if not is_label(name):
        errors.append(FieldError(field=f"{at}.name", message=f"{LABEL_RULE}, got {shown(name)}"))
    elif name in seen:
        errors.append(
            FieldError(
                field=f"{at}.name",
                message=f"duplicate container name {name!r} (also {seen[str(name)]}.name); "
                "container names must be unique in a pod",
            )
        )
    else:
        seen[str(name)] = at
    image = c.get("image")
    if not isinstance(image, str) or not image.strip():
        errors.append(FieldError(field=f"{at}.image", message="required; name the container image to run"))
    for key, what in (
        ("env", "environment variables"),
        ("volumeMounts", "volume mounts"),
        ("ports", "ports"),
    ):
        errors += object_list_errors(c, key, at, what)
    raw_resources = c.get("resources")
    if raw_resources is not None and not isinstance(raw_resources, Mapping):
        errors.append(
            FieldError(field=f"{at}.resources", message="must be an object with requests and limits")
        )
        return errors
    resources = mapping(c, "resources")
    requests, e1 = check_resource_list(resources.get("requests"), f"{at}.resources.requests", limits)
    limits_, e2 = check_resource_list(resources.get("limits"), f"{at}.resources.limits", limits)
    errors += e1 + e2
    for r, q in sorted(requests.exact.items()):
        limit = limits_.exact.get(r)
        if limit is not None and q > limit:
            errors.append(
                FieldError(
                    field=f"{at}.resources.requests[{r}]",
                    message=f"{requests.text[r]} is above the limit {limits_.text[r]}; "
                    "a request must be at most its limit",
                )
            )
    return errors


def _numa_errors(task: Obj, at: str, spec: Obj, limits: Limits) -> list[FieldError]:
    """Volcano's validateTaskTopoPolicy: with a NUMA policy other than none, every container asks for a
    whole number of CPUs (its requests, or its limits when it has no requests)."""
    policy = task.get("topologyPolicy")
    if policy in (None, "", "none"):
        return []
    if policy not in NUMA_POLICIES:
        return [
            FieldError(
                field=f"{at}.topologyPolicy",
                message=f"must be one of {', '.join(NUMA_POLICIES)}, got {shown(policy)}",
            )
        ]
    errors: list[FieldError] = []
    for kind in ("containers", "initContainers"):
        items = spec.get(kind)
        if not isinstance(items, list):
            continue
        for j, c in enumerate(items):
            resources = mapping(c, "resources")
            source = "requests" if mapping(resources, "requests") else "limits"
            cpus, bad = check_resource_list(mapping(resources, source), "", limits)
            cpu = cpus.exact.get("cpu")
            if bad or cpu is None or cpu.denominator != 1 or cpu < 1:
                errors.append(
                    FieldError(
                        field=f"{at}.template.spec.{kind}[{j}].resources.{source}[cpu]",
                        message=f"topologyPolicy {policy} needs a whole number of CPUs (such as 1 or 2) "
                        "for every container",
                    )
                )
    return errors
