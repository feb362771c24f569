"""How Volcano Jobs print: the ``job list`` table and the ``job view`` description.

Pure functions of the objects and ``now`` (unit-tested): kubectl's layout (see :mod:`controllers.tables`),
vcctl's columns (with ``-o wide``, the forecast's POSITION and ESTIMATED START too), and a Job's events and
its PodGroup's waiting condition as ``job why`` shows them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from controllers import tables
from controllers.cli import estimates
from controllers.tables import NONE, Obj, count, field, mapping, metadata, render_table, text
from extender.forecast.condition import Shown

JOB_TYPE_LABEL: Final = "volcano.sh/job-type"
POD_PHASES: Final = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


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


def job_row(
    job: Mapping[str, Any],
    now: datetime,
    *,
    all_namespaces: bool,
    wide: bool,
    estimate: Shown | None = None,
) -> list[str]:
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
        tables.age(job, now),
    ]
    if all_namespaces:
        row.insert(0, text(metadata(job).get("namespace")))
    if wide:
        row += [
            text(field(job, "spec", "queue")),
            text(field(job, "spec", "schedulerName")),
            estimates.position_cell(estimate),
            estimates.start_cell(estimate, now),
        ]
    return row


def job_table(
    jobs: Sequence[Mapping[str, Any]],
    now: datetime,
    *,
    all_namespaces: bool,
    wide: bool,
    forecast: Mapping[str, Shown] | None = None,
) -> str:
    """``forecast``: the jobs' PodGroups' estimates (:func:`controllers.cli.estimates.by_job`), shown by
    ``wide`` as POSITION (in its queue) and ESTIMATED START."""
    headers = list(JOB_COLUMNS)
    if all_namespaces:
        headers.insert(0, "NAMESPACE")
    if wide:
        headers += ["QUEUE", "SCHEDULER", "POSITION", "ESTIMATED START"]
    found = forecast or {}
    return render_table(
        headers,
        (
            job_row(j, now, all_namespaces=all_namespaces, wide=wide, estimate=estimates.for_job(found, j))
            for j in jobs
        ),
    )


def filter_jobs(jobs: Sequence[Obj], *, queue: str | None, scheduler: str | None) -> list[Obj]:
    return [
        j
        for j in jobs
        if (not queue or field(j, "spec", "queue") == queue)
        and (not scheduler or field(j, "spec", "schedulerName") == scheduler)
    ]


def field_lines(pairs: Sequence[tuple[str, str]], indent: int = 0) -> list[str]:
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


def indented(block: str, by: int) -> list[str]:
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
                ";".join(tables.resource_text(field(c, "resources", "requests")) for c in containers) or NONE,
                ";".join(tables.resource_text(field(c, "resources", "limits")) for c in containers) or NONE,
            ]
        )
    return rows


def _event_rows(events: Sequence[Mapping[str, Any]], now: datetime) -> list[list[str]]:
    rows = []
    for e in events:
        first = tables.parse_time(e.get("firstTimestamp") or e.get("eventTime"))
        last = tables.parse_time(e.get("lastTimestamp")) or first
        since_last = tables.human_duration((now - last).total_seconds()) if last else "<unknown>"
        n = e.get("count")
        if isinstance(n, int) and n > 1 and first:
            since_last += f" (x{n} over {tables.human_duration((now - first).total_seconds())})"
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


def describe_job(
    job: Mapping[str, Any],
    now: datetime,
    events: Sequence[Mapping[str, Any]] | None,
    waiting: Mapping[str, Any] | None = None,
) -> str:
    """``job view``: what the Job asks for, where it stands, and how it got there.

    ``events`` None means they could not be listed (shown as such, not as "none"). ``waiting``: the
    ``Unschedulable`` condition of its PodGroup (see :func:`waiting_condition`), shown as ``job why``
    shows it.
    """
    meta, spec, status = metadata(job), mapping(job.get("spec")), mapping(job.get("status"))
    created = meta.get("creationTimestamp")
    lines = field_lines(
        [
            ("Name", text(meta.get("name"))),
            ("Namespace", text(meta.get("namespace"))),
            ("Labels", _key_values(meta.get("labels"))),
            ("Annotations", _key_values(meta.get("annotations"))),
            ("Created", f"{created} ({tables.age(job, now)} ago)" if created else "<unknown>"),
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
        lines += indented(render_table(["Name", "Replicas", "Image", "Requests", "Limits"], tasks), 2)
    else:
        lines.append(f"  {NONE}")
    lines.append("Status:")
    state = mapping(status.get("state"))
    status_pairs = [("Phase", text(state.get("phase")))]
    if state.get("reason"):
        status_pairs.append(("Reason", str(state["reason"])))
    if state.get("message"):
        status_pairs.append(("Message", str(state["message"])))
    # The job controller copies this text into status.state while the job is Pending (PodGroupPending);
    # shown once, not twice.
    if waiting is not None and condition_text(waiting) != str(state.get("message") or ""):
        status_pairs.append(("Waiting", condition_text(waiting)))
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
    lines += field_lines(status_pairs, indent=2)
    per_task = status.get("taskStatusCount")
    if isinstance(per_task, Mapping) and per_task:
        lines.append("Task Status:")
        rows = [
            [str(task), *(count(field(counts, "phase", phase)) for phase in POD_PHASES)]
            for task, counts in sorted(per_task.items())
        ]
        lines += indented(render_table(["Task", *POD_PHASES], rows), 2)
    conditions = status.get("conditions")
    if isinstance(conditions, list) and conditions:
        lines.append("Conditions:")
        rows = [[text(field(c, "status")), text(field(c, "lastTransitionTime"))] for c in conditions]
        lines += indented(render_table(["Status", "Last Transition"], rows), 2)
    if events is None:
        lines.append("Events:  <unavailable>")
    elif not events:
        lines.append(f"Events:  {NONE}")
    else:
        lines.append("Events:")
        rows = _event_rows(events, now)
        lines += indented(render_table(["Type", "Reason", "Age", "From", "Message"], rows), 2)
    return "\n".join(lines) + "\n"


def condition_text(condition: Mapping[str, Any]) -> str:
    reason, message = text(condition.get("reason")), str(condition.get("message") or "").strip()
    return f"{reason}: {message}" if message else reason
