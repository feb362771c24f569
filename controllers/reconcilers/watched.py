"""What the reconcilers share around a sync: the contained sync of the workflow controllers (JobFlow,
CronJob) and the merge patch every status write is made of."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from controllers.kube.client import ApiError
from controllers.workqueue import WorkQueue

log = logging.getLogger(__name__)


def merge_patch(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON merge patch (RFC 7386) turning ``old`` into ``new``: keys gone from ``new`` become null, so
    a map such as ``taskStatusCount`` loses phases that no longer have pods instead of keeping them."""
    out: dict[str, Any] = {}
    for k, v in new.items():
        o = old.get(k)
        if isinstance(v, Mapping) and isinstance(o, Mapping):
            out[k] = merge_patch(o, v)
        else:
            out[k] = v
    for k in old:
        if k not in new:
            out[k] = None
    return out


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
