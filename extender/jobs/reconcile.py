"""One reconcile of one vcjob, pure: the job, its pods, PodGroup and Commands in; a :class:`Plan` out.

The controller performs a plan in this order: the status write first (it records the transition, the new
retry count and version, the restart target and the Command executed), then the PodGroup, pod deletions and
creations, plugin objects, and last the deletion of the executed Command. A crash anywhere in between leaves
a state from which the next reconcile carries on: the phase says what is in flight, the restart target says
what to kill, and a Command already recorded is only deleted, never executed twice.

A job with problems (:func:`extender.jobs.rules.job_problems`, passed in as ``World.problems``) is not
acted on: the plan writes only its status, in its current phase with reason ``InvalidSpec`` and the
problems as the message, and lists them as events. Its pods, PodGroup, plugin objects and Commands stay as
they are, so a running job whose spec is broken by an update keeps running until the spec is fixed, and the
next reconcile after the fix carries on from the same state. Every job without problems reconciles without
raising (the problems cover every shape this module and the pod builders rely on).

Here: the decision (Commands, policies, the state machine of :mod:`extender.jobs.state`), which pods to
kill, delete and create, the PodGroup (:func:`podgroup_spec`, Volcano's) and the TTL. The status the plan
writes is built by :mod:`extender.jobs.status`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from extender.api import labels as L
from extender.core.errors import ConfigError
from extender.core.model import PodPhase
from extender.core.parse import pod_requests
from extender.core.resource_maps import add, format_resource_list
from extender.core.timestamps import epoch
from extender.jobs import policies
from extender.jobs.model import (
    COMMAND_ACTIONS,
    Action,
    Iteration,
    Job,
    JobPhase,
    Partitions,
    TaskSpec,
    podgroup_name,
)
from extender.jobs.notices import waiting_state
from extender.jobs.plugins.base import JobPlugin, PluginContext, owner_reference
from extender.jobs.plugins.registry import build_plugins, plugin_objects
from extender.jobs.pods import PodView, build_pod
from extender.jobs.state import Kill, Move, decide, is_finished, settle
from extender.jobs.status import count_pods, job_status, problem_message, settled_reason

Obj = dict[str, Any]

# Kept in ``status.controlledResources`` (a string map Volcano's schema has too, so they survive either
# CRD): what a Restarting job must kill, and the last Command executed.
RESTART_TARGET: Final = "pumice.dev/restart-target"
LAST_COMMAND: Final = "pumice.dev/last-command"
INVALID_SPEC: Final = "InvalidSpec"
# One Event each; beyond this, one more event says how many were left out.
MAX_PROBLEM_EVENTS: Final = 20

_ADMITTED = frozenset({"Inqueue", "Running", "Unknown"})
_DRAINS = frozenset({JobPhase.ABORTING, JobPhase.COMPLETING, JobPhase.TERMINATING})


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandView:
    name: str
    uid: str
    action: str
    created: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    job: Job
    pods: Sequence[PodView]
    podgroup: Mapping[str, Any] | None = None
    commands: Sequence[CommandView] = ()
    now: float
    # Pods wait for the PodGroup to be admitted (Inqueue); off when another scheduler runs the job's pods.
    gang_admission: bool = True
    plugin_context: PluginContext = field(default_factory=PluginContext)
    # What is wrong with the job (job_problems); when any, the reconcile only reports them.
    problems: Sequence[str] = ()


@dataclass(slots=True)
class Plan:
    status: Obj | None = None
    podgroup_create: Obj | None = None
    podgroup_patch: Obj | None = None
    delete_pods: list[str] = field(default_factory=list)
    create_pods: list[Obj] = field(default_factory=list)
    objects: list[Obj] = field(default_factory=list)
    delete_commands: list[str] = field(default_factory=list)
    delete_job: bool = False
    requeue_after: float | None = None
    events: list[str] = field(default_factory=list)

    def wake(self, delay: float) -> None:
        delay = max(delay, 0.0)
        self.requeue_after = delay if self.requeue_after is None else min(self.requeue_after, delay)


# --- the reconcile ---------------------------------------------------------------------------------------
def reconcile(w: World) -> Plan:
    job = w.job
    plan = Plan()
    if job.deleting:
        return plan
    if w.problems:
        return _report_problems(w)
    phase = job.status.phase
    controlled = dict(job.status.controlled)
    reason, message = job.status.reason, job.status.message
    if reason == INVALID_SPEC:
        reason, message = "", ""  # fixed since: the problems no longer apply

    action, command, trigger = Action.SYNC_JOB, None, None
    for cmd in sorted(w.commands, key=lambda c: (c.created, c.name)):
        if controlled.get(LAST_COMMAND) == cmd.uid or cmd.action not in COMMAND_ACTIONS:
            if cmd.action not in COMMAND_ACTIONS:
                plan.events.append(f"Command {cmd.name}: {cmd.action!r} is not an action for a Job; dropped")
            plan.delete_commands.append(cmd.name)
            continue
        action, command = Action(cmd.action), cmd
        break
    if command is None and phase in (JobPhase.PENDING, JobPhase.RUNNING):
        trigger, due = policies.triggered(job, w.pods, w.now)
        if due is not None:
            plan.wake(due - w.now)
        if trigger is not None:
            action = trigger.action

    move = decide(phase, action, retry_count=job.status.retry_count, max_retry=job.max_retry)
    retry = job.status.retry_count + (1 if move.retry else 0)
    version = job.status.version + (1 if move.bump_version else 0)
    if move.to is JobPhase.RESTARTING:
        controlled[RESTART_TARGET] = _target(action, trigger)
    elif move.to is not None:
        controlled.pop(RESTART_TARGET, None)
    if command is not None:
        controlled[LAST_COMMAND] = command.uid
        plan.delete_commands.append(command.name)
        reason, message = "Command", f"{action} by Command {command.name}"
    elif trigger is not None and move.to is not None:
        reason, message = trigger.event, f"{trigger.describe()} → {action}"
    if move.to is JobPhase.FAILED and action in (Action.RESTART_JOB, Action.RESTART_TASK, Action.RESTART_POD):
        reason, message = "MaxRetryExceeded", f"{message}; maxRetry {job.max_retry} reached, not restarting"

    job_now = _with_status(job, version=version, retry=retry)
    killed = _kills(w.pods, move, controlled.get(RESTART_TARGET, "job"))
    plan.delete_pods.extend(sorted(killed))
    created: list[PodView] = []
    pg_status = (w.podgroup or {}).get("status")
    pg_phase = pg_status.get("phase") if isinstance(pg_status, Mapping) else None
    pg_phase = pg_phase if isinstance(pg_phase, str) and pg_phase else "Pending"
    plugins: list[JobPlugin] = []
    can_create = not w.gang_admission or (w.podgroup is not None and pg_phase in _ADMITTED)
    try:
        plugins = build_plugins(job)
    except ConfigError as e:
        # Written around the webhook: create nothing, say why in the status.
        reason, message, can_create = "InvalidPlugins", str(e), False

    if move.sync:
        extra = _surplus(job_now, w.pods, killed)
        plan.delete_pods.extend(sorted(extra))
        killed |= extra
        if can_create:
            for task, index in _missing(job_now, w.pods):
                plan.create_pods.append(build_pod(job_now, task, index, plugins))
                created.append(PodView(name="", task=task.name, index=index, version=version))

    counts = count_pods(w.pods, killed, created)
    new_phase = move.to or settle(job_now, phase, counts)
    if new_phase is JobPhase.PENDING and phase is JobPhase.RESTARTING:
        controlled.pop(RESTART_TARGET, None)
    # A drain finishing keeps the reason it started with (TaskCompleted, a Command, ...).
    if new_phase != phase and move.to is None and phase not in _DRAINS:
        reason, message = settled_reason(new_phase, counts)
    # A Pending job says why its gang waits, from its PodGroup's condition (see notices.waiting_state).
    reason, message = waiting_state(new_phase.value, w.podgroup, (reason, message))

    plan.status = job_status(
        job_now, new_phase, (reason, message), counts, controlled, pods=w.pods, killed=killed, now=w.now
    )

    if not is_finished(new_phase):
        _podgroup(plan, job_now, w.podgroup)
        if plugins and w.podgroup is not None:
            plan.objects = plugin_objects(plugins, job_now, w.plugin_context)
    else:
        _ttl(plan, job, new_phase, plan.status, w.now)
    return plan


def _report_problems(w: World) -> Plan:
    """The plan for a job with problems: its status says why nothing happens, in the phase it is in."""
    job = w.job
    problems = [str(p) for p in w.problems]
    plan = Plan(events=problems[:MAX_PROBLEM_EVENTS])
    if len(problems) > MAX_PROBLEM_EVENTS:
        plan.events.append(f"... and {len(problems) - MAX_PROBLEM_EVENTS} more problems of the job's spec")
    counts = count_pods(w.pods, set(), [])
    plan.status = job_status(
        job,
        job.status.phase,
        (INVALID_SPEC, problem_message(problems)),
        counts,
        job.status.controlled,
        pods=w.pods,
        killed=set(),
        now=w.now,
    )
    return plan


def _target(action: Action, trigger: policies.Trigger | None) -> str:
    if trigger is not None and action is Action.RESTART_TASK:
        return f"task/{trigger.task}"
    if trigger is not None and action is Action.RESTART_POD and trigger.pod:
        return f"pod/{trigger.pod}"
    return "job"


def _with_status(job: Job, *, version: int, retry: int) -> Job:
    return replace(job, status=replace(job.status, version=version, retry_count=retry))


def _kills(pods: Sequence[PodView], move: Move, target: str) -> set[str]:
    if move.kill is Kill.NONE:
        return set()
    kind, _, name = target.partition("/")
    out = set()
    for p in pods:
        if p.deleting:
            continue
        if move.kill is Kill.SOFT and p.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED):
            continue
        if move.kill is Kill.TARGET and (
            (kind == "task" and p.task != name) or (kind == "pod" and p.name != name)
        ):
            continue
        out.add(p.name)
    return out


def _surplus(job: Job, pods: Sequence[PodView], killed: set[str]) -> set[str]:
    """Pods the spec no longer has (a removed task, an index beyond replicas: elastic extras go first),
    and leftovers of an older job version."""
    replicas = {t.name: t.replicas for t in job.tasks}
    return {
        p.name
        for p in pods
        if not p.deleting
        and p.name not in killed
        and (
            p.task not in replicas
            or p.index >= replicas[p.task]
            or p.index < 0
            or p.version < job.status.version
        )
    }


def _ready(job: Job, task_name: str, pods: Sequence[PodView]) -> bool:
    task = job.task(task_name)
    if task is None:
        return (
            True  # a dependency on a task that is not there cannot hold anything back (admission denies it)
        )
    ok = sum(
        1
        for p in policies.current(job, pods)
        if p.task == task_name
        and (p.phase is PodPhase.SUCCEEDED or (p.phase is PodPhase.RUNNING and p.ready))
    )
    return ok >= task.min_needed


def _deps_met(job: Job, task: TaskSpec, pods: Sequence[PodView]) -> bool:
    dep = task.depends_on
    if dep is None or not dep.names:
        return True
    if dep.iteration is Iteration.ANY and len(dep.names) > 1:
        return any(_ready(job, n, pods) for n in dep.names)
    return all(_ready(job, n, pods) for n in dep.names)


def _missing(job: Job, pods: Sequence[PodView]) -> list[tuple[TaskSpec, int]]:
    present = {p.name for p in pods}
    out = []
    for t in job.tasks:
        if not _deps_met(job, t, pods):
            continue
        for i in range(t.replicas):
            if f"{job.name}-{t.name}-{i}" not in present:
                out.append((t, i))
    return out


# --- PodGroup and TTL ------------------------------------------------------------------------------------
def podgroup_spec(job: Job) -> Obj:
    """The PodGroup Volcano's controller would write: ``minMember`` from ``minAvailable``, ``minTaskMember``
    per task, ``minResources`` of each task's minimum and then the rest of ``minMember`` in task order, the
    job's ``networkTopology``, and a ``subGroupPolicy`` entry per task with a ``partitionPolicy`` (Volcano's
    setPgSubGroupPolicy: its pods by ``volcano.sh/partition-id``, ``partitionSize`` pods a sub-group,
    ``minPartitions`` of them needed, the partition's ``networkTopology``).

    Two choices of ours: when ``minAvailable`` is below the tasks' minimums (an elastic job), the
    per-task minimums are left out, since they would demand more than the job asked for; and a gang never
    counts pods of ``dependsOn`` tasks, which cannot exist until their dependencies run."""
    independent = [t for t in job.tasks if t.depends_on is None or not t.depends_on.names]
    min_member = job.min_available
    if len(independent) < len(job.tasks):
        min_member = min(min_member, sum(t.min_needed for t in independent))
    spec: Obj = {"minMember": min_member, "queue": job.queue}
    if sum(t.min_needed for t in independent) <= min_member:
        spec["minTaskMember"] = {t.name: t.min_needed for t in independent}
    if job.priority_class_name:
        spec["priorityClassName"] = job.priority_class_name
    if job.network_topology:
        spec["networkTopology"] = dict(job.network_topology)
    policies = [_sub_group_policy(t.name, t.partitions) for t in job.tasks if t.partitions is not None]
    if policies:
        spec["subGroupPolicy"] = policies
    # Each task's own minimum first, then the rest of minMember in task order (as Volcano's
    # CalcPGMinResources), so minResources covers what minTaskMember demands.
    total: dict[str, int] = {}
    left = min_member
    takes = {t.name: 0 for t in independent}
    for t in independent:
        takes[t.name] = min(left, t.min_needed, t.replicas)
        left -= takes[t.name]
    for t in independent:
        more = min(left, t.replicas - takes[t.name])
        takes[t.name] += more
        left -= more
    for t in independent:
        if takes[t.name] > 0:
            one = {k: v for k, v in pod_requests((t.template or {}).get("spec") or {}).items() if k != "pods"}
            total = add(total, {k: v * takes[t.name] for k, v in one.items()})
    if total:
        spec["minResources"] = format_resource_list(total)
    return spec


def _sub_group_policy(task: str, parts: Partitions) -> Obj:
    """Volcano's getSubGroupPolicy: ``task``'s ``partitionPolicy`` as the PodGroup's sub-group rule, named
    after the task, over the task's pods (``volcano.sh/task-spec``) grouped by their partition label."""
    out: Obj = {
        "name": task,
        "subGroupSize": parts.size,
        "minSubGroups": parts.minimum,
        "labelSelector": {"matchLabels": {L.TASK_SPEC_ANNOTATION: task}},
        "matchLabelKeys": [L.TASK_PARTITION_ID],
    }
    if parts.network_topology:
        out["networkTopology"] = dict(parts.network_topology)
    return out


def _podgroup(plan: Plan, job: Job, existing: Mapping[str, Any] | None) -> None:
    spec = podgroup_spec(job)
    if existing is None:
        plan.podgroup_create = {
            "apiVersion": f"{L.SCHEDULING_GROUP}/{L.SCHEDULING_VERSION}",
            "kind": "PodGroup",
            "metadata": {
                "name": podgroup_name(job),
                "namespace": job.namespace,
                "labels": {L.JOB_NAME_KEY: job.name, L.JOB_NAMESPACE_KEY: job.namespace},
                "annotations": dict(job.annotations),
                "ownerReferences": [owner_reference(job)],
            },
            "spec": spec,
        }
        return
    have = existing.get("spec")
    have = have if isinstance(have, Mapping) else {}
    diff = {k: v for k, v in spec.items() if have.get(k) != v}
    for k in ("minTaskMember", "minResources", "priorityClassName", "networkTopology", "subGroupPolicy"):
        if k not in spec and have.get(k):
            diff[k] = None
    if diff:
        plan.podgroup_patch = {"spec": diff}


def _ttl(plan: Plan, job: Job, phase: JobPhase, status: Obj | None, now: float) -> None:
    if job.ttl_seconds_after_finished is None:
        return
    since = (
        now if status is not None and phase != job.status.phase else epoch(job.status.last_transition_time)
    )
    due = (since or now) + job.ttl_seconds_after_finished
    if now >= due:
        plan.delete_job = True
    else:
        plan.wake(due - now)
