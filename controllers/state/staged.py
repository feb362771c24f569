"""A LIST parsed page by page: the cluster cache's side of the informer's :class:`Listing`.

Each page's raw objects are parsed as the page arrives (and then dropped by the informer), so a LIST of
100 000 pods never holds more than one page of raw objects; what did not parse is kept as a
:class:`~controllers.state.unreadable.Failure`. Nothing is applied before the LIST's end: ``done()`` hands
every parsed object and every failure to ``apply`` at once, which swaps them in as one step (a snapshot
taken while the pages arrive sees the state from before the LIST, never half of it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from controllers.state.unreadable import Failure, attempt

Obj = dict[str, Any]
T = TypeVar("T")


class Staged(Generic[T]):
    def __init__(
        self, kind: str, parse: Callable[[Obj], T], apply: Callable[[list[T], list[Failure]], None]
    ) -> None:
        self._kind = kind
        self._parse = parse
        self._apply = apply
        self._parsed: list[T] = []
        self._failures: list[Failure] = []

    def page(self, objs: Sequence[Obj], /) -> None:
        for obj in objs:
            parsed, failure = attempt(self._parse, obj, self._kind)
            if failure is not None:
                self._failures.append(failure)
            else:
                self._parsed.append(parsed)

    def done(self) -> None:
        parsed, failures = self._parsed, self._failures
        self._parsed, self._failures = [], []
        self._apply(parsed, failures)


def replace_with(listing: Staged[Any], objs: Sequence[Obj]) -> None:
    """A whole LIST at once (a test, the fallback list): one page, then its end."""
    listing.page(objs)
    listing.done()
