"""The vocabulary every admission rule speaks: field errors, JSONPatch operations, safe raw-object access.

Admission rules read objects exactly as kube-apiserver sent them (decoded JSON, possibly malformed), so the
accessors here never raise: a field of the wrong type reads as absent and the rule that needs it reports a
:class:`FieldError` naming it. Field paths use the Kubernetes convention (``spec.capability[cpu]``,
``metadata.annotations[volcano.sh/jdb-min-available]``) so a denial points at the exact thing to fix.

:class:`FieldError` and the basic accessors are the pure job core's (:mod:`extender.jobs.rules`), so the
job rules it owns and the rules here speak one vocabulary. Every rule takes the :class:`Limits` the
server was given.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypedDict

from admission.lookup import Lookup
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.jobs.rules import FieldError, is_int, mapping

__all__ = [
    "DEFAULT_LIMITS",
    "FieldError",
    "Limits",
    "Mutator",
    "Obj",
    "PatchOp",
    "Validator",
    "annotations_of",
    "is_int",
    "mapping",
    "name_of",
    "pointer",
    "string",
]

# A Kubernetes object as decoded JSON. ``Any`` stops here: rules check every value they read.
Obj = Mapping[str, Any]


class PatchOp(TypedDict):
    """One RFC 6902 JSONPatch operation, as kube-apiserver applies it to the admitted object."""

    op: Literal["add", "replace", "remove"]
    path: str
    value: NotRequired[object]


# validate(new, old, lookup, limits): CREATE is (obj, None), UPDATE (obj, old), DELETE (None, old).
Validator = Callable[[Obj | None, Obj | None, Lookup, Limits], list[FieldError]]
# mutate(obj, lookup): the patch for a CREATE; an empty list means "admit unchanged".
Mutator = Callable[[Obj, Lookup], list[PatchOp]]


def pointer(*parts: str) -> str:
    """A JSON Pointer (RFC 6901) to ``parts``, escaping ``~`` and ``/`` inside each part."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def string(obj: object, key: str) -> str:
    """``obj[key]`` when it is a string, else ``""``."""
    if isinstance(obj, Mapping):
        v = obj.get(key)
        if isinstance(v, str):
            return v
    return ""


def annotations_of(obj: Obj) -> Mapping[str, object]:
    return mapping(mapping(obj, "metadata"), "annotations")


def name_of(obj: Obj | None) -> str:
    return string(mapping(obj, "metadata"), "name") if obj is not None else ""
