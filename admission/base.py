"""The vocabulary of admission rules: the signatures of a kind's pure functions, JSONPatch operations, the
metadata readers every kind uses, and a model parser's error as a field error.

Rules read objects exactly as kube-apiserver sent them (decoded JSON, possibly malformed), with the core's
never-raising readers and its :class:`~extender.core.validation.FieldError` (:mod:`extender.core.validation`),
so admission and the job rules speak one vocabulary: a field of the wrong type reads as absent and the rule
that needs it reports an error naming it, in the Kubernetes path convention (``spec.capability[cpu]``).

What a validator may assume is the dispatch's promise (:func:`admission.dispatch.judge`): the new object is
a JSON object within the server's :class:`~extender.api.limits.Limits` and in the row's scope. The stored
object of an UPDATE comes as kube-apiserver sent it, unchecked: it may have been written around the webhook,
so a rule that walks it recursively checks its depth first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, NotRequired, TypedDict

from admission.lookup import Lookup
from extender.api.limits import Limits
from extender.core.errors import InvalidObject
from extender.core.validation import FieldError, Obj, mapping, string


class PatchOp(TypedDict):
    """One RFC 6902 JSONPatch operation, as kube-apiserver applies it to the admitted object."""

    op: Literal["add", "replace", "remove"]
    path: str
    value: NotRequired[object]


# validate(new, old, lookup, limits): the kind's rules for a CREATE (new, None) or an UPDATE (new, stored);
# ``new`` already passed the dispatch's checks.
Validator = Callable[[Obj, Obj | None, Lookup, Limits], list[FieldError]]
# validate_delete(stored, lookup): why the object must not be deleted.
DeleteValidator = Callable[[Obj, Lookup], list[FieldError]]
# mutate(obj, lookup): the patch for a CREATE; an empty list means "admit unchanged".
Mutator = Callable[[Obj, Lookup], list[PatchOp]]
# scope(obj, lookup): whether a row judges this object at all (pods: only those of our schedulers).
Scope = Callable[[Obj, Lookup], bool]


def pointer(*parts: str) -> str:
    """A JSON Pointer (RFC 6901) to ``parts``, escaping ``~`` and ``/`` inside each part."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def annotations_of(obj: Obj) -> Mapping[str, object]:
    return mapping(mapping(obj, "metadata"), "annotations")


def name_of(obj: Obj | None) -> str:
    return string(mapping(obj, "metadata"), "name") if obj is not None else ""


def field_error(e: InvalidObject, prefix: str = "") -> FieldError:
    """A model parser's :class:`InvalidObject` (``field: message``) as a field error: the kinds whose rules
    are their model's parser (JobFlow, CronJob) deny with the parser's words."""
    text = str(e)
    where, sep, message = text.partition(": ")
    if not sep:
        return FieldError(field=prefix.rstrip(".") or "object", message=text)
    return FieldError(field=prefix + where, message=message)
