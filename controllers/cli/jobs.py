"""``pumice job run|list|view|why|suspend|resume|delete``: vcctl's job commands on Volcano Jobs.

Mirrors vcctl's behaviour: ``run`` builds a one-task ``batch.volcano.sh/v1alpha1`` Job from flags (or
creates one from a YAML file); ``suspend`` and ``resume`` do not touch the Job but create a
``bus.volcano.sh/v1alpha1`` Command (``AbortJob`` / ``ResumeJob``) that the job controller consumes, owned
by the Job so it is garbage-collected with it. Output follows kubectl rather than vcctl: an AGE column
instead of a creation date, ``<kind>.<group>/<name> created`` confirmations.

``why`` is ours (vcctl has none): it finds the Job, or else a PodGroup, or else a pod of that name, and
says whether it runs or why it waits, from what is already written on the objects: the PodGroup's phase and
the ``Unschedulable`` condition pumice's status writer keeps on it (reason and message as pumice wrote
them, numbers included), and for each of the group's pods that waits for a node, its own reason (pumice's
gang gate, its planned node, or kube-scheduler's ``PodScheduled`` condition). It reads; it computes nothing.

Pure builders and renderers first (unit-tested), then the API calls (taking a KubeClient, tested against
a fake API server), then the ``cmd_*`` entry points that argparse calls.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from controllers.cli import output
from controllers.cli.kubeconfig import CliError, UsageError, list_all, list_versioned, run_action
from controllers.cli.output import NONE, Obj, count, field, mapping, metadata, render_table, text
from controllers.cli.watch import one_row, watch
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from extender.api import labels as L
from extender.core.status import UNSCHEDULABLE
from extender.framework.evict import WAITING_FOR_VICTIMS
from extender.framework.reasons import NOT_ADMITTED, NOT_ENOUGH_PODS, NOT_ENOUGH_RESOURCES, QUEUE_UNAVAILABLE

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


# -- pure: why -------------------------------------------------------------------------------------

# What each reason pumice writes on a waiting PodGroup means for the user, in a line.
REASON_HINTS: Final = {
    NOT_ENOUGH_RESOURCES: "no room for the whole gang (minMember pods) on the nodes or within its queue's "
    "share right now; it starts when pods finish or nodes join",
    NOT_ENOUGH_PODS: "fewer pods exist than the gang needs (minMember, minTaskMember); it waits for them "
    "to be created",
    QUEUE_UNAVAILABLE: "its queue cannot take jobs (closed, missing, or in a parent loop); "
    "see pumice queue list",
    NOT_ADMITTED: "its queue cannot admit the gang's minResources now (capability, guarantees of other "
    "queues, or the cluster's size); see pumice queue list",
    WAITING_FOR_VICTIMS: "pumice is evicting pods to make room; the gang starts once they are gone",
}
RUNNING: Final = "Running"
# Phases after which nothing waits: the Job's (Volcano's JobPhase), the PodGroup's and the pod's.
FINISHED: Final = frozenset({"Completed", "Failed", "Terminated", "Aborted", "Succeeded"})
GROUP_ANNOTATIONS: Final = (L.GROUP_NAME_ANNOTATION, L.GROUP_NAME_ANNOTATION_VOLCANO)


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """What ``job why`` explains: the object NAME named, its PodGroup, and the group's pods."""

    kind: str  # "Job", "PodGroup" or "Pod"
    namespace: str
    name: str
    obj: Obj  # the object itself
    group_name: str  # the PodGroup the pods name ("" when none: a plain pod, or a Job without one yet)
    podgroup: Obj | None  # None when it does not exist
    pods: Sequence[Obj]


def group_of(pod: Mapping[str, Any]) -> str:
    """The PodGroup a pod names (either of Volcano's annotations), or ""."""
    ann = mapping(metadata(pod).get("annotations"))
    return next((str(ann[k]) for k in GROUP_ANNOTATIONS if ann.get(k)), "")


def waiting_condition(podgroup: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The PodGroup's ``Unschedulable`` condition while it stands (not once the group runs)."""
    if podgroup is None or field(podgroup, "status", "phase") in (RUNNING, *FINISHED):
        return None
    conditions = field(podgroup, "status", "conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == UNSCHEDULABLE and str(c.get("status")) == "True":
            return c
    return None


def condition_text(condition: Mapping[str, Any]) -> str:
    reason, message = text(condition.get("reason")), str(condition.get("message") or "").strip()
    return f"{reason}: {message}" if message else reason


def waits_for_node(pod: Mapping[str, Any]) -> bool:
    return not field(pod, "spec", "nodeName") and field(pod, "status", "phase") not in FINISHED


def pod_reason(pod: Mapping[str, Any]) -> str:
    """Why a pod without a node has none, from what is written on it."""
    meta = metadata(pod)
    if meta.get("deletionTimestamp"):
        return "being deleted"
    gates = field(pod, "spec", "schedulingGates")
    names = [str(g.get("name")) for g in gates if isinstance(g, Mapping)] if isinstance(gates, list) else []
    if L.GANG_SCHEDULING_GATE in names:
        return f"held by the scheduling gate {L.GANG_SCHEDULING_GATE} until pumice has planned its whole gang"
    if names:
        return f"held by scheduling gate {', '.join(names)} (not pumice's)"
    planned = str(mapping(meta.get("annotations")).get(L.PLANNED_NODE_ANNOTATION) or "")
    conditions = field(pod, "status", "conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("status") == "False":
            why = condition_text(c)
            return f"{why} (planned on node {planned})" if planned else why
    if planned:
        return f"planned on node {planned}; waiting for kube-scheduler to bind it"
    return "not tried by a scheduler yet"


def _since(condition: Mapping[str, Any], now: datetime) -> str:
    at = output.parse_time(condition.get("lastTransitionTime"))
    return f" (for {output.human_duration((now - at).total_seconds())})" if at else ""


def _own_phase(s: Subject) -> str:
    path = ("status", "state", "phase") if s.kind == "Job" else ("status", "phase")
    return str(field(s.obj, *path) or "")


def _headline(s: Subject, condition: Mapping[str, Any] | None) -> str:
    what = f"{s.kind} {s.namespace}/{s.name}"
    phase = _own_phase(s)
    if phase == RUNNING:
        return f"{what} is running."
    if phase in FINISHED:
        return f"{what} is not waiting: it is {phase}."
    if s.kind == "Job" and phase not in ("", "Pending"):
        return f"{what} is {phase}."
    if s.kind == "Pod" and field(s.obj, "spec", "nodeName"):
        return f"{what} is bound to node {field(s.obj, 'spec', 'nodeName')} and starting."
    if condition is not None:
        return f"{what} is waiting: {text(condition.get('reason'))}."
    if s.podgroup is None and s.kind == "Job":
        return f"{what} is waiting: its PodGroup does not exist yet (the job controller creates it)."
    if s.podgroup is None and s.group_name:
        return f"{what} is waiting: its PodGroup {s.group_name} does not exist."
    if s.podgroup is None and s.kind == "Pod":
        return f"{what} is waiting: {pod_reason(s.obj).rstrip('.')}."
    if s.podgroup is not None and field(s.podgroup, "status", "phase") == "Inqueue":
        return f"{what} is waiting: admitted by its queue, its pods are being placed."
    return (
        f"{what} is waiting: no reason recorded yet (the scheduler has not tried it, or it is not pumice's)."
    )


def _pod_counts(pods: Sequence[Mapping[str, Any]]) -> str:
    phases = [str(field(p, "status", "phase") or "Pending") for p in pods]
    known = [ph for ph in POD_PHASES if ph in phases] + sorted(set(phases) - set(POD_PHASES))
    return f"{len(pods)}" + (": " + ", ".join(f"{phases.count(ph)} {ph}" for ph in known) if pods else "")


def explain(s: Subject, now: datetime) -> str:
    """``job why``: a headline saying whether it runs or why it waits, then the evidence."""
    condition = waiting_condition(s.podgroup)
    lines = [_headline(s, condition)]
    pairs: list[tuple[str, str]] = []
    if s.podgroup is not None:
        pg_status = mapping(s.podgroup.get("status"))
        pg_spec = mapping(s.podgroup.get("spec"))
        pairs += [
            ("PodGroup", f"{text(metadata(s.podgroup).get('name'))} (phase {text(pg_status.get('phase'))})"),
            ("Queue", text(pg_spec.get("queue"))),
            ("Min Member", text(pg_spec.get("minMember"))),
        ]
        if pg_spec.get("minResources"):
            pairs.append(("Min Resources", output.resource_text(pg_spec.get("minResources"))))
    elif s.group_name:
        pairs.append(("PodGroup", f"{s.group_name} (not found)"))
    elif s.kind == "Pod":
        pairs.append(("PodGroup", "<none>: pumice schedules a pod without one as a group of its own"))
    else:
        pairs.append(("PodGroup", "<none> yet"))
    if condition is not None:
        reason = text(condition.get("reason"))
        pairs.append(("Reason", f"{reason}{_since(condition, now)}"))
        message = str(condition.get("message") or "").strip()
        if message:
            pairs.append(("Message", message))
        if reason in REASON_HINTS:
            pairs.append(("Meaning", REASON_HINTS[reason]))
    pairs.append(("Pods", _pod_counts(s.pods)))
    lines += _fields(pairs)
    waiting = [p for p in s.pods if waits_for_node(p)]
    if waiting:
        lines.append("Pods waiting for a node:")
        rows = [[text(metadata(p).get("name")), pod_reason(p)] for p in waiting]
        lines += _indent(render_table(["Pod", "Reason"], rows), 2)
    return "\n".join(lines) + "\n"


# -- API calls -------------------------------------------------------------------------------------


def jobs_path(namespace: str | None) -> str:
    """The Job collection of one namespace, or of all when ``namespace`` is None."""
    return paths.JOBS.collection(None if namespace is None else paths.segment(namespace))


def job_path(namespace: str, name: str) -> str:
    return paths.JOBS.item(paths.segment(name), namespace=paths.segment(namespace))


async def create_job(client: KubeClient, job: Obj) -> Obj:
    return await client.post(jobs_path(str(metadata(job).get("namespace"))), job)


def selector_query(selector: str | None) -> list[tuple[str, str]]:
    """``-l``: the API server filters by labels (kubectl's selector syntax, checked by the server)."""
    return [("labelSelector", selector)] if selector else []


async def list_jobs(client: KubeClient, namespace: str | None, selector: str | None = None) -> list[Obj]:
    return (await list_jobs_versioned(client, namespace, selector))[0]


async def list_jobs_versioned(
    client: KubeClient, namespace: str | None, selector: str | None = None
) -> tuple[list[Obj], str]:
    return await list_versioned(client, jobs_path(namespace), selector_query(selector))


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


async def _get_or_none(client: KubeClient, path: str) -> Obj | None:
    """The object, or None when the API server has none there (404: no object, or no such resource)."""
    try:
        return await client.get(path)
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def _pick_podgroup(groups: Sequence[Obj], job: Mapping[str, Any]) -> Obj | None:
    """A Job's PodGroup: the one it owns, else by Volcano's names for it (``<job>-<uid>``, then ``<job>``)."""
    meta = metadata(job)
    name, uid = str(meta.get("name", "")), str(meta.get("uid", ""))
    for g in groups:
        refs = metadata(g).get("ownerReferences")
        if (
            uid
            and isinstance(refs, list)
            and any(isinstance(r, Mapping) and r.get("uid") == uid for r in refs)
        ):
            return g
    by_name = {str(metadata(g).get("name")): g for g in groups}
    return by_name.get(f"{name}-{uid}") or by_name.get(name)


async def job_podgroup(client: KubeClient, job: Mapping[str, Any]) -> Obj | None:
    namespace = str(metadata(job).get("namespace", ""))
    groups = await list_all(client, paths.PODGROUPS.collection(paths.segment(namespace)))
    return _pick_podgroup(groups, job)


async def _group_pods(client: KubeClient, namespace: str, group: str, job: str | None) -> list[Obj]:
    """The pods in ``namespace`` that name PodGroup ``group``, or with no group, carry Job ``job``'s label."""
    query = [("labelSelector", f"{L.JOB_NAME_KEY}={job}")] if job else None
    pods = await list_all(client, paths.PODS.collection(paths.segment(namespace)), query)
    if group:
        return [p for p in pods if group_of(p) == group]
    return [p for p in pods if mapping(metadata(p).get("labels")).get(L.JOB_NAME_KEY) == job]


async def find_subject(client: KubeClient, namespace: str, name: str) -> Subject:
    """The Job named ``name``, else the PodGroup, else the pod; CliError when there is none of them."""
    ns, seg = paths.segment(namespace), paths.segment(name)
    job = await _get_or_none(client, paths.JOBS.item(seg, namespace=ns))
    if job is not None:
        pg = await job_podgroup(client, job)
        group = str(metadata(pg).get("name", "")) if pg is not None else ""
        pods = await _group_pods(client, namespace, group, name)
        return Subject(
            kind="Job", namespace=namespace, name=name, obj=job, group_name=group, podgroup=pg, pods=pods
        )
    pg = await _get_or_none(client, paths.PODGROUPS.item(seg, namespace=ns))
    if pg is not None:
        pods = await _group_pods(client, namespace, name, None)
        return Subject(
            kind="PodGroup", namespace=namespace, name=name, obj=pg, group_name=name, podgroup=pg, pods=pods
        )
    pod = await _get_or_none(client, paths.PODS.item(seg, namespace=ns))
    if pod is not None:
        group = group_of(pod)
        if not group:
            return Subject(
                kind="Pod", namespace=namespace, name=name, obj=pod, group_name="", podgroup=None, pods=[pod]
            )
        pg = await _get_or_none(client, paths.PODGROUPS.item(paths.segment(group), namespace=ns))
        pods = await _group_pods(client, namespace, group, None)
        return Subject(
            kind="Pod", namespace=namespace, name=name, obj=pod, group_name=group, podgroup=pg, pods=pods
        )
    raise CliError(f'no Job, PodGroup or Pod named "{name}" in namespace {namespace}')


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


def render_jobs(jobs: Sequence[Obj], fmt: str, *, all_namespaces: bool, header: bool = True) -> str:
    """Jobs as ``-o`` asks: a table (``header=False``: its rows only, for a watch), a List document,
    names or a jsonpath template."""
    # As kubectl: a template sees the List, but in a watch each changed object on its own.
    special = output.render_as(fmt, output.as_list(list(jobs)) if header else jobs[0], JOB_RESOURCE)
    if special is not None:
        return special
    if fmt in output.DOCUMENTS:
        if header:
            return output.dump(output.as_list(list(jobs)), "json" if fmt == "json" else "yaml")
        # A watch prints each changed object as a document of its own.
        return "---\n" + output.dump(jobs[0], "yaml") if fmt == "yaml" else output.dump(jobs[0], "json")
    table = job_table(jobs, _now(), all_namespaces=all_namespaces, wide=fmt == "wide")
    return table if header else one_row(table)


def cmd_list(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        where_ns = None if args.all_namespaces else namespace
        jobs, version = await list_jobs_versioned(client, where_ns, args.selector)
        jobs = filter_jobs(jobs, queue=args.queue, scheduler=args.scheduler)
        per_object = args.watch and args.output.startswith(output.JSONPATH)
        if per_object:  # kubectl: while watching, a template sees each object, the first ones too
            sys.stdout.write(
                "".join(render_jobs([j], args.output, all_namespaces=False, header=False) for j in jobs)
            )
        elif jobs or output.always_printed(args.output) or (args.watch and args.output in ("table", "wide")):
            sys.stdout.write(render_jobs(jobs, args.output, all_namespaces=args.all_namespaces))
        else:
            where = "" if args.all_namespaces else f" in {namespace} namespace"
            print(f"No resources found{where}.", file=sys.stderr)
        if not args.watch:
            return
        sys.stdout.flush()

        def row(obj: Mapping[str, Any]) -> str:
            if not filter_jobs([dict(obj)], queue=args.queue, scheduler=args.scheduler):
                return ""
            return render_jobs([dict(obj)], args.output, all_namespaces=args.all_namespaces, header=False)

        query = selector_query(args.selector)
        await watch(client, jobs_path(where_ns), query, version, row, seconds=args.timeout)

    return run_action(args, action)


def cmd_view(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        job = await get_job(client, namespace, args.name)
        special = output.render_as(args.output, job, JOB_RESOURCE)
        if special is not None:
            sys.stdout.write(special)
            return
        if args.output in output.DOCUMENTS:
            sys.stdout.write(output.dump(job, args.output))
            return
        try:
            waiting = waiting_condition(await job_podgroup(client, job))
        except ApiError:  # the Job is what was asked for: describe it without its group's reason
            waiting = None
        sys.stdout.write(describe_job(job, _now(), await job_events(client, job), waiting))

    return run_action(args, action)


def cmd_why(args: argparse.Namespace) -> int:
    async def action(client: KubeClient, namespace: str) -> None:
        sys.stdout.write(explain(await find_subject(client, namespace, args.name), _now()))

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
