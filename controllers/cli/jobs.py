"""``pumice job run|list|view|suspend|resume|delete``: vcctl's job commands on Volcano Jobs.

Mirrors vcctl's behaviour: ``run`` builds a one-task ``batch.volcano.sh/v1alpha1`` Job from flags (or
creates one from a YAML file); ``suspend`` and ``resume`` do not touch the Job but create a
``bus.volcano.sh/v1alpha1`` Command (``AbortJob`` / ``ResumeJob``) that the job controller consumes, owned
by the Job so it is garbage-collected with it. Output follows kubectl rather than vcctl: an AGE column
instead of a creation date, ``<kind>.<group>/<name> created`` confirmations.

Pure builders and renderers first (unit-tested), then the API calls (taking a KubeClient, tested against
a fake API server), then the ``cmd_*`` entry points that argparse calls.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from controllers.cli import output
from controllers.cli.kubeconfig import CliError, UsageError, list_all, run_action
from controllers.cli.output import NONE, Obj, count, field, mapping, metadata, render_table, text
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from extender.api import labels as L

JOB_API_VERSION: Final = paths.JOBS.api_version
COMMAND_API_VERSION: Final = paths.COMMANDS.api_version
JOB_RESOURCE: Final = f"job.{L.BATCH_GROUP}"
COMMAND_RESOURCE: Final = f"command.{L.BUS_GROUP}"

ABORT_JOB: Final = "AbortJob"
RESUME_JOB: Final = "ResumeJob"

# vcctl's defaults, so `pumice job run --name x` creates the job `vcctl job run -N x` would.
DEFAULT_IMAGE: Final = "busybox"
DEFAULT_RESOURCES: Final = "cpu=1000m,memory=100Mi"
# Volcano's mutating webhook names unnamed tasks "default<index>"; we name ours up front so the Job
# is the same with or without that webhook.
DEFAULT_TASK_NAME: Final = "default0"
# vcctl labels the pod template with the job name under this key.
TEMPLATE_JOB_LABEL: Final = "job.volcano.sh"
JOB_TYPE_LABEL: Final = "volcano.sh/job-type"
POD_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


# -- pure: bodies ----------------------------------------------------------------------------------


def build_job(
    *,
    name: str,
    namespace: str,
    image: str = DEFAULT_IMAGE,
    replicas: int = 1,
    min_available: int = 1,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    scheduler: str = L.DEFAULT_SCHEDULER_NAME,
    queue: str | None = None,
) -> Obj:
    """The one-task Job ``job run`` creates from flags."""
    resources: Obj = {}
    if limits:
        resources["limits"] = dict(limits)
    if requests:
        resources["requests"] = dict(requests)
    container: Obj = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
    if resources:
        container["resources"] = resources
    spec: Obj = {"minAvailable": min_available, "schedulerName": scheduler}
    if queue:
        spec["queue"] = queue
    spec["tasks"] = [
        {
            "name": DEFAULT_TASK_NAME,
            "replicas": replicas,
            "template": {
                "metadata": {"name": name, "labels": {TEMPLATE_JOB_LABEL: name}},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        }
    ]
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def job_from_document(doc: object, *, namespace: str, explicit_namespace: bool) -> Obj:
    """A Job read from ``-f``: checked to be a Volcano Job, its namespace settled as kubectl does.

    The file's namespace wins over the context's; naming a different one with ``-n`` is an error.
    """
    if not isinstance(doc, Mapping):
        raise CliError("the file does not hold a Job object (expected a YAML mapping)")
    job = dict(doc)
    api_version, kind = job.setdefault("apiVersion", JOB_API_VERSION), job.setdefault("kind", "Job")
    if api_version != JOB_API_VERSION or kind != "Job":
        raise CliError(f"the file holds a {api_version} {kind}; expected a {JOB_API_VERSION} Job")
    meta = dict(metadata(job))
    if not meta.get("name") and not meta.get("generateName"):
        raise CliError("the Job in the file has no metadata.name")
    own = meta.get("namespace")
    if own and explicit_namespace and own != namespace:
        raise UsageError(f"the namespace from the file ({own}) does not match --namespace {namespace}")
    meta["namespace"] = own or namespace
    job["metadata"] = meta
    return job


def load_job_file(content: str, *, namespace: str, explicit_namespace: bool) -> Obj:
    try:
        docs = [d for d in yaml.safe_load_all(content) if d is not None]
    except yaml.YAMLError as e:
        raise CliError(f"the file is not valid YAML: {e}") from None
    if len(docs) != 1:
        raise CliError(f"the file must hold exactly one Job, found {len(docs)} documents")
    return job_from_document(docs[0], namespace=namespace, explicit_namespace=explicit_namespace)


def owner_reference(obj: Mapping[str, Any], *, api_version: str, kind: str) -> Obj:
    """A controller reference to ``obj``, as vcctl puts in a Command's ``target`` and owner list."""
    meta = metadata(obj)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_command(job: Mapping[str, Any], action: str) -> Obj:
    """The Command asking the job controller to run ``action`` on ``job``."""
    meta = metadata(job)
    ref = owner_reference(job, api_version=JOB_API_VERSION, kind="Job")
    return {
        "apiVersion": COMMAND_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{meta.get('name', '')}-{action.lower()}-",
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [ref],
        },
        "action": action,
        "target": dict(ref),
    }


# -- pure: rendering -------------------------------------------------------------------------------


def _replicas(job: Mapping[str, Any]) -> int:
    tasks = field(job, "spec", "tasks")
    if not isinstance(tasks, list):
        return 0
    return sum(t["replicas"] for t in tasks if isinstance(t, Mapping) and isinstance(t.get("replicas"), int))


def _min_available(job: Mapping[str, Any]) -> object:
    # The controller copies spec.minAvailable into status; before it has, the spec is the answer.
    status_min = field(job, "status", "minAvailable")
    return status_min if isinstance(status_min, int) else field(job, "spec", "minAvailable")


def job_type(job: Mapping[str, Any]) -> str:
    labels = metadata(job).get("labels")
    value = labels.get(JOB_TYPE_LABEL) if isinstance(labels, Mapping) else None
    return str(value) if value else "Batch"


JOB_COLUMNS: Final = (
    "NAME", "PHASE", "JOBTYPE", "REPLICAS", "MIN", "PENDING", "RUNNING",
    "SUCCEEDED", "FAILED", "UNKNOWN", "RETRYCOUNT", "AGE",
)  # fmt: skip


def job_row(job: Mapping[str, Any], now: datetime, *, all_namespaces: bool, wide: bool) -> list[str]:
    status = mapping(job.get("status"))
    row = [
        text(metadata(job).get("name")),
        text(field(status, "state", "phase")),
        job_type(job),
        str(_replicas(job)),
        count(_min_available(job)),
        count(status.get("pending")),
        count(status.get("running")),
        count(status.get("succeeded")),
        count(status.get("failed")),
        count(status.get("unknown")),
        count(status.get("retryCount")),
        output.age(job, now),
    ]
    if all_namespaces:
        row.insert(0, text(metadata(job).get("namespace")))
    if wide:
        row += [text(field(job, "spec", "queue")), text(field(job, "spec", "schedulerName"))]
    return row


def job_table(jobs: Sequence[Mapping[str, Any]], now: datetime, *, all_namespaces: bool, wide: bool) -> str:
    headers = list(JOB_COLUMNS)
    if all_namespaces:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["QUEUE", "SCHEDULER"]
    return render_table(headers, (job_row(j, now, all_namespaces=all_namespaces, wide=wide) for j in jobs))


def filter_jobs(jobs: Sequence[Obj], *, queue: str | None, scheduler: str | None) -> list[Obj]:
    return [
        j
        for j in jobs
        if (not queue or field(j, "spec", "queue") == queue)
        and (not scheduler or field(j, "spec", "schedulerName") == scheduler)
    ]


def _fields(pairs: Sequence[tuple[str, str]], indent: int = 0) -> list[str]:
    """``Key:  value`` lines with the values aligned; a multi-line value continues in the value column."""
    width = max(len(k) for k, _ in pairs) + 3
    lines = []
    for key, value in pairs:
        first, *rest = value.split("\n")
        lines.append((" " * indent + f"{key + ':':<{width}}{first}").rstrip())
        lines += [" " * (indent + width) + more for more in rest]
    return lines


def _key_values(values: object) -> str:
    if not isinstance(values, Mapping) or not values:
        return NONE
    return "\n".join(f"{k}={v}" for k, v in sorted(values.items()))


def _indent(block: str, by: int) -> list[str]:
    return [" " * by + line for line in block.rstrip("\n").split("\n")]


def _task_rows(job: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    tasks = field(job, "spec", "tasks")
    for task in tasks if isinstance(tasks, list) else ():
        containers = field(task, "template", "spec", "containers")
        containers = [c for c in containers if isinstance(c, Mapping)] if isinstance(containers, list) else []
        rows.append(
            [
                text(field(task, "name")),
                count(field(task, "replicas")),
                text(",".join(str(c.get("image", "")) for c in containers)),
                ";".join(output.resource_text(field(c, "resources", "requests")) for c in containers) or NONE,
                ";".join(output.resource_text(field(c, "resources", "limits")) for c in containers) or NONE,
            ]
        )
    return rows


def _event_rows(events: Sequence[Mapping[str, Any]], now: datetime) -> list[list[str]]:
    rows = []
    for e in events:
        first = output.parse_time(e.get("firstTimestamp") or e.get("eventTime"))
        last = output.parse_time(e.get("lastTimestamp")) or first
        since_last = output.human_duration((now - last).total_seconds()) if last else "<unknown>"
        n = e.get("count")
        if isinstance(n, int) and n > 1 and first:
            since_last += f" (x{n} over {output.human_duration((now - first).total_seconds())})"
        source = field(e, "source", "component") or e.get("reportingComponent")
        rows.append(
            [
                text(e.get("type")),
                text(e.get("reason")),
                since_last,
                text(source),
                str(e.get("message", "")).strip(),
            ]
        )
    return rows


def describe_job(job: Mapping[str, Any], now: datetime, events: Sequence[Mapping[str, Any]] | None) -> str:
    """``job view``: what the Job asks for, where it stands, and how it got there.

    ``events`` None means they could not be listed (shown as such, not as "none").
    """
    meta, spec, status = metadata(job), mapping(job.get("spec")), mapping(job.get("status"))
    created = meta.get("creationTimestamp")
    lines = _fields(
        [
            ("Name", text(meta.get("name"))),
            ("Namespace", text(meta.get("namespace"))),
            ("Labels", _key_values(meta.get("labels"))),
            ("Annotations", _key_values(meta.get("annotations"))),
            ("Created", f"{created} ({output.age(job, now)} ago)" if created else "<unknown>"),
            ("Queue", text(spec.get("queue"))),
            ("Scheduler", text(spec.get("schedulerName"))),
            ("Min Available", text(spec.get("minAvailable"))),
            ("Max Retry", text(spec.get("maxRetry"))),
            ("Priority Class", text(spec.get("priorityClassName"))),
        ]
    )
    lines.append("Tasks:")
    tasks = _task_rows(job)
    if tasks:
        lines += _indent(render_table(["Name", "Replicas", "Image", "Requests", "Limits"], tasks), 2)
    else:
        lines.append(f"  {NONE}")
    lines.append("Status:")
    state = mapping(status.get("state"))
    status_pairs = [("Phase", text(state.get("phase")))]
    if state.get("reason"):
        status_pairs.append(("Reason", str(state["reason"])))
    if state.get("message"):
        status_pairs.append(("Message", str(state["message"])))
    status_pairs += [
        ("Min Available", count(_min_available(job))),
        ("Retry Count", count(status.get("retryCount"))),
        ("Version", count(status.get("version"))),
        (
            "Pods",
            ", ".join(
                f"{label} {count(status.get(key))}"
                for label, key in (
                    ("Pending", "pending"),
                    ("Running", "running"),
                    ("Succeeded", "succeeded"),
                    ("Failed", "failed"),
                    ("Terminating", "terminating"),
                    ("Unknown", "unknown"),
                )
            ),
        ),
    ]
    lines += _fields(status_pairs, indent=2)
    per_task = status.get("taskStatusCount")
    if isinstance(per_task, Mapping) and per_task:
        lines.append("Task Status:")
        rows = [
            [str(task), *(count(field(counts, "phase", phase)) for phase in POD_PHASES)]
            for task, counts in sorted(per_task.items())
        ]
        lines += _indent(render_table(["Task", *POD_PHASES], rows), 2)
    conditions = status.get("conditions")
    if isinstance(conditions, list) and conditions:
        lines.append("Conditions:")
        rows = [[text(field(c, "status")), text(field(c, "lastTransitionTime"))] for c in conditions]
        lines += _indent(render_table(["Status", "Last Transition"], rows), 2)
    if events is None:
        lines.append("Events:  <unavailable>")
    elif not events:
        lines.append(f"Events:  {NONE}")
    else:
        lines.append("Events:")
        rows = _event_rows(events, now)
        lines += _indent(render_table(["Type", "Reason", "Age", "From", "Message"], rows), 2)
    return "\n".join(lines) + "\n"


# -- API calls -------------------------------------------------------------------------------------


def jobs_path(namespace: str | None) -> str:
    """The Job collection of one namespace, or of all when ``namespace`` is None."""
    return paths.JOBS.collection(None if namespace is None else paths.segment(namespace))


def job_path(namespace: str, name: str) -> str:
    return paths.JOBS.item(paths.segment(name), namespace=paths.segment(namespace))


async def create_job(client: KubeClient, job: Obj) -> Obj:
    return await client.post(jobs_path(str(metadata(job).get("namespace"))), job)


async def list_jobs(client: KubeClient, namespace: str | None) -> list[Obj]:
    return await list_all(client, jobs_path(namespace))


async def get_job(client: KubeClient, namespace: str, name: str) -> Obj:
    return await client.get(job_path(namespace, name))


async def job_events(client: KubeClient, job: Mapping[str, Any]) -> list[Obj] | None:
    """Events about this Job, oldest first; None when they cannot be listed (e.g. not permitted)."""
    meta = metadata(job)
    ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    selector = f"involvedObject.name={name},involvedObject.kind=Job"
    try:
        events = await list_all(
            client, paths.CORE_EVENTS.collection(paths.segment(ns)), [("fieldSelector", selector)]
        )
    except ApiError:
        return None
    # batch/v1 Jobs share the kind and possibly the name; keep only events about the Volcano Job.
    ours = [
        e
        for e in events
        if field(e, "involvedObject", "name") == name
        and str(field(e, "involvedObject", "apiVersion") or JOB_API_VERSION).startswith(L.BATCH_GROUP)
    ]
    return sorted(ours, key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))


async def command_job(client: KubeClient, namespace: str, name: str, action: str) -> Obj:
    """Create the Command for ``action`` on the Job (which must exist: its uid goes in the reference)."""
    job = await get_job(client, namespace, name)
    return await client.post(paths.COMMANDS.collection(paths.segment(namespace)), build_command(job, action))


async def delete_job(client: KubeClient, namespace: str, name: str) -> Obj:
    return await client.delete(job_path(namespace, name))


# -- entry points ----------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


def cmd_run(args: argparse.Namespace) -> int:
    content: str | None = None
    if args.filename:
        try:
            content = sys.stdin.read() if args.filename == "-" else Path(args.filename).read_text()
        except OSError as e:
            print(f"pumice: cannot read {args.filename}: {e.strerror}", file=sys.stderr)
            return 1
    elif args.min > args.replicas:
        print(f"pumice: error: --min {args.min} exceeds --replicas {args.replicas}", file=sys.stderr)
        return 2

    async def action(client: KubeClient, namespace: str) -> None:
        if content is not None:
            job = load_job_file(content, namespace=namespace, explicit_namespace=args.namespace is not None)
        else:
            job = build_job(
                name=args.name,
                namespace=namespace,
                image=args.image,
                replicas=args.replicas,
                min_available=args.min,
                requests=args.requests,
                limits=args.limits,
                scheduler=args.scheduler,
                queue=args.queue,
            )
        created = await create_job(client, job)
        print(f"{JOB_RESOURCE}/{metadata(created).get('name', '')} created")

    return run_action(args, action)


def cmd_list(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        jobs = await list_jobs(client, None if args.all_namespaces else namespace)
        jobs = filter_jobs(jobs, queue=args.queue, scheduler=args.scheduler)
        if args.output in ("yaml", "json"):
            sys.stdout.write(output.dump(output.as_list(jobs), args.output))
        elif not jobs:
            where = "" if args.all_namespaces else f" in {namespace} namespace"
            print(f"No resources found{where}.", file=sys.stderr)
        else:
            sys.stdout.write(
                job_table(jobs, _now(), all_namespaces=args.all_namespaces, wide=args.output == "wide")
            )

    return run_action(args, action)


def cmd_view(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        job = await get_job(client, namespace, args.name)
        if args.output in ("yaml", "json"):
            sys.stdout.write(output.dump(job, args.output))
        else:
            sys.stdout.write(describe_job(job, _now(), await job_events(client, job)))

    return run_action(args, action)


def _cmd_command(args: argparse.Namespace, action_name: str) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        created = await command_job(client, namespace, args.name, action_name)
        print(f"{COMMAND_RESOURCE}/{metadata(created).get('name', '')} created")

    return run_action(args, action)


def cmd_suspend(args: argparse.Namespace) -> int:
    return _cmd_command(args, ABORT_JOB)


def cmd_resume(args: argparse.Namespace) -> int:
    return _cmd_command(args, RESUME_JOB)


def cmd_delete(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        await delete_job(client, namespace, args.name)
        print(f'{JOB_RESOURCE} "{args.name}" deleted')

    return run_action(args, action)
