"""Small readers of watched objects, and the contained sync, shared by the workflow controllers (JobFlow,
CronJob)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from controllers.kube.client import ApiError
from controllers.workqueue import WorkQueue

log = logging.getLogger(__name__)


def meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def namespace(obj: Mapping[str, Any]) -> str:
    return str(meta(obj).get("namespace") or "default")


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(meta(obj).get("resourceVersion") or 0)
    except ValueError:
        return 0


def newer(obj: Mapping[str, Any], cached: Mapping[str, Any] | None) -> bool:
    """Whether a watch event may replace the cached object: not when it is older than the object our own
    write returned (same UID, smaller resourceVersion)."""
    if cached is None or meta(obj).get("uid") != meta(cached).get("uid"):
        return True
    return _rv(obj) >= _rv(cached)


async def sync_contained(
    queue: WorkQueue[str],
    key: str,
    sync: Callable[[str], Awaitable[None]],
    stats: MutableMapping[str, int],
    kind: str,
) -> None:
    """Run ``sync(key)`` so that nothing it raises leaves this one object: a conflict (a stale read) runs
    again at once on fresh data; any other failure is counted, logged and retried with the key's backoff."""
    try:
        await sync(key)
        queue.forget(key)
        return
    except asyncio.CancelledError:
        raise
    except ApiError as e:
        if e.status == 409:
            stats["conflicts"] += 1
            queue.add_after(key, 0.05)
            return
        why = str(e)
    except (OSError, TimeoutError) as e:
        why = repr(e)
    except Exception as e:  # a bug or an object we did not foresee: this object's problem only
        log.exception("sync raised", extra={"kind": kind, "key": key})
        why = f"internal error: {type(e).__name__}: {e}"
    stats["errors"] += 1
    delay = queue.backoff(key)
    log.warning("sync failed", extra={"kind": kind, "key": key, "error": why, "retry_s": delay})
    queue.add_after(key, delay)
