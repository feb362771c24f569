"""Informers: LIST, then WATCH from the list's resourceVersion, re-LIST on 410 Gone.

Each informer keeps nothing itself; it hands every object to a handler (the cache, the single writer)
as ``upsert(obj)`` / ``remove(obj)``, and calls ``replace(objs)`` after every LIST so objects deleted while
we were not watching disappear. ``synced`` is set after the first LIST: readiness waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from controllers.kube.client import ApiError, KubeClient, Obj

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Handler:
    replace: Callable[[Sequence[Obj]], None]
    upsert: Callable[[Obj], object]
    remove: Callable[[Obj], None]


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

    return Handler(replace, upsert, remove)


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

    def _query(self) -> list[tuple[str, str]]:
        return [("fieldSelector", self.field_selector)] if self.field_selector else []

    async def _list(self) -> str:
        items: list[Obj] = []
        cont = ""
        while True:
            q = [*self._query(), ("limit", str(self.page_size))]
            if cont:
                q.append(("continue", cont))
            page = await self.client.get(self.path, q)
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            cont = meta.get("continue") or ""
            if not cont:
                rv = str(meta.get("resourceVersion") or "")
                break
        self.handler.replace(items)
        self.synced.set()
        log.info("listed", extra={"informer": self.name, "count": len(items), "resourceVersion": rv})
        return rv

    async def run(self) -> None:
        """Run until cancelled. Transient errors back off and retry; the cache stays as it was."""
        backoff = 0.5
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
                    kind = ev.get("type")
                    obj = ev.get("object") or {}
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
                    if kind == "DELETED":
                        self.handler.remove(obj)
                    else:
                        self.handler.upsert(obj)
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.status == 410:
                    rv = ""
                    continue
                log.warning("watch failed", extra={"informer": self.name, "error": str(e)})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
            except (OSError, TimeoutError, ValueError) as e:
                log.warning("watch broke", extra={"informer": self.name, "error": repr(e)})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
