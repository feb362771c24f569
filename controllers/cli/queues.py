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

``list`` goes further than vcctl: it lists nodes, pods and PodGroups too and shows, per queue and resource,
``deserved/allocated/guarantee/capability`` as the scheduler's own share plugin computes them (see
:mod:`controllers.shares_view`, which the simulator prints too), with the queue tree as indentation. Its
``-o json|yaml`` document is the ``kind: List`` of the Queue objects as before, unchanged, plus one
top-level ``shares`` key (:func:`~controllers.shares_view.shares_document`), so the items stay exact API
objects.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from controllers import tables
from controllers.cli import output
from controllers.cli.errors import CliError
from controllers.cli.flags import DRY_CLIENT, DRY_SERVER, created, dry_run_query, show
from controllers.cli.kubeconfig import (
    api_error_message,
    list_all,
    list_versioned,
    run_action,
    selector_query,
)
from controllers.cli.queue_bodies import (
    ACTION_STATES,
    ACTION_UPDATE,
    OPEN,
    QUEUE_RESOURCE,
    build_queue,
    state_patch,
    weight_patch,
)
from controllers.cli.watch import one_row, watch
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.shares_view import Cluster, compute_shares, shares_document, shares_table, warnings
from controllers.tables import Obj, count, field, mapping, metadata, render_table, text
from extender.api import labels as L
from extender.plugins.queue_shares import CAPACITY

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
        tables.age(queue, now),
    ]
    if wide:
        row += [
            count(field(status, "unknown")),
            count(field(status, "completed")),
            tables.resource_text(field(queue, "spec", "capability")),
            tables.resource_text(field(status, "allocated")),
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


async def create_queue(client: KubeClient, queue: Obj, *, dry_run: str = "none") -> Obj:
    """Create the Queue, then set its state through ``/status`` (the create body's status is dropped).
    ``dry_run="server"``: the create is sent with dryRun=All and nothing more (there is no Queue to patch)."""
    created = await client.post(queues_path(), queue, query=dry_run_query(dry_run))
    state = field(queue, "status", "state")
    if not state or dry_run == DRY_SERVER:
        return created
    name = str(metadata(created).get("name", ""))
    try:
        return await client.merge_patch(queue_status_path(name), state_patch(str(state)))
    except ApiError as e:
        message = e.body.get("message") if isinstance(e.body, dict) else None
        raise CliError(
            f"queue {name} was created, but setting its state to {state} failed: {message or e}"
        ) from None


async def list_queues(client: KubeClient, selector: str | None = None) -> list[Obj]:
    return (await list_versioned(client, queues_path(), selector_query(selector)))[0]


# Terminal pods hold nothing and wait for nothing: leaving them out changes no share and saves the listing.
UNFINISHED_PODS: Final = "status.phase!=Succeeded,status.phase!=Failed"


async def list_cluster(client: KubeClient) -> Cluster:
    """Every node, unfinished pod and PodGroup: what shares are computed over."""
    return Cluster(
        nodes=await list_all(client, paths.NODES.collection()),
        pods=await list_all(client, paths.PODS.collection(), [("fieldSelector", UNFINISHED_PODS)]),
        podgroups=await list_all(client, paths.PODGROUPS.collection()),
    )


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
        if args.dry_run == DRY_CLIENT:
            sys.stdout.write(show(queue))
            return
        made = await create_queue(client, queue, dry_run=args.dry_run)
        print(created(QUEUE_RESOURCE, made, args.dry_run))

    return run_action(args, action)


def cmd_list(args: argparse.Namespace) -> int:
    if args.hierarchy and args.plugin != CAPACITY:
        print(f"pumice: error: --hierarchy needs --plugin {CAPACITY}", file=sys.stderr)
        return 2

    async def action(client: KubeClient, _: str) -> None:
        queues, version = await list_versioned(client, queues_path(), selector_query(args.selector))
        if args.watch:
            await _watch(client, args, queues, version)
            return
        if args.output == output.NAME:
            sys.stdout.write(output.render_as(args.output, output.as_list(queues), QUEUE_RESOURCE) or "")
            if not queues:
                print("No resources found", file=sys.stderr)
            return
        if not queues and not output.always_printed(args.output):
            print("No resources found", file=sys.stderr)
            return
        cluster: Cluster | None = None
        error = ""
        try:
            cluster = await list_cluster(client)
        except ApiError as e:  # e.g. not allowed to list nodes: show the queues, say what is missing
            error = api_error_message(e)
        view = compute_shares(
            queues,
            cluster,
            plugin=args.plugin,
            hierarchy=args.hierarchy,
            scheduler_names=frozenset(args.scheduler_name or [L.DEFAULT_SCHEDULER_NAME]),
            default_queue=args.default_queue,
            error=error,
        )
        by_name = {str(metadata(q).get("name")): q for q in queues}
        if output.always_printed(args.output):
            # A template sees what -o json prints: the List of Queues and its "shares" key.
            doc = output.as_list(queues)
            doc["shares"] = shares_document(view, by_name)
            special = output.render_as(args.output, doc, QUEUE_RESOURCE)
            sys.stdout.write(special if special is not None else output.dump(doc, args.output))
        else:
            sys.stdout.write(shares_table(view, by_name, _now(), wide=args.output == "wide"))
        for line in warnings(view):
            print(line, file=sys.stderr)

    return run_action(args, action)


async def _watch(client: KubeClient, args: argparse.Namespace, queues: list[Obj], version: str) -> None:
    """``queue list -w``: the plain Queue table (or -o format), then a line per change. The share columns
    are left out: they follow nodes and pods, which a watch of Queues does not see change."""
    wide = args.output == "wide"

    def show(objs: Sequence[Mapping[str, Any]], header: bool) -> str:
        special = output.render_as(args.output, objs[0], QUEUE_RESOURCE) if objs else None
        if special is not None:
            return special
        if args.output in output.DOCUMENTS:
            return "".join(
                "---\n" + output.dump(q, "yaml") if args.output == "yaml" else output.dump(q, "json")
                for q in objs
            )
        table = queue_table(objs, _now(), wide=wide)
        return table if header else one_row(table)

    if args.output in ("table", "wide"):
        sys.stdout.write(show(queues, True))
    else:
        sys.stdout.write("".join(show([q], False) for q in queues))
    sys.stdout.flush()
    await watch(
        client,
        queues_path(),
        selector_query(args.selector),
        version,
        lambda q: show([q], False),
        seconds=args.timeout,
    )


def cmd_get(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, _: str) -> None:
        queue = await get_queue(client, args.name)
        special = output.render_as(args.output, queue, QUEUE_RESOURCE)
        if special is not None:
            sys.stdout.write(special)
        elif args.output in output.DOCUMENTS:
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
