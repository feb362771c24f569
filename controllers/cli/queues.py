"""``pumice queue create|list|get|operate|delete``: vcctl's queue commands on Volcano Queues.

Mirrors vcctl's flags and columns (weight, state, parent, PodGroup counts per phase). Two deliberate
differences:

- ``operate --action open|close``: vcctl creates a ``bus.volcano.sh`` Command (``OpenQueue`` /
  ``CloseQueue``) for Volcano's queue controller. pumice executes such Commands too, but here we
  merge-patch the Queue's ``/status`` subresource with the new state directly (effective at once, also
  with pumice down); pumice's status writer keeps a state it finds there (its writes carry the
  resourceVersion they were computed from, so a stale one cannot undo this), and the admission webhook
  refuses new PodGroups in a Closed queue.
- ``create --state``: ``status`` is a subresource, so a state in the create body is dropped by the API
  server; we set it with the same ``/status`` patch right after creating the Queue.

The PodGroup counts come from the Queue's status, which pumice's status writer keeps current, rather than
from listing every PodGroup in the cluster as vcctl does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from controllers.cli import output
from controllers.cli.kubeconfig import CliError, list_all, run_action
from controllers.cli.output import Obj, count, field, mapping, metadata, render_table, text
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from extender.api import labels as L

QUEUE_API_VERSION: Final = paths.QUEUES.api_version
QUEUE_RESOURCE: Final = f"queue.{L.SCHEDULING_GROUP}"
OPEN: Final = "Open"
CLOSED: Final = "Closed"
STATES: Final = (OPEN, CLOSED)
# operate --action -> the state it sets (vcctl's OpenQueue / CloseQueue).
ACTION_STATES: Final = {"open": OPEN, "close": CLOSED}
ACTION_UPDATE: Final = "update"


# -- pure ------------------------------------------------------------------------------------------


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


QUEUE_COLUMNS: Final = ("NAME", "WEIGHT", "STATE", "PARENT", "INQUEUE", "PENDING", "RUNNING", "AGE")
WIDE_COLUMNS: Final = ("UNKNOWN", "COMPLETED", "CAPABILITY", "ALLOCATED")


def queue_row(queue: Mapping[str, Any], now: datetime, *, wide: bool) -> list[str]:
    status = mapping(queue.get("status"))
    row = [
        text(metadata(queue).get("name")),
        text(field(queue, "spec", "weight")),
        text(field(status, "state")),
        text(field(queue, "spec", "parent")),
        count(field(status, "inqueue")),
        count(field(status, "pending")),
        count(field(status, "running")),
        output.age(queue, now),
    ]
    if wide:
        row += [
            count(field(status, "unknown")),
            count(field(status, "completed")),
            output.resource_text(field(queue, "spec", "capability")),
            output.resource_text(field(status, "allocated")),
        ]
    return row


def queue_table(queues: Sequence[Mapping[str, Any]], now: datetime, *, wide: bool) -> str:
    headers = [*QUEUE_COLUMNS, *(WIDE_COLUMNS if wide else ())]
    return render_table(headers, (queue_row(q, now, wide=wide) for q in queues))


# -- API calls -------------------------------------------------------------------------------------


def queues_path() -> str:
    return paths.QUEUES.collection()


def queue_path(name: str) -> str:
    return paths.QUEUES.item(paths.segment(name))


def queue_status_path(name: str) -> str:
    return paths.QUEUES.status(paths.segment(name))


async def create_queue(client: KubeClient, queue: Obj) -> Obj:
    """Create the Queue, then set its state through ``/status`` (the create body's status is dropped)."""
    created = await client.post(queues_path(), queue)
    state = field(queue, "status", "state")
    if not state:
        return created
    name = str(metadata(created).get("name", ""))
    try:
        return await client.merge_patch(queue_status_path(name), state_patch(str(state)))
    except ApiError as e:
        message = e.body.get("message") if isinstance(e.body, dict) else None
        raise CliError(
            f"queue {name} was created, but setting its state to {state} failed: {message or e}"
        ) from None


async def list_queues(client: KubeClient) -> list[Obj]:
    return await list_all(client, queues_path())


async def get_queue(client: KubeClient, name: str) -> Obj:
    return await client.get(queue_path(name))


async def set_queue_state(client: KubeClient, name: str, state: str) -> Obj:
    return await client.merge_patch(queue_status_path(name), state_patch(state))


async def set_queue_weight(client: KubeClient, name: str, weight: int) -> Obj:
    return await client.merge_patch(queue_path(name), weight_patch(weight))


async def delete_queue(client: KubeClient, name: str) -> Obj:
    return await client.delete(queue_path(name))


# -- entry points ----------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


def cmd_create(args: argparse.Namespace) -> int:
    queue = build_queue(
        name=args.name,
        weight=args.weight,
        parent=args.parent,
        capability=args.capability,
        deserved=args.deserved,
        guarantee=args.guarantee,
        state=args.state,
    )

    async def action(client: KubeClient, _: str) -> None:
        created = await create_queue(client, queue)
        print(f"{QUEUE_RESOURCE}/{metadata(created).get('name', '')} created")

    return run_action(args, action)


def cmd_list(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        queues = await list_queues(client)
        if args.output in ("yaml", "json"):
            sys.stdout.write(output.dump(output.as_list(queues), args.output))
        elif not queues:
            print("No resources found", file=sys.stderr)
        else:
            sys.stdout.write(queue_table(queues, _now(), wide=args.output == "wide"))

    return run_action(args, action)


def cmd_get(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        queue = await get_queue(client, args.name)
        if args.output in ("yaml", "json"):
            sys.stdout.write(output.dump(queue, args.output))
        else:
            sys.stdout.write(queue_table([queue], _now(), wide=args.output == "wide"))

    return run_action(args, action)


def cmd_operate(args: argparse.Namespace) -> int:
    if args.action == ACTION_UPDATE and not args.weight:
        print("pumice: error: --action update needs --weight", file=sys.stderr)
        return 2

    async def action(client: KubeClient, _: str) -> None:
        if args.action == ACTION_UPDATE:
            await set_queue_weight(client, args.name, args.weight)
            print(f"{QUEUE_RESOURCE}/{args.name} patched")
            return
        state = ACTION_STATES[args.action]
        await set_queue_state(client, args.name, state)
        print(f"{QUEUE_RESOURCE}/{args.name} {'opened' if state == OPEN else 'closed'}")

    return run_action(args, action)


def cmd_delete(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        await delete_queue(client, args.name)
        print(f'{QUEUE_RESOURCE} "{args.name}" deleted')

    return run_action(args, action)
