"""NUMA topology of nodes (Volcano's ``nodeinfo.volcano.sh/v1alpha1`` Numatopology) and the kubelet's
topology-manager rules for placing a pod's exclusive cpus on them.

A Numatopology object (cluster-scoped, named after its node, written by Volcano's resource exporter on
each node) says, under ``spec``:

- ``policies``: the kubelet's ``CPUManagerPolicy`` and ``TopologyManagerPolicy``;
- ``resReserved``: resources the kubelet reserves (``cpu: "2"``: that many cpus are kept out, the
  lowest-numbered ones here, rounded up as the kubelet does);
- ``numares``: per resource, ``allocatable`` (a cpuset such as ``"0-3,8-11"``: the cpus not exclusively
  held, the kubelet's shared pool) and ``capacity``;
- ``cpuDetail``: per cpu id, its ``numa`` node, ``socket`` and ``core``.

:func:`parse_numatopology` reduces it to cells: per NUMA node, how many cpus it has and how many of them
are free for exclusive use. Counts, not cpusets: the scheduler decides how many cpus of which NUMA nodes
a pod takes; the kubelet picks the cpus.

:func:`best_hint` and :func:`decide` mirror the kubelet's topology manager as Volcano's numa-aware plugin
runs it per container: every non-empty set of NUMA nodes whose free cpus cover the request is a hint; a
hint is preferred when it has as few NUMA nodes as the smallest set whose *total* cpus could cover it;
the best hint is the narrowest preferred one (else the narrowest). ``best-effort`` admits whatever it
gets, ``restricted`` only a preferred hint, ``single-numa-node`` only a preferred hint of one NUMA node.
The cpus are then taken from the best hint's NUMA nodes first (lowest id first), the rest from the others.

Invariants: parsing raises :class:`InvalidObject` naming the field; deciding never raises and never takes
more cpus from a cell than it has free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import ceil
from typing import Any, Final

from extender.core.errors import InvalidObject, InvalidQuantity
from extender.core.fields import object_field as _map
from extender.core.model import NumaRequest
from extender.core.quantity import to_units

Obj = Mapping[str, Any]

POLICY_ANNOTATION: Final = "volcano.sh/numa-topology-policy"
DECISION_ANNOTATION: Final = "volcano.sh/topology-decision"
NONE: Final = "none"
BEST_EFFORT: Final = "best-effort"
RESTRICTED: Final = "restricted"
SINGLE_NUMA_NODE: Final = "single-numa-node"
POLICIES: Final = (NONE, BEST_EFFORT, RESTRICTED, SINGLE_NUMA_NODE)
CPU_MANAGER_POLICY: Final = "CPUManagerPolicy"
TOPOLOGY_MANAGER_POLICY: Final = "TopologyManagerPolicy"
STATIC: Final = "static"


@dataclass(frozen=True, slots=True, kw_only=True)
class NumaCell:
    """One NUMA node: its id, its cpus, and how many of them are free for exclusive use."""

    id: int
    capacity: int
    free: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NumaTopology:
    """A node's Numatopology, reduced to what placement needs (``name`` is the node's name)."""

    name: str
    namespace: str = ""  # cluster-scoped (the cache keys objects by namespace/name)
    cpu_manager_policy: str = ""
    topology_manager_policy: str = ""
    cells: tuple[NumaCell, ...] = ()


def parse_cpuset(text: str, where: str) -> set[int]:
    """A Linux cpuset list (``"0-3,8,10-11"``; empty: none)."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi if sep else lo)
        except ValueError:
            raise InvalidObject(f"{where}: {part!r} is not a cpu id or range (such as 0-3)") from None
        if first < 0 or last < first or last - first > 65536:
            raise InvalidObject(f"{where}: {part!r} is not a cpu range")
        out.update(range(first, last + 1))
    return out


def _int(obj: Obj, key: str, where: str) -> int:
    v = obj.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InvalidObject(f"{where}.{key}: expected a non-negative integer, got {v!r}")
    return v


def parse_numatopology(obj: Obj) -> NumaTopology:
    """A Numatopology object, reduced to cells (see the module docstring)."""
    meta = _map(obj, "metadata", "Numatopology")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidObject("Numatopology.metadata.name: required")
    spec = _map(obj, "spec", "Numatopology")
    policies = _map(spec, "policies", "spec")
    numa_of: dict[int, int] = {}  # cpu id -> NUMA node id
    for key, info in _map(spec, "cpuDetail", "spec").items():
        where = f"spec.cpuDetail[{key}]"
        try:
            cpu_id = int(key)
        except ValueError:
            raise InvalidObject(f"{where}: the key must be a cpu id") from None
        if not isinstance(info, Mapping):
            raise InvalidObject(f"{where}: expected an object")
        numa_of[cpu_id] = _int(info, "numa", where)
    cpu_res = _map(_map(spec, "numares", "spec"), "cpu", "spec.numares")
    allocatable = cpu_res.get("allocatable", "")
    if not isinstance(allocatable, str):
        raise InvalidObject("spec.numares.cpu.allocatable: expected a cpuset string such as 0-3")
    free_cpus = parse_cpuset(allocatable, "spec.numares.cpu.allocatable")
    reserved_raw = _map(spec, "resReserved", "spec").get("cpu")
    reserved = 0
    if reserved_raw is not None:
        try:
            reserved = ceil(to_units("cpu", str(reserved_raw)) / 1000)
        except InvalidQuantity as e:
            raise InvalidObject(f"spec.resReserved.cpu: {e}") from None
    # The kubelet keeps its reserved cpus out of exclusive use (whole cpus, the lowest here).
    for cpu in sorted(numa_of)[: max(reserved, 0)]:
        free_cpus.discard(cpu)
    capacity: dict[int, int] = {}
    free: dict[int, int] = {}
    for cpu, cell in numa_of.items():
        capacity[cell] = capacity.get(cell, 0) + 1
        free[cell] = free.get(cell, 0) + (cpu in free_cpus)
    return NumaTopology(
        name=name,
        cpu_manager_policy=str(policies.get(CPU_MANAGER_POLICY) or ""),
        topology_manager_policy=str(policies.get(TOPOLOGY_MANAGER_POLICY) or ""),
        cells=tuple(NumaCell(id=c, capacity=capacity[c], free=free[c]) for c in sorted(capacity)),
    )


def _whole_cpus(container: Obj) -> tuple[int, bool]:
    """(whole cpus requested, or 0 for a fraction; whether cpu and memory limits equal the requests)."""
    res = container.get("resources")
    res = res if isinstance(res, Mapping) else {}
    limits = res.get("limits")
    limits = limits if isinstance(limits, Mapping) else {}
    requests = res.get("requests")
    requests = requests if isinstance(requests, Mapping) else {}
    guaranteed = True
    for name in ("cpu", "memory"):
        if name not in limits:
            guaranteed = False
            continue
        try:
            limit = to_units(name, limits[name])
            request = to_units(name, requests.get(name, limits[name]))
        except InvalidQuantity:
            return 0, False
        guaranteed &= limit == request
    if not guaranteed:
        return 0, False
    milli = to_units("cpu", limits["cpu"])
    return (milli // 1000 if milli % 1000 == 0 else 0), True


def numa_request(annotations: Obj, spec: Obj) -> NumaRequest | None:
    """What numa-aware judges of a pod: its policy (other than none) and each container's whole cpus,
    when the pod is Guaranteed (every container, init containers too, has cpu and memory limits equal to
    its requests); None otherwise (Volcano judges only Guaranteed pods)."""
    policy = str(annotations.get(POLICY_ANNOTATION) or "")
    if policy in ("", NONE):
        return None
    cpus: list[int] = []
    for key in ("initContainers", "containers"):
        items = spec.get(key)
        for c in items if isinstance(items, list) else ():
            if not isinstance(c, Mapping):
                return None
            n, guaranteed = _whole_cpus(c)
            if not guaranteed:
                return None
            if key == "containers":  # (Volcano aligns the app containers' cpus only)
                cpus.append(n)
    return NumaRequest(policy=policy, cpus=tuple(cpus)) if cpus else None


# --- the topology manager -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hint:
    """A set of cells (indices into the node's cells) and whether it is a preferred placement."""

    cells: tuple[int, ...]
    preferred: bool


def best_hint(capacity: Sequence[int], free: Sequence[int], cpus: int, policy: str) -> Hint:
    """The topology manager's best hint for ``cpus`` exclusive cpus over cells with ``capacity`` and
    ``free`` cpus; with no hint, every cell, not preferred (the kubelet's default)."""
    k = len(capacity)
    subsets = [tuple(i for i in range(k) if m >> i & 1) for m in range(1, 1 << k)]
    smallest = min((len(s) for s in subsets if sum(capacity[i] for i in s) >= cpus), default=k)
    best = Hint(tuple(range(k)), False)
    for s in subsets:
        if sum(free[i] for i in s) < cpus:
            continue
        if policy == SINGLE_NUMA_NODE and len(s) != 1:
            continue
        preferred = len(s) == smallest
        if preferred != best.preferred:
            if preferred:
                best = Hint(s, True)
            continue
        if (len(s), s) < (len(best.cells), best.cells):
            best = Hint(s, preferred)
    return best


def admits(policy: str, hint: Hint) -> bool:
    """Whether the kubelet's topology manager admits a pod whose best hint is ``hint``."""
    if policy == BEST_EFFORT:
        return True
    if policy == SINGLE_NUMA_NODE:
        return hint.preferred and len(hint.cells) == 1
    return hint.preferred  # restricted


@dataclass(frozen=True, slots=True)
class Decision:
    """Where a pod's exclusive cpus go on one node: cpus taken per cell (in the node's cell order), or why
    the node refuses the pod (``taken`` None)."""

    taken: tuple[int, ...] | None
    why: str = ""

    @property
    def spans(self) -> int:
        """How many NUMA nodes the pod's exclusive cpus span."""
        return sum(1 for t in self.taken or () if t)


def decide(topo: NumaTopology | None, free: Sequence[int], request: NumaRequest) -> Decision:
    """Whether a node with ``topo`` (and its cells' ``free`` cpus now) takes a pod asking ``request``
    (Volcano's numa-aware predicate), and which cells its exclusive cpus come from."""
    if request.policy not in POLICIES:
        return Decision(
            None, f"unknown numa-topology-policy {request.policy!r} (known: {', '.join(POLICIES)})"
        )
    if topo is None:
        return Decision(None, "the node has no Numatopology")
    if topo.cpu_manager_policy != STATIC:
        return Decision(
            None, f"the node's cpu manager policy is {topo.cpu_manager_policy or 'none'}, not static"
        )
    if topo.topology_manager_policy != request.policy:
        return Decision(
            None,
            f"the node's topology manager policy is {topo.topology_manager_policy or 'none'}, "
            f"the pod asks {request.policy}",
        )
    capacity = [c.capacity for c in topo.cells]
    if not sum(capacity):
        return Decision(None, "the node's Numatopology lists no cpus")
    left = list(free)
    taken = [0] * len(left)
    for cpus in request.cpus:
        if cpus == 0:
            continue  # no exclusive cpus: the kubelet has nothing to align
        hint = best_hint(capacity, left, cpus, request.policy)
        if not admits(request.policy, hint):
            cells = ", ".join(f"{c.id}: {f}" for c, f in zip(topo.cells, left, strict=True))
            what = (
                "one NUMA node" if request.policy == SINGLE_NUMA_NODE else "the fewest NUMA nodes that could"
            )
            return Decision(
                None, f"{request.policy}: {cpus} cpus do not fit on {what} (free cpus per NUMA node {cells})"
            )
        need = cpus
        for i in (*hint.cells, *(i for i in range(len(left)) if i not in hint.cells)):
            take = min(need, left[i])
            left[i] -= take
            taken[i] += take
            need -= take
            if not need:
                break
    return Decision(tuple(taken))


def decision_annotation(topo: NumaTopology, taken: Sequence[int]) -> str:
    """The ``volcano.sh/topology-decision`` value for a pod given ``taken`` cpus per cell: Volcano's
    ``{"numa": {"<NUMA id>": {"cpu": "<cpus>"}}}``."""
    numa = {str(c.id): {"cpu": str(t)} for c, t in zip(topo.cells, taken, strict=True) if t}
    return json.dumps({"numa": numa}, sort_keys=True, separators=(",", ":"))
