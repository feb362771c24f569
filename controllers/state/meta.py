"""The one reader of a watched object's metadata: :class:`ObjectMeta`, read once per object, however odd.

Every consumer of raw objects (the store of watched objects, the cluster cache, the reconcilers) asks this
module for a namespace, a name, a UID, a resourceVersion, labels, annotations, owner references or the
deletion and creation timestamps, instead of each writing its own ``obj.get("metadata") or {}``.

Invariants: :func:`read_meta` never raises, whatever it is given (a metadata that is not a mapping, a name
that is not a string, owner references that are not a list): an object's oddness is that object's problem,
found where its spec is parsed, never a handler's crash. Strings absent or of another type read as ``""``;
labels and annotations keep their string-valued entries only (the API server admits nothing else);
``generation`` reads as 0 unless it is an integer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


# (dict, Mapping): the same answer as Mapping alone, faster for the dicts a decode gives (see
# extender.core.fields).


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _strings(value: object) -> Mapping[str, str]:
    if not isinstance(value, (dict, Mapping)):
        return _EMPTY
    return MappingProxyType({k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)})


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerRef:
    """One ``metadata.ownerReferences`` entry."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool

    @property
    def group(self) -> str:
        """The API group of ``api_version`` (``""`` for the core group's ``v1``)."""
        return self.api_version.rpartition("/")[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectMeta:
    """What the controllers read of ``metadata``. ``raw`` is the metadata mapping itself (``{}`` when it
    is not one), for the pure core's readers that take metadata as the API server writes it."""

    namespace: str = ""
    name: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    annotations: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    owner_references: tuple[OwnerRef, ...] = ()
    deletion_timestamp: str = ""
    creation_timestamp: str = ""
    raw: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, compare=False, repr=False)

    @property
    def key(self) -> str:
        """``namespace/name`` of a namespaced object, the namespace ``default`` when unset (as kubectl
        and the API server's defaulting read it)."""
        return f"{self.namespace or 'default'}/{self.name}"

    @property
    def deleting(self) -> bool:
        """A deletion has been asked for (finalizers or a grace period keep the object a while)."""
        return bool(self.deletion_timestamp)

    def owner(self, kind: str, group: str, *, controller: bool = False) -> OwnerRef | None:
        """The first owner reference to a ``kind`` of API ``group``; with ``controller``, only the one
        marked as the object's controller."""
        for ref in self.owner_references:
            if ref.kind == kind and ref.group == group and (ref.controller or not controller):
                return ref
        return None

    def newer_than(self, cached: ObjectMeta | None) -> bool:
        """Whether this version of an object may replace ``cached``: not when it is the same object (UID)
        at an older resourceVersion (a watch event from before a write whose response is held). Compared
        only when both versions are numbers, as etcd's revisions are."""
        if cached is None or self.uid != cached.uid:
            return True
        try:
            return int(self.resource_version or 0) >= int(cached.resource_version or 0)
        except ValueError:
            return True


def raw_metadata(obj: object) -> Mapping[str, Any]:
    """An object's metadata mapping as :func:`read_meta` takes it (its ``raw``): empty when not one."""
    meta = obj.get("metadata") if isinstance(obj, (dict, Mapping)) else None
    return meta if isinstance(meta, (dict, Mapping)) else _EMPTY


def string_field(meta: Mapping[str, Any], key: str) -> str:
    """One string of a metadata mapping as :func:`read_meta` reads it (``""``: absent or not a string)."""
    return _str(meta.get(key))


OwnerFields = tuple[str, str, str, str, bool]  # an OwnerRef's fields, in order


def owner_fields(meta: Mapping[str, Any]) -> tuple[OwnerFields, ...]:
    """The fields of each owner reference (those that are mappings), as :func:`read_meta` makes its
    references of them; equal fields make equal references, so the store shares equal ones by them."""
    refs = meta.get("ownerReferences")
    return tuple(
        (
            _str(r.get("apiVersion")),
            _str(r.get("kind")),
            _str(r.get("name")),
            _str(r.get("uid")),
            r.get("controller") is True,
        )
        for r in (refs if isinstance(refs, list) else ())
        if isinstance(r, (dict, Mapping))
    )


def read_meta(obj: object) -> ObjectMeta:
    """The metadata view of a raw object (never raises)."""
    meta = raw_metadata(obj)
    if meta is _EMPTY:
        return ObjectMeta()
    owners = tuple(
        OwnerRef(api_version=a, kind=k, name=n, uid=u, controller=c) for a, k, n, u, c in owner_fields(meta)
    )
    generation = meta.get("generation")
    return ObjectMeta(
        namespace=_str(meta.get("namespace")),
        name=_str(meta.get("name")),
        uid=_str(meta.get("uid")),
        resource_version=_str(meta.get("resourceVersion")),
        generation=generation if isinstance(generation, int) and not isinstance(generation, bool) else 0,
        labels=_strings(meta.get("labels")),
        annotations=_strings(meta.get("annotations")),
        owner_references=owners,
        deletion_timestamp=_str(meta.get("deletionTimestamp")),
        creation_timestamp=_str(meta.get("creationTimestamp")),
        raw=meta,
    )
