"""The cluster cache's book of objects it cannot read: what each one is, and why.

An object that does not parse (or that the informer could only list by name) is that object's problem:
remembered here by ``(kind, namespace/name)`` with the reason, pods also by UID (a filter for such a pod
says why instead of waiting for a watch that will never show it readable), logged once per new reason and
counted, never the process's. Invariants: a re-list forgets what it does not find again (deleted
meanwhile); a readable version or a deletion of an object clears it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controllers.state.meta import ObjectMeta, read_meta
from extender.core.errors import InvalidObject
from extender.core.model import PodUID

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# What a LIST showed by name only: the API server holds it, the client cannot decode it.
UNDECODABLE: Final = "the API server's copy cannot be decoded (nesting too deep?)"


def ref(kind: str, meta: ObjectMeta) -> tuple[str, str]:
    """``(kind, namespace/name)`` of an object however odd it is (the name alone when cluster-scoped)."""
    return kind, f"{meta.namespace}/{meta.name}".lstrip("/")


_PARSE_ERRORS: Final = (InvalidObject, ValueError, TypeError, AttributeError, KeyError, OverflowError)


@dataclass(frozen=True, slots=True)
class Failure:
    """One object that did not parse: which, and why."""

    kind: str
    meta: ObjectMeta
    problem: str


def attempt(fn: Callable[[Obj], Any], obj: Obj, kind: str) -> tuple[Any, Failure | None]:
    """``(fn(obj), None)``, or ``(None, why)`` if it cannot be read; remembers nothing (a LIST's pages are
    parsed before the book is told, at the LIST's end: :meth:`Unreadable.record`)."""
    try:
        return fn(obj), None
    except _PARSE_ERRORS as e:
        return None, Failure(kind, read_meta(obj), str(e) or type(e).__name__)


class Unreadable:
    def __init__(self) -> None:
        self._why: dict[tuple[str, str], str] = {}
        self._pods: dict[PodUID, str] = {}
        self.total = 0

    def parse(self, fn: Callable[[Obj], Any], obj: Obj, kind: str) -> Any:
        """``fn(obj)``, or None if it cannot be read: remembered, counted and logged (once per reason)."""
        parsed, failure = attempt(fn, obj, kind)
        if failure is not None:
            self.record(failure)
            return None
        if self._why or self._pods:  # (the book is empty but for a few: no metadata read for nothing)
            self.read(kind, read_meta(obj))
        return parsed

    def record(self, failure: Failure) -> None:
        """An object that did not parse: remembered, counted and logged (once per reason)."""
        kind, meta, problem = failure.kind, failure.meta, failure.problem
        key = ref(kind, meta)
        if self._why.get(key) != problem:
            self.total += 1
            log.warning(
                "skipping unreadable object", extra={"kind": kind, "object": key[1], "error": problem}
            )
        self._why[key] = problem
        if kind == "Pod" and meta.uid:
            self._pods[PodUID(meta.uid)] = problem

    def read(self, kind: str, meta: ObjectMeta) -> None:
        """The object parsed: whatever was remembered of it goes."""
        self._why.pop(ref(kind, meta), None)
        if kind == "Pod":
            self._pods.pop(PodUID(meta.uid), None)

    def relisting(self, kind: str) -> None:
        """Before a re-list of ``kind``: what is still unreadable is found again, the deleted is not."""
        self._why = {k: v for k, v in self._why.items() if k[0] != kind}
        if kind == "Pod":
            self._pods = {}

    def removed(self, kind: str, meta: ObjectMeta) -> None:
        self._why.pop(ref(kind, meta), None)
        if kind == "Pod":
            self._pods.pop(PodUID(meta.uid), None)

    def listed(self, kind: str) -> Callable[[Sequence[Obj]], None]:
        """The informer's report of objects a LIST showed by name only."""

        def mark(metas: Sequence[Obj]) -> None:
            for m in metas:
                meta = read_meta(m)
                self._why[ref(kind, meta)] = UNDECODABLE
                self.total += 1
                if kind == "Pod" and meta.uid:
                    self._pods[PodUID(meta.uid)] = UNDECODABLE

        return mark

    def pod(self, uid: PodUID) -> str | None:
        return self._pods.get(uid)

    def knows_pod(self, uid: PodUID) -> bool:
        return uid in self._pods

    def all(self) -> Mapping[tuple[str, str], str]:
        return dict(self._why)
