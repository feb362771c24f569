"""The store of watched objects: the raw objects the reconcilers read, fed once by the informers.

One :class:`ObjectStore` per process holds, for each watched kind it is built with (:class:`Kind`), the
objects as the API server returned them, keyed ``namespace/name`` (the name for a cluster-scoped kind),
each with its metadata read once (:class:`~controllers.state.meta.ObjectMeta`), and the indexes the
reconcilers look objects up by (:class:`Index`: pods by owning vcjob, jobs by JobFlow, ...; see
:mod:`controllers.state.watched`). The informers feed it through :meth:`ObjectStore.handlers`, one handler
per kind; the reconcilers subscribe (:class:`Subscription`) and are told of every change, ``(kind, key,
old, new)``, to enqueue work. They read the store when they work; they keep no copies.

Invariants:

- A version never replaces a newer one of the same object (same UID, larger resourceVersion): a watch
  event still on its way from before one of our writes must not undo the write's response, which the
  reconcilers put here at once (:meth:`ObjectStore.written`) so the next reconcile reads it.
- A write's response is stored only while the object is still held (same UID): the watch's DELETE can
  arrive before the response of a write to the deleted object, which must not bring it back.
- A deletion removes the held object only if it is the one deleted (same UID, when both have one); a
  namesake created since (our create's response) stays, and subscribers are told of the deletion with
  the held object as ``new``.
- A LIST replaces everything held of its kind (objects deleted while nobody watched go, with a change
  ``listed=True``, so a reconciler can tell "missing from a list" from "deleted"); then ``listed(kind)``.
- Objects the informer could not decode (metadata only) are remembered per kind as unreadable until the
  object is read or deleted (never acted on as if absent); subscribers are told of each report.
- A subscriber that raises on a change is that change's problem: logged and counted, and every other
  subscriber is still told; a watch event's delivery then fails as a whole (:class:`SubscriberFailed`), so
  the informer counts it as a handler error as it counts any. Nothing else given to the store makes it
  raise (the metadata view is total; index functions must be too), and a LIST is never failed by a
  subscriber.
- A kind built ``indexed_only`` keeps only objects some index places (pods: most of a cluster's pods are
  no reconciler's business, and the cluster cache holds them parsed).
- What is held of an object is its kind's :attr:`Kind.record` of it (pods: their metadata and
  :class:`~controllers.state.pod_facts.PodFacts`, the raw body only where a reconciler reads it), taken
  when the object arrives; a LIST arrives page by page (:class:`_StoreListing`) and replaces the kind at
  its end, so a LIST cut short changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from controllers.kube.informer import Handler
from controllers.state.meta import ObjectMeta, read_meta
from controllers.state.packed import pack, unpack
from controllers.state.pod_facts import PodFacts
from controllers.state.shared import Shared

log = logging.getLogger(__name__)
Obj = dict[str, Any]
_NO_RAW: Final[Mapping[str, Any]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Stored:
    """A raw object as the API server returned it, and its metadata, read once. A kind may keep less
    (:attr:`Kind.record`): pods are held as their metadata and :class:`PodFacts`, with ``obj`` empty
    unless a reconciler reads their body (see :mod:`controllers.state.pod_facts`); vcjobs and PodGroups
    as their JSON bytes (:meth:`packed`), ``obj`` decoding them."""

    body: Obj | bytes
    meta: ObjectMeta
    pod: PodFacts | None = None

    @property
    def obj(self) -> Obj:
        """The raw object (of a kind held packed, decoded anew at each read: a copy the reader owns)."""
        return unpack(self.body)

    @classmethod
    def of(cls, obj: Obj) -> Stored:
        return cls(obj, read_meta(obj))

    @classmethod
    def packed(cls, obj: Obj, packer: Callable[[Obj], bytes | Obj] = pack) -> Stored:
        """``obj`` held as its JSON bytes (see controllers.state.packed; ``packer``: one shared with another
        holder of the kind), with its metadata read now; the view's ``raw`` is left empty, as it would keep
        the decoded metadata alive (read ``obj``)."""
        return cls(packer(obj), replace(read_meta(obj), raw=_NO_RAW))


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One object changed. ``old``: what was held (or, for a deletion of something not held, the deleted
    object); ``new``: what is held now (None: nothing). ``listed``: seen by a LIST rather than a watch
    event or a reconciler's own call."""

    kind: str
    key: str
    old: Stored | None
    new: Stored | None
    listed: bool = False

    @property
    def removed(self) -> bool:
        return self.new is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Index:
    """A lookup of a kind's objects by a value computed from each (``key``: None when it has none)."""

    name: str
    key: Callable[[Stored], str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """A watched kind: the informer's name for it, its scope, its indexes."""

    name: str
    namespaced: bool = True
    indexes: tuple[Index, ...] = ()
    indexed_only: bool = False
    # What is held of an object of the kind (default: the raw object and its metadata).
    record: Callable[[Obj], Stored] = Stored.of


class SubscriberFailed(Exception):
    """A subscriber raised on a watch event (logged where it happened; the others were told)."""


def _ignore_listed(_kind: str) -> None:
    return None


def _ignore_unreadable(_kind: str, _metas: Sequence[Stored]) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """What a reconciler is told, for the kinds it names: every change, the end of every LIST, and the
    objects a LIST could not decode."""

    kinds: frozenset[str]
    changed: Callable[[Change], None]
    listed: Callable[[str], None] = _ignore_listed
    unreadable: Callable[[str, Sequence[Stored]], None] = _ignore_unreadable


class RawView(Mapping[str, Obj]):
    """The raw objects of one kind by key, read-only (what a reconciler's ``jobs`` once was)."""

    def __init__(self, held: Mapping[str, Stored]) -> None:
        self._held = held

    def __getitem__(self, key: str) -> Obj:
        return self._held[key].obj

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)


@dataclass(slots=True)
class _Held:
    """One kind's objects, their index entries and the keys of the unreadable ones."""

    kind: Kind
    objects: dict[str, Stored] = field(default_factory=dict)
    by: dict[str, dict[str, dict[str, Stored]]] = field(default_factory=dict)
    unreadable: dict[str, Stored] = field(default_factory=dict)

    def key(self, meta: ObjectMeta) -> str:
        return meta.key if self.kind.namespaced else meta.name

    def places(self, s: Stored) -> dict[str, str]:
        """Each index's value for ``s``."""
        return {i.name: v for i in self.kind.indexes if (v := i.key(s)) is not None}

    def put(self, key: str, s: Stored, places: Mapping[str, str]) -> None:
        self.drop(key)
        self.objects[key] = s
        for index, value in places.items():
            self.by.setdefault(index, {}).setdefault(value, {})[key] = s

    def drop(self, key: str) -> Stored | None:
        old = self.objects.pop(key, None)
        if old is not None:
            for index, value in self.places(old).items():
                entries = self.by.get(index, {}).get(value)
                if entries is not None:
                    entries.pop(key, None)
                    if not entries:
                        del self.by[index][value]
        return old


class ObjectStore:
    """The watched objects of the kinds it is built with (see the module docstring)."""

    def __init__(self, kinds: Iterable[Kind]) -> None:
        self._held = {k.name: _Held(k) for k in kinds}
        self._listed: set[str] = set()
        self._subscriptions: list[Subscription] = []
        self.subscriber_errors = 0

    def subscribe(self, subscription: Subscription) -> None:
        unknown = subscription.kinds - self._held.keys()
        if unknown:
            raise ValueError(f"the store does not hold {sorted(unknown)}")
        self._subscriptions.append(subscription)

    # --- reads -------------------------------------------------------------------------------------------
    def get(self, kind: str, key: str) -> Stored | None:
        return self._held[kind].objects.get(key)

    def all(self, kind: str) -> list[Stored]:
        return list(self._held[kind].objects.values())

    def keys(self, kind: str) -> list[str]:
        return list(self._held[kind].objects)

    def raw(self, kind: str) -> RawView:
        return RawView(self._held[kind].objects)

    def indexed(self, kind: str, index: str, value: str) -> list[Stored]:
        """The objects of ``kind`` whose ``index`` value is ``value``, in the order they were stored."""
        return list(self._held[kind].by.get(index, {}).get(value, {}).values())

    def index_values(self, kind: str, index: str) -> list[str]:
        """Every value of ``index`` that places at least one object."""
        return list(self._held[kind].by.get(index, {}))

    def unreadable(self, kind: str) -> Mapping[str, Stored]:
        """Objects of ``kind`` known to exist but not readable (metadata only), by key."""
        return self._held[kind].unreadable

    def listed(self, *kinds: str) -> bool:
        """Whether each of ``kinds`` has been listed at least once."""
        return all(k in self._listed for k in kinds)

    # --- what the informers feed ---------------------------------------------------------------------------
    def handlers(self) -> dict[str, Handler]:
        """One informer handler per kind held."""
        return {name: self._handler(name) for name in self._held}

    def _handler(self, kind: str) -> Handler:
        record = self._held[kind].kind.record

        def event(apply: Callable[[str, Stored], None]) -> Callable[[Obj], None]:
            def deliver(obj: Obj) -> None:
                before = self.subscriber_errors
                apply(kind, record(obj))
                if self.subscriber_errors > before:
                    raise SubscriberFailed(
                        f"{self.subscriber_errors - before} subscriber(s) of {kind} failed"
                    )

            return deliver

        return Handler(
            replace=lambda objs: self._replace(kind, objs),
            upsert=event(self._upsert),
            remove=event(self._remove),
            unreadable=lambda metas: self._unreadable(kind, metas),
            listing=lambda: _StoreListing(self, kind),
        )

    def _upsert(self, kind: str, new: Stored, *, listed: bool = False) -> None:
        held = self._held[kind]
        key = held.key(new.meta)
        old = held.objects.get(key)
        if old is not None and not new.meta.newer_than(old.meta):
            return  # our own write already put a later version here
        places = held.places(new)
        held.unreadable.pop(key, None)
        if held.kind.indexed_only and not places:
            if old is not None:
                held.drop(key)
                self._tell(Change(kind=kind, key=key, old=old, new=None, listed=listed))
            return
        held.put(key, new, places)
        self._tell(Change(kind=kind, key=key, old=old, new=new, listed=listed))

    def _remove(self, kind: str, gone: Stored) -> None:
        held = self._held[kind]
        key = held.key(gone.meta)
        held.unreadable.pop(key, None)
        old = held.objects.get(key)
        if old is None:
            if held.kind.indexed_only and not held.places(gone):
                return  # nobody's business
            self._tell(Change(kind=kind, key=key, old=gone, new=None))
        elif old.meta.uid and gone.meta.uid and old.meta.uid != gone.meta.uid:
            self._tell(Change(kind=kind, key=key, old=gone, new=old))  # a namesake made since stays
        else:
            held.drop(key)
            self._tell(Change(kind=kind, key=key, old=old, new=None))

    def _replace(self, kind: str, objs: Sequence[Obj]) -> None:
        listing = _StoreListing(self, kind)
        listing.page(objs)
        listing.done()

    def _replaced(
        self, kind: str, listed: Iterable[tuple[str, Stored | None, tuple[tuple[str, str], ...]]]
    ) -> None:
        """A LIST's end: what it showed (key, object or None when not kept, index places) replaces
        the kind."""
        held = self._held[kind]
        previous = held.objects
        held.objects, held.by = {}, {}
        for key, s, places in listed:
            held.unreadable.pop(key, None)
            if s is not None:
                held.put(key, s, dict(places))
        for key, s in held.objects.items():
            self._tell(Change(kind=kind, key=key, old=previous.get(key), new=s, listed=True))
        for key, old in previous.items():
            if key not in held.objects:
                self._tell(Change(kind=kind, key=key, old=old, new=None, listed=True))
        self._listed.add(kind)
        for sub in self._subscribers(kind):
            self._call(kind, "", sub.listed, kind)

    def _unreadable(self, kind: str, metas: Sequence[Obj]) -> None:
        held = self._held[kind]
        marked = [Stored.of(m) for m in metas]
        for s in marked:
            key = held.key(s.meta)
            held.unreadable[key] = s
            held.drop(key)
        for sub in self._subscribers(kind):
            self._call(kind, "", sub.unreadable, kind, marked)

    def resync(self) -> None:
        """Tell every subscriber, for each kind already listed, that it was listed again, as after a LIST
        that changed nothing: a new leadership term, whose reconcilers then look at every object once
        (they are level-triggered; what another leader did meanwhile is in the objects)."""
        for kind in sorted(self._listed):
            for sub in self._subscribers(kind):
                self._call(kind, "", sub.listed, kind)

    # --- what the reconcilers learn from their own calls -------------------------------------------------
    def fetched(self, kind: str, obj: Obj) -> None:
        """An object a GET returned or a create made: stored as a watch event would be (unless a newer
        version of it is held), so the next reconcile does not act before the watch shows it."""
        self._upsert(kind, self._held[kind].kind.record(obj))

    def written(self, kind: str, obj: Obj) -> None:
        """The response of a write to an object held: stored only while that object is still held (not
        deleted, nor replaced by a namesake, while the write was on its way)."""
        held = self._held[kind]
        new = held.kind.record(obj)
        old = held.objects.get(held.key(new.meta))
        if old is not None and old.meta.uid == new.meta.uid:
            self._upsert(kind, new)

    def gone(self, kind: str, key: str) -> None:
        """The API server says the object is gone (our DELETE succeeded, or a read or write met 404)."""
        old = self._held[kind].drop(key)
        if old is not None:
            self._tell(Change(kind=kind, key=key, old=old, new=None))

    def record_unreadable(self, kind: str, meta: Obj) -> None:
        """A read of one object that could not be decoded: remembered as unreadable (the informer's next
        LIST reports it to the subscribers)."""
        s = Stored.of(meta)
        held = self._held[kind]
        key = held.key(s.meta)
        held.unreadable[key] = s
        held.drop(key)

    # --- telling ------------------------------------------------------------------------------------------
    def _subscribers(self, kind: str) -> list[Subscription]:
        return [s for s in self._subscriptions if kind in s.kinds]

    def _tell(self, change: Change) -> None:
        for sub in self._subscribers(change.kind):
            self._call(change.kind, change.key, sub.changed, change)

    def _call(self, kind: str, key: str, call: Callable[..., None], *args: Any) -> None:
        try:
            call(*args)
        except Exception as e:  # one subscriber's problem with one object: the others are still told
            self.subscriber_errors += 1
            log.exception("subscriber failed on a change", extra={"kind": kind, "key": key, "error": repr(e)})


class _StoreListing:
    """One LIST of a kind, page by page (controllers.kube.informer.Listing): each object is taken as the
    kind keeps it when its page arrives (a pod's raw body is dropped with its page), and the whole
    replaces what is held at the LIST's end."""

    def __init__(self, store: ObjectStore, kind: str) -> None:
        self._store = store
        self._kind = kind
        # Of each object listed: its key, what is kept (None: nothing), its index places as pairs (a third
        # of a dict's size). Three lists, not a tuple per object, and equal places held once (a gang's pods
        # share theirs): what is staged here until the LIST's end is freed then, and every byte of it left
        # a hole among what is kept (~300 bytes a pod, most of the pod LIST's freed blocks at 100 000 pods).
        self._keys: list[str] = []
        self._kept: list[Stored | None] = []
        self._places: list[tuple[tuple[str, str], ...]] = []
        self._shared: Shared[tuple[tuple[str, str], ...]] = Shared()

    def page(self, objs: Sequence[Obj], /) -> None:
        held = self._store._held[self._kind]
        for obj in objs:
            s = held.kind.record(obj)
            places = self._share(tuple(held.places(s).items()))
            self._keys.append(held.key(s.meta))
            self._kept.append(s if places or not held.kind.indexed_only else None)
            self._places.append(places)

    def _share(self, places: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
        return self._shared.share(places, lambda: places) if places else ()

    def done(self) -> None:
        listed = zip(self._keys, self._kept, self._places, strict=True)
        self._keys, self._kept, self._places = [], [], []
        self._store._replaced(self._kind, listed)
