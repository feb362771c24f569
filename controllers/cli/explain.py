"""``pumice job view`` and ``pumice job why``: one Job described, and whether it runs or why it waits.

``why`` is ours (vcctl has none): it finds the Job, or else a PodGroup, or else a pod of that name, and
says whether it runs or why it waits, from what is already written on the objects: the PodGroup's phase and
the ``Unschedulable`` condition pumice's status writer keeps on it (reason and message as pumice wrote
them, numbers included; for a group with ``subGroupPolicy`` the message names the sub-group that could not
be placed, and its rules are summed up in a line), and for each of the group's pods that waits for a node,
its own reason (pumice's gang gate, its planned node, or kube-scheduler's ``PodScheduled`` condition). It
reads; it computes nothing.
``view`` shows the same waiting condition in a Job's description
(:func:`~controllers.cli.job_views.describe_job`).

Pure explanation first (unit-tested), then the API calls that find what to explain, then the entry points.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from controllers import tables
from controllers.cli import output
from controllers.cli.errors import CliError
from controllers.cli.job_bodies import JOB_API_VERSION, JOB_RESOURCE
from controllers.cli.job_views import POD_PHASES, condition_text, describe_job, field_lines, indented
from controllers.cli.jobs import get_job
from controllers.cli.kubeconfig import list_all, run_action
from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from controllers.tables import Obj, field, mapping, metadata, render_table, text
from extender.api import labels as L
from extender.core.status import UNSCHEDULABLE
from extender.framework.evict import WAITING_FOR_VICTIMS
from extender.framework.reasons import (
    NOT_ADMITTED,
    NOT_ENOUGH_PODS,
    NOT_ENOUGH_RESOURCES,
    QUEUE_UNAVAILABLE,
)

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
    at = tables.parse_time(condition.get("lastTransitionTime"))
    return f" (for {tables.human_duration((now - at).total_seconds())})" if at else ""


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


def _sub_groups(policies: Sequence[Any]) -> str:
    """A PodGroup's ``subGroupPolicy`` in a line: per rule, the sub-group size, how many must run, the
    labels that tell them apart and their network topology (the scheduler's reason names the sub-group
    that could not be placed)."""
    out = []
    for rule in policies:
        r = mapping(rule)
        size, need = r.get("subGroupSize") or 1, r.get("minSubGroups") or 0
        keys = ",".join(str(k) for k in r.get("matchLabelKeys") or ()) or "no matchLabelKeys"
        nt = mapping(r.get("networkTopology"))
        tier = nt.get("highestTierAllowed", nt.get("highestTierName"))
        where = f", {text(nt.get('mode') or 'hard')} tier {tier}" if tier is not None else ""
        out.append(f"{text(r.get('name'))}: {size} pods each by {keys}, {need} needed{where}")
    return "; ".join(out)


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
            pairs.append(("Min Resources", tables.resource_text(pg_spec.get("minResources"))))
        if isinstance(pg_spec.get("subGroupPolicy"), list) and pg_spec["subGroupPolicy"]:
            pairs.append(("Sub-groups", _sub_groups(pg_spec["subGroupPolicy"])))
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
    lines += field_lines(pairs)
    waiting = [p for p in s.pods if waits_for_node(p)]
    if waiting:
        lines.append("Pods waiting for a node:")
        rows = [[text(metadata(p).get("name")), pod_reason(p)] for p in waiting]
        lines += indented(render_table(["Pod", "Reason"], rows), 2)
    return "\n".join(lines) + "\n"


# -- API calls -------------------------------------------------------------------------------------


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


# -- entry points ----------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


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
