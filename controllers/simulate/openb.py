"""Alibaba's openb GPU trace (cluster-trace-gpu-v2023) as the simulator's input, replayed by the method of
"Beware of Fragmentation" (Weng et al., USENIX ATC '23): ``pumice simulate --openb-nodes NODES.csv
--openb-pods PODS.csv [--seed N] [--arrive 1.3]``.

The files as published:

- nodes: ``sn,cpu_milli,memory_mib,gpu,model`` — each row a node named ``sn`` with that cpu and memory,
  ``gpu`` cards registered as Volcano's device plugin registers them (``volcano.sh/gpu-number: gpu``,
  ``volcano.sh/gpu-memory: gpu × 1000``: a card is 1000 units, the trace's thousandths of a GPU) and the
  label :data:`MODEL_LABEL` naming its GPU model (none on a node without cards);
- pods: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec,...]`` — each row a pod of a one-pod job
  that never ends: one GPU at most 999 thousandths asks ``volcano.sh/gpu-memory: gpu_milli`` (a share
  of one card), other GPU pods ``volcano.sh/gpu-number: num_gpu`` (whole cards); ``gpu_spec`` (GPU models
  separated by ``|``) becomes a required node affinity on :data:`MODEL_LABEL`. Other columns (times,
  phases, qos) are not part of the method and are not read.

The method (:func:`arrivals`): the pods in a seeded random order; then pods taken out at random, or drawn
again with replacement and added, until the GPU asked is ``arrive`` times the cluster's (without passing
it); one arrival a second; a pod that cannot start when it arrives is dropped (``Trace.drop_unplaced``).
The paper's fragmentation measure weighs the pod list's frequent shapes (:func:`frequent_shapes`).

Every problem in a file is a :class:`TraceError` naming the file, the row and the column.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from controllers.simulate.trace import NodePool, Task, Trace, TraceError, TraceJob
from extender.core.gpu_frag import Shape
from extender.core.gpus import GPU_MEMORY, GPU_NUMBER

MODEL_LABEL: Final = "nvidia.com/gpu.product"  # the label NVIDIA's GPU feature discovery sets
MILLI: Final = 1000  # a card, in the trace's units
PODS_PER_NODE: Final = "1001"  # the paper's nodes take that many pods: never the limit
POPULAR: Final = 0.95  # the frequent shapes make up this share of the pods (the paper's threshold)
_MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenbNode:
    name: str
    cpu: int  # milli
    memory: int  # MiB
    gpus: int
    model: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenbPod:
    name: str
    cpu: int  # milli
    memory: int  # MiB
    gpus: int
    milli: int  # of each GPU
    models: tuple[str, ...]  # GPU models it may use (empty: any)

    @property
    def asked(self) -> int:
        """The GPU it asks, in thousandths of a card."""
        return self.gpus * self.milli

    @property
    def shape(self) -> Shape:
        share = self.milli if self.gpus == 1 and self.milli < MILLI else 0
        return Shape(
            cards=0 if share else self.gpus,
            share=share,
            cpu=self.cpu,
            memory=self.memory * _MIB,
            models=self.models,
        )


def _rows(path: Path, required: Sequence[str]) -> Iterable[tuple[str, Mapping[str, str]]]:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in required if c not in (reader.fieldnames or ())]
            if missing:
                raise TraceError(f"{path}: no column {missing[0]!r} (the header names {reader.fieldnames})")
            for i, row in enumerate(reader, start=2):
                yield f"{path}:{i}", row
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror or e}") from None


def _int(row: Mapping[str, str], column: str, where: str) -> int:
    text = (row.get(column) or "").strip()
    try:
        value = int(text)
    except ValueError:
        raise TraceError(f"{where}: {column} {text!r} is not a whole number") from None
    if value < 0:
        raise TraceError(f"{where}: {column} {value} is negative")
    return value


def read_nodes(path: Path) -> list[OpenbNode]:
    out = []
    for where, row in _rows(path, ("sn", "cpu_milli", "memory_mib", "gpu", "model")):
        gpus = _int(row, "gpu", where)
        model = (row.get("model") or "").strip()
        if gpus and not model:
            raise TraceError(f"{where}: a node with {gpus} GPUs names no model")
        out.append(
            OpenbNode(
                name=(row.get("sn") or "").strip(),
                cpu=_int(row, "cpu_milli", where),
                memory=_int(row, "memory_mib", where),
                gpus=gpus,
                model=model if gpus else "",
            )
        )
    names = [n.name for n in out]
    if not all(names) or len(set(names)) != len(names):
        raise TraceError(f"{path}: every node needs a name (sn) of its own")
    if not any(n.gpus for n in out):
        raise TraceError(f"{path}: no node has GPUs")
    return out


def read_pods(path: Path) -> list[OpenbPod]:
    out: list[OpenbPod] = []
    for where, row in _rows(path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        gpus, milli = _int(row, "num_gpu", where), _int(row, "gpu_milli", where)
        if gpus and not 0 < milli <= MILLI:
            raise TraceError(f"{where}: gpu_milli {milli} is not a share of a GPU (1..{MILLI})")
        if gpus > 1 and milli < MILLI:
            raise TraceError(
                f"{where}: {gpus} GPUs of {milli} thousandths each: a share is of one card (deviceshare)"
            )
        models = tuple(sorted({m for m in (row.get("gpu_spec") or "").split("|") if m.strip()}))
        out.append(
            OpenbPod(
                name=(row.get("name") or "").strip() or f"pod-{len(out)}",
                cpu=_int(row, "cpu_milli", where),
                memory=_int(row, "memory_mib", where),
                gpus=gpus,
                milli=milli if gpus else 0,
                models=models,
            )
        )
    if not out:
        raise TraceError(f"{path}: no pods")
    return out


def arrivals(pods: Sequence[OpenbPod], gpus: int, *, seed: int, arrive: float) -> list[OpenbPod]:
    """The pods in the order they arrive: shuffled with ``seed``, then thinned at random or topped up
    with pods drawn again until they ask ``arrive`` × ``gpus`` GPUs (never more)."""
    rng = np.random.default_rng(seed)
    out = [pods[i] for i in rng.permutation(len(pods)).tolist()]
    target = arrive * gpus * MILLI
    asked = sum(p.asked for p in out)
    while asked > target and out:
        asked -= out.pop(int(rng.integers(len(out)))).asked
    if asked < target and any(p.asked for p in pods):
        while True:
            p = pods[int(rng.integers(len(pods)))]
            if asked + p.asked > target:
                break
            out.append(p)
            asked += p.asked
    return out


def frequent_shapes(pods: Sequence[OpenbPod]) -> tuple[tuple[Shape, float], ...]:
    """The pod list's most frequent shapes until they make up :data:`POPULAR` of its pods, with their
    share (the paper's "typical pods": memory is not part of a shape there)."""
    counts = Counter(
        Shape(cards=s.cards, share=s.share, cpu=s.cpu, models=s.models) for s in (p.shape for p in pods)
    )
    out: list[tuple[Shape, float]] = []
    covered = 0
    for shape, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered >= POPULAR * len(pods):
            break
        out.append((shape, n / len(pods)))
        covered += n
    return tuple(out)


def _requests(p: OpenbPod) -> dict[str, str]:
    out = {"cpu": f"{p.cpu}m", "memory": f"{p.memory}Mi"}
    if p.gpus == 1 and p.milli < MILLI:
        out[GPU_MEMORY] = str(p.milli)
    elif p.gpus:
        out[GPU_NUMBER] = str(p.gpus)
    return out


def _affinity(models: tuple[str, ...]) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": MODEL_LABEL, "operator": "In", "values": list(models)}]}
    return {
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        }
    }


def openb_trace(nodes_csv: Path, pods_csv: Path, *, seed: int, arrive: float) -> Trace:
    """The replay of ``pods_csv`` on ``nodes_csv`` (see the module docstring)."""
    if not 0 < arrive <= 10:
        raise TraceError(f"--arrive {arrive}: expected a share of the cluster's GPUs in (0, 10]")
    nodes = read_nodes(nodes_csv)
    listed = read_pods(pods_csv)
    pools = tuple(
        NodePool(
            name=n.name,
            count=1,
            names=(n.name,),
            allocatable={
                "cpu": f"{n.cpu}m",
                "memory": f"{n.memory}Mi",
                "pods": PODS_PER_NODE,
                **({GPU_NUMBER: str(n.gpus), GPU_MEMORY: str(n.gpus * MILLI)} if n.gpus else {}),
            },
            labels={MODEL_LABEL: n.model} if n.gpus else {},
            gpu_cards=n.gpus,
            gpu_memory=MILLI if n.gpus else 0,
        )
        for n in nodes
    )
    seen: Counter[str] = Counter()
    jobs = []
    for i, p in enumerate(arrivals(listed, sum(n.gpus for n in nodes), seed=seed, arrive=arrive)):
        seen[p.name] += 1
        name = p.name if seen[p.name] == 1 else f"{p.name}-{seen[p.name] - 1}"
        jobs.append(
            TraceJob(
                name=name,
                namespace="default",
                submit=float(i),
                queue="default",
                priority_class="",
                duration=None,
                expected_runtime=None,
                min_available=1,
                tasks=(
                    Task(
                        name="pod",
                        replicas=1,
                        min_available=None,
                        requests=_requests(p),
                        placement=_affinity(p.models) if p.models else {},
                    ),
                ),
            )
        )
    default_queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }
    return Trace(
        pools=pools,
        queues=(default_queue,),
        priority_classes=(),
        jobs=tuple(jobs),
        drop_unplaced=True,
        shapes=frequent_shapes(listed),
        model_label=MODEL_LABEL,
    )
