"""Choosing GPU cards for a pod and keeping count of their use: the deciding half of Volcano's GPU sharing.

:mod:`extender.core.gpus` reads what nodes offer and pods ask (and hold); this module decides.
:func:`decide` picks the cards for one pod on one node given each card's use (:class:`CardUse`, the
plugin's working state); ``policy`` orders the cards it tries (``binpack``: the fullest card that fits,
keeping idle cards whole for large asks; ``spread``: the card with the fewest sharers; ``""``: Volcano's
default order, lowest index first for gpushare and highest first for vGPU) and scores the pod on that node
(``binpack`` favours nodes whose chosen cards are already in use, ``spread`` idle ones). :func:`take`
counts a decision in, :func:`hold_positions` maps a bound pod's hold back to card positions, and
:func:`device_annotations` writes what the device plugins read (``volcano.sh/gpu-index`` and
``volcano.sh/predicate-time`` for gpushare; ``volcano.sh/vgpu-ids-new``, ``volcano.sh/devices-to-allocate``,
the node, the time and ``volcano.sh/bind-phase: allocating`` for vGPU), as Volcano's plugins write them.
:class:`extender.core.gpu_share.ShareCards` holds many nodes' gpushare cards at once, for the plugin's
fit and scores over every node (deciding as :func:`decide` does).

Invariants: :func:`decide` never puts a pod on a card beyond its memory, its sharer count or 100 % of its
cores, and never shares a card another pod holds whole; it reads the use and never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from extender.core.gpus import (
    BIND_PHASE,
    BIND_TIME,
    BINPACK,
    GPU_INDEX,
    MEMORY,
    NUMBER,
    PREDICATE_TIME,
    SHARE,
    SPREAD,
    UNSET_PERCENT,
    VGPU,
    VGPU_IDS,
    VGPU_NODE,
    VGPU_TIME,
    VGPU_TO_ALLOCATE,
    Card,
    GpuHold,
    GpuRequest,
    NodeGpus,
)

_NVIDIA: Final = "NVIDIA"  # the card type vGPU annotations name
_FULL_CORES: Final = 100  # a card's compute, in percent: asking all of it is asking the card alone


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
            memory = card.memory * ask.percent // 100 if ask.percent != UNSET_PERCENT else ask.memory
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
    return tuple([(where[k], m, c) for k, m, c in hold.cards if k in where])


def share_hold(gpus: NodeGpus, request: GpuRequest, taken: Sequence[tuple[int, int, int]]) -> GpuHold | None:
    """What a gpushare pod given ``taken`` holds: ``pod_hold`` of its :func:`device_annotations`, without
    writing and reading them back (None, as there, when a card's index is not a plain number)."""
    cards = gpus.share
    keys = [str(cards[i].index) for i, _, _ in taken]
    if not keys or not all(map(str.isdigit, keys)):
        return None
    memory = request.amount if request.kind == MEMORY else 0
    return GpuHold(family=SHARE, cards=tuple([(k, memory, 0) for k in keys]), whole=request.kind == NUMBER)


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
