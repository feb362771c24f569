"""Volcano Job validation, one row per rule, with the exact denial text a user sees."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import pytest

from admission import jobs
from admission.lookup import StaticLookup
from extender.core.model import Queue, QueueState
from extender.core.names import LABEL_RULE, SUBDOMAIN_RULE
from extender.jobs.plugins.registry import check_plugin
from tests.admission.builders import Raw, judged, lookup

EVENTS = "*, PodFailed, PodEvicted, PodPending, Unknown, TaskCompleted, TaskFailed"
ACTIONS = "AbortJob, CompleteJob, RestartJob, RestartPod, RestartTask, ResumeJob, TerminateJob"
IMMUTABLE = (
    "cannot change after the job is created; only spec.minAvailable, spec.priorityClassName, "
    "spec.tasks[*].replicas, spec.tasks[*].minAvailable can"
)

CLUSTER = lookup(
    Queue(name="q1"),
    Queue(name="shut", state=QueueState.CLOSED),
    Queue(name="p"),
    Queue(name="b", parent="p"),
    Queue(name="a", parent="p"),
)


def container(name: str = "main", image: str | None = "busybox", **fields: Any) -> Raw:
    c: Raw = {"name": name, **fields}
    if image is not None:
        c["image"] = image
    return c


def task(
    name: Any = "worker", replicas: Any = 2, *, containers: list[Any] | None = None, **fields: Any
) -> Raw:
    """A task; ``template=`` replaces the whole template, ``pod=`` adds fields to the pod spec."""
    pod: Raw = {"containers": [container()] if containers is None else containers, **fields.pop("pod", {})}
    t: Raw = {"name": name, "replicas": replicas, "template": {"spec": pod}}
    t.update(fields)
    return t


def job_obj(name: str | None = "j1", *, tasks: object = None, **spec: Any) -> Raw:
    meta: Raw = {"namespace": "ns"}
    if name is not None:
        meta["name"] = name
    body: Raw = {"queue": "q1", "tasks": [task("master", 1), task("worker", 2)] if tasks is None else tasks}
    body.update(spec)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": meta, "spec": body}


def policy(**fields: Any) -> Raw:
    return {"action": "RestartJob", **fields}


@dataclass(frozen=True)
class Case:
    id: str
    new: Raw
    want: list[str]
    old: Raw | None = None
    cluster: StaticLookup = field(default_factory=lambda: CLUSTER)


def check(case: Case) -> None:
    got = [str(e) for e in jobs.validate(case.new, case.old, case.cluster)]
    assert got == case.want


def _ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


SHAPE_CASES = [
    Case("a valid job", job_obj(), []),
    Case("no spec", {"metadata": {"name": "j1"}}, ["spec.tasks: must list at least one task"]),
    Case("spec not an object", {"metadata": {"name": "j1"}, "spec": []}, ["spec: must be an object"]),
    Case("no tasks", job_obj(tasks=[]), ["spec.tasks: must list at least one task"]),
    Case("tasks not a list", job_obj(tasks={"a": 1}), ["spec.tasks: must be a list of tasks"]),
    Case("a task not an object", job_obj(tasks=[task(), 5]), ["spec.tasks[1]: must be an object"]),
]

NAME_CASES = [
    Case("generateName: no name yet", job_obj(None), []),
    Case(
        "job name too long",
        job_obj("j" * 64),
        ["metadata.name: must be at most 63 characters, got 64; pods are named <job>-<task>-<index>"],
    ),
    Case(
        "job name with bad characters",
        job_obj("-j1"),
        [
            "metadata.name: must consist of letters, digits, '-', '_' or '.', starting and ending with a "
            "letter or digit, got '-j1'"
        ],
    ),
    Case(
        "task name not a DNS label",
        job_obj(tasks=[task("Worker_1")]),
        [f"spec.tasks[0].name: {LABEL_RULE}, got 'Worker_1'"],
    ),
    Case("task name missing", job_obj(tasks=[task(None)]), [f"spec.tasks[0].name: {LABEL_RULE}, got None"]),
    Case(
        "task name too long",
        job_obj("j", tasks=[task("w" * 64, 1)]),
        [f"spec.tasks[0].name: {LABEL_RULE}, got '{'w' * 64}'"],
    ),
    Case(
        "duplicate task names",
        job_obj(tasks=[task("w"), task("ps"), task("w")]),
        [
            "spec.tasks[2].name: duplicate task name 'w' (also spec.tasks[0].name); task names must "
            "be unique in a job"
        ],
    ),
    Case("pod name of 63 characters", job_obj("j" * 54, tasks=[task("worker", 10)]), []),
    Case(
        "pod name over 63 characters at the last replica",
        job_obj("j" * 54, tasks=[task("worker", 11)]),
        [
            f"spec.tasks[0].name: pod name '{'j' * 54}-worker-10' would be 64 characters, over the limit of "
            "63 for <job>-<task>-<index>; shorten the job or task name"
        ],
    ),
]

COUNT_CASES = [
    Case(
        "replicas negative",
        job_obj(tasks=[task(replicas=-1)], minAvailable=5),
        ["spec.tasks[0].replicas: must be an integer >= 0, got -1"],
    ),
    Case(
        "replicas a string",
        job_obj(tasks=[task(replicas="2")]),
        ["spec.tasks[0].replicas: must be an integer >= 0, got '2'"],
    ),
    Case("replicas absent means 0", job_obj(tasks=[{"name": "w", "template": task()["template"]}]), []),
    Case(
        "task minAvailable negative",
        job_obj(tasks=[task(minAvailable=-1)]),
        ["spec.tasks[0].minAvailable: must be an integer >= 0, got -1"],
    ),
    Case(
        "task minAvailable above replicas",
        job_obj(tasks=[task(replicas=2, minAvailable=3)]),
        ["spec.tasks[0].minAvailable: 3 is greater than replicas 2; lower minAvailable or raise replicas"],
    ),
    Case("task minAvailable equal to replicas", job_obj(tasks=[task(replicas=2, minAvailable=2)]), []),
    Case(
        "job minAvailable above all replicas",
        job_obj(minAvailable=4),
        [
            "spec.minAvailable: 4 is greater than the 3 replicas of all tasks; lower minAvailable "
            "or add replicas"
        ],
    ),
    Case("job minAvailable equal to all replicas", job_obj(minAvailable=3), []),
    Case(
        "job minAvailable negative",
        job_obj(minAvailable=-1),
        ["spec.minAvailable: must be an integer >= 0, got -1"],
    ),
    Case("minSuccess within replicas", job_obj(minSuccess=3), []),
    Case("minSuccess zero", job_obj(minSuccess=0), ["spec.minSuccess: must be an integer >= 1, got 0"]),
    Case(
        "minSuccess above all replicas",
        job_obj(minSuccess=4),
        ["spec.minSuccess: 4 is greater than the 3 replicas of all tasks; lower minSuccess or add replicas"],
    ),
    Case("maxRetry negative", job_obj(maxRetry=-1), ["spec.maxRetry: must be an integer >= 0, got -1"]),
    Case(
        "task maxRetry negative",
        job_obj(tasks=[task(maxRetry=-2)]),
        ["spec.tasks[0].maxRetry: must be an integer >= 0, got -2"],
    ),
    Case(
        "ttlSecondsAfterFinished negative",
        job_obj(ttlSecondsAfterFinished=-1),
        ["spec.ttlSecondsAfterFinished: must be an integer >= 0, got -1"],
    ),
    Case("ttlSecondsAfterFinished zero", job_obj(ttlSecondsAfterFinished=0), []),
    Case(
        "networkTopology with both tiers",
        job_obj(networkTopology={"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}),
        ["spec.networkTopology: set either highestTierAllowed or highestTierName, not both"],
    ),
]

PARTITION = {"totalPartitions": 2, "partitionSize": 3}
PARTITION_CASES = [
    Case("partitions matching replicas", job_obj(tasks=[task(replicas=6, partitionPolicy=PARTITION)]), []),
    Case(
        "partitions not matching replicas",
        job_obj(tasks=[task(replicas=5, partitionPolicy=PARTITION)]),
        [
            "spec.tasks[0].replicas: must equal partitionPolicy.totalPartitions * partitionSize (2 "
            "* 3 = 6), got 5"
        ],
    ),
    Case(
        "minAvailable not matching minPartitions",
        job_obj(tasks=[task(replicas=6, minAvailable=4, partitionPolicy={**PARTITION, "minPartitions": 1})]),
        [
            "spec.tasks[0].minAvailable: must equal partitionPolicy.minPartitions * partitionSize "
            "(1 * 3 = 3), got 4"
        ],
    ),
    Case(
        "minAvailable free without minPartitions",
        job_obj(tasks=[task(replicas=6, minAvailable=4, partitionPolicy=PARTITION)]),
        [],
    ),
    Case(
        "totalPartitions zero and partitionSize missing",
        job_obj(tasks=[task(replicas=6, partitionPolicy={"totalPartitions": 0})]),
        [
            "spec.tasks[0].partitionPolicy.partitionSize: required; an integer >= 1",
            "spec.tasks[0].partitionPolicy.totalPartitions: must be an integer >= 1, got 0",
        ],
    ),
    Case(
        "partition networkTopology with both tiers",
        job_obj(
            tasks=[
                task(
                    replicas=6,
                    partitionPolicy={
                        **PARTITION,
                        "networkTopology": {"highestTierAllowed": 2, "highestTierName": "s"},
                    },
                )
            ]
        ),
        [
            "spec.tasks[0].partitionPolicy.networkTopology: set either highestTierAllowed or "
            "highestTierName, not both"
        ],
    ),
    Case(
        "partitionPolicy not an object",
        job_obj(tasks=[task(partitionPolicy=3)]),
        ["spec.tasks[0].partitionPolicy: must be an object"],
    ),
]

QUEUE_CASES = [
    Case("absent queue means the default", job_obj(queue=None), []),
    Case(
        "missing queue",
        job_obj(queue="nope"),
        ["spec.queue: queue 'nope' does not exist; create it or choose another queue"],
    ),
    Case(
        "configured default queue missing",
        job_obj(queue=""),
        ["spec.queue: queue 'other' does not exist; create it or choose another queue"],
        cluster=lookup(default_queue="other"),
    ),
    Case(
        "closed queue",
        job_obj(queue="shut"),
        ["spec.queue: queue 'shut' is Closed; jobs can only be submitted to an Open queue"],
    ),
    Case(
        "root queue",
        job_obj(queue="root"),
        ["spec.queue: the root queue cannot run jobs; choose a leaf queue"],
    ),
    Case(
        "queue with children",
        job_obj(queue="p"),
        [
            "spec.queue: queue 'p' is not a leaf queue (it has child queues a, b); "
            "jobs run in leaf queues only, choose one of its children"
        ],
    ),
    Case("leaf child queue", job_obj(queue="a"), []),
    Case("queue not a string", job_obj(queue=3), ["spec.queue: must be a queue name"]),
]

T0 = "spec.tasks[0].template.spec"
TEMPLATE_CASES = [
    Case(
        "no template",
        job_obj(tasks=[{"name": "w", "replicas": 1}]),
        [f"{T0}.containers: must list at least one container"],
    ),
    Case(
        "template not an object",
        job_obj(tasks=[{"name": "w", "replicas": 1, "template": "x"}]),
        ["spec.tasks[0].template: must be a pod template (metadata and spec)"],
    ),
    Case(
        "pod spec not an object",
        job_obj(tasks=[{"name": "w", "replicas": 1, "template": {"spec": 1}}]),
        ["spec.tasks[0].template.spec: must be a pod spec"],
    ),
    Case(
        "no containers",
        job_obj(tasks=[task(containers=[])]),
        [f"{T0}.containers: must list at least one container"],
    ),
    Case(
        "container without name and image",
        job_obj(tasks=[task(containers=[{"command": ["true"]}])]),
        [
            f"{T0}.containers[0].name: {LABEL_RULE}, got None",
            f"{T0}.containers[0].image: required; name the container image to run",
        ],
    ),
    Case(
        "blank image",
        job_obj(tasks=[task(containers=[container(image=" ")])]),
        [f"{T0}.containers[0].image: required; name the container image to run"],
    ),
    Case(
        "container not an object",
        job_obj(tasks=[task(containers=["busybox"])]),
        [f"{T0}.containers[0]: must be an object"],
    ),
    Case(
        "duplicate container name across init and main containers",
        job_obj(tasks=[task(pod={"initContainers": [container("main")]})]),
        [
            f"{T0}.containers[0].name: duplicate container name 'main' (also {T0}.initContainers[0].name); "
            "container names must be unique in a pod"
        ],
    ),
    Case(
        "initContainers not a list",
        job_obj(tasks=[task(pod={"initContainers": {}})]),
        [f"{T0}.initContainers: must be a list of containers"],
    ),
    Case(
        "bad quantity",
        job_obj(tasks=[task(containers=[container(resources={"requests": {"cpu": "lots"}})])]),
        [f"{T0}.containers[0].resources.requests[cpu]: 'lots' is not a quantity (examples: 500m, 2, 4Gi)"],
    ),
    Case(
        "request above limit",
        job_obj(
            tasks=[task(containers=[container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})])]
        ),
        [
            f"{T0}.containers[0].resources.requests[cpu]: 2 is above the limit 1; a request must be "
            "at most its limit"
        ],
    ),
    Case("restartPolicy OnFailure", job_obj(tasks=[task(pod={"restartPolicy": "OnFailure"})]), []),
    Case(
        "restartPolicy unknown",
        job_obj(tasks=[task(pod={"restartPolicy": "Sometimes"})]),
        [f"{T0}.restartPolicy: must be one of Always, OnFailure, Never, got 'Sometimes'"],
    ),
    Case(
        "topologyPolicy unknown",
        job_obj(tasks=[task(topologyPolicy="tight")]),
        [
            "spec.tasks[0].topologyPolicy: must be one of none, best-effort, restricted, "
            "single-numa-node, got 'tight'"
        ],
    ),
    Case(
        "topologyPolicy with fractional cpu",
        job_obj(
            tasks=[
                task(
                    topologyPolicy="single-numa-node",
                    containers=[container(resources={"requests": {"cpu": "500m"}})],
                )
            ]
        ),
        [
            f"{T0}.containers[0].resources.requests[cpu]: topologyPolicy single-numa-node needs a "
            "whole number "
            "of CPUs (such as 1 or 2) for every container"
        ],
    ),
    Case(
        "topologyPolicy without cpu, on an init container",
        job_obj(
            tasks=[
                task(
                    topologyPolicy="restricted",
                    containers=[container(resources={"limits": {"cpu": "2"}})],
                    pod={"initContainers": [container("init")]},
                )
            ]
        ),
        [
            f"{T0}.initContainers[0].resources.limits[cpu]: topologyPolicy restricted needs a whole number "
            "of CPUs (such as 1 or 2) for every container"
        ],
    ),
    Case("topologyPolicy none needs nothing", job_obj(tasks=[task(topologyPolicy="none")]), []),
]

P = "spec.policies"
POLICY_CASES = [
    Case(
        "valid policies",
        job_obj(
            policies=[
                policy(event="PodEvicted", timeout="1h30m"),
                policy(events=["PodFailed", "TaskFailed"], action="AbortJob"),
                policy(exitCode=137),
            ]
        ),
        [],
    ),
    Case(
        "same event twice in one policy",
        job_obj(policies=[policy(event="PodFailed", events=["PodFailed"])]),
        [],
    ),
    Case(
        "event and exitCode",
        job_obj(policies=[policy(event="PodFailed", exitCode=1)]),
        [f"{P}[0]: set either event/events or exitCode, not both"],
    ),
    Case(
        "neither event nor exitCode",
        job_obj(policies=[policy()]),
        [f"{P}[0]: set event, events or exitCode to say when the policy applies"],
    ),
    Case(
        "unknown event",
        job_obj(policies=[policy(events=["PodFailed", "PodExploded"])]),
        [f"{P}[0].events[1]: unknown event 'PodExploded'; valid events are {EVENTS}"],
    ),
    Case(
        "internal event",
        job_obj(policies=[policy(event="OutOfSync")]),
        [f"{P}[0].event: unknown event 'OutOfSync'; valid events are {EVENTS}"],
    ),
    Case(
        "unknown action",
        job_obj(policies=[policy(event="PodFailed", action="SyncJob")]),
        [f"{P}[0].action: unknown action 'SyncJob'; valid actions are {ACTIONS}"],
    ),
    Case(
        "missing action",
        job_obj(policies=[{"exitCode": 3}]),
        [f"{P}[0].action: required; valid actions are {ACTIONS}"],
    ),
    Case(
        "exit code zero",
        job_obj(policies=[policy(exitCode=0)]),
        [f"{P}[0].exitCode: 0 means success; a policy needs a non-zero exit code"],
    ),
    Case(
        "exit code not an integer",
        job_obj(policies=[policy(exitCode="1")]),
        [f"{P}[0].exitCode: must be an integer, got '1'"],
    ),
    Case(
        "duplicate exit code",
        job_obj(policies=[policy(exitCode=3), policy(exitCode=3, action="AbortJob")]),
        [
            f"{P}[1].exitCode: exit code 3 is already handled by {P}[0]; each exit code may appear "
            "in one policy only"
        ],
    ),
    Case(
        "duplicate event across policies",
        job_obj(policies=[policy(event="PodFailed"), policy(events=["TaskFailed", "PodFailed"])]),
        [
            f"{P}[1].events[1]: event 'PodFailed' is already handled by {P}[0]; each event may "
            "appear in one policy only"
        ],
    ),
    Case(
        "any event beside others",
        job_obj(policies=[policy(event="PodEvicted"), policy(event="*", action="AbortJob")]),
        [
            f"{P}[1]: event '*' already matches every event, so no policy of {P} may name another "
            "(found PodEvicted); remove them or the '*'"
        ],
    ),
    Case("any event alone", job_obj(policies=[policy(event="*")]), []),
    Case(
        "bad timeout",
        job_obj(policies=[policy(event="PodPending", timeout="5 minutes")]),
        [f"{P}[0].timeout: invalid duration '5 minutes' (want e.g. 30s, 5m, 1h30m)"],
    ),
    Case(
        "timeout a number",
        job_obj(policies=[policy(event="PodPending", timeout=300)]),
        [f"{P}[0].timeout: must be a duration such as 30s, 5m or 1h30m, got 300"],
    ),
    Case(
        "events not a list",
        job_obj(policies=[policy(events="PodFailed")]),
        [f"{P}[0].events: must be a list of event names"],
    ),
    Case(
        "event not a string",
        job_obj(policies=[policy(event=1)]),
        [f"{P}[0].event: must be an event name, got 1"],
    ),
    Case("policies not a list", job_obj(policies={"a": 1}), [f"{P}: must be a list of policies"]),
    Case("policy not an object", job_obj(policies=["RestartJob"]), [f"{P}[0]: must be an object"]),
    Case(
        "task policies are checked in their own scope",
        job_obj(
            policies=[policy(event="PodFailed")],
            tasks=[task(policies=[policy(event="PodFailed"), policy(event="PodFailed", action="AbortJob")])],
        ),
        [
            "spec.tasks[0].policies[1].event: event 'PodFailed' is already handled by "
            "spec.tasks[0].policies[0]; "
            "each event may appear in one policy only"
        ],
    ),
    Case(
        "JobUpdated is not an event pumice acts on",
        job_obj(policies=[policy(event="JobUpdated")]),
        [f"{P}[0].event: unknown event 'JobUpdated'; valid events are {EVENTS}"],
    ),
]


def dep(*names: Any, **fields: Any) -> Raw:
    return {"name": list(names), **fields}


DEPENDS_CASES = [
    Case(
        "a DAG",
        job_obj(
            tasks=[
                task("a"),
                task("b", dependsOn=dep("a")),
                task("c", dependsOn=dep("a", "b", iteration="any")),
            ]
        ),
        [],
    ),
    Case(
        "unknown task",
        job_obj(tasks=[task("a"), task("b", dependsOn=dep("x"))]),
        [
            "spec.tasks[1].dependsOn.name[0]: no task named 'x' in this job; dependsOn must name "
            "other tasks of the job (a)"
        ],
    ),
    Case(
        "itself",
        job_obj(tasks=[task("a", dependsOn=dep("a"))]),
        ["spec.tasks[0].dependsOn.name[0]: task 'a' cannot depend on itself"],
    ),
    Case(
        "bad iteration",
        job_obj(tasks=[task("a"), task("b", dependsOn=dep("a", iteration="some"))]),
        ["spec.tasks[1].dependsOn.iteration: must be any or all, got 'some'"],
    ),
    Case(
        "two-task cycle",
        job_obj(tasks=[task("a", dependsOn=dep("b")), task("b", dependsOn=dep("a"))]),
        [
            "spec.tasks[0].dependsOn: tasks depend on each other in a cycle (a -> b -> a); "
            "dependsOn must form a directed acyclic graph"
        ],
    ),
    Case(
        "three-task cycle found from a task outside it",
        job_obj(
            tasks=[
                task("x", dependsOn=dep("c")),
                task("a", dependsOn=dep("b")),
                task("b", dependsOn=dep("c")),
                task("c", dependsOn=dep("a")),
            ]
        ),
        [
            "spec.tasks[1].dependsOn: tasks depend on each other in a cycle (a -> b -> c -> a); "
            "dependsOn must form a directed acyclic graph"
        ],
    ),
    Case(
        "dependsOn not an object",
        job_obj(tasks=[task("a", dependsOn=["b"])]),
        ["spec.tasks[0].dependsOn: must be an object with name (a list of tasks) and iteration"],
    ),
    Case(
        "dependsOn.name not a list",
        job_obj(tasks=[task("a"), task("b", dependsOn={"name": "a"})]),
        ["spec.tasks[1].dependsOn.name: must be a list of task names"],
    ),
]

KNOWN_PLUGINS = "env, hcclrank, mpi, pytorch, ray, ssh, svc, tensorflow"
RAY_TASKS = [task("head", 1), task("worker", 2)]
PLUGIN_CASES = [
    Case("known plugins", job_obj(plugins={"svc": [], "env": None, "ssh": []}), []),
    Case(
        "unknown plugin",
        job_obj(plugins={"mxnet": [], "svc": []}),
        [f"spec.plugins[mxnet]: unknown job plugin 'mxnet'; known plugins are {KNOWN_PLUGINS}"],
    ),
    Case(
        "plugins not a map",
        job_obj(plugins=["svc"]),
        ["spec.plugins: must be a map of plugin name to a list of arguments"],
    ),
    Case(
        "arguments not a list of strings",
        job_obj(plugins={"svc": "--x", "env": [1]}),
        [
            "spec.plugins[env]: must be a list of string arguments",
            "spec.plugins[svc]: must be a list of string arguments",
        ],
    ),
    Case(
        "mpi without its master task",
        job_obj(plugins={"mpi": []}, tasks=[task("lead", 1), task("worker")]),
        [
            "spec.plugins[mpi]: the mpi master task 'master' is not a task of this job (lead, worker); "
            "name a task 'master' or pass --master=<task>"
        ],
    ),
    Case(
        "mpi with a named master",
        job_obj(plugins={"mpi": ["--master", "lead"]}, tasks=[task("lead", 1), task("worker")]),
        [],
    ),
    Case("mpi with the default master", job_obj(plugins={"mpi": ["--port=2222"]}), []),
    Case("ray with its head task", job_obj(plugins={"ray": [], "svc": []}, tasks=RAY_TASKS), []),
    Case("ray, head only", job_obj(plugins={"ray": []}, tasks=[task("head", 1)]), []),
    Case(
        "ray with named tasks, containers and ports",
        job_obj(
            plugins={
                "ray": ["--head=lead", "--headContainer=main", "--dashboardPort=9000", "--clientPort=9001"]
            },
            tasks=[task("lead", 1), task("worker")],
        ),
        [],
    ),
    Case(
        "ray without its head task",
        job_obj(plugins={"ray": []}),
        [
            "spec.plugins[ray]: the ray head task 'head' is not a task of this job (master, worker); "
            "name a task 'head' or pass --head=<task>"
        ],
    ),
    Case(
        "ray with a bad argument",
        job_obj(plugins={"ray": ["--clientServerPort=10001"]}, tasks=RAY_TASKS),
        [
            "spec.plugins[ray]: job plugin ray: unknown argument --clientServerPort (known: --clientPort, "
            "--dashboardPort, --head, --headContainer, --port, --worker, --workerContainer)"
        ],
    ),
    Case(
        "ray with one port twice",
        job_obj(plugins={"ray": ["--dashboardPort=6379"]}, tasks=RAY_TASKS),
        [
            "spec.plugins[ray]: job plugin ray: --port=6379, --dashboardPort=6379 and --clientPort=10001 "
            "must be three different ports"
        ],
    ),
    Case(
        # 54 characters: the pods' names fit, <job>-head-svc (63) just does.
        "ray, the longest job name",
        job_obj("r" * 54, plugins={"ray": []}, tasks=[task("head", 1)]),
        [],
    ),
    Case(
        "ray, a job name too long for the head Service",
        job_obj("r" * 55, plugins={"ray": []}, tasks=[task("head", 1)]),
        [
            f"metadata.name: the ray plugin's head Service would be named '{'r' * 55}-head-svc', which is "
            "not a valid Service name (at most 63 characters of a-z, 0-9 and '-', starting with a letter); "
            "shorten or rename the job"
        ],
    ),
    Case(
        "ray, a job name that starts with a digit",
        job_obj("7up", plugins={"ray": []}, tasks=[task("head", 1)]),
        [
            "metadata.name: the ray plugin's head Service would be named '7up-head-svc', which is not a "
            "valid Service name (at most 63 characters of a-z, 0-9 and '-', starting with a letter); "
            "shorten or rename the job"
        ],
    ),
    Case("ray, no name yet (generateName)", job_obj(None, plugins={"ray": []}, tasks=[task("head", 1)]), []),
    Case("hcclrank", job_obj(plugins={"hcclrank": ["--master=master", "--worker=worker"]}), []),
    Case("hcclrank without its tasks", job_obj(plugins={"hcclrank": []}, tasks=[task("npu", 2)]), []),
    Case(
        "hcclrank with a bad argument",
        job_obj(plugins={"hcclrank": ["--master"]}),
        ["spec.plugins[hcclrank]: job plugin hcclrank: --master needs a value"],
    ),
]


def test_bad_plugin_arguments_are_the_plugins_own_words() -> None:
    problem = check_plugin("mpi", ["--nope=1"])
    assert problem is not None and "--nope" in problem
    got = [str(e) for e in jobs.validate(job_obj(plugins={"mpi": ["--nope=1"]}), None, CLUSTER)]
    assert got == [f"spec.plugins[mpi]: {problem}"]


V = "spec.volumes"
VOLUME_CASES = [
    Case(
        "an existing claim and a new one",
        job_obj(
            volumes=[
                {"mountPath": "/data", "volumeClaimName": "data"},
                {"mountPath": "/out", "volumeClaim": {}},
            ]
        ),
        [],
    ),
    Case(
        "mountPath missing",
        job_obj(volumes=[{"volumeClaimName": "data"}]),
        [f"{V}[0].mountPath: required; the path to mount the volume at"],
    ),
    Case(
        "mountPath used twice",
        job_obj(
            volumes=[{"mountPath": "/d", "volumeClaimName": "a"}, {"mountPath": "/d", "volumeClaimName": "b"}]
        ),
        [f"{V}[1].mountPath: '/d' is already used by {V}[0]; mount paths must be unique"],
    ),
    Case(
        "no claim",
        job_obj(volumes=[{"mountPath": "/d"}]),
        [f"{V}[0]: set volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)"],
    ),
    Case(
        "both claims",
        job_obj(volumes=[{"mountPath": "/d", "volumeClaimName": "a", "volumeClaim": {"resources": {}}}]),
        [f"{V}[0]: set only one of volumeClaimName (an existing PVC) and volumeClaim (a PVC to create)"],
    ),
    Case(
        "bad claim name",
        job_obj(volumes=[{"mountPath": "/d", "volumeClaimName": "Data_1"}]),
        [f"{V}[0].volumeClaimName: {SUBDOMAIN_RULE}, got 'Data_1'"],
    ),
    Case(
        "claim name not a string",
        job_obj(volumes=[{"mountPath": "/d", "volumeClaimName": 7}]),
        [f"{V}[0].volumeClaimName: must be a PVC name"],
    ),
    Case(
        "claim not an object",
        job_obj(volumes=[{"mountPath": "/d", "volumeClaim": "big"}]),
        [f"{V}[0].volumeClaim: must be a PersistentVolumeClaim spec"],
    ),
    Case("volumes not a list", job_obj(volumes={"a": 1}), [f"{V}: must be a list of volumes"]),
    Case("volume not an object", job_obj(volumes=["/d"]), [f"{V}[0]: must be an object"]),
]

MANY_ERRORS = Case(
    "every problem is reported at once",
    job_obj(queue="shut", maxRetry=-1, tasks=[task("w", replicas=1, minAvailable=2), task("w")]),
    [
        "spec.queue: queue 'shut' is Closed; jobs can only be submitted to an Open queue",
        "spec.maxRetry: must be an integer >= 0, got -1",
        "spec.tasks[1].name: duplicate task name 'w' (also spec.tasks[0].name); task names must be "
        "unique in a job",
        "spec.tasks[0].minAvailable: 2 is greater than replicas 1; lower minAvailable or raise replicas",
    ],
)

CREATE_CASES = (
    SHAPE_CASES
    + NAME_CASES
    + COUNT_CASES
    + PARTITION_CASES
    + QUEUE_CASES
    + TEMPLATE_CASES
    + POLICY_CASES
    + DEPENDS_CASES
    + PLUGIN_CASES
    + VOLUME_CASES
    + [MANY_ERRORS]
)


@pytest.mark.parametrize("case", CREATE_CASES, ids=_ids(CREATE_CASES))
def test_create(case: Case) -> None:
    check(case)


# --- UPDATE ------------------------------------------------------------------------------------------------
def updated(old: Raw, **changes: Any) -> Raw:
    """A copy of ``old`` with ``spec`` keys changed; ``tasks__1__replicas=3`` reaches into a task."""
    new = copy.deepcopy(old)
    for key, value in changes.items():
        target: Any = new["spec"]
        *path, last = key.split("__")
        for p in path:
            target = target[int(p)] if isinstance(target, list) else target[p]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is None:
            target.pop(last, None)
        else:
            target[last] = value
    return new


RUNNING = job_obj(
    minAvailable=3,
    maxRetry=3,
    schedulerName="volcano",
    volumes=[{"mountPath": "/out", "volumeClaim": {"resources": {"requests": {"storage": "1Gi"}}}}],
)

UPDATE_CASES = [
    Case("nothing changed", RUNNING, [], old=RUNNING),
    Case("scaled up", updated(RUNNING, tasks__1__replicas=5, minAvailable=6), [], old=RUNNING),
    Case("task minAvailable changed", updated(RUNNING, tasks__1__minAvailable=1), [], old=RUNNING),
    Case("priorityClassName changed", updated(RUNNING, priorityClassName="high"), [], old=RUNNING),
    Case(
        "the controller filled in volumeClaimName",
        updated(RUNNING, volumes__0={**RUNNING["spec"]["volumes"][0], "volumeClaimName": "j1-volume-abc"}),
        [],
        old=RUNNING,
    ),
    Case("empty and absent are the same", updated(RUNNING, plugins={}, policies=[]), [], old=RUNNING),
    Case(
        "a queue closed since creation does not block scaling",
        updated(job_obj(queue="shut"), tasks__1__replicas=3),
        [],
        old=job_obj(queue="shut"),
    ),
    Case(
        "queue changed",
        updated(RUNNING, queue="a"),
        [f"spec: spec.queue {IMMUTABLE}"],
        old=RUNNING,
    ),
    Case(
        "template and plugins changed",
        updated(
            RUNNING,
            tasks__0__template={"spec": {"containers": [container(image="busybox:2")]}},
            plugins={"svc": []},
        ),
        [f"spec: spec.plugins, spec.tasks[0].template {IMMUTABLE}"],
        old=RUNNING,
    ),
    Case(
        "task added",
        updated(RUNNING, tasks=[*RUNNING["spec"]["tasks"], task("ps", 1)]),
        ["spec.tasks: tasks cannot be added to or removed from a job (it had 2, now 3)"],
        old=RUNNING,
    ),
    Case(
        "task removed and maxRetry changed",
        updated(RUNNING, tasks=RUNNING["spec"]["tasks"][:1], maxRetry=5, minAvailable=1),
        [
            "spec.tasks: tasks cannot be added to or removed from a job (it had 2, now 1)",
            f"spec: spec.maxRetry {IMMUTABLE}",
        ],
        old=RUNNING,
    ),
    Case(
        "scaled below minAvailable",
        updated(RUNNING, tasks__1__replicas=1),
        [
            "spec.minAvailable: 3 is greater than the 2 replicas of all tasks; lower minAvailable "
            "or add replicas"
        ],
        old=RUNNING,
    ),
    Case(
        "task minAvailable above its replicas",
        updated(RUNNING, tasks__1__minAvailable=3),
        ["spec.tasks[1].minAvailable: 3 is greater than replicas 2; lower minAvailable or raise replicas"],
        old=RUNNING,
    ),
    Case(
        "replicas negative",
        updated(RUNNING, tasks__1__replicas=-1),
        ["spec.tasks[1].replicas: must be an integer >= 0, got -1"],
        old=RUNNING,
    ),
    Case(
        "partition policy still holds",
        updated(job_obj(tasks=[task(replicas=6, partitionPolicy=PARTITION)]), tasks__0__replicas=4),
        [
            "spec.tasks[0].replicas: must equal partitionPolicy.totalPartitions * partitionSize (2 "
            "* 3 = 6), got 4"
        ],
        old=job_obj(tasks=[task(replicas=6, partitionPolicy=PARTITION)]),
    ),
    Case(
        "networkTopology with both tiers",
        updated(RUNNING, networkTopology={"highestTierAllowed": 1, "highestTierName": "r"}),
        [
            "spec.networkTopology: set either highestTierAllowed or highestTierName, not both",
            f"spec: spec.networkTopology {IMMUTABLE}",
        ],
        old=RUNNING,
    ),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=_ids(UPDATE_CASES))
def test_update(case: Case) -> None:
    check(case)


def test_delete_is_not_validated() -> None:
    assert judged("/jobs/validate")(None, job_obj(), CLUSTER) == []
