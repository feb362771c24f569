"""Raw objects held as their JSON bytes and decoded when read: what the state keeps of the kinds it must
hand back whole but reads rarely (vcjobs, PodGroups).

A vcjob of ~1 KB of JSON decodes to ~6 KB of dicts and strings, a PodGroup of ~0.9 KB to ~4 KB: at
11 000 jobs (100 000 pods in gangs of 8) the decoded objects were a fifth of the process. Their readers
(the job controller's reconcile of one job, the status writer's write of one PodGroup) read one object at
a time, so a decode per read (~10 µs) costs less than a restart's LIST of them.

Two holders keep every PodGroup (the store of watched objects, for the reconcilers; the cluster cache, for
the status writer), each from the same decoded object the informer hands both: a :class:`Packer` shared by
them gives both the one bytes object (10 MiB at 11 000 PodGroups).

Invariants: :func:`unpack` of :func:`pack` of an object equals it (orjson round-trips every JSON value
exactly); each read returns a new object, so a reader that changes what it read changes nothing held;
an object that cannot be encoded (not JSON: only a test's or a caller's odd input) is held as it is,
never refused. A :class:`Packer` gives what :func:`pack` gives (bytes are immutable, so which of equal
ones a holder keeps is invisible but for memory).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

import orjson

from controllers.state.shared import Shared

Obj = dict[str, Any]
K = TypeVar("K")


def pack(obj: Obj) -> bytes | Obj:
    """``obj`` as JSON bytes, or ``obj`` itself when it is not JSON."""
    try:
        encoded = orjson.dumps(obj)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return obj
    # Copied to a bytes of its own length: orjson's result keeps its writer's whole buffer (measured: 11 000
    # vcjobs packed held 91 MiB as orjson returned them, 14 MiB copied).
    return bytes(memoryview(encoded))


def unpack(body: bytes | Obj) -> Obj:
    """The object :func:`pack` gave ``body`` for (a new copy at each call when packed)."""
    if isinstance(body, bytes):
        unpacked: Obj = orjson.loads(body)
        return unpacked
    return body


class Packer:
    """:func:`pack`, with equal results packed lately handed back as one bytes object: what holders of the
    same objects share (see the module docstring). Keyed by content, never by the object's identity, so a
    decoded object changed and packed again is packed anew."""

    __slots__ = ("_recent",)

    def __init__(self, limit: int = 2048) -> None:
        # Bounded: the holders see an object one after the other (a LIST page of ~500 each, or one event).
        self._recent: Shared[bytes] = Shared(limit)

    def __call__(self, obj: Obj) -> bytes | Obj:
        body = pack(obj)
        if isinstance(body, bytes):
            return self._recent.share(body, lambda: body)
        return body


class PackedMap(MutableMapping[K, Obj], Generic[K]):
    """A mapping of raw objects, each held packed (by ``packer``): ``m[k] = obj`` packs, ``m[k]`` unpacks."""

    __slots__ = ("_bodies", "_pack")

    def __init__(
        self, bodies: dict[K, bytes | Obj] | None = None, packer: Callable[[Obj], bytes | Obj] = pack
    ) -> None:
        self._bodies: dict[K, bytes | Obj] = {} if bodies is None else bodies
        self._pack = packer

    def __getitem__(self, key: K) -> Obj:
        return unpack(self._bodies[key])

    def __setitem__(self, key: K, obj: Obj) -> None:
        self._bodies[key] = self._pack(obj)

    def __delitem__(self, key: K) -> None:
        del self._bodies[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._bodies)

    def __len__(self) -> int:
        return len(self._bodies)

    def __contains__(self, key: object) -> bool:
        return key in self._bodies

    def put_packed(self, key: K, body: bytes | Obj) -> None:
        """What :func:`pack` gave held under ``key`` (packed where the object was read, a page at a time)."""
        self._bodies[key] = body

    def take(self, key: K, source: PackedMap[K]) -> bool:
        """``source[key]`` held here too, as it is held there (nothing decoded); whether source had it."""
        body = source._bodies.get(key)
        if body is not None:
            self._bodies[key] = body
        return body is not None

    def copy(self) -> PackedMap[K]:
        """A copy that shares the packed bodies (bytes are immutable): nothing is decoded. It packs with
        :func:`pack` (a forecast's copy shares no packer with the live holders)."""
        return PackedMap(dict(self._bodies))
