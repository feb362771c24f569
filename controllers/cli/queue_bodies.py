"""The objects and patches ``pumice queue create|operate`` send, and the command's constants.

Pure (unit-tested) and cheap to import: ``pumice``'s parser reads the states and actions from here. Why
the state goes through the ``/status`` subresource: see :mod:`controllers.cli.queues`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from controllers.kube import paths
from controllers.tables import Obj
from extender.api import labels as L

QUEUE_API_VERSION: Final = paths.QUEUES.api_version
QUEUE_RESOURCE: Final = f"queue.{L.SCHEDULING_GROUP}"
OPEN: Final = "Open"
CLOSED: Final = "Closed"
STATES: Final = (OPEN, CLOSED)
# operate --action -> the state it sets (vcctl's OpenQueue / CloseQueue).
ACTION_STATES: Final = {"open": OPEN, "close": CLOSED}
ACTION_UPDATE: Final = "update"


def build_queue(
    *,
    name: str,
    weight: int = 1,
    parent: str | None = None,
    capability: Mapping[str, str] | None = None,
    deserved: Mapping[str, str] | None = None,
    guarantee: Mapping[str, str] | None = None,
    state: str | None = None,
) -> Obj:
    """The Queue ``queue create`` posts; ``state`` rides along so admission can check it early."""
    spec: Obj = {"weight": weight}
    if parent:
        spec["parent"] = parent
    if capability:
        spec["capability"] = dict(capability)
    if deserved:
        spec["deserved"] = dict(deserved)
    if guarantee:
        spec["guarantee"] = {"resource": dict(guarantee)}
    queue: Obj = {"apiVersion": QUEUE_API_VERSION, "kind": "Queue", "metadata": {"name": name}, "spec": spec}
    if state:
        queue["status"] = {"state": state}
    return queue


def state_patch(state: str) -> Obj:
    """The merge patch for the ``/status`` subresource that opens or closes a queue."""
    return {"status": {"state": state}}


def weight_patch(weight: int) -> Obj:
    return {"spec": {"weight": weight}}
