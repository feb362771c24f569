"""Informers: LIST, then WATCH from the list's resourceVersion, re-LIST on 410 Gone.

Each informer keeps nothing itself; it hands every object to a handler (the cache, the single writer)
as ``upsert(obj)`` / ``remove(obj)``, and replaces what the handler holds after every LIST so objects
deleted while we were not watching disappear. ``synced`` is set after the first LIST: readiness waits for it.

A LIST is read in pages (``limit``/``continue``) and each page is handed over as it arrives
(:class:`Listing`: ``page(objs)`` per page, then ``done()``), so the raw objects of a 100 000-pod LIST are
never all in memory at once: a handler that stages pages (parses them into its own compact form and swaps
them in at ``done()``) holds one page of raw objects at a time; a handler with only ``replace(objs)`` gets
the whole LIST at the end, as before. The watch that follows starts from the resourceVersion of the LIST's
first page: every later page is of that same snapshot. Objects are handed over without
``metadata.managedFields`` (server-side apply's bookkeeping, often a third of an object; nothing here reads
it, and nothing writes an object back whole).

A response it cannot read is never taken for an empty one (that once made the job controller delete the
pods of healthy jobs): a LIST page that does not decode is listed again as metadata only, each object is
then fetched alone, and the ones that still cannot be read are handed over as ``unreadable`` (name and
metadata only), so consumers know they exist. A watch event that does not decode starts that over. A
handler that raises on one object is that object's problem: logged, counted, and the stream goes on.

Faults of the API server or the network never end an informer and never delete anything: a stream cut
mid-chunk, a reset or a server that went away (:class:`~controllers.kube.client.ConnectionLost`), a refused
connection, a timeout, 5xx answers are watched again from the last resourceVersion, with backoff (at most a
few seconds apart); throttling (429) waits as long as the server's ``Retry-After`` says; an expired
resourceVersion (410 Gone) is listed again at once. Only a LIST that succeeds replaces what is held.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from controllers.kube.client import METADATA_LIST_ACCEPT, ApiError, KubeClient, Obj, UnreadableResponse

log = logging.getLogger(__name__)

# Retries of a failed list or watch: from half a second, doubling, never more than a few seconds apart, so
# scheduling resumes within seconds of the API server's return; a server that asks for longer (Retry-After)
# gets it, up to half a minute.
_BACKOFF_START = 0.5
_BACKOFF_CAP = 4.0
_RETRY_AFTER_CAP = 30.0


def _ignore(_: Sequence[Obj]) -> None:
    return None


def _lean(obj: Obj) -> Obj:
    """``obj`` without ``metadata.managedFields`` (dropped in place: the decoded object is ours)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


class Listing(Protocol):
    """One LIST, as its pages arrive: ``page`` for each, then ``done`` once the last one was read (never
    called for a LIST cut short: what was staged is dropped and the old state stands)."""

    def page(self, objs: Sequence[Obj], /) -> None: ...

    def done(self) -> None: ...


class _Collected:
    """The listing of a handler that only replaces: every page kept, then ``replace`` with them all."""

    def __init__(self, replace: Callable[[Sequence[Obj]], None]) -> None:
        self._replace = replace
        self._objs: list[Obj] = []

    def page(self, objs: Sequence[Obj], /) -> None:
        self._objs.extend(objs)

    def done(self) -> None:
        self._replace(self._objs)


@dataclass(frozen=True, slots=True)
class Handler:
    replace: Callable[[Sequence[Obj]], None]
    upsert: Callable[[Obj], object]
    remove: Callable[[Obj], None]
    # Objects that exist but cannot be read (metadata only), after each replace().
    unreadable: Callable[[Sequence[Obj]], None] = _ignore
    # A LIST page by page (see Listing); None: the pages are collected and given to ``replace``.
    listing: Callable[[], Listing] | None = None

    def begin(self) -> Listing:
        """A new LIST's listing: the handler's own, or one that collects for ``replace``."""
        return self.listing() if self.listing is not None else _Collected(self.replace)


class _Tee:
    def __init__(self, listings: Sequence[Listing]) -> None:
        self._listings = listings

    def page(self, objs: Sequence[Obj], /) -> None:
        for listing in self._listings:
            listing.page(objs)

    def done(self) -> None:
        for listing in self._listings:
            listing.done()


def tee(*handlers: Handler) -> Handler:
    """One watch feeding several consumers (the cluster cache and the job controller share the pod and
    PodGroup watches rather than each opening its own)."""

    def replace(objs: Sequence[Obj]) -> None:
        for h in handlers:
            h.replace(objs)

    def upsert(obj: Obj) -> None:
        for h in handlers:
            h.upsert(obj)

    def remove(obj: Obj) -> None:
        for h in handlers:
            h.remove(obj)

    def unreadable(metas: Sequence[Obj]) -> None:
        for h in handlers:
            h.unreadable(metas)

    def listing() -> Listing:
        return _Tee([h.begin() for h in handlers])

    return Handler(replace, upsert, remove, unreadable, listing)


class Informer:
    def __init__(
        self,
        client: KubeClient,
        path: str,
        handler: Handler,
        *,
        name: str,
        field_selector: str = "",
        page_size: int = 500,
        watch_timeout: int = 300,
    ) -> None:
        self.client = client
        self.path = path
        self.handler = handler
        self.name = name
        self.field_selector = field_selector
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.synced = asyncio.Event()
        self.events = 0
        self.handler_errors = 0
        self.list_errors = 0
        self.unreadable = 0
        # Lists and watches that failed (connection, API server errors), and since when the stream has
        # been broken (monotonic; None while it works): an outage is reported, never fatal.
        self.connection_errors = 0
        self.broken_since: float | None = None

    def _query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", self.field_selector)] if self.field_selector else []

    async def _pages(self, accept: str, consume: Callable[[list[Obj]], None]) -> str:
        """Read a LIST page by page, each handed to ``consume`` as it arrives (while the next one is
        fetched: the API server reads and encodes it while we parse this one); the LIST's resourceVersion
        (its first page's: every continued page is of that snapshot)."""
        rv = ""
        fetch = asyncio.ensure_future(self._page(accept, ""))
        try:
            while True:
                got, meta = await fetch
                rv = rv or str(meta.get("resourceVersion") or "")
                cont = str(meta.get("continue") or "")
                if cont:
                    fetch = asyncio.ensure_future(self._page(accept, cont))
                consume([_lean(o) for o in got])
                del got  # this page's raw objects go now, not with the next one
                if not cont:
                    return rv
        finally:
            if not fetch.cancel() and not fetch.cancelled():
                fetch.exception()  # an error of a page nobody waits for any more: retrieved, not logged

    async def _page(self, accept: str, cont: str) -> tuple[list[Obj], Obj]:
        q = [*self._query(), ("limit", str(self.page_size))]
        if cont:
            q.append(("continue", cont))
        page = await self.client.get(self.path, q, accept=accept)
        got = page.get("items") or []
        meta = page.get("metadata") or {}
        if not isinstance(got, list) or not isinstance(meta, dict):
            raise UnreadableResponse(200, "a LIST without an items list", "LIST", self.path)
        if not all(isinstance(o, dict) for o in got):
            raise UnreadableResponse(200, "a LIST item that is not an object", "LIST", self.path)
        return got, meta

    def _item_path(self, meta: Obj) -> str:
        ns, name = meta.get("namespace"), meta.get("name")
        if not ns:
            return f"{self.path}/{name}"
        prefix, plural = self.path.rsplit("/", 1)
        return f"{prefix}/namespaces/{ns}/{plural}/{name}"

    async def _list_one_by_one(self) -> tuple[list[Obj], list[Obj], str]:
        """The fallback when a LIST cannot be decoded: names first (metadata only), then each object
        alone. Returns the readable objects, the metadata of the unreadable ones, and the version."""
        metas: list[Obj] = []
        rv = await self._pages(METADATA_LIST_ACCEPT, metas.extend)
        good: list[Obj] = []
        bad: list[Obj] = []
        for m in metas:
            meta = m.get("metadata") or {}
            try:
                good.append(_lean(await self.client.get(self._item_path(meta))))
            except UnreadableResponse:
                bad.append(m)
            except ApiError as e:
                if e.status != 404:  # gone since the metadata LIST: it is simply not there
                    raise
        return good, bad, rv

    async def _list(self) -> str:
        bad: list[Obj] = []
        count = 0

        def counted(listing: Listing) -> Callable[[list[Obj]], None]:
            def page(objs: list[Obj]) -> None:
                nonlocal count
                count += len(objs)
                listing.page(objs)

            return page

        listing = self.handler.begin()
        try:
            rv = await self._pages("application/json", counted(listing))
        except UnreadableResponse as e:
            log.warning("list unreadable; listing one by one", extra={"informer": self.name, "error": str(e)})
            listing, count = self.handler.begin(), 0  # what the first attempt staged is dropped
            items, bad, rv = await self._list_one_by_one()
            counted(listing)(items)
        listing.done()
        self.handler.unreadable(bad)
        self.unreadable = len(bad)
        if bad:
            names = [str((m.get("metadata") or {}).get("name")) for m in bad[:20]]
            log.error(
                "unreadable objects", extra={"informer": self.name, "count": len(bad), "objects": names}
            )
        self.synced.set()
        log.info("listed", extra={"informer": self.name, "count": count, "resourceVersion": rv})
        return rv

    def _deliver(self, kind: object, obj: Obj) -> None:
        _lean(obj)
        try:
            if kind == "DELETED":
                self.handler.remove(obj)
            else:
                self.handler.upsert(obj)
        except Exception as e:  # one object's problem, never the stream's (see the module docstring)
            self.handler_errors += 1
            meta = obj.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            log.exception(
                "handler failed on an object",
                extra={
                    "informer": self.name,
                    "object": f"{meta.get('namespace')}/{meta.get('name')}",
                    "error": repr(e),
                },
            )

    async def run(self) -> None:
        """Run until cancelled. Nothing the API server or the network does ends it (see the module
        docstring); the cache stays as it was meanwhile."""
        backoff = _BACKOFF_START
        rv = ""
        while True:
            try:
                if not rv:
                    rv = await self._list()
                q = [
                    *self._query(),
                    ("resourceVersion", rv),
                    ("allowWatchBookmarks", "true"),
                    ("timeoutSeconds", str(self.watch_timeout)),
                ]
                async for ev in self.client.watch(self.path, q):
                    self._connected()
                    kind = ev.get("type")
                    obj = ev.get("object")
                    if not isinstance(obj, dict):
                        raise UnreadableResponse(200, "watch event without an object", "WATCH", self.path)
                    if kind == "ERROR":
                        if obj.get("code") == 410:
                            rv = ""  # too old: re-list
                            break
                        raise ApiError(int(obj.get("code") or 500), obj, "WATCH", self.path)
                    new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if new_rv:
                        rv = str(new_rv)
                    if kind == "BOOKMARK":
                        continue
                    self.events += 1
                    self._deliver(kind, obj)
                self._connected()
                backoff = _BACKOFF_START
                continue
            except asyncio.CancelledError:
                raise
            except UnreadableResponse as e:
                # Re-list: the fallback list finds which object it was and hands it over as unreadable.
                log.warning("unreadable response; re-listing", extra={"informer": self.name, "error": str(e)})
                self.list_errors += 1
                rv = ""
                delay = backoff
            except ApiError as e:
                if e.status == 410:  # expired: a re-list, at once (nothing is wrong with the server)
                    rv = ""
                    continue
                self._broken(f"HTTP {e.status} {e.reason}".rstrip(), str(e))
                # Throttled (429) or unavailable: as long as the server asks, within reason.
                delay = min(max(e.retry_after or backoff, backoff), _RETRY_AFTER_CAP)
            except (OSError, TimeoutError, ValueError) as e:
                # A cut stream (ConnectionLost), a refused connection, a timeout: watch again from where
                # we were; the resourceVersion is kept, so nothing is listed again unless it expired.
                self._broken(type(e).__name__, repr(e))
                delay = backoff
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, _BACKOFF_CAP)

    def _broken(self, what: str, detail: str) -> None:
        """A failed list or watch: the first of an outage is a warning, the retries are detail."""
        self.connection_errors += 1
        if self.broken_since is None:
            self.broken_since = time.monotonic()
            log.warning("watch broke; retrying", extra={"informer": self.name, "error": detail})
        else:
            log.debug("watch still broken", extra={"informer": self.name, "error": what})

    def _connected(self) -> None:
        if self.broken_since is not None:
            down = time.monotonic() - self.broken_since
            self.broken_since = None
            log.info("watch resumed", extra={"informer": self.name, "after_s": round(down, 1)})
