"""A flow entry's ``patch.jobSpec`` merged onto its JobTemplate's job spec.

Volcano's design for JobTemplate parameter overriding (docs/design/jobflow/job-template-parameter-
overriding.md) fixes a merge strategy per field; this module is that table, and nothing else:

- job level: ``tasks`` merged by ``name`` (recursively), ``plugins`` merged by key, ``volumes`` merged by
  ``mountPath`` (a job volume has no name); every other field (``schedulerName``, ``queue``, ``minAvailable``,
  ``maxRetry``, ``policies``, ``networkTopology``, ...) replaced as a whole.
- task level: ``template`` merged as a pod template (below); other fields replaced.
- pod level: ``containers``/``initContainers`` and ``volumes`` by ``name``, ``tolerations`` by ``key``,
  ``hostAliases`` by ``ip``, ``nodeSelector`` key by key; ``affinity``, ``securityContext``,
  ``restartPolicy`` and the rest replaced. Template ``metadata.labels``/``annotations`` key by key.
- container level: ``env`` by ``name``, ``volumeMounts`` by ``mountPath``, ``ports`` by
  ``containerPort``, ``resources`` requests and limits key by key; ``image``, ``command``, ``args``,
  probes and the rest replaced.

An element of a keyed list whose key matches is merged into the template's element, one without a match is
appended. A patch task without a ``name`` applies to the template's only task (the design's own examples
write it that way); with several tasks it is refused. The template is never modified: the result is new.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from extender.core.errors import InvalidObject

Obj = Mapping[str, Any]
Merge = Callable[[Any, Any, str], Any]


def _replace(_old: Any, new: Any, _where: str) -> Any:
    return copy.deepcopy(new)


def _map_merge(old: Any, new: Any, where: str) -> Any:
    """Key by key, values replaced."""
    if not isinstance(new, Mapping):
        raise InvalidObject(f"{where}: expected an object")
    out = dict(old) if isinstance(old, Mapping) else {}
    out.update(copy.deepcopy(dict(new)))
    return out


def _fields(rules: Mapping[str, Merge]) -> Merge:
    """Merge two objects field by field with ``rules``; fields without a rule are replaced."""

    def merge(old: Any, new: Any, where: str) -> Any:
        if not isinstance(new, Mapping):
            raise InvalidObject(f"{where}: expected an object")
        out = copy.deepcopy(dict(old)) if isinstance(old, Mapping) else {}
        for k, v in new.items():
            if v is None:
                continue
            rule = rules.get(k, _replace)
            out[k] = rule(out.get(k), v, f"{where}.{k}")
        return out

    return merge


def _by_key(key: str, item: Merge) -> Merge:
    """A list merged by ``key``: matching elements merged with ``item``, the others appended."""

    def merge(old: Any, new: Any, where: str) -> Any:
        if not isinstance(new, list):
            raise InvalidObject(f"{where}: expected a list")
        out = [copy.deepcopy(e) for e in old] if isinstance(old, list) else []
        for i, e in enumerate(new):
            if not isinstance(e, Mapping):
                raise InvalidObject(f"{where}[{i}]: expected an object")
            k = e.get(key)
            at = next(
                (
                    j
                    for j, o in enumerate(out)
                    if k is not None and isinstance(o, Mapping) and o.get(key) == k
                ),
                None,
            )
            if at is None:
                out.append(copy.deepcopy(dict(e)))
            else:
                out[at] = item(out[at], e, f"{where}[{i}]")
        return out

    return merge


_RESOURCES = _fields({"requests": _map_merge, "limits": _map_merge})
_CONTAINER = _fields(
    {
        "env": _by_key("name", _replace),
        "volumeMounts": _by_key("mountPath", _replace),
        "ports": _by_key("containerPort", _replace),
        "resources": _RESOURCES,
    }
)
_POD_SPEC = _fields(
    {
        "containers": _by_key("name", _CONTAINER),
        "initContainers": _by_key("name", _CONTAINER),
        "volumes": _by_key("name", _replace),
        "tolerations": _by_key("key", _replace),
        "hostAliases": _by_key("ip", _replace),
        "nodeSelector": _map_merge,
    }
)
_POD_TEMPLATE = _fields(
    {"metadata": _fields({"labels": _map_merge, "annotations": _map_merge}), "spec": _POD_SPEC}
)
_TASK = _fields({"template": _POD_TEMPLATE})


def _tasks(old: Any, new: Any, where: str) -> Any:
    if not isinstance(new, list):
        raise InvalidObject(f"{where}: expected a list")
    out = [copy.deepcopy(t) for t in old] if isinstance(old, list) else []
    for i, t in enumerate(new):
        at = f"{where}[{i}]"
        if not isinstance(t, Mapping):
            raise InvalidObject(f"{at}: expected an object")
        name = t.get("name")
        if name is None:
            if len(out) != 1:
                raise InvalidObject(
                    f"{at}.name: required when the template has {len(out)} tasks (a patch task without a "
                    "name applies to a template's only task)"
                )
            out[0] = _TASK(out[0], t, at)
            continue
        j = next((j for j, o in enumerate(out) if isinstance(o, Mapping) and o.get("name") == name), None)
        if j is None:
            out.append(copy.deepcopy(dict(t)))
        else:
            out[j] = _TASK(out[j], t, at)
    return out


def _plugins(old: Any, new: Any, where: str) -> Any:
    return _map_merge(old, new, where)


_JOB_SPEC = _fields({"tasks": _tasks, "plugins": _plugins, "volumes": _by_key("mountPath", _replace)})


def apply_patch(spec: Obj, patch: Obj | None, where: str = "patch.jobSpec") -> dict[str, Any]:
    """The template's job ``spec`` with ``patch`` merged in (a new object). Raises :class:`InvalidObject`
    naming the field when the patch does not have the shape of a job spec."""
    if not patch:
        return copy.deepcopy(dict(spec))
    merged = _JOB_SPEC(spec, patch, where)
    assert isinstance(merged, dict)
    return merged
