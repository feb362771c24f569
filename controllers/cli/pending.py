"""``pumice queue pending QUEUE``: a queue's waiting PodGroups in the order pumice will start them, like
``kueuectl list pending-workloads``.

Reads what pumice wrote on the PodGroups (their ``StartEstimate``: position in the queue and in the
cluster, estimated start; see :mod:`controllers.cli.estimates`) and lists those of the queue that wait
(phase Pending or Inqueue), by position, then age. Lists PodGroups in every namespace, or with
``-n`` in one; a user who may not list them cluster-wide gets their own namespace's, with a note.
``-o wide`` adds each group's Unschedulable reason; ``-o json|yaml`` prints the List of those PodGroups.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from controllers import tables
from controllers.cli import estimates, output
from controllers.cli.kubeconfig import list_all, run_action
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.tables import Obj, field, metadata, render_table, text

PODGROUP_RESOURCE: Final = "podgroup.scheduling.volcano.sh"
COLUMNS: Final = ("NAMESPACE", "NAME", "PHASE", "POSITION", "IN CLUSTER", "ESTIMATED START", "AGE")
_WAITING: Final = ("Pending", "Inqueue", None, "")


def pending(
    podgroups: Sequence[Mapping[str, Any]], queue: str, default_queue: str
) -> list[Mapping[str, Any]]:
    """The waiting PodGroups of ``queue``, in line: by position (those without one last), then age."""
    mine = [
        pg
        for pg in podgroups
        if (field(pg, "spec", "queue") or default_queue) == queue and field(pg, "status", "phase") in _WAITING
    ]

    def order(pg: Mapping[str, Any]) -> tuple[bool, int, str, str]:
        s = estimates.shown(pg)
        position = s.in_queue if s is not None else None
        meta = metadata(pg)
        return (
            position is None,
            position or 0,
            str(meta.get("creationTimestamp") or ""),
            f"{meta.get('namespace')}/{meta.get('name')}",
        )

    return sorted(mine, key=order)


def pending_table(podgroups: Sequence[Mapping[str, Any]], now: datetime, *, wide: bool) -> str:
    headers = [*COLUMNS, *(("WAITING",) if wide else ())]
    rows = []
    for pg in podgroups:
        s = estimates.shown(pg)
        meta = metadata(pg)
        row = [
            text(meta.get("namespace")),
            text(meta.get("name")),
            text(field(pg, "status", "phase") or "Pending"),
            estimates.position_cell(s),
            estimates.cluster_cell(s),
            estimates.start_cell(s, now),
            tables.age(pg, now),
        ]
        if wide:
            row.append(estimates.reason_cell(pg))
        rows.append(row)
    return render_table(headers, rows)


async def _podgroups(client: KubeClient, namespace: str | None, fallback: str) -> tuple[list[Obj], str]:
    """Every PodGroup (or ``namespace``'s); ``fallback``'s when listing every namespace is forbidden,
    with a note saying so."""
    if namespace is not None:
        return await list_all(client, paths.PODGROUPS.collection(paths.segment(namespace))), ""
    try:
        return await list_all(client, paths.PODGROUPS.collection()), ""
    except ApiError as e:
        if e.status != 403:
            raise
    note = f"pumice: you may not list PodGroups in every namespace; showing namespace {fallback} only"
    return await list_all(client, paths.PODGROUPS.collection(paths.segment(fallback))), note


def cmd_pending(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        groups, note = await _podgroups(client, args.namespace, namespace)
        waiting = pending(groups, args.name, args.default_queue)
        if note:
            print(note, file=sys.stderr)
        special = output.render_as(args.output, output.as_list(waiting), PODGROUP_RESOURCE)
        if special is not None:
            sys.stdout.write(special)
        elif args.output in output.DOCUMENTS:
            sys.stdout.write(output.dump(output.as_list(waiting), args.output))
        elif not waiting:
            print(f"No PodGroups waiting in queue {args.name}.", file=sys.stderr)
        else:
            sys.stdout.write(pending_table(waiting, datetime.now(UTC), wide=args.output == "wide"))

    return run_action(args, action)
