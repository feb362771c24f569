"""What a trace file says: nodes, queues, and jobs arriving over time (``pumice simulate TRACE.yaml``).

A trace is one YAML document (``kind: Trace`` optional)::

    nodes:                       # node pools: count x shape
      - name: gpu                # nodes gpu-0 .. gpu-{count-1}
        count: 8
        allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
        labels: {pool: gpu}      # optional, and taints: [{key, value, effect}]
      - name: share              # GPU cards Volcano's device plugin would register (deviceshare):
        count: 40
        allocatable: {cpu: "96", memory: 1Ti}
        gpus: {cards: 8, memory: 81920}   # per card; status volcano.sh/gpu-number 8, gpu-memory 8 x 81920
        topology: {leaf: 8, spine: 2}     # 8 nodes per leaf switch, 2 leaves per spine (labels below)
    queues:                      # Volcano Queue fields (spec), or whole Queue objects
      - {name: team-a, weight: 2, capability: {nvidia.com/gpu: "48"}}
      - {name: team-b, weight: 1, parent: root, reclaimable: true}
    priorityClasses: [{name: urgent, value: 1000}]
    jobs:
      - name: train
        submit: 0                # seconds or a duration ("90s", "1h30m") after the trace starts
        queue: team-a
        priorityClassName: urgent
        duration: 2h             # how long it runs once its gang is whole; absent (or forever): never ends
        expectedRuntime: 2h      # what its pods declare (pumice.dev/expected-runtime, read by the starvation
                                 # guard and the forecast); default: the duration; none: they say nothing
        minAvailable: 4          # default: every task's minAvailable (else replicas), summed
        tasks:
          - {name: worker, replicas: 4, requests: {nvidia.com/gpu: "8", cpu: "32"}}
        failures: [10m]          # optional: attempt i fails this long after it starts
        networkTopology: {mode: hard, highestTierAllowed: 1}   # optional: onto its PodGroup
        nodeSelector: {pool: gpu}   # optional, with affinity and tolerations: its pods' (a task's own
                                    # nodeSelector, affinity or tolerations replace the job's)
    generate:                    # optional: many jobs drawn from shapes, reproducibly (a seed)
      - {count: 1000, seed: 1, every: 60s, queues: {team-a: 2, team-b: 1}, shapes: [...]}

A ``generate`` shape is a job without name and submit: ``replicas`` and ``duration`` may be ``[low, high]``
ranges (drawn uniformly), ``weight`` says how often it is drawn; arrivals are a Poisson process with mean
gap ``every`` (starting at ``start``). Every problem is reported with where it is (``jobs[3].tasks[0]``),
an unknown field included (a field the simulation would not honour is refused, never ignored).

Where pods may go: a job's or a task's ``nodeSelector``, ``affinity`` (Kubernetes' Affinity: node affinity,
pod affinity and anti-affinity) and ``tolerations`` become its pods' (through the Volcano Job's task
template), checked by the readers the scheduler uses, so the scheduler honours them as it would on a
cluster: a job no node matches waits, with the reason.

GPU sharing (the ``deviceshare`` plugin): a pool's ``gpus`` gives each node ``cards`` cards of ``memory``
each (an integer in the device plugin's unit, MiB for Volcano's, or a quantity such as ``80Gi`` taken as
that many units), as the node's status ``volcano.sh/gpu-number`` and ``volcano.sh/gpu-memory`` (the
total, cards x memory). A task asks ``volcano.sh/gpu-memory`` (a share of one card, same unit) or
``volcano.sh/gpu-number`` (whole cards) in ``requests``, never both; the pod's container gets them as
limits too, as Kubernetes requires of extended resources.

Network topology: a pool's ``topology: {leaf: L, spine: S}`` labels node ``i`` of pool ``P`` with
``topology.pumice.dev/leaf: P-leaf-<i // L>`` and (with ``spine``) ``topology.pumice.dev/spine:
P-spine-<i // (L*S)>``, S leaves per spine; name both labels, lowest first, in the
``network-topology-aware`` plugin's ``hypernode.discovery.labels`` argument to make them HyperNode tiers 1
and 2. Explicit ``labels`` work as well (one pool per leaf). A job's ``networkTopology`` (``mode``:
``hard`` or ``soft``, ``highestTierAllowed``: a tier >= 1) is its vcjob's, which the job controller
copies onto the PodGroup.

Here: the model a trace becomes and how its parts (pools, queues, tasks, jobs, generated jobs) are read;
the checks of single values (mappings, names, counts, durations, quantities, GPU cards) are
:mod:`controllers.simulate.trace_fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from controllers.simulate import trace_fields as read
from controllers.simulate.trace_fields import TraceError as TraceError
from extender.core.gpu_frag import Shape
from extender.core.gpus import GPU_MEMORY, GPU_NUMBER

Obj = dict[str, Any]

# The node labels a pool's ``topology`` writes (the network-topology-aware plugin's discovery labels).
LEAF_LABEL: Final = "topology.pumice.dev/leaf"
SPINE_LABEL: Final = "topology.pumice.dev/spine"
_GPU_ASKS: Final = (GPU_MEMORY, GPU_NUMBER)


@dataclass(frozen=True, slots=True, kw_only=True)
class NodePool:
    name: str
    count: int
    allocatable: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    gpu_cards: int = 0  # deviceshare cards per node (0: none); their memory each, in the plugin's unit
    gpu_memory: int = 0
    leaf: int = 0  # nodes per leaf label (0: no topology labels)
    spine: int = 0  # leaves per spine label (0: no spine label)
    names: tuple[str, ...] = ()  # the nodes' names (else <name>-<i>): a trace of named nodes (openb)

    def node_name(self, i: int) -> str:
        return self.names[i] if self.names else f"{self.name}-{i}"

    def node_labels(self, i: int) -> dict[str, str]:
        """The labels of the pool's node ``i``: the pool's own, and its leaf and spine."""
        out = dict(self.labels)
        if self.leaf:
            out[LEAF_LABEL] = f"{self.name}-leaf-{i // self.leaf}"
            if self.spine:
                out[SPINE_LABEL] = f"{self.name}-spine-{i // (self.leaf * self.spine)}"
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    name: str
    replicas: int
    min_available: int | None
    requests: Mapping[str, str]
    placement: Mapping[str, Any] = field(default_factory=dict)  # nodeSelector, affinity, tolerations


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceJob:
    name: str
    namespace: str
    submit: float
    queue: str
    priority_class: str
    duration: float | None  # None: it never ends
    expected_runtime: float | None  # what its pods declare (pumice.dev/expected-runtime); None: nothing
    min_available: int
    tasks: tuple[Task, ...]
    failures: tuple[float, ...] = ()
    network_topology: Mapping[str, str | int] | None = None  # the vcjob's spec.networkTopology

    @property
    def end(self) -> float:
        """When it would end if it started at once (inf: never)."""
        return float("inf") if self.duration is None else self.submit + self.duration


@dataclass(frozen=True, slots=True, kw_only=True)
class Trace:
    pools: tuple[NodePool, ...]
    queues: tuple[Obj, ...]  # Queue objects
    priority_classes: tuple[Obj, ...]  # PriorityClass objects
    jobs: tuple[TraceJob, ...]  # by submit time, then name
    # The openb replay's rule: a job that cannot start when it arrives is dropped (not kept waiting).
    drop_unplaced: bool = False
    # The pod shapes the paper's fragmentation measure weighs (with how often each occurs) and the node
    # label naming a node's GPU model; none: the arrival figures are not reported.
    shapes: tuple[tuple[Shape, float], ...] = ()
    model_label: str = ""

    @property
    def has_gpus(self) -> bool:
        """Whether any node has deviceshare cards (the GPU figures are reported then)."""
        return any(p.gpu_cards and p.count for p in self.pools)

    @property
    def has_topology(self) -> bool:
        """Whether any node has a leaf label (the topology figures are reported then)."""
        return any(p.count and (p.leaf or LEAF_LABEL in p.labels) for p in self.pools)

    def priority(self, name: str) -> int:
        for pc in self.priority_classes:
            if pc["metadata"]["name"] == name:
                return int(pc["value"])
        return 0


_POOL: Final = ("name", "count", "allocatable", "labels", "taints", "gpus", "topology")


def _pool(raw: object, where: str) -> NodePool:
    m = read.mapping(raw, where)
    read.known(m, _POOL, where)
    allocatable = read.resources(m.get("allocatable"), f"{where}.allocatable")
    cards = memory = leaf = spine = 0
    if m.get("gpus") is not None:
        cards, memory = read.gpus(m["gpus"], f"{where}.gpus")
        both = sorted(set(_GPU_ASKS) & set(allocatable))
        if both:
            raise TraceError(f"{where}.allocatable: {both[0]} comes from gpus; give one or the other")
        allocatable[GPU_NUMBER] = str(cards)
        allocatable[GPU_MEMORY] = str(cards * memory)
    if m.get("topology") is not None:
        leaf, spine = read.topology(m["topology"], f"{where}.topology")
    return NodePool(
        name=read.name(m.get("name"), f"{where}.name"),
        count=read.count(m.get("count", 1), f"{where}.count"),
        allocatable=allocatable,
        labels={str(k): str(v) for k, v in read.mapping(m.get("labels") or {}, f"{where}.labels").items()},
        taints=tuple(
            read.mapping(t, f"{where}.taints[{i}]") for i, t in enumerate(read.items(m.get("taints"), where))
        ),
        gpu_cards=cards,
        gpu_memory=memory,
        leaf=leaf,
        spine=spine,
    )


_QUEUE_SPEC = ("weight", "capability", "deserved", "guarantee", "parent", "reclaimable", "priority")


def _queue(raw: object, where: str) -> Obj:
    m = read.mapping(raw, where)
    if "spec" in m:  # a whole Queue object
        return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", **m}
    name = read.name(m.get("name"), f"{where}.name")
    read.known(m, ("name", "state", *_QUEUE_SPEC), where)
    spec: Obj = {k: m[k] for k in _QUEUE_SPEC if k in m}
    spec.setdefault("weight", 1)
    if "guarantee" in spec:
        spec["guarantee"] = {"resource": read.resources(spec["guarantee"], f"{where}.guarantee")}
    for k in ("capability", "deserved"):
        if k in spec:
            spec[k] = read.resources(spec[k], f"{where}.{k}")
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": str(m.get("state") or "Open")},
    }


_TASK: Final = ("name", "replicas", "minAvailable", "requests", *read.PLACEMENT)
_JOB: Final = (
    "name",
    "namespace",
    "submit",
    "queue",
    "priorityClassName",
    "duration",
    "expectedRuntime",
    "minAvailable",
    "tasks",
    "failures",
    "networkTopology",
    *read.PLACEMENT,
)


def _task(raw: object, where: str, job: Mapping[str, Any]) -> Task:
    """A task; ``job``: the job's placement fields, which the task's own replace."""
    m = read.mapping(raw, where)
    read.known(m, _TASK, where)
    replicas = read.count(m.get("replicas", 1), f"{where}.replicas", 1)
    ma = m.get("minAvailable")
    requests = read.resources(m.get("requests") or {}, f"{where}.requests")
    if all(r in requests for r in _GPU_ASKS):
        raise TraceError(
            f"{where}.requests: ask {GPU_MEMORY} (a share of one card) or {GPU_NUMBER} (whole cards), "
            "not both"
        )
    return Task(
        name=read.name(m.get("name", "task"), f"{where}.name"),
        replicas=replicas,
        min_available=None if ma is None else read.count(ma, f"{where}.minAvailable"),
        requests=requests,
        placement={**job, **read.placement(m, where)},
    )


def _network_topology(raw: object, where: str) -> dict[str, str | int]:
    """A job's ``networkTopology``: ``mode`` (hard, the default, or soft) and ``highestTierAllowed``."""
    m = read.mapping(raw, where)
    read.known(m, ("mode", "highestTierAllowed"), where)
    mode = m.get("mode", "hard")
    if mode not in ("hard", "soft"):
        raise TraceError(f"{where}.mode: expected hard or soft, got {mode!r}")
    out: dict[str, str | int] = {"mode": mode}
    if m.get("highestTierAllowed") is not None:
        out["highestTierAllowed"] = read.count(m["highestTierAllowed"], f"{where}.highestTierAllowed", 1)
    return out


def _job(m: Mapping[str, Any], where: str, *, name: str, submit: float) -> TraceJob:
    read.known(m, _JOB, where)
    placement = read.placement(m, where)
    tasks = tuple(
        _task(t, f"{where}.tasks[{i}]", placement) for i, t in enumerate(read.items(m.get("tasks"), where))
    )
    if not tasks:
        raise TraceError(f"{where}.tasks: a job needs at least one task")
    whole = sum(t.replicas for t in tasks)
    default_min = sum(t.replicas if t.min_available is None else t.min_available for t in tasks)
    min_available = read.count(m.get("minAvailable", default_min), f"{where}.minAvailable", 1)
    if min_available > whole:
        raise TraceError(f"{where}.minAvailable: {min_available} is more than its {whole} pods")
    duration = read.forever(m.get("duration"), f"{where}.duration")
    return TraceJob(
        name=name,
        namespace=str(m.get("namespace") or "default"),
        submit=submit,
        queue=str(m.get("queue") or "default"),
        priority_class=str(m.get("priorityClassName") or ""),
        duration=duration,
        expected_runtime=_expected_runtime(m.get("expectedRuntime", duration), f"{where}.expectedRuntime"),
        min_available=min_available,
        tasks=tasks,
        failures=tuple(
            read.seconds(f, f"{where}.failures[{i}]")
            for i, f in enumerate(read.items(m.get("failures"), where))
        ),
        network_topology=None
        if m.get("networkTopology") is None
        else _network_topology(m["networkTopology"], f"{where}.networkTopology"),
    )


def _expected_runtime(v: object, where: str) -> float | None:
    """What a job's pods declare: a duration, or ``none`` for pods that say nothing (``forever`` and a
    missing duration say nothing either)."""
    if v is None or v == "none":
        return None
    return read.forever(v, where) or None


def _draw(v: object, rng: np.random.Generator, where: str, parse: Any) -> Any:
    """A value, or one drawn uniformly from a ``[low, high]`` range."""
    if isinstance(v, list):
        if len(v) != 2:
            raise TraceError(f"{where}: a range is [low, high]")
        lo, hi = parse(v[0], where), parse(v[1], where)
        if hi < lo:
            raise TraceError(f"{where}: the range's high end is below its low end")
        return rng.integers(lo, hi + 1) if isinstance(lo, int) else rng.uniform(lo, hi)
    return parse(v, where)


_GENERATE: Final = ("count", "seed", "every", "start", "namePrefix", "queues", "shapes", "priorityClasses")


def _generated(raw: object, where: str, first: int) -> list[TraceJob]:
    m = read.mapping(raw, where)
    read.known(m, _GENERATE, where)
    count = read.count(m.get("count"), f"{where}.count", 1)
    rng = np.random.default_rng(read.count(m.get("seed", 0), f"{where}.seed"))
    every = read.seconds(m.get("every", 60), f"{where}.every")
    t = read.seconds(m.get("start", 0), f"{where}.start")
    prefix = str(m.get("namePrefix") or f"job{first}")
    queues = m.get("queues") or {"default": 1}
    if isinstance(queues, list):
        queues = dict.fromkeys(queues, 1)
    q_names = [str(q) for q in read.mapping(queues, f"{where}.queues")]
    q_p = np.array([float(w) for w in queues.values()])
    shapes = read.items(m.get("shapes"), f"{where}.shapes")
    if not shapes:
        raise TraceError(f"{where}.shapes: at least one job shape is required")
    s_p = np.array(
        [float(read.mapping(s, f"{where}.shapes[{i}]").get("weight", 1)) for i, s in enumerate(shapes)]
    )
    classes = read.mapping(m.get("priorityClasses") or {}, f"{where}.priorityClasses")
    jobs: list[TraceJob] = []
    for n in range(count):
        t += float(rng.exponential(every)) if every > 0 else 0.0
        i = int(rng.choice(len(shapes), p=s_p / s_p.sum()))
        shape = dict(read.mapping(shapes[i], f"{where}.shapes[{i}]"))
        sw = f"{where}.shapes[{i}]"
        tasks = []
        for j, task in enumerate(read.items(shape.get("tasks"), sw)):
            task = dict(read.mapping(task, f"{sw}.tasks[{j}]"))
            task["replicas"] = int(
                _draw(task.get("replicas", 1), rng, f"{sw}.tasks[{j}].replicas", read.count)
            )
            tasks.append(task)
        shape["tasks"] = tasks
        if shape.get("duration") not in (None, "forever"):
            shape["duration"] = float(_draw(shape["duration"], rng, f"{sw}.duration", read.seconds))
        shape["queue"] = q_names[int(rng.choice(len(q_names), p=q_p / q_p.sum()))]
        for pc, p in classes.items():
            if rng.random() < float(p):
                shape["priorityClassName"] = str(pc)
                break
        shape.pop("weight", None)
        jobs.append(_job(shape, sw, name=f"{prefix}-{n}", submit=t))
    return jobs


_TRACE_KEYS = ("apiVersion", "generate", "jobs", "kind", "metadata", "nodes", "priorityClasses", "queues")


def parse_trace(doc: object) -> Trace:
    m = read.mapping(doc, "trace")
    read.known(m, _TRACE_KEYS, "trace")
    pools = tuple(_pool(p, f"nodes[{i}]") for i, p in enumerate(read.items(m.get("nodes"), "nodes")))
    if not pools:
        raise TraceError("nodes: a trace needs at least one node pool")
    queues = [_queue(q, f"queues[{i}]") for i, q in enumerate(read.items(m.get("queues"), "queues"))]
    if not any(q["metadata"]["name"] == "default" for q in queues):
        queues.append(_queue({"name": "default"}, "queues"))
    classes: list[Obj] = []
    for i, pc in enumerate(read.items(m.get("priorityClasses"), "priorityClasses")):
        pm = read.mapping(pc, f"priorityClasses[{i}]")
        value = pm.get("value")
        if isinstance(value, bool) or not isinstance(value, int):
            raise TraceError(f"priorityClasses[{i}].value: expected an integer")
        classes.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": read.name(pm.get("name"), f"priorityClasses[{i}].name")},
                "value": value,
            }
        )
    jobs: list[TraceJob] = []
    for i, j in enumerate(read.items(m.get("jobs"), "jobs")):
        jm = read.mapping(j, f"jobs[{i}]")
        where = f"jobs[{i}]"
        jobs.append(
            _job(
                jm,
                where,
                name=read.name(jm.get("name"), f"{where}.name"),
                submit=read.seconds(jm.get("submit", 0), f"{where}.submit"),
            )
        )
    for i, g in enumerate(read.items(m.get("generate"), "generate")):
        jobs.extend(_generated(g, f"generate[{i}]", len(jobs)))
    names = [(j.namespace, j.name) for j in jobs]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise TraceError(f"jobs: the name {dup[0]}/{dup[1]} is used twice")
    known_q = {q["metadata"]["name"] for q in queues}
    for j in jobs:
        if j.queue not in known_q:
            raise TraceError(f"job {j.name}: queue {j.queue!r} is not among the trace's queues")
    known_pc = {pc["metadata"]["name"] for pc in classes}
    for j in jobs:
        if j.priority_class and j.priority_class not in known_pc:
            raise TraceError(
                f"job {j.name}: priorityClassName {j.priority_class!r} is not in priorityClasses"
            )
    jobs.sort(key=lambda j: (j.submit, j.namespace, j.name))
    return Trace(pools=pools, queues=tuple(queues), priority_classes=tuple(classes), jobs=tuple(jobs))
