"""Every check of a Volcano Job that needs nothing but the object itself, and the quantity rules they share
with the other kinds. Pure: admission denies with these words, and the job controller reports them.

:func:`job_problems` is the controller's view: every problem of a stored job, one line each, exactly as
admission's denial spells it (``spec.tasks[1].name: duplicate task name 'w' ...``). It never raises,
whatever the object, and it is complete in two directions that the controller relies on: when it finds
nothing, :func:`extender.jobs.model.parse_job` reads the job and :func:`extender.jobs.reconcile.reconcile`
runs on it without raising (so it also checks the shapes that pod building and the job plugins edit, such
as a container's ``env`` being a list); and whenever ``parse_job`` refuses a job, it finds something.

:func:`spec_errors` is admission's view, the same checks without what only a stored object has (a name, a
status); :mod:`admission.jobs` adds the rules that read the cluster (the queue) and the update rules here
(:func:`update_errors`). Each rule reads raw JSON, never raises and reports every problem of its part, so
one denial lists them all (Volcano's webhook stops at the first problem of some kinds; we do not).

Volcano sources matched (``pkg/webhooks/admission/jobs/validate``): ``admit_job.go`` (task counts, names,
pod name length, partition policy, network topology, NUMA topology policy, mpi master task, plugins, DAG of
``dependsOn``, the fields an update may change), ``util.go`` (lifecycle policies, volumes), and the checks
Volcano moved into its ValidatingAdmissionPolicy (``installer/.../policy/jobs-validating.yaml``):
replicas, minAvailable, maxRetry, ttlSecondsAfterFinished, unique DNS-1123 task names. Counts are int32 as in
Volcano's types. Pod templates get a sanity check (containers with a name and an image, valid resource
quantities, a known restartPolicy, the list shapes pumice edits) rather than Kubernetes' full pod
validation, which kube-apiserver applies anyway when the job's pods are created. Ours on top: the
:class:`~extender.api.limits.Limits` (replicas, nesting depth, quantity range), and the ray plugin's head task
and head Service name (Volcano accepts the job, then fails to create its pods or the Service).

Quantities mirror what Volcano's queue webhook asks (Kubernetes' ``ValidateResourceQuantityValue``): a
parsable quantity, not negative, an integer for integer resources (``pods`` and extended resources such as
``nvidia.com/gpu``), and ours: at most ``limits.max_quantity`` base units. Values are exact (``Fraction``),
so comparisons such as ``deserved <= capability`` are exact like ``resource.Quantity.Cmp``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil, isfinite
from typing import Any, Final

from extender.api.limits import Limits, field_path, too_deep
from extender.core.durations import parse_duration
from extender.core.errors import InvalidQuantity
from extender.core.quantity import MILLI_RESOURCES, format_units, parse_quantity
from extender.jobs.model import POLICY_ACTIONS, Event, Iteration, pod_name
from extender.jobs.plugins.mpi import MpiPlugin
from extender.jobs.plugins.ray import RayPlugin
from extender.jobs.plugins.registry import PLUGIN_NAMES, check_plugin

# A Kubernetes object as decoded JSON. ``Any`` stops here: rules check every value they read.
Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldError:
    """One reason to refuse an object: the field at fault and what to do about it."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


# --- reading raw JSON ---------------------------------------------------------------------------------------
def mapping(obj: object, key: str) -> Obj:
    """``obj[key]`` when both are JSON objects, else an empty mapping."""
    if isinstance(obj, Mapping):
        v = obj.get(key)
        if isinstance(v, Mapping):
            return v
    return {}


def is_int(v: object) -> bool:
    """A JSON integer (``true`` is not one, although Python thinks so)."""
    return isinstance(v, int) and not isinstance(v, bool)


def as_int(value: object) -> int | None:
    """``value`` when it is a JSON integer, else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_SHOWN_TEXT: Final = 100


def shown(value: object) -> str:
    """``value`` for a message, bounded: a short repr of a scalar, the kind of a container (a message must
    stay a line, whatever the user sent)."""
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN_TEXT else repr(value[:_SHOWN_TEXT]) + "..."
    if isinstance(value, bool | float) or value is None:
        return repr(value)
    if isinstance(value, int):
        # Python refuses to print an int of more than 4300 digits; nobody needs to read one.
        return repr(value) if value.bit_length() <= 256 else "a very large integer"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


# --- limits -------------------------------------------------------------------------------------------------
_SHOWN_LEVELS: Final = 10


def depth_errors(obj: object, limits: Limits) -> list[FieldError]:
    """A container nested deeper than ``limits.max_depth``, named by its path (the first one found)."""
    path = too_deep(obj, limits.max_depth)
    if path is None:
        return []
    # The first levels say which field it is; all of them would make a line of a hundred keys.
    where = field_path(path) if len(path) <= _SHOWN_LEVELS else field_path(path[:_SHOWN_LEVELS]) + "..."
    return [
        FieldError(
            field=where,
            message=f"nested more than {limits.max_depth} levels deep, the most pumice accepts "
            "(Kubernetes objects nest about 20); flatten this value",
        )
    ]


# --- quantities ---------------------------------------------------------------------------------------------
_INTEGER_NATIVE: Final = frozenset({"pods"})
# Bounds that keep exact parsing cheap: "1e999999999" would otherwise build a billion-digit integer.
_MAX_TEXT: Final = 64
_EXPONENT: Final = re.compile(r"^([^eE]*)[eE]([+-]?\d+)$")
# 10**30 is beyond any limit (2**62 base units is about 4.6e18), so a larger exponent need not be computed.
_MAX_EXPONENT: Final = 30


@dataclass(frozen=True, slots=True)
class Quantities:
    """One checked resource list: the exact value and the text the user wrote, per resource name."""

    exact: Mapping[str, Fraction] = field(default_factory=dict)
    text: Mapping[str, str] = field(default_factory=dict)

    def units(self) -> dict[str, int]:
        """Accounted integer amounts (milli-CPU, bytes, counts), as the scheduler core sees them."""
        return {k: ceil(v * 1000 if k in MILLI_RESOURCES else v) for k, v in self.exact.items()}


def is_integer_resource(name: str) -> bool:
    """Kubernetes' rule: ``pods`` and extended resources (domain-qualified, outside ``kubernetes.io/``)."""
    if name in _INTEGER_NATIVE:
        return True
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


_OUT_OF_RANGE: Final = "out of range"


def _parse(value: object) -> Fraction | str:
    """The exact value of a quantity, :data:`_OUT_OF_RANGE` for one too large to compute, or ``""`` for
    anything that is not a quantity."""
    if isinstance(value, str):
        if len(value) > _MAX_TEXT:
            return ""
        m = _EXPONENT.match(value.strip())
        if m and int(m.group(2)) > _MAX_EXPONENT:
            try:
                mantissa = parse_quantity(m.group(1))
            except (InvalidQuantity, ValueError):
                return ""
            # Only the sign matters: zero is zero, a negative value is refused as negative.
            return mantissa if mantissa <= 0 else _OUT_OF_RANGE
    if isinstance(value, float) and not isfinite(value):
        return ""
    try:
        return parse_quantity(value)
    except (InvalidQuantity, ValueError, OverflowError):
        return ""


def _quantity_text(value: object) -> str:
    """The user's text for a message: as written, cut at :data:`_MAX_TEXT` characters."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, Mapping | list | tuple):
        return "a list" if isinstance(value, list | tuple) else "an object"
    else:
        text = shown(value)
    return text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."


def check_resource_list(raw: object, where: str, limits: Limits) -> tuple[Quantities, list[FieldError]]:
    """The valid entries of ``raw`` and one error per invalid entry; ``where`` is the field path."""
    if raw is None:
        return Quantities(), []
    if not isinstance(raw, Mapping):
        return Quantities(), [FieldError(field=where, message="must be a map of resource name to quantity")]
    exact: dict[str, Fraction] = {}
    text: dict[str, str] = {}
    errors: list[FieldError] = []
    for key, value in raw.items():
        name = str(key)
        at = f"{where}[{name}]"
        shown_text = _quantity_text(value)
        q = _parse(value)
        if isinstance(q, str):
            if q == _OUT_OF_RANGE:
                errors.append(_too_large(at, name, shown_text, limits))
            else:
                msg = f"{shown_text!r} is not a quantity (examples: 500m, 2, 4Gi)"
                if isinstance(value, Mapping | list | tuple | bool) or value is None:
                    msg = f"must be a quantity such as 500m, 2 or 4Gi, got {shown_text}"
                errors.append(FieldError(field=at, message=msg))
            continue
        if q < 0:
            errors.append(FieldError(field=at, message=f"must not be negative, got {shown_text}"))
            continue
        if ceil(q * 1000 if name in MILLI_RESOURCES else q) > limits.max_quantity:
            errors.append(_too_large(at, name, shown_text, limits))
            continue
        if is_integer_resource(name) and q.denominator != 1:
            errors.append(FieldError(field=at, message=f"must be a whole number, got {shown_text}"))
            continue
        exact[name] = q
        text[name] = shown_text
    return Quantities(exact, text), errors


def _too_large(at: str, name: str, text: str, limits: Limits) -> FieldError:
    return FieldError(
        field=at,
        message=f"{text} is out of range; pumice accepts at most {format_units(name, limits.max_quantity)}",
    )


# --- the job ------------------------------------------------------------------------------------------------
# Volcano checks job and pod names with IsQualifiedName: at most 63 characters.
MAX_NAME: Final = 63
MAX_SUBDOMAIN: Final = 253
# Volcano's counts (replicas, minAvailable, maxRetry, ...) are int32.
INT32_MAX: Final = 2**31 - 1
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
RAISE_REPLICAS: Final = "or raise the limit with pumice serve --max-job-replicas N"

VALID_EVENTS: Final = tuple(e.value for e in Event)
VALID_ACTIONS: Final = tuple(sorted(a.value for a in POLICY_ACTIONS))
NUMA_POLICIES: Final = ("none", "best-effort", "restricted", "single-numa-node")
RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
MPI_PLUGIN: Final = "mpi"
RAY_PLUGIN: Final = "ray"
# What Kubernetes demands of a Service name (an RFC 1035 label), for the ray plugin's head Service.
_SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

# What an update may change (Volcano's validateJobUpdate).
MUTABLE_FIELDS: Final = (
    "spec.minAvailable",
    "spec.priorityClassName",
    "spec.tasks[*].replicas",
    "spec.tasks[*].minAvailable",
)
_MUTABLE_SPEC: Final = frozenset({"minAvailable", "priorityClassName"})
_MUTABLE_TASK: Final = frozenset({"replicas", "minAvailable"})

# (index in spec.tasks, the task object) for every entry that is an object.
Tasks = list[tuple[int, Obj]]


def is_label(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME and _LABEL.match(value) is not None


def is_subdomain(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_SUBDOMAIN and _SUBDOMAIN.match(value) is not None


def _int(
    obj: Obj, key: str, at: str, minimum: int, maximum: int = INT32_MAX
) -> tuple[int | None, list[FieldError]]:
    """``obj[key]`` when it is an integer from ``minimum`` to ``maximum``; None (and maybe an error)
    otherwise."""
    v = obj.get(key)
    if v is None:
        return None, []
    if not is_int(v) or v < minimum:
        return None, [
            FieldError(field=f"{at}.{key}", message=f"must be an integer >= {minimum}, got {shown(v)}")
        ]
    if v > maximum:
        return None, [FieldError(field=f"{at}.{key}", message=f"must be at most {maximum}, got {shown(v)}")]
    return int(v), []


def _both_tiers(nt: object, at: str) -> list[FieldError]:
    if isinstance(nt, Mapping) and nt.get("highestTierAllowed") is not None and nt.get("highestTierName"):
        return [FieldError(field=at, message="set either highestTierAllowed or highestTierName, not both")]
    return []


def _string_errors(obj: Obj, keys: Sequence[str], at: str) -> list[FieldError]:
    """Each of ``keys`` is a string when set."""
    return [
        FieldError(field=f"{at}.{k}", message=f"must be a string, got {shown(obj[k])}")
        for k in keys
        if obj.get(k) is not None and not isinstance(obj[k], str)
    ]


def _string_map_errors(obj: Obj, key: str, at: str) -> list[FieldError]:
    """``obj[key]``, when set, maps strings to strings (labels, annotations)."""
    raw = obj.get(key)
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field=f"{at}.{key}", message="must be a map of string keys to string values")]
    return [
        FieldError(field=f"{at}.{key}[{k}]", message=f"must be a string, got {shown(v)}")
        for k, v in raw.items()
        if not isinstance(v, str)
    ]


def _object_list_errors(obj: Obj, key: str, at: str, what: str) -> list[FieldError]:
    """``obj[key]``, when the key is there, is a list of objects. pumice appends to these lists (volumes,
    env, mounts, ports), so unlike a field it only reads, null does not pass for empty."""
    if key not in obj:
        return []
    raw = obj[key]
    if not isinstance(raw, list):
        return [FieldError(field=f"{at}.{key}", message=f"must be a list of {what}, got {shown(raw)}")]
    return [
        FieldError(field=f"{at}.{key}[{j}]", message="must be an object")
        for j, item in enumerate(raw)
        if not isinstance(item, Mapping)
    ]


# --- entry points -------------------------------------------------------------------------------------------
def job_problems(obj: Mapping[str, Any], limits: Limits) -> list[str]:
    """Every problem of a stored job, one line each (``field: what to do``); [] when the controller can
    run it. Never raises."""
    return [str(e) for e in job_errors(obj, limits)]


def job_errors(obj: object, limits: Limits) -> list[FieldError]:
    """:func:`job_problems` as field errors: :func:`spec_errors` plus what a stored job must have."""
    errors = depth_errors(obj, limits)
    if errors:
        return errors
    if not isinstance(obj, Mapping):
        return [FieldError(field="object", message=f"a Job must be a JSON object, got {shown(obj)}")]
    errors = spec_errors(obj, limits)
    name = mapping(obj, "metadata").get("name")
    if not isinstance(name, str) or not name:
        errors.insert(0, FieldError(field="metadata.name", message="required; a job needs a name"))
    return errors + status_errors(obj)


def spec_errors(job: Obj, limits: Limits, *, creating: bool = False) -> list[FieldError]:
    """Everything admission checks of a Job without the cluster, on CREATE (``creating``) and UPDATE. The
    caller has checked the nesting depth (:func:`depth_errors`): some checks compare nested values."""
    errors = metadata_errors(job)
    raw_spec = job.get("spec")
    if not isinstance(raw_spec, Mapping):
        if raw_spec is None:
            return [*errors, FieldError(field="spec.tasks", message="must list at least one task")]
        return [*errors, FieldError(field="spec", message="must be an object")]
    spec: Obj = raw_spec
    name = mapping(job, "metadata").get("name")
    name = name if isinstance(name, str) else ""
    tasks, task_errors = task_list(spec)
    errors += job_name_errors(name) + task_errors
    queue = spec.get("queue")
    if queue is not None and not isinstance(queue, str):
        errors.append(FieldError(field="spec.queue", message="must be a queue name"))
    errors += _string_errors(spec, ("schedulerName", "priorityClassName"), "spec")
    errors += scalar_errors(spec, tasks)
    errors += task_name_errors(tasks)
    errors += pod_name_errors(name, tasks)
    errors += count_errors(spec, tasks, limits)
    for i, task in tasks:
        errors += template_errors(task, f"spec.tasks[{i}]", limits)
        errors += policy_errors(task.get("policies"), f"spec.tasks[{i}].policies")
    errors += dependency_errors(tasks)
    errors += policy_errors(spec.get("policies"), "spec.policies")
    errors += plugin_errors(spec, tasks, job_name=name)
    errors += volume_errors(spec.get("volumes"), creating=creating)
    return errors


# --- metadata and status ------------------------------------------------------------------------------------
def metadata_errors(job: Obj) -> list[FieldError]:
    """The metadata the controller reads has the types Kubernetes gives it."""
    raw = job.get("metadata")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field="metadata", message="must be an object")]
    errors = _string_errors(
        raw, ("name", "namespace", "uid", "creationTimestamp", "resourceVersion"), "metadata"
    )
    generation = raw.get("generation")
    if generation is not None and not is_int(generation):
        errors.append(
            FieldError(field="metadata.generation", message=f"must be an integer, got {shown(generation)}")
        )
    return (
        errors
        + _string_map_errors(raw, "labels", "metadata")
        + _string_map_errors(raw, "annotations", "metadata")
    )


def status_errors(job: Obj) -> list[FieldError]:
    """The status the controller reads back has the shape it writes (Volcano's JobStatus)."""
    raw = job.get("status")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [FieldError(field="status", message="must be an object")]
    errors: list[FieldError] = []
    state = raw.get("state")
    if state is not None and not isinstance(state, Mapping):
        errors.append(FieldError(field="status.state", message="must be an object"))
    elif state is not None:
        errors += _string_errors(state, ("phase", "reason", "message", "lastTransitionTime"), "status.state")
    for key in ("version", "retryCount"):
        errors += _int(raw, key, "status", 0)[1]
    errors += _string_errors(raw, ("runningDuration",), "status")
    errors += _string_map_errors(raw, "controlledResources", "status")
    conditions = raw.get("conditions")
    if conditions is not None and not isinstance(conditions, list):
        errors.append(FieldError(field="status.conditions", message="must be a list of conditions"))
    return errors


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
                f"letter or digit, got {shown(name)}",
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
            errors.append(FieldError(field=at, message=f"{LABEL_RULE}, got {shown(name)}"))
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
        last = max(replicas - 1, 0) if replicas is not None and replicas <= INT32_MAX else 0
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
def count_errors(spec: Obj, tasks: Tasks, limits: Limits) -> list[FieldError]:
    """Replicas and minAvailable of tasks and job, partition policies, network topology: the numbers an
    update may change, within Volcano's rules and pumice's replica limit."""
    errors: list[FieldError] = []
    total: int | None = 0
    over = False  # a task alone is over the limit: the sum being over too says nothing new
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
            if replicas > limits.max_replicas:
                over = True
                errors.append(
                    FieldError(
                        field=f"{at}.replicas",
                        message=f"{replicas} is more than the {limits.max_replicas} replicas pumice accepts "
                        f"per task; lower it, {RAISE_REPLICAS}",
                    )
                )
            if min_available is not None and min_available > replicas:
                errors.append(
                    FieldError(
                        field=f"{at}.minAvailable",
                        message=f"{min_available} is greater than replicas {replicas}; "
                        "lower minAvailable or raise replicas",
                    )
                )
        errors += _partition_errors(t, at, replicas, min_available)
    if total is not None and not over and total > limits.max_replicas:
        errors.append(
            FieldError(
                field="spec.tasks",
                message=f"the replicas of all tasks sum to {total}, more than the {limits.max_replicas} "
                f"pumice accepts per job; lower them, {RAISE_REPLICAS}",
            )
        )
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
def template_errors(task: Obj, at: str, limits: Limits) -> list[FieldError]:
    """Sanity of a task's pod template, and Volcano's rule for a NUMA ``topologyPolicy``."""
    raw = task.get("template")
    if raw is not None and not isinstance(raw, Mapping):
        return [FieldError(field=f"{at}.template", message="must be a pod template (metadata and spec)")]
    template = mapping(task, "template")
    errors: list[FieldError] = []
    meta = template.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        errors.append(FieldError(field=f"{at}.template.metadata", message="must be an object"))
    elif meta is not None:
        errors += _string_map_errors(meta, "labels", f"{at}.template.metadata")
        errors += _string_map_errors(meta, "annotations", f"{at}.template.metadata")
    spec_raw = template.get("spec")
    if spec_raw is not None and not isinstance(spec_raw, Mapping):
        return [*errors, FieldError(field=f"{at}.template.spec", message="must be a pod spec")]
    spec = mapping(template, "spec")
    where = f"{at}.template.spec"
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errors.append(FieldError(field=f"{where}.containers", message="must list at least one container"))
    seen: dict[str, str] = {}
    for kind in ("initContainers", "containers"):
        if kind not in spec or (kind == "containers" and not isinstance(containers, list)):
            continue
        items = spec[kind]
        if not isinstance(items, list):
            errors.append(FieldError(field=f"{where}.{kind}", message="must be a list of containers"))
            continue
        for j, c in enumerate(items):
            errors += _container_errors(c, f"{where}.{kind}[{j}]", seen, limits)
    errors += _object_list_errors(spec, "volumes", where, "volumes")
    errors += check_resource_list(spec.get("overhead"), f"{where}.overhead", limits)[1]
    policy = spec.get("restartPolicy")
    if policy not in (None, "", *RESTART_POLICIES):
        errors.append(
            FieldError(
                field=f"{where}.restartPolicy",
                message=f"must be one of {', '.join(RESTART_POLICIES)}, got {shown(policy)}",
            )
        )
    return errors + _numa_errors(task, at, spec, limits)


def _container_errors(c: object, at: str, seen: dict[str, str], limits: Limits) -> list[FieldError]:
    if not isinstance(c, Mapping):
        return [FieldError(field=at, message="must be an object")]
    errors: list[FieldError] = []
    name = c.get("name")
    if not is_label(name):
        errors.append(FieldError(field=f"{at}.name", message=f"{LABEL_RULE}, got {shown(name)}"))
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
    for key, what in (
        ("env", "environment variables"),
        ("volumeMounts", "volume mounts"),
        ("ports", "ports"),
    ):
        errors += _object_list_errors(c, key, at, what)
    raw_resources = c.get("resources")
    if raw_resources is not None and not isinstance(raw_resources, Mapping):
        errors.append(
            FieldError(field=f"{at}.resources", message="must be an object with requests and limits")
        )
        return errors
    resources = mapping(c, "resources")
    requests, e1 = check_resource_list(resources.get("requests"), f"{at}.resources.requests", limits)
    limits_, e2 = check_resource_list(resources.get("limits"), f"{at}.resources.limits", limits)
    errors += e1 + e2
    for r, q in sorted(requests.exact.items()):
        limit = limits_.exact.get(r)
        if limit is not None and q > limit:
            errors.append(
                FieldError(
                    field=f"{at}.resources.requests[{r}]",
                    message=f"{requests.text[r]} is above the limit {limits_.text[r]}; "
                    "a request must be at most its limit",
                )
            )
    return errors


def _numa_errors(task: Obj, at: str, spec: Obj, limits: Limits) -> list[FieldError]:
    """Volcano's validateTaskTopoPolicy: with a NUMA policy other than none, every container asks for a
    whole number of CPUs (its requests, or its limits when it has no requests)."""
    policy = task.get("topologyPolicy")
    if policy in (None, "", "none"):
        return []
    if policy not in NUMA_POLICIES:
        return [
            FieldError(
                field=f"{at}.topologyPolicy",
                message=f"must be one of {', '.join(NUMA_POLICIES)}, got {shown(policy)}",
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
            cpus, bad = check_resource_list(mapping(resources, source), "", limits)
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
            errors.append(
                FieldError(field=f"{at}.exitCode", message=f"must be an integer, got {shown(raw_code)}")
            )
        elif code is not None and not -INT32_MAX - 1 <= code <= INT32_MAX:
            errors.append(
                FieldError(
                    field=f"{at}.exitCode",
                    message=f"must be an integer from {-INT32_MAX - 1} to {INT32_MAX}, got {shown(code)}",
                )
            )
            code = None
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
                        message=f"unknown event {shown(event)}; valid events are {', '.join(VALID_EVENTS)}",
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
        errors.append(FieldError(field=f"{at}.event", message=f"must be an event name, got {shown(event)}"))
    events = p.get("events")
    if events is not None and not isinstance(events, list):
        errors.append(FieldError(field=f"{at}.events", message="must be a list of event names"))
    elif events is not None:
        seen = {e for _, e in out}
        for k, e in enumerate(events):
            if not isinstance(e, str) or not e:
                errors.append(
                    FieldError(field=f"{at}.events[{k}]", message=f"must be an event name, got {shown(e)}")
                )
            elif e not in seen:
                seen.add(e)
                out.append((f"{at}.events[{k}]", e))
    return out, errors


def _action_errors(action: object, at: str) -> list[FieldError]:
    if isinstance(action, str) and action in VALID_ACTIONS:
        return []
    valid = ", ".join(VALID_ACTIONS)
    if action is None or action == "":
        return [FieldError(field=at, message=f"required; valid actions are {valid}")]
    return [FieldError(field=at, message=f"unknown action {shown(action)}; valid actions are {valid}")]


def _timeout_errors(timeout: object, at: str) -> list[FieldError]:
    if timeout is None:
        return []
    if not isinstance(timeout, str):
        return [
            FieldError(field=at, message=f"must be a duration such as 30s, 5m or 1h30m, got {shown(timeout)}")
        ]
    try:
        parse_duration(timeout)
    except ValueError as e:
        return [FieldError(field=at, message=str(e))]
    return []


# --- dependsOn ----------------------------------------------------------------------------------------------
_LISTED_NAMES: Final = 10


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
                if d == own and isinstance(d, str):
                    errors.append(
                        FieldError(
                            field=f"{at}.name[{k}]", message=f"task {shown(d)} cannot depend on itself"
                        )
                    )
                elif not isinstance(d, str) or d not in names:
                    errors.append(
                        FieldError(
                            field=f"{at}.name[{k}]",
                            message=f"no task named {shown(d)} in this job; dependsOn must name other tasks "
                            f"of the job ({_other_names(names, own)})",
                        )
                    )
                elif isinstance(own, str) and names.get(own) == i:
                    graph.setdefault(own, []).append(d)
        iteration = raw.get("iteration")
        if iteration not in (None, "", *(it.value for it in Iteration)):
            errors.append(
                FieldError(field=f"{at}.iteration", message=f"must be any or all, got {shown(iteration)}")
            )
    cycle = _find_cycle(graph, list(names))
    if cycle:
        shown_cycle = cycle if len(cycle) <= _LISTED_NAMES + 1 else [*cycle[:_LISTED_NAMES], "...", cycle[0]]
        errors.append(
            FieldError(
                field=f"spec.tasks[{names[cycle[0]]}].dependsOn",
                message=f"tasks depend on each other in a cycle ({' -> '.join(shown_cycle)}); "
                "dependsOn must form a directed acyclic graph",
            )
        )
    return errors


def _other_names(names: Mapping[str, int], own: object) -> str:
    """The task names a dependency may use, at most :data:`_LISTED_NAMES` of them (a message is a line;
    and it is built once per unknown name, so it must not cost a pass over thousands of tasks)."""
    total = len(names) - (1 if isinstance(own, str) and own in names else 0)
    if total <= 0:
        return "none"
    listed: list[str] = []
    for n in names:
        if n != own:
            listed.append(n)
            if len(listed) == _LISTED_NAMES:
                break
    text = ", ".join(listed)
    return text if total <= _LISTED_NAMES else f"{text}, ... {total} in all"


def _find_cycle(graph: Mapping[str, Sequence[str]], order: Sequence[str]) -> list[str]:
    """One cycle (first task repeated at the end), starting at its earliest task in ``order``; [] if none.

    Depth-first with an explicit stack: a chain of thousands of tasks must not exhaust the Python stack."""
    position = {name: k for k, name in enumerate(order)}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for root in order:
        if root in state:
            continue
        path: list[str] = [root]
        state[root] = 1
        stack: list[tuple[str, int]] = [(root, 0)]  # (node, index of the next edge to follow)
        while stack:
            node, edge = stack[-1]
            edges = graph.get(node, ())
            if edge == len(edges):
                stack.pop()
                path.pop()
                state[node] = 2
                continue
            stack[-1] = (node, edge + 1)
            nxt = edges[edge]
            if state.get(nxt) == 1:
                loop = path[path.index(nxt) :]
                start = min(range(len(loop)), key=lambda k: position[loop[k]])
                loop = loop[start:] + loop[:start]
                return [*loop, loop[0]]
            if nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append((nxt, 0))
    return []


# --- plugins ------------------------------------------------------------------------------------------------
def plugin_errors(spec: Obj, tasks: Tasks, *, job_name: str = "") -> list[FieldError]:
    """Every plugin is one pumice knows, with arguments it accepts; mpi's master task exists (Volcano);
    ray's head task exists and its head Service gets a valid name (ours: Volcano would fail later)."""
    raw = spec.get("plugins")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [
            FieldError(field="spec.plugins", message="must be a map of plugin name to a list of arguments")
        ]
    errors: list[FieldError] = []
    for name, args in sorted(raw.items(), key=lambda kv: str(kv[0])):
        at = f"spec.plugins[{name}]"
        if name not in PLUGIN_NAMES:
            errors.append(
                FieldError(
                    field=at,
                    message=f"unknown job plugin {shown(name)}; "
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
                        message=f"the mpi master task {shown(master)} is not a task of this job "
                        f"({_other_names(names, None)}); name a task {shown(master)} or pass --master=<task>",
                    )
                )
        elif name == RAY_PLUGIN:
            errors += _ray_errors(RayPlugin.from_args(args), at, tasks, job_name)
    return errors


def _ray_errors(ray: RayPlugin, at: str, tasks: Tasks, job_name: str) -> list[FieldError]:
    """Volcano's ray plugin fails to create every pod of a job without its head task, and its head Service
    cannot be created under a name Kubernetes refuses: both are refused here instead."""
    errors: list[FieldError] = []
    head = ray.args.head
    names = task_names(tasks)
    if head not in names:
        errors.append(
            FieldError(
                field=at,
                message=f"the ray head task {shown(head)} is not a task of this job "
                f"({_other_names(names, None)}); name a task {shown(head)} or pass --head=<task>",
            )
        )
    service = f"{job_name}-head-svc"
    if (
        job_name
        and not job_name_errors(job_name)
        and not (len(service) <= MAX_NAME and _SERVICE_NAME.match(service))
    ):
        errors.append(
            FieldError(
                field="metadata.name",
                message=f"the ray plugin's head Service would be named {service!r}, which is not a valid "
                f"Service name (at most {MAX_NAME} characters of a-z, 0-9 and '-', starting with a letter); "
                "shorten or rename the job",
            )
        )
    return errors


# --- volumes ------------------------------------------------------------------------------------------------
def volume_errors(raw: object, *, creating: bool = False) -> list[FieldError]:
    """Volcano's validateIO: a unique mountPath each, and exactly one of an existing PVC (volumeClaimName,
    a valid PersistentVolumeClaim name) or a PVC to create (volumeClaim). Once the job exists, both may be
    set: the job controller names the PVC it created from a volumeClaim in volumeClaimName."""
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
                    message=f"{shown(path)} is already used by {mounts[path]}; mount paths must be unique",
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
        elif claim_name and claim is not None and creating:
            errors.append(
                FieldError(
                    field=at,
                    message="set only one of volumeClaimName (an existing PVC) and volumeClaim "
                    "(a PVC to create)",
                )
            )
        elif claim_name and not is_subdomain(claim_name):
            errors.append(
                FieldError(
                    field=f"{at}.volumeClaimName", message=f"{SUBDOMAIN_RULE}, got {shown(claim_name)}"
                )
            )
    return errors


# --- updates ------------------------------------------------------------------------------------------------
def update_errors(new: Obj, old: Obj) -> list[FieldError]:
    """Volcano's validateJobUpdate on two specs: the same number of tasks, and nothing changed except
    :data:`MUTABLE_FIELDS` (and a ``volumeClaimName`` beside a ``volumeClaim``, which the job controller
    fills in). As Kubernetes' semantic equality does, a field that is absent, null or empty reads the same.
    Both specs must be within the nesting limit (the comparison walks them)."""
    errors: list[FieldError] = []
    new_tasks, old_tasks = new.get("tasks"), old.get("tasks")
    n_new = len(new_tasks) if isinstance(new_tasks, list) else 0
    n_old = len(old_tasks) if isinstance(old_tasks, list) else 0
    if n_new != n_old:
        errors.append(
            FieldError(
                field="spec.tasks",
                message=f"tasks cannot be added to or removed from a job (it had {n_old}, now {n_new})",
            )
        )
    changed = _changed_fields(new, old, compare_tasks=n_new == n_old)
    if changed:
        errors.append(
            FieldError(
                field="spec",
                message=f"{', '.join(changed)} cannot change after the job is created; "
                f"only {', '.join(MUTABLE_FIELDS)} can",
            )
        )
    return errors


def _changed_fields(new: Obj, old: Obj, *, compare_tasks: bool) -> list[str]:
    """Paths of the immutable spec fields that differ: top-level keys, and per task its keys."""
    new_n, old_n = _comparable(new), _comparable(old)
    changed: list[str] = []
    for key in sorted(set(new_n) | set(old_n)):
        if key in _MUTABLE_SPEC or new_n.get(key) == old_n.get(key):
            continue
        if key == "tasks" and compare_tasks:
            changed += _changed_task_fields(new_n["tasks"], old_n["tasks"])
        elif key != "tasks":
            changed.append(f"spec.{key}")
    return changed


def _changed_task_fields(new: object, old: object) -> list[str]:
    if not isinstance(new, list) or not isinstance(old, list):
        return ["spec.tasks"]
    changed: list[str] = []
    for i, (a, b) in enumerate(zip(new, old, strict=True)):
        if not isinstance(a, Mapping) or not isinstance(b, Mapping):
            if a != b:
                changed.append(f"spec.tasks[{i}]")
            continue
        for key in sorted(set(a) | set(b), key=str):
            if key not in _MUTABLE_TASK and a.get(key) != b.get(key):
                changed.append(f"spec.tasks[{i}].{key}")
    return changed


def _comparable(spec: Obj) -> dict[str, object]:
    """``spec`` with empty values dropped and the controller-filled ``volumeClaimName`` masked."""
    out = _pruned_map(spec)
    volumes = out.get("volumes")
    if isinstance(volumes, list):
        out["volumes"] = [
            {k: x for k, x in v.items() if k != "volumeClaimName"}
            if isinstance(v, dict) and "volumeClaim" in v
            else v
            for v in volumes
        ]
    return out


# Fields that are Go maps, not structs: an entry with an empty value is still an entry.
_MAP_FIELDS: Final = frozenset(
    {"plugins", "labels", "annotations", "nodeSelector", "matchLabels", "requests", "limits", "data"}
)
_EMPTY: Final[tuple[object, ...]] = (None, "", [], {})


def _pruned_map(value: Mapping[str, object], *, keep_empty: bool = False) -> dict[str, object]:
    """Kubernetes' semantic equality of typed fields: an absent, null, "", [] or {} struct field is unset."""
    out = {str(k): _pruned(v, map_field=str(k) in _MAP_FIELDS) for k, v in value.items()}
    return {k: v for k, v in out.items() if v is not None and (keep_empty or v not in _EMPTY)}


def _pruned(value: object, *, map_field: bool = False) -> object:
    if isinstance(value, Mapping):
        return _pruned_map(value, keep_empty=map_field)
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value
