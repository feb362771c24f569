"""Hypothesis strategies for adversarial input: valid objects of every kind admission serves, then mutated.

A valid object is the starting point because random JSON almost never reaches the interesting code (a rule
only runs once the fields before it have the right shape). :func:`mutated` then replaces, deletes or wraps
the values at a few paths drawn from the whole object, so every field, at any depth, is sometimes of the
wrong type, out of range, huge or nested deep. Integers stay within 64 bits when the object is to be sent
as JSON (orjson encodes nothing larger); the pure tests use the unbounded ones too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from functools import cache
from typing import Any, Literal

from hypothesis import strategies as st

Raw = dict[str, Any]
Path = tuple[str | int, ...]

SPECIAL_STRINGS = (
    "",
    " ",
    "1e400",
    "-1",
    "NaN",
    "abc",
    "1Gi",
    "500m",
    "99999999999999999999",
    "4Ei",
    "0.5",
    "*",
    "PodFailed",
    "TaskCompleted",
    "RestartJob",
    "AbortJob",
    "Open",
    "Closed",
    "volcano",
    "root",
    "default",
    "q1",
    "master",
    "worker",
    "30s",
    "1h",
    "99999999999999999999h",
    "0",
    "any",
    "all",
    "Job",
    "Queue",
    "batch.volcano.sh/v1alpha1",
    "--master=lead",
    "--nope",
    "a" * 300,
    "é\x00",
    "[]",
    "{}",
)
# Text JSON can carry: no lone surrogates (orjson, like kube-apiserver, refuses them).
SURROGATES: tuple[Literal["Cs"]] = ("Cs",)  # hypothesis types categories as their literal names
TEXT = st.characters(exclude_categories=SURROGATES)
EDGE_INTS = (0, 1, -1, 2**31 - 1, 2**31, -(2**31) - 1, 10_000, 10_001, 2**62, 2**63 - 1, -(2**63))


def nested(depth: int, leaf: object = 1) -> object:
    """A value ``depth`` containers deep, alternating lists and objects."""
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    return value


def scalars(*, json_ints: bool = True) -> st.SearchStrategy[object]:
    ints = st.integers(min_value=-(2**63), max_value=2**63 - 1) if json_ints else st.integers()
    return st.one_of(
        st.none(),
        st.booleans(),
        ints,
        st.sampled_from(EDGE_INTS),
        st.floats(allow_nan=not json_ints, allow_infinity=not json_ints),
        st.text(TEXT, max_size=8),
        st.sampled_from(SPECIAL_STRINGS),
    )


DEEP_MARKER = re.compile(rb'"DEEP-NEST-(\d+)"')


def deep_json(body: bytes) -> bytes:
    """``body`` with each ``"DEEP-NEST-n"`` string replaced by lists ``n`` deep: JSON no encoder produces
    (orjson encodes at most 254 levels), as a hostile client could send it."""
    return DEEP_MARKER.sub(lambda m: b"[" * int(m.group(1)) + b"]" * int(m.group(1)), body)


def json_values(
    *, json_ints: bool = True, max_deep: int = 300, deep_marker: bool = False
) -> st.SearchStrategy[object]:
    """Any JSON value, small, now and then nested ``max_deep`` levels or so (with ``deep_marker``, as a
    marker string :func:`deep_json` expands after encoding)."""
    keys: st.SearchStrategy[object] = st.one_of(
        st.text(TEXT, max_size=6), st.sampled_from(("name", "spec", "cpu", "replicas", "tasks", "kind"))
    )
    if not json_ints:
        keys = keys | st.integers(min_value=-1, max_value=1)  # a Python caller's dict, not JSON
    small = st.recursive(
        scalars(json_ints=json_ints),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
        max_leaves=6,
    )
    depth = st.integers(min_value=60, max_value=max_deep)
    deep = depth.map(lambda n: f"DEEP-NEST-{n}") if deep_marker else depth.map(nested)
    return st.one_of(small, small, small, deep)


def paths(obj: object) -> list[Path]:
    """Every path to a value inside ``obj`` (not ``obj`` itself), in a stable order."""
    out: list[Path] = []
    stack: list[tuple[object, Path]] = [(obj, ())]
    while stack:
        node, at = stack.pop()
        items: list[tuple[str | int, object]] = []
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        for key, child in items:
            out.append((*at, key))
            if len(at) < 40:
                stack.append((child, (*at, key)))
    return out


def _parent(obj: object, path: Path) -> Any:
    node: Any = obj
    for p in path[:-1]:
        node = node[p]
    return node


@st.composite
def mutated(
    draw: st.DrawFn,
    base: st.SearchStrategy[Raw],
    *,
    max_mutations: int = 3,
    values: st.SearchStrategy[object] | None = None,
) -> Raw:
    """``base`` with up to ``max_mutations`` values replaced, deleted or wrapped in a list."""
    obj = copy.deepcopy(draw(base))
    replacement = values if values is not None else json_values()
    for _ in range(draw(st.integers(min_value=0, max_value=max_mutations))):
        candidates = paths(obj)
        if not candidates:
            break
        path = draw(st.sampled_from(candidates))
        parent = _parent(obj, path)
        key = path[-1]
        how = draw(st.sampled_from(("replace", "replace", "replace", "delete", "wrap")))
        if how == "delete":
            del parent[key]
        elif how == "wrap":
            parent[key] = [parent[key]]
        else:
            parent[key] = draw(replacement)
    return obj


# --- valid objects ------------------------------------------------------------------------------------------
TASK_NAMES = ("master", "worker", "ps", "chief", "a-b")
QUANTITIES = ("1", "500m", "2", "1Gi", "0", "0.5")


@cache
def resources() -> st.SearchStrategy[Raw]:
    quantity = st.sampled_from(QUANTITIES)
    return st.fixed_dictionaries(
        {},
        optional={
            "requests": st.dictionaries(
                st.sampled_from(("cpu", "memory", "nvidia.com/gpu")), quantity, max_size=2
            ),
            "limits": st.dictionaries(st.sampled_from(("cpu", "memory")), st.just("4"), max_size=2),
        },
    )


@cache
def container(name: str) -> st.SearchStrategy[Raw]:
    return st.fixed_dictionaries(
        {"name": st.just(name), "image": st.sampled_from(("busybox", "img:1"))},
        optional={
            "resources": resources(),
            "env": st.lists(
                st.fixed_dictionaries({"name": st.sampled_from(("A", "B")), "value": st.just("1")})
            ),
            "ports": st.lists(
                st.fixed_dictionaries({"containerPort": st.sampled_from((22, 80))}), max_size=2
            ),
            "volumeMounts": st.lists(
                st.fixed_dictionaries({"name": st.just("v"), "mountPath": st.just("/v")}), max_size=1
            ),
        },
    )


@cache
def pod_template() -> st.SearchStrategy[Raw]:
    spec = st.fixed_dictionaries(
        {
            "containers": st.one_of(
                st.tuples(container("main")).map(list),
                st.tuples(container("main"), container("side")).map(list),
            )
        },
        optional={
            "restartPolicy": st.sampled_from(("Never", "OnFailure", "Always")),
            "initContainers": st.lists(container("init"), max_size=1),
            "volumes": st.lists(
                st.fixed_dictionaries({"name": st.just("v"), "emptyDir": st.just({})}), max_size=1
            ),
            "hostname": st.sampled_from(("h", "")),
            "overhead": st.just({"cpu": "100m"}),
        },
    )
    return st.fixed_dictionaries(
        {"spec": spec}, optional={"metadata": st.just({"labels": {"app": "x"}, "annotations": {"a": "b"}})}
    )


@cache
def policy() -> st.SearchStrategy[Raw]:
    when = st.one_of(
        st.fixed_dictionaries(
            {"event": st.sampled_from(("PodFailed", "PodEvicted", "TaskCompleted", "PodPending"))}
        ),
        st.fixed_dictionaries(
            {
                "events": st.lists(
                    st.sampled_from(("PodFailed", "Unknown", "TaskFailed")), min_size=1, max_size=2
                )
            }
        ),
        st.fixed_dictionaries({"exitCode": st.integers(min_value=1, max_value=3)}),
    )
    return st.tuples(
        when,
        st.fixed_dictionaries(
            {
                "action": st.sampled_from(
                    ("RestartJob", "AbortJob", "CompleteJob", "RestartTask", "RestartPod")
                )
            },
            optional={"timeout": st.sampled_from(("30s", "1m"))},
        ),
    ).map(lambda parts: {**parts[0], **parts[1]})


@st.composite
def tasks(draw: st.DrawFn) -> list[Raw]:
    """One to three tasks, mostly consistent (minAvailable within replicas, dependsOn on earlier tasks)."""
    names = draw(st.lists(st.sampled_from(TASK_NAMES), min_size=1, max_size=3, unique=True))
    out: list[Raw] = []
    for k, name in enumerate(names):
        replicas = draw(st.integers(min_value=0, max_value=3))
        t: Raw = {"name": name, "replicas": replicas, "template": draw(pod_template())}
        extra = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "minAvailable": st.integers(min_value=0, max_value=replicas),
                    "maxRetry": st.integers(min_value=0, max_value=3),
                    "policies": st.lists(policy(), max_size=1),
                    "topologyPolicy": st.sampled_from(("none", "")),
                },
            )
        )
        t.update(extra)
        if k and draw(st.booleans()):
            t["dependsOn"] = {
                "name": draw(st.lists(st.sampled_from(names[:k]), min_size=1, max_size=2, unique=True)),
                "iteration": draw(st.sampled_from(("any", "all"))),
            }
        out.append(t)
    return out


PLUGIN_ARGS: dict[str, tuple[list[str], ...]] = {
    "svc": ([], ["--disable-network-policy=true"]),
    "env": ([],),
    "ssh": ([],),
    "mpi": (["--master=master", "--worker=worker"],),
    "pytorch": ([], ["--wait-master-enabled=true"]),
    "tensorflow": ([],),
}


@cache
def job() -> st.SearchStrategy[Raw]:
    plugins = st.fixed_dictionaries(
        {}, optional={name: st.sampled_from(args) for name, args in sorted(PLUGIN_ARGS.items())}
    )
    spec = st.fixed_dictionaries(
        {"tasks": tasks()},
        optional={
            "queue": st.sampled_from(("q1", "default")),
            "schedulerName": st.just("volcano"),
            "minAvailable": st.integers(min_value=0, max_value=2),
            "maxRetry": st.integers(min_value=0, max_value=3),
            "minSuccess": st.integers(min_value=1, max_value=2),
            "ttlSecondsAfterFinished": st.integers(min_value=0, max_value=100),
            "plugins": plugins,
            "policies": st.lists(policy(), max_size=1),
            "priorityClassName": st.just("high"),
            "volumes": st.just([{"mountPath": "/data", "volumeClaimName": "data"}]),
        },
    )
    status = st.fixed_dictionaries(
        {
            "state": st.fixed_dictionaries(
                {"phase": st.sampled_from(("Pending", "Running", "Restarting", "Aborted", "Completing"))}
            )
        },
        optional={"version": st.integers(0, 2), "retryCount": st.integers(0, 2)},
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("batch.volcano.sh/v1alpha1"),
            "kind": st.just("Job"),
            "metadata": st.just(
                {"name": "j", "namespace": "ns", "uid": "u1", "creationTimestamp": "2023-11-14T22:13:20Z"}
            ),
            "spec": spec,
        },
        optional={"status": status},
    )


@cache
def queue() -> st.SearchStrategy[Raw]:
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("scheduling.volcano.sh/v1beta1"),
            "kind": st.just("Queue"),
            "metadata": st.fixed_dictionaries({"name": st.sampled_from(("q1", "q2", "root", "default"))}),
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "weight": st.integers(min_value=1, max_value=5),
                    "capability": st.just({"cpu": "8", "memory": "8Gi"}),
                    "deserved": st.just({"cpu": "4"}),
                    "guarantee": st.just({"resource": {"cpu": "1"}}),
                    "parent": st.sampled_from(("", "root", "q1")),
                    "reclaimable": st.booleans(),
                },
            ),
        },
        optional={"status": st.just({"state": "Open"})},
    )


@cache
def podgroup() -> st.SearchStrategy[Raw]:
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("scheduling.volcano.sh/v1beta1"),
            "kind": st.just("PodGroup"),
            "metadata": st.just({"name": "pg", "namespace": "ns"}),
            "spec": st.fixed_dictionaries(
                {},
                optional={
                    "minMember": st.integers(min_value=0, max_value=3),
                    "queue": st.sampled_from(("q1", "default", "gone")),
                    "minResources": st.just({"cpu": "1", "memory": "1Gi"}),
                    "minTaskMember": st.just({"w": 1}),
                    "networkTopology": st.just({"mode": "hard", "highestTierAllowed": 1}),
                },
            ),
        }
    )


@cache
def pod() -> st.SearchStrategy[Raw]:
    annotations = st.dictionaries(
        st.sampled_from(
            ("scheduling.k8s.io/group-name", "volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
        ),
        st.sampled_from(("pg", "1", "50%", "0")),
        max_size=2,
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("Pod"),
            "metadata": st.fixed_dictionaries(
                {"name": st.just("p"), "namespace": st.just("ns"), "annotations": annotations}
            ),
            "spec": st.fixed_dictionaries(
                {
                    "schedulerName": st.sampled_from(("volcano", "volcano", "default-scheduler")),
                    "containers": st.tuples(container("c")).map(list),
                },
                optional={"schedulingGates": st.just([{"name": "example.com/x"}]), "nodeName": st.just("n1")},
            ),
        }
    )


@cache
def command() -> st.SearchStrategy[Raw]:
    target = st.one_of(
        st.just({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "j", "uid": "u1"}),
        st.just({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "q1"}),
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("bus.volcano.sh/v1alpha1"),
            "kind": st.just("Command"),
            "metadata": st.just({"name": "c1", "namespace": "ns"}),
            "target": target,
            "action": st.sampled_from(("AbortJob", "ResumeJob", "OpenQueue", "CloseQueue", "RestartJob")),
        }
    )


def _sample_job(name: str, tasks: list[Raw], **spec: Any) -> Raw:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": "u1"},
        "spec": {"queue": "q1", "schedulerName": "volcano", "tasks": tasks, **spec},
    }


def _sample_task(name: str, replicas: int, **extra: Any) -> Raw:
    c = {
        "name": "main",
        "image": "img:1",
        "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "1"}},
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 22}],
    }
    template = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [c], "restartPolicy": "Never"}}
    return {"name": name, "replicas": replicas, "minAvailable": replicas, "template": template, **extra}


# Hand-written jobs covering the spec's parts, for the HTTP fuzz: drawing a rich job from :func:`job` costs
# more than the request it is sent in, and mutations bring the variety there.
SAMPLE_JOBS: tuple[Raw, ...] = (
    _sample_job(
        "mpi",
        [_sample_task("master", 1), _sample_task("worker", 2)],
        minAvailable=3,
        plugins={"mpi": ["--master=master", "--worker=worker"], "svc": [], "ssh": []},
        policies=[{"event": "PodEvicted", "action": "RestartJob"}],
        volumes=[{"mountPath": "/data", "volumeClaimName": "data"}],
    ),
    _sample_job(
        "tf",
        [
            _sample_task("ps", 1, policies=[{"exitCode": 3, "action": "RestartTask", "timeout": "30s"}]),
            _sample_task("worker", 2, dependsOn={"name": ["ps"], "iteration": "any"}),
        ],
        plugins={"tensorflow": [], "svc": []},
        maxRetry=3,
        ttlSecondsAfterFinished=60,
    ),
    _sample_job(
        "part",
        [
            _sample_task(
                "w",
                6,
                partitionPolicy={"totalPartitions": 2, "partitionSize": 3, "minPartitions": 2},
                topologyPolicy="none",
            )
        ],
        networkTopology={"mode": "hard", "highestTierAllowed": 1},
        minSuccess=2,
    ),
)


def job_samples() -> st.SearchStrategy[Raw]:
    return st.sampled_from(SAMPLE_JOBS)


def _job_spec(job: Raw) -> Raw:
    spec: Raw = job["spec"]
    return spec


@cache
def jobtemplate() -> st.SearchStrategy[Raw]:
    return st.builds(
        lambda job: {
            "apiVersion": "flow.volcano.sh/v1alpha1",
            "kind": "JobTemplate",
            "metadata": {"name": "a", "namespace": "ns"},
            "spec": _job_spec(job),
        },
        job_samples(),
    )


@cache
def jobflow() -> st.SearchStrategy[Raw]:
    entry = st.fixed_dictionaries(
        {"name": st.sampled_from(("a", "b", "c"))},
        optional={
            "dependsOn": st.fixed_dictionaries(
                {"targets": st.lists(st.sampled_from(("a", "b", "c", "x")), max_size=2)},
                optional={
                    "probe": st.fixed_dictionaries(
                        {},
                        optional={
                            "taskStatusList": st.just([{"taskName": "main", "phase": "Running"}]),
                            "httpGetList": st.just([{"taskName": "main", "path": "/", "port": 80}]),
                            "tcpSocketList": st.just([{"taskName": "main", "port": 22}]),
                        },
                    )
                },
            ),
            "patch": st.builds(lambda job: {"jobSpec": _job_spec(job)}, job_samples()),
        },
    )
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("flow.volcano.sh/v1alpha1"),
            "kind": st.just("JobFlow"),
            "metadata": st.just({"name": "f", "namespace": "ns"}),
            "spec": st.fixed_dictionaries(
                {"flows": st.lists(entry, max_size=3)},
                optional={"jobRetainPolicy": st.sampled_from(("retain", "delete", "keep"))},
            ),
        }
    )


@cache
def cronjob() -> st.SearchStrategy[Raw]:
    return st.fixed_dictionaries(
        {
            "apiVersion": st.just("batch.volcano.sh/v1alpha1"),
            "kind": st.just("CronJob"),
            "metadata": st.just({"name": "c", "namespace": "ns"}),
            "spec": st.fixed_dictionaries(
                {
                    "schedule": st.sampled_from(("*/1 * * * *", "30 2 * * *", "@hourly", "61 * * * *", "x")),
                    "jobTemplate": st.builds(lambda job: {"spec": _job_spec(job)}, job_samples()),
                },
                optional={
                    "timeZone": st.sampled_from(("Europe/Berlin", "UTC", "Mars/Olympus")),
                    "concurrencyPolicy": st.sampled_from(("Allow", "Forbid", "Replace", "Sometimes")),
                    "startingDeadlineSeconds": st.integers(min_value=-1, max_value=600),
                    "suspend": st.booleans(),
                    "successfulJobsHistoryLimit": st.integers(min_value=-1, max_value=3),
                    "failedJobsHistoryLimit": st.integers(min_value=-1, max_value=3),
                },
            ),
        }
    )


OBJECTS: dict[str, Callable[[], st.SearchStrategy[Raw]]] = {
    "jobs": job_samples,
    "jobtemplates": jobtemplate,
    "jobflows": jobflow,
    "cronjobs": cronjob,
    "queues": queue,
    "podgroups": podgroup,
    "pods": pod,
    "commands": command,
}
