"""Queue Commands: ``bus.volcano.sh`` Commands whose target is a Queue (``vcctl queue operate``).

``OpenQueue`` and ``CloseQueue`` set the queue's ``status.state``, then the Command is deleted. Setting a
state twice is harmless, so a crash between the two writes only repeats the first. Any other action is
dropped (deleted) with a warning. It shares the process's Command watch with the job controller, which
handles the Commands whose target is a Job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from controllers.kube import paths
from controllers.kube.client import KubeClient, ignore_404, object_key
from controllers.kube.informer import Handler
from controllers.workqueue import WorkQueue

log = logging.getLogger(__name__)
Obj = dict[str, Any]

_STATES = {"OpenQueue": "Open", "CloseQueue": "Closed"}


def _targets_a_queue(obj: Obj) -> bool:
    target = obj.get("target")
    return isinstance(target, dict) and target.get("kind") == "Queue"


class QueueCommandController:
    def __init__(self, client: KubeClient, *, workers: int = 2) -> None:
        self.client = client
        self.workers = workers
        self.commands: dict[str, Obj] = {}
        self.queue: WorkQueue[str] = WorkQueue(base=0.5, cap=60.0)
        self.errors = 0

    def handler(self) -> Handler:
        return Handler(self._replace, self._upsert, self._remove)

    def _upsert(self, obj: Obj) -> None:
        if _targets_a_queue(obj):
            self.commands[object_key(obj)] = obj
            self.queue.add(object_key(obj))

    def _remove(self, obj: Obj) -> None:
        self.commands.pop(object_key(obj), None)

    def _replace(self, objs: Sequence[Obj]) -> None:
        self.commands = {}
        for o in objs:
            self._upsert(o)

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
        cmd = self.commands.get(key)
        if cmd is None:
            return
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
        self.commands.pop(key, None)
