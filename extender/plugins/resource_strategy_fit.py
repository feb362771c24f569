"""resource-strategy-fit: keep cpu and memory for a node's idle GPUs, and score nodes per resource.

Mirrors Volcano's ``resource-strategy-fit`` plugin (v1.12+), in three parts, each off unless configured:

- ``proportional`` (a predicate, Volcano's "Proportion Of Resource For GPU Node"): a pod that requests
  none of the ``resources`` (the primary resources, such as ``nvidia.com/gpu``) is refused on a node where
  it would leave less cpu or memory free than the node's idle primary resource times its proportion
  (``resourceProportion`` ``<resource>.cpu``: cores per unit, ``<resource>.memory``: see below). A pod that
  requests a primary resource is not judged (it is the work the cpu is kept for). A proportion not given
  is 1, as in Volcano.
- per-resource scoring (``resources``): for each resource the pod requests that the table names (exactly,
  or by a ``prefix/*`` pattern, the longest prefix winning), ``LeastAllocated`` scores the share of the
  node's allocatable left free once the pod is on it, ``MostAllocated`` the share in use; the weighted
  mean over those resources, times 100 (kube's MaxNodeScore) times ``resourceStrategyFitWeight`` (default
  10), is the node's score. A node without room for a requested resource scores 0, as in Volcano. Without
  ``resources`` the table is cpu and memory, LeastAllocated, weight 1 (Volcano's default).
- ``sra`` (scarce resource avoidance): a pod is steered away from nodes that have scarce resources it does
  not need: score ``(1 - Σ weight of the listed resources the node has / Σ weights) × 100 × sra.weight``,
  0 on a node lacking a resource the pod requests.

Units of the memory proportion: Volcano documents ``<resource>.memory`` in G(i)B per unit, and its code
multiplies the primary resource's milli-units by 10^6, which comes to 10^9 bytes per unit. pumice follows
the code, so a conf behaves the same moved either way: ``nvidia.com/gpu.memory: 8`` keeps 8 × 10^9 bytes
(8 GB, about 7.45 GiB) per idle GPU.

A pod may bring its own table: ``volcano.sh/resource-strategy-scoring-type: MostAllocated`` with
``volcano.sh/resource-strategy-weight: '{"cpu": 1, "nvidia.com/gpu": 2}'`` scores it by that type and
those weights (only the resources the weights name) instead of the conf's table; a missing or unreadable
weight annotation scores it 0 everywhere, as in Volcano. Such pods are scored per pod (a ``PodScorer``)
and placed one by one; everything else keeps the per-request cache and batches.

Deliberate differences: Volcano silently fixes bad arguments (a wrong ``type`` becomes LeastAllocated, a
weight of 0 becomes 1, a bad wildcard is dropped, a negative proportion becomes 1); pumice refuses them at
start-up with the argument named.

Both hooks are row-local (see :mod:`extender.framework.plugin`): a node's answer depends only on the
request, its row of free capacity and its allocatable, so the fit and score caches and batched placement
stay exact. The old ``predicates`` arguments (``predicate.ProportionalEnable``, ``predicate.resources``,
``predicate.resources.<resource>.cpu|memory``) build the same :class:`Proportional` predicate.

Enable with::

    - name: resource-strategy-fit
      arguments:
        resourceStrategyFitWeight: 10
        resources:
          nvidia.com/gpu: {type: MostAllocated, weight: 2}
          cpu: {type: LeastAllocated, weight: 1}
        sra:
          enable: true
          resources: nvidia.com/gpu
          weight: 10
          resourceWeight: {nvidia.com/gpu: 1}
        proportional:
          enable: true
          resources: nvidia.com/gpu
          resourceProportion:
            nvidia.com/gpu.cpu: 4
            nvidia.com/gpu.memory: 8
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from extender.core.errors import ConfigError
from extender.core.model import Pod
from extender.core.quantity import human
from extender.core.resources import Vector
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Mask, Plugin, Rows, Scores
from extender.framework.session import Session

NAME: Final = "resource-strategy-fit"
LEAST: Final = "LeastAllocated"
MOST: Final = "MostAllocated"
_MAX_NODE_SCORE: Final = 100.0  # kube-scheduler's MaxNodeScore, which Volcano scales by
_DEFAULT_WEIGHT: Final = 10
# Volcano's memory proportion: the primary's milli-units times 10^6 bytes, i.e. 10^9 bytes per unit.
_BYTES_PER_MEMORY_UNIT: Final = 10**9


@dataclass(frozen=True, slots=True)
class Strategy:
    type: str
    weight: int


@dataclass(frozen=True, slots=True)
class Ratio:
    """What one unit of an idle primary resource keeps free: milli-cpu and bytes of memory."""

    resource: str
    cpu: float  # cores per unit, as configured (for messages)
    memory: float  # memory units (10^9 bytes) per unit, as configured
    milli_cpu: int
    memory_bytes: int


def proportional_ratio(resource: str, cpu: float, memory: float) -> Ratio:
    """What one idle unit of ``resource`` keeps: ``cpu`` cores and ``memory`` × 10^9 bytes."""
    return Ratio(resource, cpu, memory, round(cpu * 1000), round(memory * _BYTES_PER_MEMORY_UNIT))


def _names(value: Any, where: str) -> list[str]:
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a comma-separated list of resource names, got {value!r}")
    return [n.strip() for n in value.split(",") if n.strip()]


def _mapping(value: Any, where: str, keys: Sequence[str] | None = None) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} must be a mapping, got {value!r}")
    if keys is not None:
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown} (known: {', '.join(keys)})")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number, got {value!r}")
    if not 0 <= value < float("inf"):
        raise ConfigError(f"{where} must not be negative, got {value!r}")
    return float(value)


def _count(value: Any, where: str, *, positive: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < (1 if positive else 0):
        raise ConfigError(
            f"{where} must be a {'positive' if positive else 'non-negative'} integer, got {value!r}"
        )
    return value


class Proportional:
    """The proportional predicate over the snapshot's resource columns (set up once per cycle)."""

    def __init__(self, ratios: Sequence[Ratio], plugin: str) -> None:
        self.ratios = tuple(ratios)
        self.plugin = plugin
        self._columns: tuple[tuple[int, Ratio], ...] = ()

    def open(self, ssn: Session) -> None:
        names = ssn.snapshot.index.names
        # A primary resource no node has keeps nothing: its column is absent from the snapshot.
        self._columns = tuple((names.index(r.resource), r) for r in self.ratios if r.resource in names)

    def fit(self, request: Vector, free: npt.NDArray[np.int64]) -> Mask | None:
        if not self._columns or any(request[c] > 0 for c, _ in self._columns):
            return None  # the pod uses a primary resource: it is what the rest is kept for
        left_cpu = free[:, 0] - request[0]
        left_mem = free[:, 1] - request[1]
        ok: Mask = np.ones(len(free), dtype=np.bool_)
        for c, r in self._columns:
            idle = np.maximum(free[:, c], 0)
            ok &= left_cpu >= idle * r.milli_cpu
            ok &= left_mem >= idle * r.memory_bytes
        return ok

    def reason(self, request: Vector, free: Vector, node: str) -> str | None:
        if any(request[c] > 0 for c, _ in self._columns):
            return None
        for c, r in self._columns:
            idle = max(int(free[c]), 0)
            for col, per, unit, what in (
                (0, r.milli_cpu, f"{r.cpu:g} cpu", "cpu"),
                (1, r.memory_bytes, f"{r.memory:g}×10^9 bytes memory", "memory"),
            ):
                left = int(free[col] - request[col])
                if left < idle * per:
                    return (
                        f"{r.resource} nodes keep {what} for their idle {r.resource} ({self.plugin} "
                        f"proportional): node {node} would keep {human(what, left)} {what} < "
                        f"{idle} idle {r.resource} × {unit}"
                    )
        return None


def parse_proportional(raw: Any, where: str) -> Proportional | None:
    """Volcano's ``proportional`` argument (enable, resources, resourceProportion), None when off."""
    cfg = _mapping(raw, where, ("enable", "resources", "resourceProportion"))
    enable = cfg.get("enable", False)
    if not isinstance(enable, bool):
        raise ConfigError(f"{where}.enable must be true or false, got {enable!r}")
    resources = _names(cfg.get("resources", ""), f"{where}.resources")
    table = _mapping(cfg.get("resourceProportion"), f"{where}.resourceProportion")
    known = {f"{r}.{k}" for r in resources for k in ("cpu", "memory")}
    for key in table:
        if key not in known:
            raise ConfigError(
                f"{where}.resourceProportion: {key!r} names no resource of {where}.resources "
                "(keys are <resource>.cpu and <resource>.memory)"
            )
    if not enable:
        return None
    if not resources:
        raise ConfigError(f"{where}: enable is true but resources names no primary resource")
    ratios = [
        proportional_ratio(
            r,
            _number(table.get(f"{r}.cpu", 1.0), f"{where}.resourceProportion.{r}.cpu"),
            _number(table.get(f"{r}.memory", 1.0), f"{where}.resourceProportion.{r}.memory"),
        )
        for r in resources
    ]
    return Proportional(ratios, NAME)


def _valid_pattern(name: str) -> bool:
    """An exact name, or one trailing ``*`` after a non-empty prefix (Volcano's wildcard rule)."""
    return "*" not in name or (name != "*" and name.endswith("*") and name.count("*") == 1)


def strategy_for(resource: str, table: Mapping[str, Strategy]) -> Strategy | None:
    """The exact entry, else the wildcard entry with the longest matching prefix (Volcano's lookup)."""
    exact = table.get(resource)
    if exact is not None:
        return exact
    best: tuple[int, Strategy] | None = None
    for key, s in table.items():
        if key.endswith("*") and resource.startswith(key[:-1]) and (best is None or len(key) > best[0]):
            best = (len(key), s)
    return None if best is None else best[1]


class ProportionalFit(Plugin):
    """The proportional node predicate of a plugin that may carry one (resource-strategy-fit, and
    predicates' older arguments for the same rule); the subclass sets ``proportional`` and opens it."""

    proportional: Proportional | None = None

    def takes_part(self, hook: str) -> bool:
        # Without the proportional predicate the plugin has no node predicate: it must not cost the
        # session its fit-mask fast path, nor keep refusals from standing (see extender.framework.cycle).
        if hook == "node_fit" and self.proportional is None:
            return False
        return super().takes_part(hook)

    def node_fit(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Mask | None:
        return None if self.proportional is None else self.proportional.fit(request, free)

    def node_fit_reason(self, ssn: Session, request: Vector, free: Vector, row: int) -> str | None:
        if self.proportional is None:
            return None
        return self.proportional.reason(request, free, ssn.snapshot.node_names[row])


# The sections, each checked below, key by key (the table is what the conf's key listing shows).
ARGUMENTS: Final = ArgumentTable(
    {
        "resourceStrategyFitWeight": (int, _DEFAULT_WEIGHT),
        "resources": (dict, {}),
        "sra": (dict, {}),
        "proportional": (dict, {}),
    }
)


class ResourceStrategyFitPlugin(ProportionalFit):
    name = NAME
    argument_table = ARGUMENTS
    row_local_scores = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        where = f"plugin {NAME}"
        args = _mapping(arguments, where, tuple(ARGUMENTS.keys))
        self.weight = _count(
            args.get("resourceStrategyFitWeight", _DEFAULT_WEIGHT), f"{where}: resourceStrategyFitWeight"
        )
        table: dict[str, Strategy] = {}
        for res, entry in _mapping(args.get("resources"), f"{where}: resources").items():
            at = f"{where}: resources.{res}"
            if not _valid_pattern(str(res)):
                raise ConfigError(
                    f"{at}: a pattern takes one trailing '*' after a prefix (such as 'nvidia.com/*')"
                )
            e = _mapping(entry, at, ("type", "weight"))
            kind = e.get("type", LEAST)
            if kind not in (LEAST, MOST):
                raise ConfigError(f"{at}.type must be {LEAST} or {MOST}, got {kind!r}")
            table[str(res)] = Strategy(kind, _count(e.get("weight", 1), f"{at}.weight", positive=True))
        self.strategies: Mapping[str, Strategy] = table or {
            "cpu": Strategy(LEAST, 1),
            "memory": Strategy(LEAST, 1),
        }
        sra = _mapping(args.get("sra"), f"{where}: sra", ("enable", "resources", "weight", "resourceWeight"))
        if not isinstance(sra.get("enable", False), bool):
            raise ConfigError(f"{where}: sra.enable must be true or false")
        sra_names = _names(sra.get("resources", ""), f"{where}: sra.resources")
        sra_weights = _mapping(sra.get("resourceWeight"), f"{where}: sra.resourceWeight")
        for key in sra_weights:
            if key not in sra_names:
                raise ConfigError(f"{where}: sra.resourceWeight.{key} names a resource not in sra.resources")
        self.sra_weight = _count(sra.get("weight", 0), f"{where}: sra.weight") if sra.get("enable") else 0
        self.sra: dict[str, int] = {
            n: _count(sra_weights.get(n, 1), f"{where}: sra.resourceWeight.{n}") for n in sra_names
        }
        self.proportional = parse_proportional(args.get("proportional"), f"{where}: proportional")

    def open(self, ssn: Session) -> None:
        names = ssn.snapshot.index.names
        # Per resource column: its strategy (the pods column never counts: every pod asks for one).
        self._columns = [
            (i, s)
            for i, n in enumerate(names)
            if n != "pods" and (s := strategy_for(n, self.strategies)) is not None
        ]
        alloc = ssn.snapshot.alloc
        # sra: each node's share of the listed scarce resources it has, fixed for the cycle.
        sra_sum = sum(self.sra.values())
        has = np.zeros(len(alloc), dtype=np.float64)
        for n, w in self.sra.items():
            if n in names:
                has += (alloc[:, names.index(n)] > 0) * float(w)
        self._sra_base = (1.0 - has / sra_sum) if sra_sum else np.zeros(len(alloc), dtype=np.float64)
        self._has_column = alloc > 0
        # Columns some node has none of (its score for them is 0 whatever the fraction says).
        self._zero_alloc = frozenset(np.flatnonzero(~self._has_column.all(axis=0)).tolist())
        if self.proportional is not None:
            self.proportional.open(ssn)

    def node_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None = None
    ) -> Scores | None:
        total: Scores | None = None
        if self.weight:
            total = self._strategy_score(ssn, request, free, rows)
        if self.sra_weight:
            s = self._sra_score(request, rows)
            total = s if total is None else total + s
        return total

    def _strategy_score(
        self, ssn: Session, request: Vector, free: npt.NDArray[np.int64], rows: Rows | None
    ) -> Scores | None:
        return self._score_columns(
            ssn, request, free, rows, [(i, s) for i, s in self._columns if request[i] > 0]
        )

    def _score_columns(
        self,
        ssn: Session,
        request: Vector,
        free: npt.NDArray[np.int64],
        rows: Rows | None,
        cols: Sequence[tuple[int, Strategy]],
    ) -> Scores | None:
        """Volcano's Score over ``cols`` (resource column, strategy) the pod requests; None if none."""
        if not cols:
            return None
        score: Scores | None = None
        short: npt.NDArray[np.bool_] | None = None
        for i, s in cols:
            # The share in use once the pod is on the node, (used + request) / allocatable: the session's
            # fraction, shared with nodeorder and binpack within a scoring pass (computed once).
            f = ssn.fraction(request, free, rows, i)
            w = float(s.weight)
            if s.type == MOST:
                part = f * w
            elif s.type == LEAST:
                part = (1.0 - f) * w
            else:  # a pod's unknown type (Volcano: scores 0, its weight counted)
                part = np.zeros(len(free), dtype=np.float64)
            if i in self._zero_alloc:
                # A resource the node has none of scores 0, its weight still counted (Volcano) ...
                has = self._has_column[:, i] if rows is None else self._has_column[rows, i]
                part *= has
            score = part if score is None else score + part
            if s.weight:
                # ... and one it has too little of makes the whole score 0 (a weight of 0 is not checked).
                over = free[:, i] < request[i]
                if i in self._zero_alloc:
                    over &= has
                short = over if short is None else short | over
        assert score is not None
        total = sum(s.weight for _, s in cols)
        if total:
            score /= float(total)
        score *= _MAX_NODE_SCORE * self.weight
        if short is not None:
            score[short] = 0.0
        return score

    def pod_score(self, ssn: Session, pod: Pod, candidates: Mask) -> Scores | None:
        """A pod with ``volcano.sh/resource-strategy-scoring-type`` is scored by its own table instead of
        the conf's (Volcano): what its table gives less what ``node_score`` already gave, over every node
        (kept out of batches: the framework tells such pods apart by ``pod.scoring``)."""
        scoring = pod.scoring
        if scoring is None or not self.weight:
            return None
        request = ssn.vector(pod.uid)
        free = ssn.free
        if scoring.problem:
            own = np.zeros(len(free), dtype=np.float64)
        else:
            names = ssn.snapshot.index.names
            weights = dict(scoring.weights)
            cols = [
                (i, Strategy(scoring.type, weights[n]))
                for i, n in enumerate(names)
                if n != "pods" and n in weights and request[i] > 0
            ]
            got = self._score_columns(ssn, request, free, None, cols)
            own = np.zeros(len(free), dtype=np.float64) if got is None else got
        conf = self._strategy_score(ssn, request, free, None)
        return own if conf is None else own - conf

    def _sra_score(self, request: Vector, rows: Rows | None) -> Scores:
        has = self._has_column if rows is None else self._has_column[rows]
        base = self._sra_base if rows is None else self._sra_base[rows]
        asked = [i for i in np.flatnonzero(request > 0).tolist() if i != 2]  # pods (column 2) aside
        lacks = ~has[:, asked].all(axis=1) if asked else np.zeros(len(base), dtype=np.bool_)
        out: Scores = np.where(lacks, 0.0, base * (_MAX_NODE_SCORE * self.sra_weight))
        return out
