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

:func:`decide` picks the cards for one pod given each card's use; ``policy`` orders the cards it tries
(``binpack``: the fullest card that fits, keeping idle cards whole for large asks; ``spread``: the card
with the fewest sharers; ``""``: Volcano's default order, lowest index first for gpushare and highest
first for vGPU) and the pod's score on that node (``binpack`` favours nodes whose chosen cards are
already in use, ``spread`` idle ones).

Invariants: node and pod readers never raise (a malformed annotation is a ``problem`` to show, the rest
of the object stays usable); :func:`decide` never puts a pod on a card beyond its memory, its sharer
count or 100 % of its cores, and never shares a card another pod holds whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

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
_UNSET_PERCENT: Final = 101  # Volcano's "no percentage asked"
_NVIDIA: Final = "NVIDIA"
_FULL_CORES: Final = 100


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
    percent: int = _UNSET_PERCENT
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


@dataclass(slots=True)
class CardUse:
    """The running use of one card in a cycle (mutable: the plugin's working state)."""

    memory: int = 0
    cores: int = 0
    sharers: int = 0
    whole: bool = False
    groups: dict[str, int] = field(default_factory=dict)

    def add(self, memory: int, cores: int, whole: bool, group: str, sign: int) -> None:
        self.memory += sign * memory
        self.cores += sign * cores
        self.sharers += sign
        if whole:
            self.whole = sign > 0
        if group:
            n = self.groups.get(group, 0) + sign
            if n > 0:
                self.groups[group] = n
            else:
                self.groups.pop(group, None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """Where a pod's GPU ask goes on one node: (card position, memory, cores) per card taken, or None
    with ``why``; ``score`` 0..100 by the policy."""

    taken: tuple[tuple[int, int, int], ...] | None
    why: str = ""
    score: float = 0.0


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


def gpu_request(annotations: Obj, spec: Obj) -> GpuRequest | None:
    """What the pod asks of cards, or None (no GPU resource of these families: the common case)."""
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
        percent = _UNSET_PERCENT if percent is None else percent
        if percent == _UNSET_PERCENT and not memory:
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


# --- deciding -------------------------------------------------------------------------------------


def _order(cards: Sequence[Card], use: Sequence[CardUse], policy: str, family: str) -> list[int]:
    positions = list(range(len(cards)))
    if policy == BINPACK:
        return sorted(positions, key=lambda i: (-use[i].memory, cards[i].index))
    if policy == SPREAD:
        return sorted(positions, key=lambda i: (use[i].sharers, cards[i].index))
    return positions[::-1] if family == VGPU else positions


def _card_score(card: Card, use: CardUse, policy: str) -> float:
    if policy == BINPACK:
        return 100.0 * min(use.memory, card.memory) / card.memory if card.memory else 0.0
    if policy == SPREAD:
        return 100.0 if use.sharers == 0 else 0.0
    return 0.0


def _type_allowed(request: GpuRequest, card: Card) -> bool:
    if _NVIDIA not in card.type:
        return False
    kind = card.type.upper()
    if request.use_types and not any(t.upper() in kind for t in request.use_types):
        return False
    if any(t.upper() in kind for t in request.nouse_types):
        return False
    if request.use_uuids and card.key not in request.use_uuids:
        return False
    return card.key not in request.nouse_uuids


def decide(
    gpus: NodeGpus | None, use: Sequence[CardUse], request: GpuRequest, policy: str, group: str
) -> Choice:
    """The cards ``request`` takes on a node with ``gpus`` whose cards are used as ``use`` (one per card
    of the request's family, in order); ``policy`` is the pod's own or the conf's; ``group`` its PodGroup
    (for ``group_spread``). Never raises."""
    cards = gpus.cards(request.family) if gpus is not None else ()
    if not cards:
        what = (
            "vGPU cards (annotation volcano.sh/node-vgpu-register)"
            if request.family == VGPU
            else "shared GPU cards"
        )
        return Choice(taken=None, why=f"no {what}")
    if request.kind == NUMBER:
        idle = [i for i in _order(cards, use, "", SHARE) if use[i].sharers == 0]
        if len(idle) < request.amount:
            return Choice(
                taken=None, why=f"{len(idle)} idle GPU cards of {len(cards)}, {request.amount} asked"
            )
        left = len(idle) - request.amount
        score = (
            100.0 * (1 - left / len(cards))
            if policy == BINPACK
            else (100.0 * left / len(cards) if policy == SPREAD else 0.0)
        )
        return Choice(taken=tuple((i, 0, 0) for i in idle[: request.amount]), score=score)
    if request.kind == MEMORY:
        for i in _order(cards, use, policy, SHARE):
            if not use[i].whole and cards[i].memory - use[i].memory >= request.amount:
                return Choice(taken=((i, request.amount, 0),), score=_card_score(cards[i], use[i], policy))
        most = max(
            (cards[i].memory - use[i].memory for i in range(len(cards)) if not use[i].whole), default=0
        )
        return Choice(taken=None, why=f"no GPU card has {request.amount} memory free (the most free: {most})")
    if request.mode and gpus is not None and request.mode != gpus.mode:
        return Choice(taken=None, why=f"vGPU mode {request.mode} asked, the node's is {gpus.mode}")
    # vGPU: container by container; a container's cards are distinct, later containers see earlier ones.
    added: list[tuple[int, int, int]] = []
    scores: list[float] = []
    why = ""
    for ask in request.containers:
        if ask.count > len(cards):
            why = f"{ask.count} vGPU cards asked, the node has {len(cards)}"
            break
        chosen: list[int] = []
        for i in _order(cards, use, policy, VGPU):
            card, u = cards[i], use[i]
            memory = card.memory * ask.percent // 100 if ask.percent != _UNSET_PERCENT else ask.memory
            if (
                u.sharers >= card.slots  # a vGPU card registered with 0 sharers takes nobody, as in Volcano
                or (request.group_spread and group and group in u.groups)
                or card.memory - u.memory < memory
                or u.cores + ask.cores > _FULL_CORES
                or (ask.cores == _FULL_CORES and u.sharers > 0)
                or (u.cores == _FULL_CORES and ask.cores == 0)
                or not _type_allowed(request, card)
            ):
                continue
            scores.append(_card_score(card, u, policy))
            u.add(memory, ask.cores, False, group, 1)
            added.append((i, memory, ask.cores))
            chosen.append(i)
            if len(chosen) == ask.count:
                break
        if len(chosen) < ask.count:
            why = f"{len(chosen)} of {ask.count} vGPU cards fit (memory, cores, sharers or type)"
            break
    for i, memory, cores in added:  # a trial: the caller takes the cards when it places the pod
        use[i].add(memory, cores, False, group, -1)
    if why:
        return Choice(taken=None, why=why)
    return Choice(taken=tuple(added), score=sum(scores) / len(scores) if scores else 0.0)


def take(
    use: Sequence[CardUse], taken: Sequence[tuple[int, int, int]], whole: bool, group: str, sign: int
) -> None:
    """Put a pod's cards (``taken`` from :func:`decide`) on (sign 1) or off (-1) ``use``."""
    for i, memory, cores in taken:
        use[i].add(memory, cores, whole, group, sign)


def hold_positions(where: Mapping[str, int], hold: GpuHold) -> tuple[tuple[int, int, int], ...]:
    """A held pod's cards as positions (``where``: card key -> position in the node's cards of the
    hold's family); cards the node no longer lists are skipped."""
    return tuple((where[k], m, c) for k, m, c in hold.cards if k in where)


def device_annotations(
    gpus: NodeGpus, request: GpuRequest, taken: Sequence[tuple[int, int, int]], node: str, now: float
) -> dict[str, str]:
    """The annotations the device plugin reads, for a pod given ``taken`` on ``node`` at ``now``."""
    cards = gpus.cards(request.family)
    if request.family == SHARE:
        return {
            GPU_INDEX: ",".join(str(cards[i].index) for i, _, _ in taken),
            PREDICATE_TIME: str(int(now * 1_000_000_000)),
        }
    parts: list[str] = []
    at = 0
    for ask in request.containers:
        mine = taken[at : at + ask.count]
        at += ask.count
        parts.append("".join(f"{cards[i].key},{_NVIDIA},{m},{c}:" for i, m, c in mine))
    ids = ";".join(parts)
    seconds = str(int(now))
    return {
        VGPU_NODE: node,
        VGPU_TIME: seconds,
        VGPU_IDS: ids,
        VGPU_TO_ALLOCATE: ids,
        BIND_PHASE: "allocating",
        BIND_TIME: seconds,
    }


class ShareMatrix:
    """Every node's gpushare cards as matrices (a row per node, a column per card position, padded), so a
    pod's fit and score over thousands of nodes is a few array operations rather than a :func:`decide`
    per node. :meth:`judge` gives exactly what :func:`decide` would on every row (the same card rule, the
    same score arithmetic); :meth:`update` copies one node's :class:`CardUse` after it changes."""

    def __init__(self, rows: int, gpus: Mapping[int, NodeGpus]) -> None:
        width = max((len(g.share) for g in gpus.values()), default=0)
        self.memory = np.zeros((rows, width), dtype=np.int64)
        self.valid = np.zeros((rows, width), dtype=np.bool_)
        for row, g in gpus.items():
            self.memory[row, : len(g.share)] = [c.memory for c in g.share]
            self.valid[row, : len(g.share)] = True
        self.cards = self.valid.sum(axis=1)
        self.used = np.zeros_like(self.memory)
        self.sharers = np.zeros_like(self.memory)
        self.whole = np.zeros_like(self.valid)

    def update(self, row: int, use: Sequence[CardUse]) -> None:
        n = len(use)
        self.used[row, :n] = [u.memory for u in use]
        self.sharers[row, :n] = [u.sharers for u in use]
        self.whole[row, :n] = [u.whole for u in use]

    def judge(
        self, request: GpuRequest, policy: str
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Per node, whether a gpushare ``request`` fits and its score (0 where it does not)."""
        rows = len(self.memory)
        score = np.zeros(rows, dtype=np.float64)
        if not self.memory.shape[1]:  # no node has gpushare cards
            return np.zeros(rows, dtype=np.bool_), score
        if request.kind == NUMBER:
            idle = (self.valid & (self.sharers == 0)).sum(axis=1)
            enough: npt.NDArray[np.bool_] = idle >= request.amount
            left = (idle - request.amount).astype(np.float64)
            cards = np.maximum(self.cards, 1).astype(np.float64)
            if policy == BINPACK:
                score = np.where(enough, 100.0 * (1 - left / cards), 0.0)
            elif policy == SPREAD:
                score = np.where(enough, 100.0 * left / cards, 0.0)
            return enough, score
        ok = self.valid & ~self.whole & (self.memory - self.used >= request.amount)
        fit: npt.NDArray[np.bool_] = np.asarray(ok.any(axis=1), dtype=np.bool_)
        if policy == BINPACK:
            pick = np.argmax(np.where(ok, self.used, -1), axis=1)
            at = np.arange(rows)
            memory = np.maximum(self.memory[at, pick], 1)
            score = np.where(fit, 100.0 * np.minimum(self.used[at, pick], memory) / memory, 0.0)
        elif policy == SPREAD:
            big = np.iinfo(np.int64).max
            pick = np.argmin(np.where(ok, self.sharers, big), axis=1)
            score = np.where(fit & (self.sharers[np.arange(rows), pick] == 0), 100.0, 0.0)
        return fit, score
