"""Equal immutable values held once: what many pods repeat beyond strings (a gang's labels, its owner
references).

The 8 pods of a gang of 8 carry equal labels and owner references; parsed one by one, each held its own
copies (a labels dict of ~270 bytes, owner references of ~140). :class:`Shared` hands back the first of
equal values it was recently given, so pods that follow one another (a LIST returns a job's pods one after
the other, in name order) share one.

Invariants: only values nobody changes go through it (frozen models, read-only mappings), so sharing is
invisible but for memory; what it remembers is bounded (:attr:`Shared.limit` entries, forgotten all at once
when full), so values of objects long gone are not kept alive for long.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Shared(Generic[V]):
    """The first value seen with each key, among the last :attr:`limit` keys."""

    __slots__ = ("_held", "limit")

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._held: dict[Hashable, V] = {}

    def share(self, key: Hashable, make: Callable[[], V]) -> V:
        """The value held for ``key``, else ``make()``, now held (the caller keys equal values alike)."""
        held = self._held.get(key)
        if held is not None:
            return held
        if len(self._held) >= self.limit:
            self._held.clear()
        value = self._held[key] = make()
        return value
