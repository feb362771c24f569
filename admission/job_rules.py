"""The checks of a Volcano Job that need nothing but the object itself, one function per part of the spec.

:mod:`admission.jobs` composes them (and adds the queue and update rules). Each function reads raw JSON,
never raises, and returns the :class:`FieldError` list for its part, so one denial reports every problem of a
job at once (Volcano's webhook stops at the first problem of some kinds; we do not).

Volcano sources matched (``pkg/webhooks/admission/jobs/validate``): ``admit_job.go`` (task counts, names, pod
name length, partition policy, network topology, NUMA topology policy, mpi master task, plugins, DAG of
``dependsOn``), ``util.go`` (lifecycle policies, volumes), and the checks Volcano moved into its
ValidatingAdmissionPolicy (``installer/.../policy/jobs-validating.yaml``): replicas, minAvailable, maxRetry,
ttlSecondsAfterFinished, unique DNS-1123 task names. Pod templates get a sanity check (containers with a
name and an image, valid resource quantities, a known restartPolicy) rather than Kubernetes' full pod
validation, which kube-apiserver applies anyway when the job's pods are created.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from admission.base import FieldError, Obj, is_int, mapping
from admission.quantities import check_resource_list
from extender.jobs.model import POLICY_ACTIONS, Event, Iteration, parse_duration, pod_name
from extender.jobs.plugins.mpi import MpiPlugin
from extender.jobs.plugins.registry import PLUGIN_NAMES, check_plugin

# Volcano checks job and pod names with IsQualifiedName: at most 63 characters.
MAX_NAME: Final = 63
MAX_SUBDOMAIN: Final = 253
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")

LABEL_RULE: Final = (
    "must be a lowercase RFC 1123 label: at most 63 characters of a-z, 0-9 and '-', "
    "starting and ending with a letter or digit"
)
SUBDOMAIN_RULE: Final = (
    "must be a lowercase RFC 1123 subdomain: at most 253 characters of a-z, 0-9, '-' and '.', "
    "starting and ending with a letter or digit"
)

VALID_EVENTS: Final = tuple(e.value for e in Event)
VALID_ACTIONS: Final = tuple(sorted(a.value for a in POLICY_ACTIONS))
NUMA_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
MPI_PLUGIN: Final = "mpi"

# (index in spec.tasks, the task object) for every entry that is an object.
Tasks = list[tuple[int, Obj]]


def as_int(value: object) -> int | None:
    """``value`` when it is a JSON integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_label(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME and _LABEL.match(value) is not None


def is_subdomain(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_SUBDOMAIN and _SUBDOMAIN.match(value) is not None


def _int(obj: Obj, key: str, at: str, minimum: int) -> tuple[int | None, list[FieldError]]:
    """``obj[key]`` when it is an integer >= ``minimum``; None (and maybe an error) otherwise."""
    v = obj.get(key)
    if v is None:
        return None, []
    if not is_int(v) or v < minimum:
        return None, [FieldError(field=f"{at}.{key}", message=f"must be an integer >= {minimum}, got {v!r}")]
    return int(v), []


def _both_tiers(nt: object, at: str) -> list[FieldError]:
    if isinstance(nt, Mapping) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return [FieldError(field=at, message="set either highestTierAllowed or highestTierName, not both")]
    return []


# --- names --------------------------------------------------------------------------------------------------
def job_name_errors(name: str) -> list[FieldError]:
    """Volcano's validateJobName (IsQualifiedName). An empty name (``generateName``) is left to the server."""
    if not name:
        return []
    if len(name) > MAX_NAME:
        return [
            FieldError(
                field="metadata.name",
                message=f"must be at most {MAX_NAME} characters, got {len(name)}; "
                "pods are named <job>-<task>-<index>",
            )
        ]
    if not _QUALIFIED.match(name):
        return [
            FieldError(
                field="metadata.name",
                message=f"must consist of letters, digits, '-', '_' or '.', starting and ending with a "
                f"letter or digit, got {name!r}",
            )
        ]
    return []


def task_list(spec: Obj) -> tuple[Tasks, list[FieldError]]:
    """The task objects of ``spec.tasks`` with the errors of its shape (at least one task, each an object)."""
    raw = spec.get("tasks")
    if raw is None or raw == []:
        return [], [FieldError(field="spec.tasks", message="must list at least one task")]
    if not isinstance(raw, list):
        return [], [FieldError(field="spec.tasks", message="must be a list of tasks")]
    tasks: Tasks = []
    errors: list[FieldError] = []
    for i, t in enumerate(raw):
        if isinstance(t, Mapping):
            tasks.append((i, t))
        else:
            errors.append(FieldError(field=f"spec.tasks[{i}]", message="must be an object"))
    return tasks, errors


def task_name_errors(tasks: Tasks) -> list[FieldError]:
    """Every task has a DNS-1123 label for a name (its pods' hostnames start with it), unique in the job."""
    errors: list[FieldError] = []
    first: dict[str, int] = {}
    for i, t in tasks:
        name = t.get("name")
        at = f"spec.tasks[{i}].name"
        if not is_label(name):
            errors.append(FieldError(field=at, message=f"{LABEL_RULE}, got {name!r}"))
        elif name in first:
            errors.append(
                FieldError(
                    field=at,
                    message=f"duplicate task name {name!r} (also spec.tasks[{first[name]}].name); "
                    "task names must be unique in a job",
                )
            )
        else:
            first[str(name)] = i
    return errors


def task_names(tasks: Tasks) -> dict[str, int]:
    """Valid task names and the index of their first task."""
    out: dict[str, int] = {}
    for i, t in tasks:
        name = t.get("name")
        if is_label(name):
            out.setdefault(str(name), i)
    return out


def pod_name_errors(job: str, tasks: Tasks) -> list[FieldError]:
    """The longest pod name of each task fits in 63 characters (Volcano checks each pod name the same way;
    it tries index = the task's position, we try the highest replica index, the name actually created)."""
    if not job or job_name_errors(job):
        return []
    errors: list[FieldError] = []
    for i, t in tasks:
        name, replicas = t.get("name"), as_int(t.get("replicas"))
        if not is_label(name):
            continue
        last = max(replicas - 1, 0) if replicas is not None else 0
        pod = pod_name(job, str(name), last)
        if len(pod) > MAX_NAME:
            errors.append(
                FieldError(
                    field=f"spec.tasks[{i}].name",
                    message=f"pod name {pod!r} would be {len(pod)} characters, over the limit of {MAX_NAME} "
                    "for <job>-<task>-<index>; shorten the job or task name",
                )
            )
    return errors


# --- counts -------------------------------------------------------------------------------------------------
def count_errors(spec: Obj, tasks: Tasks) -> list[FieldError]:
    """Replicas and minAvailable of tasks and job, partition policies, network topology: the rules Volcano
    applies on CREATE and again on UPDATE (the only numbers an update may change)."""
    errors: list[FieldError] = []
    total: int | None = 0
    for i, t in tasks:
        at = f"spec.tasks[{i}]"
        replicas, bad_replicas = _int(t, "replicas", at, 0)
        min_available, bad_min = _int(t, "minAvailable", at, 0)
        errors += bad_replicas + bad_min
        if bad_replicas:
            total = None
        else:
            replicas = replicas or 0
            if total is not None:
                total += replicas
            if min_available is not None and min_available > replicas:
                errors.append(
                    FieldError(
                        field=f"{at}.minAvailable",
                        message=f"{min_available} is greater than replicas {replicas}; "
                        "lower minAvailable or raise replicas",
                    )
                )
        errors += _partition_errors(t, at, replicas, min_available)
    job_min, bad = _int(spec, "minAvailable", "spec", 0)
    errors += bad
    if job_min is not None and total is not None and job_min > total:
        errors.append(
            FieldError(
                field="spec.minAvailable",
                message=f"{job_min} is greater than the {total} replicas of all tasks; "
                "lower minAvailable or add replicas",
            )
        )
    errors += _both_tiers(spec.get("networkTopology"), "spec.networkTopology")
    return errors


def _partition_errors(
    task: Obj, task_at: str, replicas: int | None, min_available: int | None
) -> list[FieldError]:
    """Volcano's validatePartitionPolicy: replicas = totalPartitions * partitionSize and, when minPartitions
    is set, minAvailable = minPartitions * partitionSize."""
    raw = task.get("partitionPolicy")
    if raw is None:
        return []
    at = f"{task_at}.partitionPolicy"
    if not isinstance(raw, Mapping):
        return [FieldError(field=at, message="must be an object")]
    errors: list[FieldError] = []
    for key in ("totalPartitions", "partitionSize"):
        if raw.get(key) is None:
            errors.append(FieldError(field=f"{at}.{key}", message="required; an integer >= 1"))
    total, e1 = _int(raw, "totalPartitions", at, 1)
    size, e2 = _int(raw, "partitionSize", at, 1)
    min_parts, e3 = _int(raw, "minPartitions", at, 0)
    errors += e1 + e2 + e3
    if total is not None and size is not None:
        if replicas is not None and replicas != total * size:
            errors.append(
                FieldError(
                    field=f"{task_at}.replicas",
                    message=f"must equal partitionPolicy.totalPartitions * partitionSize "
                    f"({total} * {size} = {total * size}), got {replicas}",
                )
            )
        if min_parts and min_available is not None and min_available != min_parts * size:
            errors.append(
                FieldError(
                    field=f"{task_at}.minAvailable",
                    message=f"must equal partitionPolicy.minPartitions * partitionSize "
                    f"({min_parts} * {size} = {min_parts * size}), got {min_available}",
                )
            )
    return errors + _both_tiers(raw.get("networkTopology"), f"{at}.networkTopology")


def scalar_errors(spec: Obj, tasks: Tasks) -> list[FieldError]:
    """minSuccess, maxRetry (job and tasks) and ttlSecondsAfterFinished."""
    errors: list[FieldError] = []
    min_success, e = _int(spec, "minSuccess", "spec", 1)
    errors += e
    replicas = [t.get("replicas", 0) for _, t in tasks]
    if min_success is not None and all(is_int(r) and r >= 0 for r in replicas):
        total = sum(replicas)
        if min_success > total:
            errors.append(
                FieldError(
                    field="spec.minSuccess",
                    message=f"{min_success} is greater than the {total} replicas of all tasks; "
                    "lower minSuccess or add replicas",
                )
            )
    errors += _int(spec, "maxRetry", "spec", 0)[1]
    errors += _int(spec, "ttlSecondsAfterFinished", "spec", 0)[1]
    for i, t in tasks:
        errors += _int(t, "maxRetry", f"spec.tasks[{i}]", 0)[1]
    return errors


# --- pod templates ------------------------------------------------------------------------------------------
def template_errors(task: Obj, at: str) -> list[FieldError]:
    """Sanity of a task's pod template, and Volcano's rule for a NUMA ``topologyPolicy``."""
    raw = task.get("template")
    if raw is not None and not isinstance(raw, Mapping):
        return [FieldError(field=f"{at}.template", message="must be a pod template (metadata and spec)")]
    spec_raw = mapping(task, "template").get("spec")
    if spec_raw is not None and not isinstance(spec_raw, Mapping):
        return [FieldError(field=f"{at}.template.spec", message="must be a pod spec")]
    spec = mapping(mapping(task, "template"), "spec")
    where = f"{at}.template.spec"
    errors: list[FieldError] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errors.append(FieldError(field=f"{where}.containers", message="must list at least one container"))
    seen: dict[str, str] = {}
    for kind in ("initContainers", "containers"):
        items = spec.get(kind)
        if items is None or (kind == "containers" and not isinstance(items, list)):
            continue
        if not isinstance(items, list):
            errors.append(FieldError(field=f"{where}.{kind}", message="must be a list of containers"))
            continue
        for j, c in enumerate(items):
            errors += _container_errors(c, f"{where}.{kind}[{j}]", seen)
    policy = spec.get("restartPolicy")
    if policy not in (None, "", *RESTART_POLICIES):
        errors.append(
            FieldError(
                field=f"{where}.restartPolicy",
                message=f"must be one of {', '.join(RESTART_POLICIES)}, got {policy!r}",
            )
        )
    return errors + _numa_errors(task, at, spec)


def _container_errors(c: object, at: str, seen: dict[str, str]) -> list[FieldError]:
    if not isinstance(c, Mapping):
        return [FieldError(field=at, message="must be an object")]
    errors: list[FieldError] = []
    name = c.get("name")
    if not is_label(name):
        errors.append(FieldError(field=f"{at}.name", message=f"{LABEL_RULE}, got {name!r}"))
    elif name in seen:
        errors.append(
            FieldError(
                field=f"{at}.name",
                message=f"duplicate container name {name!r} (also {seen[str(name)]}.name); "
                "container names must be unique in a pod",
            )
        )
    else:
        seen[str(name)] = at
    image = c.get("image")
    if not isinstance(image, str) or not image.strip():
        errors.append(FieldError(field=f"{at}.image", message="required; name the container image to run"))
    resources = mapping(c, "resources")
    requests, e1 = check_resource_list(resources.get("requests"), f"{at}.resources.requests")
    limits, e2 = check_resource_list(resources.get("limits"), f"{at}.resources.limits")
    errors += e1 + e2
    for r, q in sorted(requests.exact.items()):
        limit = limits.exact.get(r)
        if limit is not None and q > limit:
            errors.append(
                FieldError(
                    field=f"{at}.resources.requests[{r}]",
                    message=f"{requests.text[r]} is above the limit {limits.text[r]}; "
                    "a request must be at most its limit",
                )
            )
    return errors


def _numa_errors(task: Obj, at: str, spec: Obj) -> list[FieldError]:
    """Volcano's validateTaskTopoPolicy: with a NUMA policy other than none, every container asks for a
    whole number of CPUs (its requests, or its limits when it has no requests)."""
    policy = task.get("topologyPolicy")
    if policy in (None, "", "none"):
        return []
    if policy not in NUMA_POLICIES:
        return [
            FieldError(
                field=f"{at}.topologyPolicy",
                message=f"must be one of {', '.join(NUMA_POLICIES)}, got {policy!r}",
            )
        ]
    errors: list[FieldError] = []
    for kind in ("containers", "initContainers"):
        items = spec.get(kind)
        if not isinstance(items, list):
            continue
        for j, c in enumerate(items):
            resources = mapping(c, "resources")
            source = "requests" if mapping(resources, "requests") else "limits"
            cpus, bad = check_resource_list(mapping(resources, source), "")
            cpu = cpus.exact.get("cpu")
            if bad or cpu is None or cpu.denominator != 1 or cpu < 1:
                errors.append(
                    FieldError(
                        field=f"{at}.template.spec.{kind}[{j}].resources.{source}[cpu]",
                        message=f"topologyPolicy {policy} needs a whole number of CPUs (such as 1 or 2) "
                        "for every container",
                    )
                )
    return errors


# --- lifecycle policies -------------------------------------------------------------------------------------
def policy_errors(raw: object, where: str) -> list[FieldError]:
    """Volcano's validatePolicies, for ``spec.policies`` or one task's ``policies``: each policy names
    events or an exit code (not both), known events and actions, no event or exit code twice, ``*`` alone."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [FieldError(field=where, message="must be a list of policies")]
    errors: list[FieldError] = []
    event_owner: dict[str, str] = {}
    code_owner: dict[int, str] = {}
    for j, p in enumerate(raw):
        at = f"{where}[{j}]"
        if not isinstance(p, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        events, e = _policy_events(p, at)
        errors += e
        raw_code = p.get("exitCode")
        code = as_int(raw_code)
        if raw_code is not None and code is None:
            errors.append(FieldError(field=f"{at}.exitCode", message=f"must be an integer, got {raw_code!r}"))
        if events and raw_code is not None:
            errors.append(FieldError(field=at, message="set either event/events or exitCode, not both"))
        elif not events and raw_code is None and not e:
            errors.append(
                FieldError(field=at, message="set event, events or exitCode to say when the policy applies")
            )
        for path, event in events:
            if event not in VALID_EVENTS:
                errors.append(
                    FieldError(
                        field=path,
                        message=f"unknown event {event!r}; valid events are {', '.join(VALID_EVENTS)}",
                    )
                )
            elif event_owner.setdefault(event, at) != at:
                errors.append(
                    FieldError(
                        field=path,
                        message=f"event {event!r} is already handled by {event_owner[event]}; "
                        "each event may appear in one policy only",
                    )
                )
        if code is not None and not events:
            if code == 0:
                errors.append(
                    FieldError(
                        field=f"{at}.exitCode", message="0 means success; a policy needs a non-zero exit code"
                    )
                )
            elif code_owner.setdefault(code, at) != at:
                errors.append(
                    FieldError(
                        field=f"{at}.exitCode",
                        message=f"exit code {code} is already handled by {code_owner[code]}; "
                        "each exit code may appear in one policy only",
                    )
                )
        errors += _action_errors(p.get("action"), f"{at}.action")
        errors += _timeout_errors(p.get("timeout"), f"{at}.timeout")
    if Event.ANY.value in event_owner and len(event_owner) > 1:
        others = ", ".join(e for e in VALID_EVENTS if e in event_owner and e != Event.ANY.value)
        errors.append(
            FieldError(
                field=event_owner[Event.ANY.value],
                message=f"event '*' already matches every event, so no policy of {where} may name another "
                f"(found {others}); remove them or the '*'",
            )
        )
    return errors


def _policy_events(p: Obj, at: str) -> tuple[list[tuple[str, str]], list[FieldError]]:
    """(field path, event) of a policy's ``event`` and ``events``, each event once."""
    out: list[tuple[str, str]] = []
    errors: list[FieldError] = []
    event = p.get("event")
    if isinstance(event, str) and event:
        out.append((f"{at}.event", event))
    elif event not in (None, ""):
        errors.append(FieldError(field=f"{at}.event", message=f"must be an event name, got {event!r}"))
    events = p.get("events")
    if events is not None and not isinstance(events, list):
        errors.append(FieldError(field=f"{at}.events", message="must be a list of event names"))
    elif events is not None:
        for k, e in enumerate(events):
            if not isinstance(e, str) or not e:
                errors.append(
                    FieldError(field=f"{at}.events[{k}]", message=f"must be an event name, got {e!r}")
                )
            elif all(e != seen for _, seen in out):
                out.append((f"{at}.events[{k}]", e))
    return out, errors


def _action_errors(action: object, at: str) -> list[FieldError]:
    if isinstance(action, str) and action in VALID_ACTIONS:
        return []
    valid = ", ".join(VALID_ACTIONS)
    if action is None or action == "":
        return [FieldError(field=at, message=f"required; valid actions are {valid}")]
    return [FieldError(field=at, message=f"unknown action {action!r}; valid actions are {valid}")]


def _timeout_errors(timeout: object, at: str) -> list[FieldError]:
    if timeout is None:
        return []
    if not isinstance(timeout, str):
        return [FieldError(field=at, message=f"must be a duration such as 30s, 5m or 1h30m, got {timeout!r}")]
    try:
        parse_duration(timeout)
    except ValueError as e:
        return [FieldError(field=at, message=str(e))]
    return []


# --- dependsOn ----------------------------------------------------------------------------------------------
def dependency_errors(tasks: Tasks) -> list[FieldError]:
    """``dependsOn`` names other tasks of the job, with iteration any or all, and the tasks form a DAG.

    Volcano reports an unknown or self dependency only as "not a DAG"; we name it, and name one cycle."""
    names = task_names(tasks)
    errors: list[FieldError] = []
    graph: dict[str, list[str]] = {}
    for i, t in tasks:
        raw = t.get("dependsOn")
        if raw is None:
            continue
        at = f"spec.tasks[{i}].dependsOn"
        if not isinstance(raw, Mapping):
            errors.append(
                FieldError(field=at, message="must be an object with name (a list of tasks) and iteration")
            )
            continue
        own = t.get("name")
        deps = raw.get("name")
        if deps is not None and not isinstance(deps, list):
            errors.append(FieldError(field=f"{at}.name", message="must be a list of task names"))
        elif deps is not None:
            for k, d in enumerate(deps):
                if d == own:
                    errors.append(
                        FieldError(field=f"{at}.name[{k}]", message=f"task {d!r} cannot depend on itself")
                    )
                elif not isinstance(d, str) or d not in names:
                    others = ", ".join(n for n in names if n != own) or "none"
                    errors.append(
                        FieldError(
                            field=f"{at}.name[{k}]",
                            message=f"no task named {d!r} in this job; dependsOn must name other tasks "
                            f"of the job ({others})",
                        )
                    )
                elif isinstance(own, str) and names.get(own) == i:
                    graph.setdefault(own, []).append(d)
        iteration = raw.get("iteration")
        if iteration not in (None, "", *(it.value for it in Iteration)):
            errors.append(
                FieldError(field=f"{at}.iteration", message=f"must be any or all, got {iteration!r}")
            )
    cycle = _find_cycle(graph, list(names))
    if cycle:
        errors.append(
            FieldError(
                field=f"spec.tasks[{names[cycle[0]]}].dependsOn",
                message=f"tasks depend on each other in a cycle ({' -> '.join(cycle)}); "
                "dependsOn must form a directed acyclic graph",
            )
        )
    return errors


def _find_cycle(graph: Mapping[str, Sequence[str]], order: Sequence[str]) -> list[str]:
    """One cycle (first task repeated at the end), starting at its earliest task in ``order``; [] if none."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1:
                loop = path[path.index(nxt) :]
                start = min(range(len(loop)), key=lambda k: order.index(loop[k]))
                loop = loop[start:] + loop[:start]
                return [*loop, loop[0]]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in order:
        if node not in state and (found := visit(node)):
            return found
    return []


# --- plugins ------------------------------------------------------------------------------------------------
def plugin_errors(spec: Obj, tasks: Tasks) -> list[FieldError]:
    """Every plugin is one pumice knows, with arguments it accepts; mpi's master task exists (Volcano)."""
    raw = spec.get("plugins")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [
            FieldError(field="spec.plugins", message="must be a map of plugin name to a list of arguments")
        ]
    errors: list[FieldError] = []
    for name, args in sorted(raw.items()):
        at = f"spec.plugins[{name}]"
        if name not in PLUGIN_NAMES:
            errors.append(
                FieldError(
                    field=at,
                    message=f"unknown job plugin {name!r}; "
                    f"known plugins are {', '.join(sorted(PLUGIN_NAMES))}",
                )
            )
            continue
        if args is None:
            args = []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            errors.append(FieldError(field=at, message="must be a list of string arguments"))
            continue
        problem = check_plugin(name, args)
        if problem:
            errors.append(FieldError(field=at, message=problem))
        elif name == MPI_PLUGIN:
            master = MpiPlugin.from_args(args).args.master
            names = task_names(tasks)
            if master not in names:
                errors.append(
                    FieldError(
                        field=at,
                        message=f"the mpi master task {master!r} is not a task of this job "
                        f"({', '.join(names) or 'none'}); name a task {master!r} or pass --master=<task>",
                    )
                )
    return errors


# --- volumes ------------------------------------------------------------------------------------------------
def volume_errors(raw: object) -> list[FieldError]:
    """Volcano's validateIO: a unique mountPath each, and exactly one of an existing PVC (volumeClaimName,
    a valid PersistentVolumeClaim name) or a PVC to create (volumeClaim)."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [FieldError(field="spec.volumes", message="must be a list of volumes")]
    errors: list[FieldError] = []
    mounts: dict[str, str] = {}
    for j, v in enumerate(raw):
        at = f"spec.volumes[{j}]"
        if not isinstance(v, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        path = v.get("mountPath")
        if not isinstance(path, str) or not path:
            errors.append(
                FieldError(field=f"{at}.mountPath", message="required; the path to mount the volume at")
            )
        elif mounts.setdefault(path, at) != at:
            errors.append(
                FieldError(
                    field=f"{at}.mountPath",
                    message=f"{path!r} is already used by {mounts[path]}; mount paths must be unique",
                )
            )
        claim_name, claim = v.get("volumeClaimName"), v.get("volumeClaim")
        if claim_name is not None and not isinstance(claim_name, str):
            errors.append(FieldError(field=f"{at}.volumeClaimName", message="must be a PVC name"))
            continue
        if claim is not None and not isinstance(claim, Mapping):
            errors.append(
                FieldError(field=f"{at}.volumeClaim", message="must be a PersistentVolumeClaim spec")
            )
            continue
        if not claim_name and claim is None:
            errors.append(
                FieldError(
                    field=at, message="set volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)"
                )
            )
        elif claim_name and claim is not None:
            errors.append(
                FieldError(
                    field=at,
                    message="set only one of volumeClaimName (an existing PVC) and volumeClaim "
                    "(a PVC to create)",
                )
            )
        elif claim_name and not is_subdomain(claim_name):
            errors.append(
                FieldError(field=f"{at}.volumeClaimName", message=f"{SUBDOMAIN_RULE}, got {claim_name!r}")
            )
    return errors
