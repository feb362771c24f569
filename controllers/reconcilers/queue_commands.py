"""Queue Commands: ``bus.volcano.sh`` Commands whose target is a Queue (``vcctl queue operate``).

``OpenQueue`` and ``CloseQueue`` set the queue's ``status.state``, then the Command is deleted. Setting a
state twice is harmless, so a crash between the two writes only repeats the first. Any other action is
dropped (deleted) with a warning. It reads Commands from the store of watched objects
(:mod:`controllers.state.store`), as the job controller does for the Commands whose target is a Job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from controllers.kube import paths
from controllers.kube.client import KubeClient, ignore_404
from controllers.state.store import Change, ObjectStore, Subscription
from controllers.workqueue import WorkQueue

log = logging.getLogger(__name__)
Obj = dict[str, Any]

_STATES = {"OpenQueue": "Open", "CloseQueue": "Closed"}
_KIND: Final = "commands"


def _targets_a_queue(obj: Obj) -> bool:
    target = obj.get("target")
    return isinstance(target, Mapping) and target.get("kind") == "Queue"


class QueueCommandController:
    def __init__(self, client: KubeClient, store: ObjectStore, *, workers: int = 2) -> None:
        self.client = client
        self.store = store
        self.workers = workers
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=60.0)
        self.errors = 0
        store.subscribe(Subscription(kinds=frozenset({_KIND}), changed=self._changed))

    def _changed(self, change: Change) -> None:
        if change.new is not None and _targets_a_queue(change.new.obj):
            self.queue.add(change.key)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(self.workers):
                tg.create_task(self.queue.work(self._sync_contained), name=f"queue-command-worker-{i}")

    async def _sync_contained(self, key: str) -> None:
        try:
            await self.sync(key)
            self.queue.forget(key)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # one Command's problem; retried with backoff
            self.errors += 1
            delay = self.queue.backoff(key)
            log.warning("queue command failed", extra={"command": key, "error": repr(e), "retry_s": delay})
            self.queue.add_after(key, delay)

    async def sync(self, key: str) -> None:
        held = self.store.get(_KIND, key)
        if held is None or not _targets_a_queue(held.obj):
            return
        cmd = held.obj
        ns, name = key.split("/", 1)
        state = _STATES.get(str(cmd.get("action")))
        target = cmd.get("target")
        target = target if isinstance(target, dict) else {}
        queue = str(target.get("name") or "")
        if state is not None and queue:
            path = paths.QUEUES.status(queue)
            await ignore_404(self.client.merge_patch(path, {"status": {"state": state}}))
            log.info("queue command", extra={"queue": queue, "state": state, "command": name})
        else:
            log.warning("dropping queue command", extra={"command": name, "action": cmd.get("action")})
        await ignore_404(self.client.delete(paths.COMMANDS.item(name, namespace=ns)))
        self.store.gone(_KIND, key)
