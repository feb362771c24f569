"""``pumice jobflow list|get|delete``, ``pumice jobtemplate list|get``, ``pumice cronjob list|get``:
kubectl-style tables of Volcano's workflow objects (and ``-o yaml|json|name|jsonpath=...``).

Columns: a JobFlow's NAME, STATUS (``status.state.phase``), its jobs by phase (``COMPLETED``/``RUNNING``/
``PENDING``/``FAILED`` out of ``FLOWS``) and AGE; ``get`` adds one row per entry: its job, that job's phase,
what it waits for, and the probe results pumice wrote. A JobTemplate's tasks and replicas; a CronJob's
SCHEDULE, TIMEZONE, SUSPEND, ACTIVE, LAST SCHEDULE and AGE, as ``kubectl get cronjobs`` shows them.
``jobflow delete --keep-jobs`` deletes the flow with ``propagationPolicy: Orphan`` (its jobs stay).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from controllers.cli import output
from controllers.cli.kubeconfig import list_all, run_action, selector_query
from controllers.kube import paths
from controllers.kube.client import KubeClient
from controllers.tables import NONE, Obj, age, field, mapping, metadata, render_table, text

FLOW_RESOURCE = "jobflow.flow.volcano.sh"
TEMPLATE_RESOURCE = "jobtemplate.flow.volcano.sh"
CRON_RESOURCE = "cronjob.batch.volcano.sh"


def _now() -> datetime:
    return datetime.now(UTC)


def _len(value: object) -> int:
    return len(value) if isinstance(value, list) else 0


def _entries(flow: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    flows = field(flow, "spec", "flows")
    return [e for e in flows if isinstance(e, Mapping)] if isinstance(flows, list) else []


def flow_rows(flows: Sequence[Mapping[str, Any]], now: datetime, *, all_namespaces: bool) -> str:
    headers = ["NAME", "STATUS", "COMPLETED", "RUNNING", "PENDING", "FAILED", "FLOWS", "AGE"]
    rows = []
    for f in flows:
        st = mapping(f.get("status"))
        row = [
            text(metadata(f).get("name")),
            text(field(f, "status", "state", "phase")) if field(f, "status", "state", "phase") else "Pending",
            str(_len(st.get("completedJobs"))),
            str(_len(st.get("runningJobs"))),
            str(_len(st.get("pendingJobs"))),
            str(_len(st.get("failedJobs")) + _len(st.get("terminatedJobs"))),
            str(len(_entries(f))),
            age(f, now),
        ]
        rows.append([text(metadata(f).get("namespace")), *row] if all_namespaces else row)
    return render_table(["NAMESPACE", *headers] if all_namespaces else headers, rows)


def describe_flow(flow: Mapping[str, Any], now: datetime) -> str:
    name = text(metadata(flow).get("name"))
    st = mapping(flow.get("status"))
    conditions = mapping(st.get("conditions"))
    raw_probes = st.get("probeStatusList")
    probes: list[Any] = raw_probes if isinstance(raw_probes, list) else []
    lines = [
        f"Name:             {name}",
        f"Namespace:        {text(metadata(flow).get('namespace'))}",
        f"Status:           {text(field(flow, 'status', 'state', 'phase')) or 'Pending'}",
        f"Job retain:       {text(field(flow, 'spec', 'jobRetainPolicy')) or 'retain'}",
        f"Age:              {age(flow, now)}",
        "",
    ]
    rows = []
    for e in _entries(flow):
        entry = text(e.get("name"))
        job = f"{name}-{entry}"
        targets = field(e, "dependsOn", "targets")
        waits = ", ".join(str(t) for t in targets) if isinstance(targets, list) and targets else NONE
        phase = text(mapping(conditions.get(job)).get("phase")) if job in conditions else "not created"
        checks = [p for p in probes if isinstance(p, Mapping) and p.get("name") == entry]
        probe = "; ".join(
            f"{p.get('type')} {p.get('target')}: {'ok' if p.get('ready') else text(p.get('message'))}"
            for p in checks
        )
        rows.append([entry, job, phase, waits, probe or NONE])
    lines.append(render_table(["FLOW", "JOB", "PHASE", "DEPENDS ON", "PROBES"], rows).rstrip("\n"))
    return "\n".join(lines) + "\n"


def template_rows(templates: Sequence[Mapping[str, Any]], now: datetime, *, all_namespaces: bool) -> str:
    headers = ["NAME", "TASKS", "REPLICAS", "QUEUE", "AGE"]
    rows = []
    for t in templates:
        tasks = field(t, "spec", "tasks")
        tasks = [x for x in tasks if isinstance(x, Mapping)] if isinstance(tasks, list) else []
        replicas = sum(x.get("replicas") for x in tasks if isinstance(x.get("replicas"), int))
        row = [
            text(metadata(t).get("name")),
            str(len(tasks)),
            str(replicas),
            text(field(t, "spec", "queue")) or NONE,
            age(t, now),
        ]
        rows.append([text(metadata(t).get("namespace")), *row] if all_namespaces else row)
    return render_table(["NAMESPACE", *headers] if all_namespaces else headers, rows)


def cron_rows(crons: Sequence[Mapping[str, Any]], now: datetime, *, all_namespaces: bool) -> str:
    headers = ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE"]
    rows = []
    for c in crons:
        last = field(c, "status", "lastScheduleTime")
        row = [
            text(metadata(c).get("name")),
            text(field(c, "spec", "schedule")),
            text(field(c, "spec", "timeZone")) or NONE,
            "True" if field(c, "spec", "suspend") is True else "False",
            str(_len(field(c, "status", "active"))),
            age({"metadata": {"creationTimestamp": last}}, now) if last else NONE,
            age(c, now),
        ]
        rows.append([text(metadata(c).get("namespace")), *row] if all_namespaces else row)
    return render_table(["NAMESPACE", *headers] if all_namespaces else headers, rows)


def _render(items: list[Obj], fmt: str, resource: str, table: Callable[[], str]) -> str:
    special = output.render_as(fmt, output.as_list(items), resource)
    if special is not None:
        return special
    if fmt in output.DOCUMENTS:
        return output.dump(output.as_list(items), "json" if fmt == "json" else "yaml")
    return table()


def _lister(
    resource: paths.Resource,
    shown_as: str,
    rows: Callable[..., str],
) -> Callable[[argparse.Namespace], int]:
    def cmd(args: argparse.Namespace) -> int:
        async def action(client: KubeClient, namespace: str) -> None:
            where = None if args.all_namespaces else namespace
            items = await list_all(client, resource.collection(where), selector_query(args.selector))
            if not items and not output.always_printed(args.output):
                place = "" if args.all_namespaces else f" in {namespace} namespace"
                print(f"No resources found{place}.", file=sys.stderr)
                return
            sys.stdout.write(
                _render(
                    items,
                    args.output,
                    shown_as,
                    lambda: rows(items, _now(), all_namespaces=args.all_namespaces),
                )
            )

        return run_action(args, action)

    return cmd


def _getter(
    resource: paths.Resource,
    shown_as: str,
    describe: Callable[[Mapping[str, Any], datetime], str],
) -> Callable[[argparse.Namespace], int]:
    def cmd(args: argparse.Namespace) -> int:
        async def action(client: KubeClient, namespace: str) -> None:
            obj = await client.get(resource.item(paths.segment(args.name), namespace=namespace))
            special = output.render_as(args.output, obj, shown_as)
            if special is not None:
                sys.stdout.write(special)
            elif args.output in output.DOCUMENTS:
                sys.stdout.write(output.dump(obj, args.output))
            else:
                sys.stdout.write(describe(obj, _now()))

        return run_action(args, action)

    return cmd


cmd_flow_list = _lister(paths.JOBFLOWS, FLOW_RESOURCE, flow_rows)
cmd_flow_get = _getter(paths.JOBFLOWS, FLOW_RESOURCE, describe_flow)
cmd_template_list = _lister(paths.JOBTEMPLATES, TEMPLATE_RESOURCE, template_rows)
cmd_template_get = _getter(
    paths.JOBTEMPLATES, TEMPLATE_RESOURCE, lambda t, now: template_rows([t], now, all_namespaces=False)
)
cmd_cron_list = _lister(paths.CRONJOBS, CRON_RESOURCE, cron_rows)
cmd_cron_get = _getter(
    paths.CRONJOBS, CRON_RESOURCE, lambda c, now: cron_rows([c], now, all_namespaces=False)
)


def cmd_flow_delete(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        path = paths.JOBFLOWS.item(paths.segment(args.name), namespace=namespace)
        policy = "Orphan" if args.keep_jobs else "Background"
        await client.request("DELETE", path, body={"propagationPolicy": policy})
        print(f'{FLOW_RESOURCE} "{args.name}" deleted')

    return run_action(args, action)
