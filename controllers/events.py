"""Kubernetes Events (events.k8s.io/v1) for what a user should see on an object, aggregated and rate-limited.

``record`` never blocks and never does I/O: it is safe from any handler or controller. A background task
(``run``) writes what was recorded. Like client-go's recorder, a repeat of the same (object, type, reason,
note) within ``window`` seconds is folded into the first Event's ``series`` (one PATCH, not a new Event),
each object gets at most ``burst`` new Events per ``window`` (the rest are counted and dropped: a
crash-looping object must not flood etcd), and what is remembered is bounded. A failed write is logged and
dropped: an Event is information, never state.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.state.meta import read_meta

log = logging.getLogger(__name__)

CONTROLLER: Final = "pumice.dev/pumice"
_NOTE_MAX: Final = 1024  # the API server refuses notes over 1 kB


@dataclass(frozen=True, slots=True, kw_only=True)
class Ref:
    """The object an Event is about (``regarding``)."""

    api_version: str
    kind: str
    name: str
    namespace: str
    uid: str

    @classmethod
    def of(cls, obj: Mapping[str, Any], *, api_version: str, kind: str) -> Ref:
        meta = read_meta(obj)
        return cls(api_version=api_version, kind=kind, name=meta.name, namespace=meta.namespace, uid=meta.uid)


def micro_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(slots=True)
class _Seen:
    name: str  # the Event object written for this key ("" until written)
    namespace: str
    count: int
    first: float


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        *,
        clock: Callable[[], float] = time.time,
        window: float = 600.0,
        burst: int = 10,
        remember: int = 4096,
        instance: str = "",
    ) -> None:
        self.client = client
        self.clock = clock
        self.window = window
        self.burst = burst
        self.remember = remember
        self.instance = instance or os.environ.get("HOSTNAME", "") or "pumice"
        self._seen: OrderedDict[tuple[str, str, str, str], _Seen] = OrderedDict()
        self._budget: OrderedDict[str, deque[float]] = OrderedDict()
        self._todo: asyncio.Queue[tuple[tuple[str, str, str, str], Ref, str, str, str, str]] = asyncio.Queue(
            maxsize=remember
        )
        self.written = 0
        self.dropped = 0

    def record(self, ref: Ref, *, type_: str, reason: str, note: str, action: str) -> None:
        note = note[:_NOTE_MAX]
        key = (ref.uid or f"{ref.kind}/{ref.namespace}/{ref.name}", type_, reason, note)
        now = self.clock()
        seen = self._seen.get(key)
        if (seen is None or now - seen.first > self.window) and not self._spend(key[0], now):
            self.dropped += 1
            return
        try:
            self._todo.put_nowait((key, ref, type_, reason, note, action))
        except asyncio.QueueFull:
            self.dropped += 1

    def _spend(self, obj: str, now: float) -> bool:
        stamps = self._budget.setdefault(obj, deque())
        self._budget.move_to_end(obj)
        while stamps and now - stamps[0] > self.window:
            stamps.popleft()
        if len(stamps) >= self.burst:
            return False
        stamps.append(now)
        while len(self._budget) > self.remember:
            self._budget.popitem(last=False)
        return True

    async def run(self) -> None:
        while True:
            item = await self._todo.get()
            try:
                await self._write(*item)
            except ApiError as e:
                log.warning("event write failed", extra={"reason": item[3], "error": str(e)})
            except (OSError, TimeoutError) as e:
                log.warning("event write failed", extra={"reason": item[3], "error": repr(e)})

    async def _write(
        self, key: tuple[str, str, str, str], ref: Ref, type_: str, reason: str, note: str, action: str
    ) -> None:
        now = self.clock()
        ns = ref.namespace or "default"
        seen = self._seen.get(key)
        if seen is not None and seen.name and now - seen.first <= self.window:
            seen.count += 1
            series = {"series": {"count": seen.count, "lastObservedTime": micro_time(now)}}
            try:
                await self.client.merge_patch(paths.EVENTS.item(seen.name, namespace=seen.namespace), series)
                self.written += 1
                return
            except ApiError as e:
                if e.status != 404:  # expired by the API server's TTL: write a new one
                    raise
        name = f"{ref.name or 'object'}.{secrets.token_hex(8)}"
        body = {
            "apiVersion": paths.EVENTS.api_version,
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "eventTime": micro_time(now),
            "reportingController": CONTROLLER,
            "reportingInstance": self.instance[:128],
            "action": action,
            "reason": reason,
            "type": type_,
            "note": note,
            "regarding": {
                k: v
                for k, v in (
                    ("apiVersion", ref.api_version),
                    ("kind", ref.kind),
                    ("name", ref.name),
                    ("namespace", ref.namespace),
                    ("uid", ref.uid),
                )
                if v
            },
        }
        await self.client.post(paths.EVENTS.collection(ns), body)
        self.written += 1
        self._seen[key] = _Seen(name=name, namespace=ns, count=1, first=now)
        self._seen.move_to_end(key)
        while len(self._seen) > self.remember:
            self._seen.popitem(last=False)
