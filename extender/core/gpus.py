"""GPU cards of nodes and what pods ask of them: Volcano's GPU sharing (``volcano.sh/gpu-memory``,
``volcano.sh/gpu-number``) and vGPU family (``volcano.sh/vgpu-*``), with the annotations its device
plugins read, unchanged.

Two families, as Volcano's device plugins register them:

- **gpushare** (the Volcano device plugin): a node's status ``capacity`` has ``volcano.sh/gpu-number``
  cards and ``volcano.sh/gpu-memory`` memory in all, split evenly; ``volcano.sh/gpu-unhealthy-ids`` on
  the node lists cards left out. A pod asks ``volcano.sh/gpu-memory`` (a share of one card: its memory
  comes from a single card) or ``volcano.sh/gpu-number`` (whole cards, which nobody else may use). The
  scheduler writes ``volcano.sh/gpu-index`` (the cards, ``"0"`` or ``"2,3"``) and
  ``volcano.sh/predicate-time`` on the pod before it binds; the device plugin reads them at start.
- **vGPU** (HAMi's device plugin for Volcano): the node annotation ``volcano.sh/node-vgpu-register``
  lists cards as ``uuid,count,memory,type,healthy,mode:`` entries (``count``: how many pods may share
  the card). A container asks ``volcano.sh/vgpu-number`` cards (1 when only memory is given), each
  with ``volcano.sh/vgpu-memory`` (or ``volcano.sh/vgpu-memory-percentage`` of the card; neither: the
  whole card's memory) and ``volcano.sh/vgpu-cores`` percent of its compute (100: the card alone).
  The scheduler writes ``volcano.sh/vgpu-ids-new`` (and ``volcano.sh/devices-to-allocate``), the node,
  the time and ``volcano.sh/bind-phase: allocating``; the device plugin sets the phase once it starts
  the pod.

What a pod holds comes back from those annotations (:func:`pod_hold`): that is how cards stay
accounted once pods are bound, across restarts, with one writer (the scheduler's plan) before then.

Choosing cards for a pod and counting their use is :mod:`extender.core.gpu_cards`'s part.

Invariants: node and pod readers never raise (a malformed annotation is a ``problem`` to show, the rest
of the object stays usable).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from extender.core.errors import InvalidQuantity
from extender.core.quantity import to_units

Obj = Mapping[str, Any]

GPU_MEMORY: Final = "volcano.sh/gpu-memory"
GPU_NUMBER: Final = "volcano.sh/gpu-number"
GPU_INDEX: Final = "volcano.sh/gpu-index"
PREDICATE_TIME: Final = "volcano.sh/predicate-time"
UNHEALTHY_IDS: Final = "volcano.sh/gpu-unhealthy-ids"

VGPU_NUMBER: Final = "volcano.sh/vgpu-number"
VGPU_MEMORY: Final = "volcano.sh/vgpu-memory"
VGPU_MEMORY_PERCENTAGE: Final = "volcano.sh/vgpu-memory-percentage"
VGPU_CORES: Final = "volcano.sh/vgpu-cores"
VGPU_REGISTER: Final = "volcano.sh/node-vgpu-register"
VGPU_IDS: Final = "volcano.sh/vgpu-ids-new"
VGPU_TO_ALLOCATE: Final = "volcano.sh/devices-to-allocate"
VGPU_NODE: Final = "volcano.sh/vgpu-node"
VGPU_TIME: Final = "volcano.sh/vgpu-time"
BIND_TIME: Final = "volcano.sh/bind-time"
BIND_PHASE: Final = "volcano.sh/bind-phase"
VGPU_MODE: Final = "volcano.sh/vgpu-mode"
VGPU_GROUP_POLICY: Final = "volcano.sh/vgpu-podgroup-policy"
USE_TYPES: Final = "nvidia.com/use-gputype"
NOUSE_TYPES: Final = "nvidia.com/nouse-gputype"
USE_UUIDS: Final = "volcano.sh/vgpu-use-gpuuuid"
NOUSE_UUIDS: Final = "volcano.sh/vgpu-nouse-gpuuuid"
# A pod's own card policy: HAMi's annotation, so its users keep it.
POLICY_ANNOTATION: Final = "hami.io/gpu-scheduler-policy"

SHARE: Final = "gpushare"
VGPU: Final = "vgpu"
MEMORY: Final = "memory"  # a gpushare pod asking memory of one card
NUMBER: Final = "number"  # a gpushare pod asking whole cards
BINPACK: Final = "binpack"
SPREAD: Final = "spread"
POLICIES: Final = ("", BINPACK, SPREAD)
UNSET_PERCENT: Final = 101  # Volcano's "no percentage asked" (read here, honoured by gpu_cards)


@dataclass(frozen=True, slots=True, kw_only=True)
class Card:
    """One card: its key (gpushare: its index as text; vGPU: its uuid), memory, and how many pods may
    share it (0: any number, gpushare)."""

    key: str
    index: int
    memory: int
    slots: int = 0
    type: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGpus:
    """A node's healthy cards of each family, its vGPU sharing mode, and what could not be read."""

    share: tuple[Card, ...] = ()
    vgpu: tuple[Card, ...] = ()
    mode: str = ""
    problem: str = ""

    def cards(self, family: str) -> tuple[Card, ...]:
        return self.share if family == SHARE else self.vgpu


@dataclass(frozen=True, slots=True, kw_only=True)
class ContainerAsk:
    """One container's vGPU ask: ``count`` cards, each with ``memory`` (or ``percent`` of the card when
    not 101) and ``cores`` percent of its compute."""

    count: int
    memory: int = 0
    percent: int = UNSET_PERCENT
    cores: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuRequest:
    """What a pod asks of cards. ``kind``: ``memory`` (gpushare, ``amount`` memory of one card),
    ``number`` (gpushare, ``amount`` whole cards) or ``vgpu`` (``containers``). The rest narrows or orders
    the cards: ``policy`` (the pod's own), the vGPU ``mode`` it needs, card types and uuids it must or
    must not use, and whether its group's pods must each take other cards (``group_spread``)."""

    kind: str
    amount: int = 0
    containers: tuple[ContainerAsk, ...] = ()
    policy: str = ""
    mode: str = ""
    use_types: tuple[str, ...] = ()
    nouse_types: tuple[str, ...] = ()
    use_uuids: tuple[str, ...] = ()
    nouse_uuids: tuple[str, ...] = ()
    group_spread: bool = False
    problem: str = ""

    @property
    def family(self) -> str:
        return VGPU if self.kind == VGPU else SHARE


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuHold:
    """The cards a pod holds by its annotations: (card key, memory, cores) each, and whether they are
    whole (gpushare ``number``: nobody may share them)."""

    family: str
    cards: tuple[tuple[str, int, int], ...]
    whole: bool = False


# --- readers ----------------------------------------------------------------------------------------


def _units(name: str, value: object) -> int | None:
    try:
        return to_units(name, value)
    except InvalidQuantity:
        return None


def _names(text: object) -> tuple[str, ...]:
    return tuple(s.strip() for s in str(text or "").split(",") if s.strip())


def node_gpus(annotations: Obj, capacity: Obj) -> NodeGpus | None:
    """A node's cards from its status ``capacity`` (gpushare) and register annotation (vGPU); None for a
    node without either (the common case)."""
    problems: list[str] = []
    share: tuple[Card, ...] = ()
    if GPU_NUMBER in capacity and GPU_MEMORY in capacity:
        number, memory = _units(GPU_NUMBER, capacity[GPU_NUMBER]), _units(GPU_MEMORY, capacity[GPU_MEMORY])
        unhealthy = _names(annotations.get(UNHEALTHY_IDS))
        if number is None or memory is None or number <= 0:
            problems.append(
                f"status.capacity {GPU_NUMBER}/{GPU_MEMORY}: not a positive card count and memory"
            )
        else:
            share = tuple(
                Card(key=str(i), index=i, memory=memory // number)
                for i in range(number)
                if str(i) not in unhealthy
            )
    vgpu: list[Card] = []
    mode = ""
    register = annotations.get(VGPU_REGISTER)
    if isinstance(register, str) and register:
        for i, entry in enumerate(register.split(":")):
            if not entry.strip():
                continue
            parts = entry.split(",")
            try:
                if len(parts) < 6:
                    raise ValueError("fewer than 6 fields")
                card = Card(key=parts[0], index=i, slots=int(parts[1]), memory=int(parts[2]), type=parts[3])
            except ValueError as e:
                problems.append(f"annotation {VGPU_REGISTER}: card {i} {entry!r}: {e}")
                continue
            # Volcano knows two sharing modes: mig, and hami-core for anything else (mps included).
            mode = "mig" if parts[5].strip() == "mig" else "hami-core"
            if parts[4].strip().lower() == "true":
                vgpu.append(card)
    if not share and not vgpu and not problems:
        return None
    return NodeGpus(share=share, vgpu=tuple(vgpu), mode=mode or "hami-core", problem="; ".join(problems))


def _limit(container: Obj, name: str, requests_too: bool = False) -> int | None:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        return None
    for part in ("limits", "requests") if requests_too else ("limits",):
        values = resources.get(part)
        if isinstance(values, Mapping) and name in values:
            return _units(name, values[name])
    return None


def _containers(spec: Obj, key: str) -> list[Obj]:
    items = spec.get(key)
    return [c for c in items if isinstance(c, Mapping)] if isinstance(items, list) else []


def _pod_total(spec: Obj, name: str) -> int:
    """Summed over containers, at least the largest init container (Volcano's count of a pod's GPUs)."""
    total = sum(_limit(c, name) or 0 for c in _containers(spec, "containers"))
    return max([total, *(_limit(c, name) or 0 for c in _containers(spec, "initContainers"))])


def names_a_family(spec: Obj) -> bool:
    """Whether any container (or init container) names a resource of these families (all ``volcano.sh/``)
    in its limits or requests: without one, :func:`gpu_request` has nothing to read."""
    for key in ("containers", "initContainers"):
        for c in _containers(spec, key):
            resources = c.get("resources")
            if not isinstance(resources, Mapping):
                continue
            for part in ("limits", "requests"):
                values = resources.get(part)
                if isinstance(values, Mapping) and any(str(k).startswith("volcano.sh/") for k in values):
                    return True
    return False


def gpu_request(annotations: Obj, spec: Obj) -> GpuRequest | None:
    """What the pod asks of cards, or None (no GPU resource of these families: the common case)."""
    if not names_a_family(spec):
        return None
    policy = str(annotations.get(POLICY_ANNOTATION) or "")
    problem = (
        "" if policy in POLICIES else f"annotation {POLICY_ANNOTATION}: {policy!r} is not binpack or spread"
    )
    own = policy if not problem else ""
    asks: list[ContainerAsk] = []
    for c in _containers(spec, "containers"):
        count = _limit(c, VGPU_NUMBER)
        memory = _limit(c, VGPU_MEMORY, requests_too=True)
        if (count is None and memory is None) or count == 0:
            continue  # 0 cards: the container takes none (its memory would be nobody's)
        percent = _limit(c, VGPU_MEMORY_PERCENTAGE, requests_too=True)
        percent = UNSET_PERCENT if percent is None else percent
        if percent == UNSET_PERCENT and not memory:
            percent = 100  # neither memory nor a share of it: the whole card's memory
        asks.append(
            ContainerAsk(
                count=1 if count is None else count,
                memory=memory or 0,
                percent=percent,
                cores=_limit(c, VGPU_CORES, requests_too=True) or 0,
            )
        )
    if asks:
        return GpuRequest(
            kind=VGPU,
            containers=tuple(asks),
            policy=own,
            mode=str(annotations.get(VGPU_MODE) or ""),
            use_types=_names(annotations.get(USE_TYPES)),
            nouse_types=_names(annotations.get(NOUSE_TYPES)),
            use_uuids=_names(annotations.get(USE_UUIDS)),
            nouse_uuids=_names(annotations.get(NOUSE_UUIDS)),
            group_spread=annotations.get(VGPU_GROUP_POLICY) == SPREAD,
            problem=problem,
        )
    memory, number = _pod_total(spec, GPU_MEMORY), _pod_total(spec, GPU_NUMBER)
    if memory > 0:
        return GpuRequest(kind=MEMORY, amount=memory, policy=own, problem=problem)
    if number > 0:
        return GpuRequest(kind=NUMBER, amount=number, policy=own, problem=problem)
    return None


def pod_hold(annotations: Obj, request: GpuRequest | None) -> GpuHold | None:
    """The cards the pod's annotations give it (None: none, or unreadable: such a pod holds no card)."""
    if request is None:
        return None
    if request.kind == VGPU:
        text = annotations.get(VGPU_IDS)
        if not isinstance(text, str) or not text:
            return None
        cards: list[tuple[str, int, int]] = []
        for container in text.split(";"):
            for device in container.split(":"):
                parts = device.split(",")
                if len(parts) < 4:
                    continue
                try:
                    memory, cores = int(parts[2]), int(parts[3])
                except ValueError:
                    return None
                if memory < 0 or cores < 0:  # an annotation is anyone's to write: never a credit
                    return None
                cards.append((parts[0], memory, cores))
        return GpuHold(family=VGPU, cards=tuple(cards)) if cards else None
    keys = _names(annotations.get(GPU_INDEX))
    if not keys or not all(k.isdigit() for k in keys):
        return None
    memory = request.amount if request.kind == MEMORY else 0
    return GpuHold(family=SHARE, cards=tuple((k, memory, 0) for k in keys), whole=request.kind == NUMBER)
