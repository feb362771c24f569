"""``job_problems``: every problem of a job in admission's words, never raising, complete for the controller.

The table pins the text of each kind of problem. The properties are what the job controller relies on:
``job_problems`` never raises whatever the object; a job with no problems parses and reconciles (a single
step and the step that creates its pods, with each job plugin) without raising; ``parse_job`` raises
nothing but ``InvalidObject``, and only for jobs that do have problems.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.api.limits import Limits
from extender.core.errors import InvalidObject
from extender.core.model import PodPhase
from extender.core.names import LABEL_RULE
from extender.jobs.model import JobPhase, parse_job, placeholder_job
from extender.jobs.plugins.base import PluginContext
from extender.jobs.pods import PodView
from extender.jobs.reconcile import CommandView, World, reconcile
from extender.jobs.rules import job_problems
from tests.fuzz.strategies import job, json_values, mutated, nested

Raw = dict[str, Any]
LIMITS = Limits()
T0 = 1_700_000_000.0
EVENTS = "*, PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed"
ACTIONS = "AbortJob, CompleteJob, RestartJob, RestartPod, RestartTask, ResumeJob, TerminateJob"
RAISE = "or raise the limit with pumice serve --max-job-replicas N"
C0 = "spec.tasks[0].template.spec.containers[0]"
MAX_CPU = "4611686018427387904m"
SSH = PluginContext(
    ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----",
    ssh_public_key="ssh-ed25519 AAAA test",
)


def container(**fields: Any) -> Raw:
    return {"name": "main", "image": "busybox", **fields}


def task(name: Any = "w", replicas: Any = 1, *, pod: Raw | None = None, **fields: Any) -> Raw:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": pod or {"containers": [container()]}},
        **fields,
    }


def job_obj(*tasks: Raw, meta: Raw | None = None, status: object = None, **spec: Any) -> Raw:
    obj: Raw = {
        "metadata": {"name": "j", "namespace": "ns", "uid": "u1"} if meta is None else meta,
        "spec": {"queue": "q1", "tasks": list(tasks) or [task()], **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def requests(**quantities: Any) -> Raw:
    return task(pod={"containers": [container(resources={"requests": quantities})]})


CASES: list[tuple[str, object, list[str]]] = [
    ("a valid job", job_obj(), []),
    (
        "dependsOn cycle",
        job_obj(task("a", dependsOn={"name": ["b"]}), task("b", dependsOn={"name": ["a"]})),
        [
            "spec.tasks[0].dependsOn: tasks depend on each other in a cycle (a -> b -> a); dependsOn must "
            "form a directed acyclic graph"
        ],
    ),
    (
        "duplicate task names",
        job_obj(task("w"), task("w")),
        [
            "spec.tasks[1].name: duplicate task name 'w' (also spec.tasks[0].name); task names must be "
            "unique in a job"
        ],
    ),
    (
        "timeout abc",
        job_obj(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "abc"}]),
        ["spec.policies[0].timeout: invalid duration 'abc' (want e.g. 30s, 5m, 1h30m)"],
    ),
    (
        "timeout longer than Go can hold",
        job_obj(task(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": "9" * 30 + "h"}])),
        ["spec.tasks[0].policies[0].timeout: duration longer than Go's longest (about 2562047h)"],
    ),
    (
        "timeout a number",
        job_obj(policies=[{"event": "PodFailed", "action": "RestartJob", "timeout": 30}]),
        ["spec.policies[0].timeout: must be a duration such as 30s, 5m or 1h30m, got 30"],
    ),
    (
        "unknown event and action",
        job_obj(policies=[{"events": ["PodExploded"], "action": "Explode"}]),
        [
            f"spec.policies[0].events[0]: unknown event 'PodExploded'; valid events are {EVENTS}",
            f"spec.policies[0].action: unknown action 'Explode'; valid actions are {ACTIONS}",
        ],
    ),
    (
        "action a list",
        job_obj(policies=[{"event": "PodFailed", "action": ["RestartJob"]}]),
        [f"spec.policies[0].action: unknown action a list; valid actions are {ACTIONS}"],
    ),
    (
        "quantities: too large, not a quantity, negative, NaN",
        job_obj(requests(cpu="1e400", memory="abc", pods="-1", **{"example.com/x": "NaN"})),
        [
            f"{C0}.resources.requests[cpu]: 1e400 is out of range; pumice accepts at most {MAX_CPU}",
            f"{C0}.resources.requests[memory]: 'abc' is not a quantity (examples: 500m, 2, 4Gi)",
            f"{C0}.resources.requests[pods]: must not be negative, got -1",
            f"{C0}.resources.requests[example.com/x]: 'NaN' is not a quantity (examples: 500m, 2, 4Gi)",
        ],
    ),
    (
        "a quantity just above the limit",
        job_obj(requests(memory=2**62 + 1, cpu=float("nan"))),
        [
            f"{C0}.resources.requests[memory]: {2**62 + 1} is out of range; pumice accepts at most 4Ei",
            f"{C0}.resources.requests[cpu]: 'nan' is not a quantity (examples: 500m, 2, 4Gi)",
        ],
    ),
    ("a quantity at the limit", job_obj(requests(memory="4Ei")), []),
    (
        "a quantity that is a list",
        job_obj(requests(cpu=[1])),
        [f"{C0}.resources.requests[cpu]: must be a quantity such as 500m, 2 or 4Gi, got a list"],
    ),
    (
        "too many replicas in a task",
        job_obj(task(replicas=10_001)),
        [
            "spec.tasks[0].replicas: 10001 is more than the 10000 replicas pumice accepts per task; "
            f"lower it, {RAISE}"
        ],
    ),
    (
        "too many replicas in a job",
        job_obj(task("a", 6000), task("b", 5000)),
        [
            "spec.tasks: the replicas of all tasks sum to 11000, more than the 10000 pumice accepts per job; "
            f"lower them, {RAISE}"
        ],
    ),
    (
        "replicas beyond int32",
        job_obj(task(replicas=2**31), minAvailable=2**40),
        [
            "spec.tasks[0].replicas: must be at most 2147483647, got 2147483648",
            "spec.minAvailable: must be at most 2147483647, got 1099511627776",
        ],
    ),
    (
        "nested too deep",
        job_obj(meta={"name": "j", "labels": {"a": nested(70)}}),
        [
            "metadata.labels[a][0].a[0].a[0].a[0]...: nested more than 64 levels deep, the most pumice "
            "accepts (Kubernetes objects nest about 20); flatten this value"
        ],
    ),
    ("not an object", [1], ["object: a Job must be a JSON object, got a list"]),
    ("no name", {"spec": {"tasks": [task()]}}, ["metadata.name: required; a job needs a name"]),
    (
        "metadata of the wrong types",
        job_obj(
            meta={"name": "j", "namespace": ["ns"], "generation": "1", "labels": {"a": 1}, "annotations": []}
        ),
        [
            "metadata.namespace: must be a string, got a list",
            "metadata.generation: must be an integer, got '1'",
            "metadata.labels[a]: must be a string, got 1",
            "metadata.annotations: must be a map of string keys to string values",
        ],
    ),
    ("spec a string", {"metadata": {"name": "j"}, "spec": "x"}, ["spec: must be an object"]),
    (
        "spec strings of the wrong types",
        job_obj(queue=["q1"], schedulerName=1, priorityClassName={}),
        [
            "spec.queue: must be a queue name",
            "spec.schedulerName: must be a string, got 1",
            "spec.priorityClassName: must be a string, got an object",
        ],
    ),
    (
        "lists pumice appends to",
        job_obj(
            task(
                pod={
                    "containers": [container(env="A=1", ports=None, volumeMounts=[1], resources=[])],
                    "initContainers": None,
                    "volumes": {},
                }
            )
        ),
        [
            "spec.tasks[0].template.spec.initContainers: must be a list of containers",
            f"{C0}.env: must be a list of environment variables, got 'A=1'",
            f"{C0}.volumeMounts[0]: must be an object",
            f"{C0}.ports: must be a list of ports, got None",
            f"{C0}.resources: must be an object with requests and limits",
            "spec.tasks[0].template.spec.volumes: must be a list of volumes, got an object",
        ],
    ),
    (
        "template metadata of the wrong types",
        job_obj(
            {**task(), "template": {"metadata": {"labels": ["a"]}, "spec": {"containers": [container()]}}}
        ),
        ["spec.tasks[0].template.metadata.labels: must be a map of string keys to string values"],
    ),
    (
        "task name and dependsOn names of the wrong types",
        job_obj(task(["w"], dependsOn={"name": [{"x": 1}]})),
        [
            f"spec.tasks[0].name: {LABEL_RULE}, got a list",
            "spec.tasks[0].dependsOn.name[0]: no task named an object in this job; dependsOn must name other "
            "tasks of the job (none)",
        ],
    ),
    (
        "status of the wrong shape",
        job_obj(status={"state": {"phase": 1, "message": []}, "retryCount": -1, "conditions": {}}),
        [
            "status.state.phase: must be a string, got 1",
            "status.state.message: must be a string, got a list",
            "status.retryCount: must be an integer >= 0, got -1",
            "status.conditions: must be a list of conditions",
        ],
    ),
    ("status not an object", job_obj(status=[]), ["status: must be an object"]),
    (
        "both claims are fine once stored (the controller names the PVC it made)",
        job_obj(volumes=[{"mountPath": "/d", "volumeClaim": {}, "volumeClaimName": "j-volume-0"}]),
        [],
    ),
]


@pytest.mark.parametrize(("obj", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problems(obj: Any, want: list[str]) -> None:
    assert job_problems(obj, LIMITS) == want


def test_the_replica_limit_is_a_setting() -> None:
    obj = job_obj(task(replicas=20))
    assert job_problems(obj, LIMITS) == []
    assert job_problems(obj, Limits(max_replicas=10)) == [
        f"spec.tasks[0].replicas: 20 is more than the 10 replicas pumice accepts per task; lower it, {RAISE}"
    ]


def test_nesting_100000_deep_is_reported_not_a_recursion_error() -> None:
    deep = job_obj(meta={"name": "j", "annotations": {"x": nested(100_000)}})
    (problem,) = job_problems(deep, LIMITS)
    assert problem.startswith("metadata.annotations[x][0].a[0]")
    assert "nested more than 64 levels deep" in problem
    with pytest.raises(InvalidObject, match=r"metadata.annotations\[x\]: expected a string, got list"):
        parse_job(deep)


def test_a_long_dependency_chain_is_checked_without_recursion() -> None:
    n = 5000
    tasks = [
        task(f"t{i}", 0, **({"dependsOn": {"name": [f"t{i + 1}"]}} if i + 1 < n else {})) for i in range(n)
    ]
    assert job_problems(job_obj(*tasks), LIMITS) == []
    tasks[-1]["dependsOn"] = {"name": ["t0"]}
    (problem,) = job_problems(job_obj(*tasks), LIMITS)
    assert problem.startswith("spec.tasks[0].dependsOn: tasks depend on each other in a cycle (t0 -> t1 -> ")
    assert "-> t9 -> ... -> t0); dependsOn must form a directed acyclic graph" in problem


def test_many_unknown_dependencies_stay_cheap_and_short() -> None:
    names = [f"t{i}" for i in range(2000)]
    tasks = [task(n, 0) for n in names]
    tasks[0]["dependsOn"] = {"name": [f"x{i}" for i in range(2000)]}
    start = time.monotonic()
    problems = job_problems(job_obj(*tasks), LIMITS)
    assert time.monotonic() - start < 5
    assert len(problems) == 2000
    assert problems[0] == (
        "spec.tasks[0].dependsOn.name[0]: no task named 'x0' in this job; dependsOn must name other tasks of "
        "the job (t1, t2, t3, t4, t5, t6, t7, t8, t9, t10, ... 1999 in all)"
    )


# --- properties ---------------------------------------------------------------------------------------------
ADVERSARIAL = json_values(json_ints=False, max_deep=1200)
PROPERTY = settings(
    max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY
@given(obj=mutated(job(), max_mutations=4, values=ADVERSARIAL))
def test_problems_never_raise_and_cover_every_job_parse_job_refuses(obj: Raw) -> None:
    problems = job_problems(obj, LIMITS)
    assert all(isinstance(p, str) and p for p in problems)
    try:
        parse_job(obj)
    except InvalidObject:
        assert problems, "parse_job refused a job job_problems finds nothing wrong with"


@PROPERTY
@given(obj=ADVERSARIAL)
def test_problems_of_any_json_value(obj: object) -> None:
    problems = job_problems(obj, LIMITS)  # type: ignore[arg-type]  # the point: not a Mapping
    try:
        parse_job(obj)  # type: ignore[arg-type]  # the point: not a Mapping
    except InvalidObject:
        assert problems


def _pods(obj: Raw, phases: list[PodPhase]) -> list[PodView]:
    """Pods of the job's first task, one per phase given."""
    spec = obj.get("spec")
    tasks = spec.get("tasks") if isinstance(spec, dict) else None
    first = tasks[0] if isinstance(tasks, list) and tasks and isinstance(tasks[0], dict) else {}
    given = first.get("name")
    name = given if isinstance(given, str) else "default0"
    return [
        PodView(name=f"j-{name}-{i}", task=name, index=i, phase=phase, created=T0 - 60)
        for i, phase in enumerate(phases)
    ]


@settings(max_examples=250, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    obj=mutated(job(), max_mutations=1, values=json_values(json_ints=False, max_deep=80)),
    phases=st.lists(st.sampled_from(list(PodPhase)), max_size=3),
    pg_phase=st.sampled_from((None, "Pending", "Inqueue", "Running")),
    action=st.sampled_from(("", "AbortJob", "ResumeJob", "RestartJob", "Bogus")),
)
def test_a_job_without_problems_parses_and_reconciles(
    obj: Raw, phases: list[PodPhase], pg_phase: str | None, action: str
) -> None:
    problems = job_problems(obj, LIMITS)
    if problems:
        # What the controller does instead: report them, on the parsed job or its placeholder.
        try:
            parsed = parse_job(obj)
        except InvalidObject:
            placeholder = placeholder_job(obj)
            if placeholder is None:
                return
            parsed = placeholder
        plan = reconcile(World(job=parsed, pods=_pods(obj, phases), now=T0, problems=problems))
        assert plan.create_pods == [] and plan.delete_pods == [] and plan.objects == []
        assert plan.podgroup_create is None and plan.podgroup_patch is None
        return
    before = copy.deepcopy(obj)
    parsed = parse_job(obj)
    podgroup = None if pg_phase is None else {"spec": {}, "status": {"phase": pg_phase}}
    commands = [CommandView(name="c", uid="c1", action=action)] if action else []
    world = World(
        job=parsed, pods=_pods(obj, phases), podgroup=podgroup, commands=commands, now=T0, plugin_context=SSH
    )
    plan = reconcile(world)
    assert obj == before, "reconcile must not edit the job it was given"
    if plan.status is not None:
        assert JobPhase(plan.status["state"]["phase"])
    for pod in plan.create_pods:
        assert pod["metadata"]["name"].startswith("j-")
