"""The condition reasons the allocate side of a cycle gives a group it leaves waiting (Volcano's where it
has one), shared by the actions, the cycle (which of them stand until something changes) and the CLI.
The evicting actions' reasons live with them, in :mod:`extender.framework.evict`."""

from __future__ import annotations

from typing import Final

NOT_ENOUGH_RESOURCES: Final = "NotEnoughResources"
NOT_ENOUGH_PODS: Final = "NotEnoughTasks"
QUEUE_UNAVAILABLE: Final = "QueueUnavailable"
NOT_ADMITTED: Final = "NotEnqueued"
