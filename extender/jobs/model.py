"""The Volcano Job (``batch.volcano.sh/v1alpha1`` vcjob) as the pure core sees it, and its parser.

Pod templates stay raw (decoded JSON): the controller copies them into pods and the job plugins edit those
copies, so nothing here needs to understand a PodSpec. Everything else is typed. :func:`parse_job` raises
:class:`InvalidObject` naming the field when an object cannot be read, and nothing else, whatever the
object: a value is converted to text only when it is a string (``str()`` of a list nested thousands deep
would overflow the stack). Admission refuses such jobs before they are stored, so the controller only meets
unreadable jobs written around the webhooks; :func:`extender.jobs.rules.job_problems` names the problem of
every job this parser refuses, and :func:`placeholder_job` gives the controller a job to report it on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from extender.api import labels as L
from extender.core.durations import parse_duration
from extender.core.errors import InvalidObject
from extender.core.fields import list_field as _list

# The core parser's readers: same errors, naming the field, as for PodGroups and Queues.
from extender.core.fields import object_field as _map

Obj = Mapping[str, Any]

DEFAULT_TASK_NAME: Final = "default"
DEFAULT_MAX_RETRY: Final = 3


class JobPhase(StrEnum):
    PENDING = "Pending"
    ABORTING = "Aborting"
    ABORTED = "Aborted"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    COMPLETING = "Completing"
    COMPLETED = "Completed"
    TERMINATING = "Terminating"
    TERMINATED = "Terminated"
    FAILED = "Failed"


FINISHED_PHASES: Final = frozenset({JobPhase.COMPLETED, JobPhase.TERMINATED, JobPhase.FAILED})


class Action(StrEnum):
    """Volcano's bus/v1alpha1 actions a job understands (policies and Commands)."""

    ABORT_JOB = "AbortJob"
    RESTART_JOB = "RestartJob"
    RESTART_TASK = "RestartTask"
    RESTART_POD = "RestartPod"
    TERMINATE_JOB = "TerminateJob"
    COMPLETE_JOB = "CompleteJob"
    RESUME_JOB = "ResumeJob"
    # Internal: reconcile towards the spec. Not valid in a policy or a Command.
    SYNC_JOB = "SyncJob"


POLICY_ACTIONS: Final = frozenset(a for a in Action if a is not Action.SYNC_JOB)
COMMAND_ACTIONS: Final = frozenset(
    {Action.ABORT_JOB, Action.RESUME_JOB, Action.RESTART_JOB, Action.TERMINATE_JOB, Action.COMPLETE_JOB}
)


class Event(StrEnum):
    """Volcano's bus/v1alpha1 events a policy may name."""

    ANY = "*"
    POD_FAILED = "PodFailed"
    POD_EVICTED = "PodEvicted"
    POD_PENDING = "PodPending"
    UNKNOWN = "Unknown"
    TASK_COMPLETED = "TaskCompleted"
    TASK_FAILED = "TaskFailed"


class Iteration(StrEnum):
    ANY = "any"
    ALL = "all"


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """One lifecycle policy: when any of ``events`` happens (or a container exits with ``exit_code``),
    take ``action``; with ``timeout_s``, only once the condition has lasted that long."""

    events: tuple[str, ...] = ()
    action: str
    exit_code: int | None = None
    timeout_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DependsOn:
    names: tuple[str, ...]
    iteration: Iteration = Iteration.ALL


@dataclass(frozen=True, slots=True, kw_only=True)
class Partitions:
    """A task's ``partitionPolicy``: its pods split into ``total`` partitions of ``size`` (pod ``i`` in
    partition ``i // size``), each placed whole inside its ``network_topology`` (as written: mode,
    highestTierAllowed, highestTierName), and ``minimum`` of them needed to start."""

    total: int
    size: int
    minimum: int = 0
    network_topology: tuple[tuple[str, str | int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    name: str
    replicas: int
    min_available: int | None = None
    max_retry: int | None = None
    template: Obj = field(default_factory=dict, compare=False)
    policies: tuple[Policy, ...] = ()
    depends_on: DependsOn | None = None
    topology_policy: str = ""
    partitions: Partitions | None = None

    @property
    def min_needed(self) -> int:
        """Pods of this task the gang needs: ``minAvailable``, else ``minPartitions * partitionSize`` when
        its partition policy sets a minimum (Volcano's getMinTaskMember), else every replica."""
        if self.min_available is not None:
            return self.min_available
        if self.partitions is not None and self.partitions.minimum and self.partitions.size:
            return self.partitions.minimum * self.partitions.size
        return self.replicas


@dataclass(frozen=True, slots=True, kw_only=True)
class JobStatus:
    phase: JobPhase = JobPhase.PENDING
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""
    version: int = 0
    retry_count: int = 0
    running_duration: str = ""
    # Volcano's ``status.controlledResources``: plugins record what they created; pumice also records
    # its in-flight action target and the last Command it executed (see extender.jobs.state).
    controlled: Mapping[str, str] = field(default_factory=dict)
    raw: Obj = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    namespace: str
    name: str
    uid: str
    generation: int = 0
    created: str = ""
    deleting: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    scheduler_name: str = L.DEFAULT_SCHEDULER_NAME
    queue: str = L.DEFAULT_QUEUE
    priority_class_name: str = ""
    min_available: int = 0
    min_success: int | None = None
    max_retry: int = DEFAULT_MAX_RETRY
    ttl_seconds_after_finished: int | None = None
    plugins: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    policies: tuple[Policy, ...] = ()
    tasks: tuple[TaskSpec, ...] = ()
    volumes: tuple[Obj, ...] = field(default=(), compare=False)
    status: JobStatus = field(default_factory=JobStatus)
    # ``spec.networkTopology`` as written (mode, highestTierAllowed, highestTierName), copied onto the
    # PodGroup where the network-topology-aware plugin reads it; empty without one.
    network_topology: tuple[tuple[str, str | int], ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def replicas(self) -> int:
        return sum(t.replicas for t in self.tasks)

    def task(self, name: str) -> TaskSpec | None:
        return next((t for t in self.tasks if t.name == name), None)


# --- names -----------------------------------------------------------------------------------------------
def pod_name(job: str, task: str, index: int) -> str:
    return f"{job}-{task}-{index}"


def podgroup_name(job: Job) -> str:
    """Volcano's name for a job's PodGroup: job name and UID, so a re-created job of the same name never
    inherits the old job's group."""
    return f"{job.name}-{job.uid}"


# --- parsing ------------------------------------------------------------------------------------------------
def _text(value: object, where: str) -> str:
    """A string field: ``""`` when absent or null; InvalidObject for anything else than a string."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidObject(f"{where}: expected a string, got {type(value).__name__}")
    return value


def _texts(obj: Obj, key: str, where: str) -> dict[str, str]:
    """A map of strings (labels, annotations, controlledResources)."""
    return {str(k): _text(v, f"{where}.{key}[{k}]") for k, v in _map(obj, key, where).items()}


def _int(obj: Obj, key: str, where: str, default: int | None) -> int | None:
    v = obj.get(key)
    if v is None:
        return default
    if isinstance(v, bool) or not isinstance(v, int):
        raise InvalidObject(f"{where}.{key}: expected an integer")
    return v


def _policy(raw: object, where: str) -> Policy:
    if not isinstance(raw, Mapping):
        raise InvalidObject(f"{where}: expected an object")
    events: list[str] = []
    if isinstance(raw.get("event"), str) and raw["event"]:
        events.append(raw["event"])
    events += [_text(e, f"{where}.events[{k}]") for k, e in enumerate(_list(raw, "events", where))]
    timeout = raw.get("timeout")
    timeout_s: float | None = None
    if timeout is not None:
        try:
            timeout_s = parse_duration(_text(timeout, f"{where}.timeout"))
        except ValueError as e:
            raise InvalidObject(f"{where}.timeout: {e}") from None
    return Policy(
        events=tuple(events),
        action=_text(raw.get("action"), f"{where}.action"),
        exit_code=_int(raw, "exitCode", where, None),
        timeout_s=timeout_s,
    )


def _task(raw: object, i: int) -> TaskSpec:
    where = f"spec.tasks[{i}]"
    if not isinstance(raw, Mapping):
        raise InvalidObject(f"{where}: expected an object")
    dep = _map(raw, "dependsOn", where)
    depends_on = None
    if dep:
        try:
            iteration = Iteration(_text(dep.get("iteration"), f"{where}.dependsOn.iteration") or "all")
        except ValueError:
            raise InvalidObject(f"{where}.dependsOn.iteration: must be any or all") from None
        names = _list(dep, "name", f"{where}.dependsOn")
        depends_on = DependsOn(
            names=tuple(_text(n, f"{where}.dependsOn.name[{k}]") for k, n in enumerate(names)),
            iteration=iteration,
        )
    return TaskSpec(
        name=_text(raw.get("name"), f"{where}.name") or f"{DEFAULT_TASK_NAME}{i}",
        replicas=_int(raw, "replicas", where, 0) or 0,
        min_available=_int(raw, "minAvailable", where, None),
        max_retry=_int(raw, "maxRetry", where, None),
        template=_map(raw, "template", where),
        policies=tuple(
            _policy(p, f"{where}.policies[{j}]") for j, p in enumerate(_list(raw, "policies", where))
        ),
        depends_on=depends_on,
        topology_policy=_text(raw.get("topologyPolicy"), f"{where}.topologyPolicy"),
        partitions=_partitions(raw, where),
    )


def _partitions(raw: Obj, where: str) -> Partitions | None:
    """A task's ``partitionPolicy``, None when absent (the admission webhook checks its numbers)."""
    pp = _map(raw, "partitionPolicy", where)
    if not pp:
        return None
    at = f"{where}.partitionPolicy"
    return Partitions(
        total=_int(pp, "totalPartitions", at, 0) or 0,
        size=_int(pp, "partitionSize", at, 0) or 0,
        minimum=_int(pp, "minPartitions", at, 0) or 0,
        network_topology=_topology(pp, at),
    )


def _topology(obj: Obj, where: str) -> tuple[tuple[str, str | int], ...]:
    """A ``networkTopology`` as written (mode, highestTierAllowed, highestTierName), sorted by key."""
    return tuple(
        (str(k), v)
        for k, v in sorted(_map(obj, "networkTopology", where).items())
        if k in ("mode", "highestTierAllowed", "highestTierName") and isinstance(v, str | int)
    )


def _status(raw: Obj) -> JobStatus:
    state = _map(raw, "state", "status")
    try:
        phase = JobPhase(_text(state.get("phase"), "status.state.phase") or "Pending")
    except ValueError:
        phase = JobPhase.PENDING
    conditions = raw.get("conditions")
    if conditions is not None and not isinstance(conditions, list):
        raise InvalidObject(f"status.conditions: expected a list, got {type(conditions).__name__}")
    return JobStatus(
        phase=phase,
        reason=_text(state.get("reason"), "status.state.reason"),
        message=_text(state.get("message"), "status.state.message"),
        last_transition_time=_text(state.get("lastTransitionTime"), "status.state.lastTransitionTime"),
        version=_int(raw, "version", "status", 0) or 0,
        retry_count=_int(raw, "retryCount", "status", 0) or 0,
        running_duration=_text(raw.get("runningDuration"), "status.runningDuration"),
        controlled=_texts(raw, "controlledResources", "status"),
        raw=raw,
    )


def parse_job(obj: Obj) -> Job:
    if not isinstance(obj, Mapping):
        raise InvalidObject("Job: expected an object")
    meta = _map(obj, "metadata", "Job")
    if not isinstance(meta.get("name"), str) or not meta["name"]:
        raise InvalidObject("Job.metadata.name: required")
    spec = _map(obj, "spec", "Job")
    tasks = tuple(_task(t, i) for i, t in enumerate(_list(spec, "tasks", "spec")))
    plugins: dict[str, tuple[str, ...]] = {}
    for k, v in _map(spec, "plugins", "spec").items():
        if v is not None and not isinstance(v, list):
            raise InvalidObject(f"spec.plugins[{k}]: expected a list of arguments")
        plugins[str(k)] = tuple(_text(a, f"spec.plugins[{k}][{j}]") for j, a in enumerate(v or ()))
    min_available = _int(spec, "minAvailable", "spec", None)
    if min_available is None:
        min_available = sum(t.min_needed for t in tasks)
    return Job(
        namespace=_text(meta.get("namespace"), "metadata.namespace") or "default",
        name=meta["name"],
        uid=_text(meta.get("uid"), "metadata.uid"),
        generation=_int(meta, "generation", "metadata", 0) or 0,
        created=_text(meta.get("creationTimestamp"), "metadata.creationTimestamp"),
        deleting=bool(meta.get("deletionTimestamp")),
        labels=_texts(meta, "labels", "metadata"),
        annotations=_texts(meta, "annotations", "metadata"),
        scheduler_name=_text(spec.get("schedulerName"), "spec.schedulerName") or L.DEFAULT_SCHEDULER_NAME,
        queue=_text(spec.get("queue"), "spec.queue") or L.DEFAULT_QUEUE,
        priority_class_name=_text(spec.get("priorityClassName"), "spec.priorityClassName"),
        min_available=min_available,
        min_success=_int(spec, "minSuccess", "spec", None),
        max_retry=_int(spec, "maxRetry", "spec", DEFAULT_MAX_RETRY) or 0,
        ttl_seconds_after_finished=_int(spec, "ttlSecondsAfterFinished", "spec", None),
        plugins=plugins,
        policies=tuple(
            _policy(p, f"spec.policies[{j}]") for j, p in enumerate(_list(spec, "policies", "spec"))
        ),
        tasks=tasks,
        volumes=tuple(v for v in _list(spec, "volumes", "spec") if isinstance(v, Mapping)),
        network_topology=_topology(spec, "spec"),
        status=_status(_map(obj, "status", "Job")),
    )


def placeholder_job(obj: object) -> Job | None:
    """A job with the identity and, when readable, the status of ``obj`` and no tasks: what the controller
    reconciles (with the problems of ``obj``) when :func:`parse_job` refuses it, so the problems still
    reach the job's status. None when ``obj`` has no name to write that status to."""
    if not isinstance(obj, Mapping):
        return None
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str) or not name:
        return None
    assert isinstance(meta, Mapping)

    def text(key: str) -> str:
        v = meta.get(key)
        return v if isinstance(v, str) else ""

    status = obj.get("status")
    try:
        parsed = _status(status) if isinstance(status, Mapping) else JobStatus()
    except InvalidObject:
        parsed = JobStatus()
    return Job(
        namespace=text("namespace") or "default",
        name=name,
        uid=text("uid"),
        created=text("creationTimestamp"),
        deleting=bool(meta.get("deletionTimestamp")),
        status=parsed,
    )
