"""deviceshare: GPU cards of nodes, what pods ask of them, how cards are chosen, and the plugin in cycles.

The expected outcomes follow Volcano's gpushare and vGPU (HAMi) device code: memory shares never exceed a
card, cards asked whole are nobody else's, vGPU cards keep to their sharer count and 100 % of their cores,
and the annotations written are the ones Volcano's device plugins read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import gpu_cards as C
from extender.core import gpu_share as S
from extender.core import gpus as G
from extender.core.errors import ConfigError
from extender.core.gpu_cards import CardUse
from extender.core.gpus import Card, ContainerAsk, GpuHold, GpuRequest, NodeGpus
from extender.core.model import PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import Snapshot, build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.result import CycleResult
from extender.framework.session import Session
from extender.plugins.deviceshare import DeviceSharePlugin
from extender.plugins.registry import NOT_YET, PLUGINS, load_conf
from tests.core.builders import NOW, Raw, conf_with, node, pod, podgroup, queue

# --- builders -----------------------------------------------------------------------------------------


def share_node(
    name: str, cards: int = 2, per_card: int = 1000, unhealthy: str | None = None, cpu: str = "32"
) -> Raw:
    """A node of the Volcano GPU device plugin: ``cards`` cards of ``per_card`` memory each."""
    raw = node(
        name, cpu=cpu, memory="64Gi", extra={G.GPU_NUMBER: str(cards), G.GPU_MEMORY: str(cards * per_card)}
    )
    if unhealthy is not None:
        raw["metadata"]["annotations"] = {G.UNHEALTHY_IDS: unhealthy}
    return raw


def register(*cards: tuple[str, int, int, str, bool], mode: str = "hami-core") -> str:
    """The ``volcano.sh/node-vgpu-register`` text for (uuid, sharers, memory, type, healthy) cards."""
    return "".join(f"{u},{n},{m},{t},{str(h).lower()},{mode}:" for u, n, m, t, h in cards)


def vgpu_node(
    name: str, *cards: tuple[str, int, int, str, bool], mode: str = "hami-core", text: str = ""
) -> Raw:
    """A node of HAMi's vGPU device plugin, with the allocatable it reports."""
    raw = node(
        name,
        cpu="32",
        memory="64Gi",
        extra={
            G.VGPU_NUMBER: str(sum(c[1] for c in cards) or 100),
            G.VGPU_MEMORY: str(sum(c[2] for c in cards) or 100000),
            G.VGPU_CORES: str(100 * len(cards) or 1000),
        },
    )
    raw["metadata"]["annotations"] = {G.VGPU_REGISTER: text or register(*cards, mode=mode)}
    return raw


def _resources(values: Mapping[str, int]) -> dict[str, dict[str, str]]:
    # Extended resources: the limits are what Volcano reads; kube copies them to the requests.
    text = {k: str(v) for k, v in values.items()}
    return {"requests": {"cpu": "1", "memory": "1Gi", **text}, "limits": dict(text)}


def gpu_pod(
    name: str,
    containers: Sequence[Mapping[str, int]] = (),
    memory: int = 0,
    number: int = 0,
    init: Sequence[Mapping[str, int]] = (),
    group: str | None = None,
    node_name: str = "",
    phase: str = "Pending",
    annotations: Mapping[str, str] | None = None,
) -> Raw:
    """A pod asking GPU resources: ``memory``/``number`` (gpushare) in one container, or ``containers``
    (resource name -> amount each), and ``init`` containers."""
    raw = pod(name, group=group, node=node_name, phase=phase)
    if not containers:
        one = {G.GPU_MEMORY: memory} if memory else {}
        containers = [{**one, **({G.GPU_NUMBER: number} if number else {})}]
    raw["spec"]["containers"] = [
        {"name": f"c{i}", "image": "busybox", "resources": _resources(c)} for i, c in enumerate(containers)
    ]
    if init:
        raw["spec"]["initContainers"] = [
            {"name": f"i{i}", "image": "busybox", "resources": _resources(c)} for i, c in enumerate(init)
        ]
    raw["metadata"]["annotations"].update(annotations or {})
    return raw


def vgpu(number: int = 0, memory: int = 0, percent: int = 0, cores: int = 0) -> dict[str, int]:
    """One container's vGPU resources (0: not given)."""
    out = {
        G.VGPU_NUMBER: number,
        G.VGPU_MEMORY: memory,
        G.VGPU_MEMORY_PERCENTAGE: percent,
        G.VGPU_CORES: cores,
    }
    return {k: v for k, v in out.items() if v}


def _request(raw: Raw) -> GpuRequest | None:
    return G.gpu_request(raw["metadata"]["annotations"], raw["spec"])


# --- node parsing -------------------------------------------------------------------------------------


def test_gpushare_capacity_is_split_per_card() -> None:
    gpus = parse_node(share_node("n1", cards=4, per_card=4000)).gpus
    assert gpus is not None
    assert [(c.key, c.index, c.memory) for c in gpus.share] == [(str(i), i, 4000) for i in range(4)]
    assert gpus.vgpu == ()
    assert gpus.problem == ""
    # An uneven total: each card gets the floor (Volcano's integer division).
    odd = node("n1", extra={G.GPU_NUMBER: "3", G.GPU_MEMORY: "1000"})
    odd_gpus = parse_node(odd).gpus
    assert odd_gpus is not None
    assert [c.memory for c in odd_gpus.share] == [333, 333, 333]


def test_unhealthy_cards_are_left_out() -> None:
    gpus = parse_node(share_node("n1", cards=4, unhealthy="1,3")).gpus
    assert gpus is not None
    assert [(c.key, c.index) for c in gpus.share] == [("0", 0), ("2", 2)]


def test_a_node_without_gpus_has_none() -> None:
    assert parse_node(node("n1")).gpus is None
    assert parse_node(node("n1", gpus=4)).gpus is None  # nvidia.com/gpu is not a shared family


def test_vgpu_register_lists_healthy_cards() -> None:
    text = register(
        ("GPU-a", 10, 8000, "NVIDIA-Tesla T4", True),
        ("GPU-b", 4, 16000, "NVIDIA-A100", False),
        ("GPU-c", 5, 40000, "NVIDIA-A100-SXM4-40GB", True),
    )
    gpus = G.node_gpus({G.VGPU_REGISTER: text}, {})
    assert gpus is not None
    assert gpus.vgpu == (
        Card(key="GPU-a", index=0, memory=8000, slots=10, type="NVIDIA-Tesla T4"),
        Card(key="GPU-c", index=2, memory=40000, slots=5, type="NVIDIA-A100-SXM4-40GB"),
    )
    assert gpus.mode == "hami-core"
    assert gpus.problem == ""


@pytest.mark.parametrize(
    ("mode", "want"), [("hami-core", "hami-core"), ("mig", "mig"), ("mps", "hami-core"), ("", "hami-core")]
)
def test_vgpu_mode_is_volcanos(mode: str, want: str) -> None:
    """Volcano knows two sharing modes: mig, and hami-core for anything else."""
    gpus = G.node_gpus({G.VGPU_REGISTER: register(("GPU-a", 2, 100, "NVIDIA", True), mode=mode)}, {})
    assert gpus is not None
    assert gpus.mode == want


def test_a_malformed_register_entry_is_a_problem_and_the_rest_stays_usable() -> None:
    text = "GPU-a,10,8000,NVIDIA-T4,true,hami-core:GPU-b,x,8000,NVIDIA-T4,true,hami-core:GPU-c,2,100:"
    n = parse_node(vgpu_node("n1", text=text))
    assert n.gpus is not None
    assert [c.key for c in n.gpus.vgpu] == ["GPU-a"]
    assert "volcano.sh/node-vgpu-register: card 1 " in n.gpus.problem
    assert "card 2 'GPU-c,2,100': fewer than 6 fields" in n.gpus.problem
    # ... and schedules onto its one good card.
    got = run_cycle(
        _snapshot([vgpu_node("n1", text=text)], [gpu_pod("p", [vgpu(memory=1000)])]),
        load_conf(VGPU_CONF),
        NOW,
    )
    assert got.placements == {"p": "n1"}
    assert got.annotations[PodUID("p")][G.VGPU_IDS] == "GPU-a,NVIDIA,1000,0:"
    # A pod it cannot take is told why, with what could not be read.
    big = run_cycle(
        _snapshot([vgpu_node("n1", text=text)], [gpu_pod("p", [vgpu(memory=9000)])]),
        load_conf(VGPU_CONF),
        NOW,
    )
    assert "deviceshare: node n1: 0 of 1 vGPU cards fit" in _why(big)["default/podgroup-p"]
    assert "(annotation volcano.sh/node-vgpu-register: card 1 " in _why(big)["default/podgroup-p"]


@pytest.mark.parametrize(
    ("annotations", "capacity"),
    [
        ({}, {G.GPU_NUMBER: "abc", G.GPU_MEMORY: "1000"}),
        ({}, {G.GPU_NUMBER: "0", G.GPU_MEMORY: "1000"}),
        ({}, {G.GPU_NUMBER: "-2", G.GPU_MEMORY: "1000"}),
        ({G.VGPU_REGISTER: "::,,,,,:"}, {}),
        ({G.VGPU_REGISTER: "GPU-a,1,lots,NVIDIA,true,hami-core:"}, {}),
    ],
    ids=["count-text", "count-zero", "count-negative", "register-empty-fields", "register-memory-text"],
)
def test_bad_nodes_are_a_problem_not_an_error(annotations: dict[str, str], capacity: dict[str, str]) -> None:
    gpus = G.node_gpus(annotations, capacity)
    assert gpus is not None
    assert gpus.problem
    assert gpus.share == gpus.vgpu == ()


@given(register=st.text(alphabet=st.sampled_from("ab,:-01true5"), max_size=60), unhealthy=st.text(max_size=8))
@settings(max_examples=200, deadline=None)
def test_node_readers_never_raise(register: str, unhealthy: str) -> None:
    gpus = G.node_gpus(
        {G.VGPU_REGISTER: register, G.UNHEALTHY_IDS: unhealthy}, {G.GPU_NUMBER: "2", G.GPU_MEMORY: "10"}
    )
    assert gpus is not None
    left_out = {s.strip() for s in unhealthy.split(",")}
    assert [c.key for c in gpus.share] == [k for k in ("0", "1") if k not in left_out]
    entries = [e.split(",") for e in register.split(":") if e.strip()]
    healthy = [e[0] for e in entries if len(e) >= 6 and e[4].strip().lower() == "true"]
    assert {c.key for c in gpus.vgpu} <= set(healthy)


# --- what pods ask ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "kind", "amount"),
    [
        (gpu_pod("p", [{G.GPU_MEMORY: 300}, {G.GPU_MEMORY: 400}]), G.MEMORY, 700),
        (
            gpu_pod("p", [{G.GPU_MEMORY: 300}], init=[{G.GPU_MEMORY: 1000}, {G.GPU_MEMORY: 200}]),
            G.MEMORY,
            1000,
        ),
        (gpu_pod("p", [{G.GPU_MEMORY: 300}, {G.GPU_MEMORY: 400}], init=[{G.GPU_MEMORY: 500}]), G.MEMORY, 700),
        (gpu_pod("p", number=2), G.NUMBER, 2),
        (gpu_pod("p", [{G.GPU_NUMBER: 1}, {G.GPU_NUMBER: 1}], init=[{G.GPU_NUMBER: 3}]), G.NUMBER, 3),
    ],
    ids=["sum", "largest-init", "containers-over-init", "number", "number-init"],
)
def test_gpushare_asks(raw: Raw, kind: str, amount: int) -> None:
    want = GpuRequest(kind=kind, amount=amount)
    assert _request(raw) == want
    assert parse_pod(raw).gpu == want


def test_gpushare_reads_limits_only() -> None:
    """Volcano reads a container's limits; a request alone (which kube would refuse anyway) asks nothing."""
    raw = gpu_pod("p", memory=500)
    del raw["spec"]["containers"][0]["resources"]["limits"]
    assert _request(raw) is None
    assert parse_pod(pod("p")).gpu is None


@pytest.mark.parametrize(
    ("containers", "asks"),
    [
        ([vgpu(memory=3000)], (ContainerAsk(count=1, memory=3000),)),
        ([vgpu(number=2)], (ContainerAsk(count=2, percent=100),)),
        ([vgpu(number=1, percent=50)], (ContainerAsk(count=1, percent=50),)),
        ([vgpu(number=1, memory=3000, percent=25)], (ContainerAsk(count=1, memory=3000, percent=25),)),
        ([vgpu(number=1, memory=1000, cores=30)], (ContainerAsk(count=1, memory=1000, cores=30),)),
        (
            [vgpu(number=1, memory=1000), {"cpu": 1}, vgpu(number=2, cores=100)],
            (ContainerAsk(count=1, memory=1000), ContainerAsk(count=2, percent=100, cores=100)),
        ),
    ],
    ids=["memory-only", "number-only", "percentage", "percentage-and-memory", "cores", "two-containers"],
)
def test_vgpu_asks(containers: list[dict[str, int]], asks: tuple[ContainerAsk, ...]) -> None:
    got = _request(gpu_pod("p", containers))
    assert got is not None
    assert got.kind == G.VGPU
    assert got.containers == asks


def test_vgpu_cores_or_percentage_alone_ask_nothing() -> None:
    """Volcano's vGPU pods are those whose limits name the card count or the memory."""
    assert _request(gpu_pod("p", [vgpu(percent=50)])) is None
    assert _request(gpu_pod("p", [vgpu(cores=50)])) is None


def test_vgpu_zero_cards_ask_nothing() -> None:
    """A container asking 0 cards takes no card (its memory is nobody's)."""
    assert _request(gpu_pod("p", [{G.VGPU_NUMBER: 0}])) is None
    got = _request(gpu_pod("p", [{G.VGPU_NUMBER: 0, G.VGPU_MEMORY: 500}, vgpu(number=1, memory=700)]))
    assert got is not None
    assert got.containers == (ContainerAsk(count=1, memory=700),)


def test_vgpu_pod_annotations() -> None:
    raw = gpu_pod(
        "p",
        [vgpu(memory=100)],
        annotations={
            G.VGPU_MODE: "mig",
            G.USE_TYPES: "A100, H100",
            G.NOUSE_TYPES: "T4",
            G.USE_UUIDS: "GPU-a,GPU-b",
            G.NOUSE_UUIDS: "GPU-c",
            G.VGPU_GROUP_POLICY: "spread",
            G.POLICY_ANNOTATION: "binpack",
        },
    )
    got = _request(raw)
    assert got is not None
    assert (got.mode, got.use_types, got.nouse_types) == ("mig", ("A100", "H100"), ("T4",))
    assert (got.use_uuids, got.nouse_uuids, got.group_spread, got.policy) == (
        ("GPU-a", "GPU-b"),
        ("GPU-c",),
        True,
        "binpack",
    )


@pytest.mark.parametrize("policy", ["binpack", "spread", ""])
def test_the_pods_policy(policy: str) -> None:
    got = _request(gpu_pod("p", memory=100, annotations={G.POLICY_ANNOTATION: policy}))
    assert got == GpuRequest(kind=G.MEMORY, amount=100, policy=policy)


def test_a_bad_pod_policy_is_a_problem() -> None:
    for raw in (
        gpu_pod("p", memory=100, annotations={G.POLICY_ANNOTATION: "fullest"}),
        gpu_pod("p", [vgpu(memory=100)], annotations={G.POLICY_ANNOTATION: "fullest"}),
    ):
        got = _request(raw)
        assert got is not None
        assert got.policy == ""
        assert got.problem == "annotation hami.io/gpu-scheduler-policy: 'fullest' is not binpack or spread"


@pytest.mark.parametrize(
    ("annotations", "raw", "want"),
    [
        (
            {G.GPU_INDEX: "0,2"},
            gpu_pod("p", memory=300),
            GpuHold(family=G.SHARE, cards=(("0", 300, 0), ("2", 300, 0))),
        ),
        (
            {G.GPU_INDEX: "1"},
            gpu_pod("p", number=1),
            GpuHold(family=G.SHARE, cards=(("1", 0, 0),), whole=True),
        ),
        ({G.GPU_INDEX: "a"}, gpu_pod("p", memory=300), None),
        ({G.GPU_INDEX: ""}, gpu_pod("p", memory=300), None),
        ({}, gpu_pod("p", memory=300), None),
        ({G.GPU_INDEX: "0"}, pod("p"), None),
        (
            {G.VGPU_IDS: "GPU-a,NVIDIA,1000,30:GPU-b,NVIDIA,1000,30:;GPU-c,NVIDIA,500,0:"},
            gpu_pod("p", [vgpu(number=2, memory=1000, cores=30), vgpu(memory=500)]),
            GpuHold(family=G.VGPU, cards=(("GPU-a", 1000, 30), ("GPU-b", 1000, 30), ("GPU-c", 500, 0))),
        ),
        ({G.VGPU_IDS: "GPU-a,NVIDIA,lots,0:"}, gpu_pod("p", [vgpu(memory=500)]), None),
        ({G.VGPU_IDS: ";"}, gpu_pod("p", [vgpu(memory=500)]), None),
        # A negative use would give a card more room than it has.
        ({G.VGPU_IDS: "GPU-a,NVIDIA,-9000,0:"}, gpu_pod("p", [vgpu(memory=500)]), None),
        ({G.VGPU_IDS: "GPU-a,NVIDIA,500,-50:"}, gpu_pod("p", [vgpu(memory=500)]), None),
    ],
    ids=[
        "share",
        "whole",
        "bad-index",
        "empty-index",
        "none",
        "no-ask",
        "vgpu",
        "vgpu-bad-memory",
        "vgpu-empty",
        "vgpu-negative-memory",
        "vgpu-negative-cores",
    ],
)
def test_pod_hold(annotations: dict[str, str], raw: Raw, want: GpuHold | None) -> None:
    raw["metadata"]["annotations"].update(annotations)
    assert G.pod_hold(raw["metadata"]["annotations"], _request(raw)) == want
    assert parse_pod(raw).gpu_hold == want


# --- deciding -----------------------------------------------------------------------------------------


def _share(*memories: int) -> NodeGpus:
    return NodeGpus(share=tuple(Card(key=str(i), index=i, memory=m) for i, m in enumerate(memories)))


def _used(*spec: tuple[int, int] | int | str) -> list[CardUse]:
    """Card use: an int is memory of one sharer, (memory, sharers) a pair, "whole" a card held whole."""
    out = []
    for s in spec:
        if s == "whole":
            out.append(CardUse(sharers=1, whole=True))
        elif isinstance(s, tuple):
            out.append(CardUse(memory=s[0], sharers=s[1]))
        else:
            assert isinstance(s, int)
            out.append(CardUse(memory=s, sharers=1 if s else 0))
    return out


@pytest.mark.parametrize(
    ("policy", "used", "amount", "card", "why"),
    [
        ("", (0, 0, 0), 500, 0, ""),
        ("", (800, 0, 0), 500, 1, ""),
        ("", (500, 0, 0), 500, 0, ""),
        ("binpack", (200, 600, 0), 300, 1, ""),
        ("binpack", (200, 800, 0), 300, 0, ""),
        ("binpack", (0, 0, 0), 300, 0, ""),
        ("spread", ((200, 2), (600, 1), 0), 300, 2, ""),
        ("spread", ((200, 2), (600, 1), (100, 3)), 300, 1, ""),
        ("", ("whole", 0, 0), 100, 1, ""),
        ("binpack", ("whole", (900, 1), 0), 100, 1, ""),
        ("", (0, 0, 0), 1001, None, "no GPU card has 1001 memory free (the most free: 1000)"),
        ("", (700, 600, 800), 500, None, "no GPU card has 500 memory free (the most free: 400)"),
        ("", ("whole", "whole", "whole"), 1, None, "no GPU card has 1 memory free (the most free: 0)"),
    ],
    ids=[
        "default-lowest",
        "default-next-with-room",
        "exactly-full",
        "binpack-fullest",
        "binpack-fullest-that-fits",
        "binpack-idle",
        "spread-idle",
        "spread-fewest-sharers",
        "whole-not-shared",
        "binpack-skips-whole",
        "too-big",
        "no-card-has-room",
        "all-whole",
    ],
)
def test_decide_memory(policy: str, used: tuple[Any, ...], amount: int, card: int | None, why: str) -> None:
    use = _used(*used)
    before = [replace(u) for u in use]
    got = C.decide(_share(1000, 1000, 1000), use, GpuRequest(kind=G.MEMORY, amount=amount), policy, "")
    assert got.taken == (None if card is None else ((card, amount, 0),))
    assert got.why == why
    assert use == before  # deciding is a trial


@pytest.mark.parametrize(
    ("used", "amount", "taken", "why"),
    [
        ((0, 0, 0), 2, (0, 1), ""),
        ((0, 100, 0), 2, (0, 2), ""),
        (("whole", 0, 0), 2, (1, 2), ""),
        ((0, 100, 0), 3, None, "2 idle GPU cards of 3, 3 asked"),
        ((0, 0, 0), 4, None, "3 idle GPU cards of 3, 4 asked"),
    ],
)
def test_decide_number(used: tuple[Any, ...], amount: int, taken: tuple[int, ...] | None, why: str) -> None:
    got = C.decide(_share(1000, 1000, 1000), _used(*used), GpuRequest(kind=G.NUMBER, amount=amount), "", "")
    assert got.taken == (None if taken is None else tuple((i, 0, 0) for i in taken))
    assert got.why == why


def test_scores_by_policy() -> None:
    """binpack scores the chosen card's fullness, spread an idle card; number: cards left idle."""
    cards = _share(1000, 1000)
    ask = GpuRequest(kind=G.MEMORY, amount=100)
    assert C.decide(cards, _used(400, 0), ask, "binpack", "").score == 40.0
    assert C.decide(cards, _used(400, 0), ask, "spread", "").score == 100.0
    assert C.decide(cards, _used(400, (200, 1)), ask, "spread", "").score == 0.0
    assert C.decide(cards, _used(400, 0), ask, "", "").score == 0.0
    number = GpuRequest(kind=G.NUMBER, amount=1)
    assert C.decide(cards, _used(0, 0), number, "binpack", "").score == 50.0
    assert C.decide(cards, _used(100, 0), number, "binpack", "").score == 100.0
    assert C.decide(cards, _used(0, 0), number, "spread", "").score == 50.0
    assert C.decide(cards, _used(100, 0), number, "spread", "").score == 0.0


def test_no_cards_of_the_family() -> None:
    ask = GpuRequest(kind=G.VGPU, containers=(ContainerAsk(count=1, memory=1),))
    assert C.decide(None, [], ask, "", "").why == "no vGPU cards (annotation volcano.sh/node-vgpu-register)"
    assert (
        C.decide(_share(1000), _used(0), ask, "", "").why
        == "no vGPU cards (annotation volcano.sh/node-vgpu-register)"
    )
    share = GpuRequest(kind=G.MEMORY, amount=1)
    assert C.decide(
        NodeGpus(vgpu=(Card(key="a", index=0, memory=9, slots=1, type="NVIDIA"),)), [CardUse()], share, "", ""
    ).why == ("no shared GPU cards")


def _vcards(*cards: tuple[str, int, int, str]) -> NodeGpus:
    return NodeGpus(
        vgpu=tuple(Card(key=u, index=i, slots=n, memory=m, type=t) for i, (u, n, m, t) in enumerate(cards))
    )


V3 = _vcards(
    ("GPU-a", 4, 8000, "NVIDIA-T4"), ("GPU-b", 4, 8000, "NVIDIA-A100"), ("GPU-c", 2, 16000, "NVIDIA-A100")
)


def _vuse(*spec: tuple[int, int, int]) -> list[CardUse]:
    """(memory, cores, sharers) per card."""
    return [CardUse(memory=m, cores=c, sharers=s) for m, c, s in spec]


IDLE = ((0, 0, 0), (0, 0, 0), (0, 0, 0))


def _ask(*containers: ContainerAsk, **kw: Any) -> GpuRequest:
    return GpuRequest(kind=G.VGPU, containers=containers, **kw)


@pytest.mark.parametrize(
    ("used", "request_", "policy", "taken", "why"),
    [
        # Default: the highest card first (Volcano's vGPU order).
        (IDLE, _ask(ContainerAsk(count=1, memory=1000)), "", ((2, 1000, 0),), ""),
        (IDLE, _ask(ContainerAsk(count=2, memory=1000)), "", ((2, 1000, 0), (1, 1000, 0)), ""),
        # Percentage of each card's memory; neither memory nor a percentage: the whole card.
        (IDLE, _ask(ContainerAsk(count=2, percent=50)), "", ((2, 8000, 0), (1, 4000, 0)), ""),
        (IDLE, _ask(ContainerAsk(count=1, percent=100)), "", ((2, 16000, 0),), ""),
        # binpack: the card with most memory used that fits; spread: fewest sharers.
        (
            ((3000, 0, 1), (6000, 0, 1), (0, 0, 0)),
            _ask(ContainerAsk(count=1, memory=2000)),
            "binpack",
            ((1, 2000, 0),),
            "",
        ),
        (
            ((3000, 0, 1), (7000, 0, 1), (0, 0, 0)),
            _ask(ContainerAsk(count=1, memory=2000)),
            "binpack",
            ((0, 2000, 0),),
            "",
        ),
        (
            ((100, 0, 1), (100, 0, 2), (100, 0, 1)),
            _ask(ContainerAsk(count=1, memory=100)),
            "spread",
            ((0, 100, 0),),
            "",
        ),
        # Sharer slots: GPU-c takes 2 pods.
        (
            ((0, 0, 0), (0, 0, 0), (100, 0, 2)),
            _ask(ContainerAsk(count=1, memory=100)),
            "",
            ((1, 100, 0),),
            "",
        ),
        # Cores: 100 asks a card alone; a card at 100 % takes no more, not even cores 0; never over 100.
        (
            ((0, 0, 0), (0, 0, 0), (100, 0, 1)),
            _ask(ContainerAsk(count=1, memory=100, cores=100)),
            "",
            ((1, 100, 100),),
            "",
        ),
        (
            ((0, 0, 0), (0, 0, 0), (100, 100, 1)),
            _ask(ContainerAsk(count=1, memory=100)),
            "",
            ((1, 100, 0),),
            "",
        ),
        (
            ((0, 0, 0), (0, 0, 0), (100, 60, 1)),
            _ask(ContainerAsk(count=1, memory=100, cores=50)),
            "",
            ((1, 100, 50),),
            "",
        ),
        (
            ((0, 0, 0), (0, 0, 0), (100, 60, 1)),
            _ask(ContainerAsk(count=1, memory=100, cores=40)),
            "",
            ((2, 100, 40),),
            "",
        ),
        # Memory.
        (
            ((0, 0, 0), (0, 0, 0), (12001, 0, 1)),
            _ask(ContainerAsk(count=1, memory=4000)),
            "",
            ((1, 4000, 0),),
            "",
        ),
        (IDLE, _ask(ContainerAsk(count=1, memory=16001)), "", None, "0 of 1 vGPU cards fit"),
        # Types (case-insensitive substrings) and uuids.
        (IDLE, _ask(ContainerAsk(count=1, memory=100), use_types=("t4",)), "", ((0, 100, 0),), ""),
        (IDLE, _ask(ContainerAsk(count=1, memory=100), nouse_types=("A100",)), "", ((0, 100, 0),), ""),
        (IDLE, _ask(ContainerAsk(count=2, memory=100), use_types=("T4",)), "", None, "1 of 2 vGPU cards fit"),
        (IDLE, _ask(ContainerAsk(count=1, memory=100), use_uuids=("GPU-b",)), "", ((1, 100, 0),), ""),
        (
            IDLE,
            _ask(ContainerAsk(count=1, memory=100), nouse_uuids=("GPU-c", "GPU-b")),
            "",
            ((0, 100, 0),),
            "",
        ),
        # More cards than the node has.
        (IDLE, _ask(ContainerAsk(count=4, memory=100)), "", None, "4 vGPU cards asked, the node has 3"),
        # Two containers: each container's cards distinct, the second sees the first's use.
        (
            IDLE,
            _ask(ContainerAsk(count=1, memory=100, cores=100), ContainerAsk(count=1, memory=100, cores=100)),
            "",
            ((2, 100, 100), (1, 100, 100)),
            "",
        ),
        (
            IDLE,
            _ask(ContainerAsk(count=1, memory=10000), ContainerAsk(count=1, memory=7000)),
            "",
            ((2, 10000, 0), (1, 7000, 0)),
            "",
        ),
    ],
    ids=[
        "default-highest",
        "default-two",
        "percentage",
        "whole-memory",
        "binpack-fullest",
        "binpack-fullest-that-fits",
        "spread-fewest-sharers",
        "slots-full",
        "cores-100-alone",
        "cores-full-refuses-0",
        "cores-over-100",
        "cores-up-to-100",
        "memory-full",
        "memory-too-big",
        "use-type",
        "nouse-type",
        "use-type-too-few",
        "use-uuid",
        "nouse-uuid",
        "more-than-cards",
        "two-containers-exclusive",
        "two-containers-memory",
    ],
)
def test_decide_vgpu(
    used: tuple[tuple[int, int, int], ...],
    request_: GpuRequest,
    policy: str,
    taken: tuple[tuple[int, int, int], ...] | None,
    why: str,
) -> None:
    use = _vuse(*used)
    before = [replace(u, groups=dict(u.groups)) for u in use]
    got = C.decide(V3, use, request_, policy, "")
    assert got.taken == taken
    assert why in got.why
    assert (got.why == "") is (taken is not None)
    assert use == before


def test_vgpu_type_must_be_nvidia() -> None:
    cards = _vcards(("MLU-a", 4, 8000, "MLU370"), ("GPU-b", 4, 8000, "NVIDIA-A100"))
    got = C.decide(cards, _vuse((0, 0, 0), (0, 0, 0)), _ask(ContainerAsk(count=2, memory=1)), "", "")
    assert got.taken is None
    assert C.decide(
        cards, _vuse((0, 0, 0), (0, 0, 0)), _ask(ContainerAsk(count=1, memory=1)), "", ""
    ).taken == ((1, 1, 0),)


def test_vgpu_zero_slots_take_nobody() -> None:
    """A card registered with 0 sharers takes no pod (Volcano: Number <= UsedNum)."""
    cards = _vcards(("GPU-a", 0, 8000, "NVIDIA"))
    assert C.decide(cards, [CardUse()], _ask(ContainerAsk(count=1, memory=1)), "", "").taken is None


def test_vgpu_mode_must_match() -> None:
    gpus = replace(V3, mode="hami-core")
    got = C.decide(gpus, _vuse(*IDLE), _ask(ContainerAsk(count=1, memory=1), mode="mig"), "", "")
    assert got.taken is None
    assert got.why == "vGPU mode mig asked, the node's is hami-core"
    assert C.decide(gpus, _vuse(*IDLE), _ask(ContainerAsk(count=1, memory=1), mode="hami-core"), "", "").taken


def test_vgpu_group_spread() -> None:
    """With volcano.sh/vgpu-podgroup-policy: spread, a pod takes no card a pod of its group has."""
    use = _vuse(*IDLE)
    use[2].groups["ns/g"] = 1
    spread = _ask(ContainerAsk(count=1, memory=1), group_spread=True)
    assert C.decide(V3, use, spread, "", "ns/g").taken == ((1, 1, 0),)
    assert C.decide(V3, use, spread, "", "ns/h").taken == ((2, 1, 0),)
    assert C.decide(V3, use, replace(spread, group_spread=False), "", "ns/g").taken == ((2, 1, 0),)


def test_take_and_hold_positions_round_trip() -> None:
    """take puts a pod on and off; a hold read back from the annotations lands on the same cards."""
    gpus = NodeGpus(vgpu=V3.vgpu)
    use = _vuse(*IDLE)
    ask = _ask(ContainerAsk(count=2, memory=1000, cores=20), ContainerAsk(count=1, memory=500))
    choice = C.decide(gpus, use, ask, "", "ns/g")
    assert choice.taken is not None
    C.take(use, choice.taken, False, "ns/g", 1)
    assert [(u.memory, u.cores, u.sharers, u.groups) for u in use] == [
        (0, 0, 0, {}),
        (1000, 20, 1, {"ns/g": 1}),
        (1500, 20, 2, {"ns/g": 2}),
    ]
    notes = C.device_annotations(gpus, ask, choice.taken, "n1", NOW)
    assert notes[G.VGPU_IDS] == "GPU-c,NVIDIA,1000,20:GPU-b,NVIDIA,1000,20:;GPU-c,NVIDIA,500,0:"
    hold = G.pod_hold(notes, ask)
    assert hold is not None
    assert C.hold_positions({c.key: i for i, c in enumerate(gpus.vgpu)}, hold) == choice.taken
    C.take(use, choice.taken, False, "ns/g", -1)
    assert use == _vuse(*IDLE)


def test_hold_positions_skip_cards_gone() -> None:
    hold = GpuHold(family=G.SHARE, cards=(("0", 100, 0), ("3", 100, 0)))
    assert C.hold_positions({"0": 0, "1": 1}, hold) == ((0, 100, 0),)


# --- the invariant, by hypothesis ---------------------------------------------------------------------

_container = st.builds(
    ContainerAsk,
    count=st.integers(1, 3),
    memory=st.integers(0, 9000),
    percent=st.sampled_from([101, 101, 10, 50, 100]),
    cores=st.sampled_from([0, 0, 10, 30, 50, 100]),
)
_vgpu_ask = st.builds(
    GpuRequest,
    kind=st.just(G.VGPU),
    containers=st.lists(_container, min_size=1, max_size=2).map(tuple),
    group_spread=st.booleans(),
)
_share_ask = st.one_of(
    st.builds(GpuRequest, kind=st.just(G.MEMORY), amount=st.integers(1, 9000)),
    st.builds(GpuRequest, kind=st.just(G.NUMBER), amount=st.integers(1, 3)),
)


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[NodeGpus, list[tuple[GpuRequest, str, str, int]]]:
    """Random cards of one family and asks (request, policy, group, which earlier pod leaves first or -1)."""
    if draw(st.booleans()):
        memories = draw(st.lists(st.integers(1, 8000), min_size=1, max_size=4))
        gpus = NodeGpus(share=tuple(Card(key=str(i), index=i, memory=m) for i, m in enumerate(memories)))
        asks = _share_ask
    else:
        specs = draw(st.lists(st.tuples(st.integers(0, 4), st.integers(1, 16000)), min_size=1, max_size=4))
        gpus = NodeGpus(
            vgpu=tuple(
                Card(key=f"GPU-{i}", index=i, slots=n, memory=m, type="NVIDIA-A100")
                for i, (n, m) in enumerate(specs)
            )
        )
        asks = _vgpu_ask
    steps = draw(
        st.lists(
            st.tuples(
                asks, st.sampled_from(G.POLICIES), st.sampled_from(["", "ns/g", "ns/h"]), st.integers(-3, 30)
            ),
            min_size=1,
            max_size=25,
        )
    )
    return gpus, steps


@given(_scenario())
@settings(max_examples=300, deadline=None)
def test_decide_and_take_never_overfill_a_card(
    scenario: tuple[NodeGpus, list[tuple[GpuRequest, str, str, int]]],
) -> None:
    gpus, steps = scenario
    family = G.SHARE if gpus.share else G.VGPU
    cards = gpus.cards(family)
    use = [CardUse() for _ in cards]
    placed: list[tuple[tuple[tuple[int, int, int], ...], bool, str]] = []
    for request, policy, group, leaves in steps:
        if 0 <= leaves < len(placed):  # an earlier pod leaves: its cards come back
            taken, whole, g = placed.pop(leaves)
            C.take(use, taken, whole, g, -1)
        choice = C.decide(gpus, use, request, policy, group)
        if choice.taken is None:
            assert choice.why
            continue
        assert 0.0 <= choice.score <= 100.0
        whole = request.kind == G.NUMBER
        C.take(use, choice.taken, whole, group, 1)
        placed.append((choice.taken, whole, group))
        # Recount every card from the pods on it: the running use must agree and stay within the card.
        for i, card in enumerate(cards):
            on = [(m, c, w) for taken, w, _ in placed for j, m, c in taken if j == i]
            assert (use[i].memory, use[i].cores, use[i].sharers) == (
                sum(m for m, _, _ in on),
                sum(c for _, c, _ in on),
                len(on),
            )
            assert use[i].memory <= card.memory
            assert use[i].cores <= 100
            if family == G.VGPU:
                assert use[i].sharers <= card.slots
                if any(c == 100 for _, c, _ in on):
                    assert len(on) == 1  # cores 100: the card alone
            if any(w for _, _, w in on):
                assert len(on) == 1  # held whole: exactly one holder
                assert use[i].whole
        if family == G.VGPU and request.group_spread and group:
            cards_of_pod = [j for j, _, _ in choice.taken]
            others = [j for taken, _, g in placed[:-1] if g == group for j, _, _ in taken]
            assert not set(cards_of_pod) & set(others)


@st.composite
def _share_nodes(draw: st.DrawFn) -> tuple[dict[int, NodeGpus], dict[int, list[CardUse]], int]:
    """Rows with gpushare cards (some without any) and a random use of each card."""
    rows = draw(st.integers(1, 6))
    gpus: dict[int, NodeGpus] = {}
    use: dict[int, list[CardUse]] = {}
    for row in range(rows):
        memories = draw(st.lists(st.integers(0, 2000), max_size=4))
        if not memories:
            continue
        gpus[row] = _share(*memories)
        use[row] = []
        for m in memories:
            kind = draw(st.sampled_from(["idle", "shared", "whole"]))
            if kind == "whole":
                use[row].append(CardUse(sharers=1, whole=True))
            elif kind == "shared":
                use[row].append(CardUse(memory=draw(st.integers(0, m)), sharers=draw(st.integers(1, 3))))
            else:
                use[row].append(CardUse())
    return gpus, use, rows


@given(_share_nodes(), _share_ask, st.sampled_from(G.POLICIES))
@settings(max_examples=300, deadline=None)
def test_the_share_matrix_judges_as_decide_does(
    nodes: tuple[dict[int, NodeGpus], dict[int, list[CardUse]], int], request_: GpuRequest, policy: str
) -> None:
    """The plugin judges gpushare pods over a node x card matrix: fit and score are decide's, row by row."""
    gpus, use, rows = nodes
    matrix = S.ShareCards(rows, gpus)
    for row, u in use.items():
        matrix.update(row, u)
    fit, score = matrix.judge(request_, policy)
    for row in range(rows):
        choice = C.decide(gpus.get(row), use.get(row, []), request_, policy, "")
        assert bool(fit[row]) is (choice.taken is not None), row
        assert score[row] == pytest.approx(choice.score if choice.taken is not None else 0.0), row


# --- the plugin in cycles -----------------------------------------------------------------------------


def ds_conf(tier: Sequence[str] = ("priority", "gang", "predicates"), **args: Any) -> str:
    arguments = {f"deviceshare.{k}": v for k, v in args.items()}
    return conf_with(*tier, "deviceshare", arguments={"deviceshare": arguments})


SHARE_CONF = ds_conf(GPUSharingEnable=True, GPUNumberEnable=True)
VGPU_CONF = ds_conf(VGPUEnable=True)


def _snapshot(nodes: Sequence[Raw], pods: Sequence[Raw], groups: Sequence[Raw] = ()) -> Snapshot:
    return build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[parse_podgroup(g) for g in groups],
        queues=[parse_queue(queue("default"))],
    )


def _cycle(
    nodes: Sequence[Raw],
    pods: Sequence[Raw],
    conf: str = SHARE_CONF,
    groups: Sequence[Raw] = (),
    batch: bool = True,
) -> tuple[CycleResult, Session]:
    loaded = load_conf(conf)
    ssn = Session(_snapshot(nodes, pods, groups), build_hooks(loaded.tiers()), now=NOW, batch=batch)
    for act in loaded.actions:
        act(ssn)
    for plugin in ssn.plugins:
        plugin.close(ssn)
    return ssn.result, ssn


def _placed(result: CycleResult) -> dict[str, str]:
    return {str(k): v for k, v in sorted(result.placements.items())}


def _index(result: CycleResult) -> dict[str, str]:
    return {str(k): v[G.GPU_INDEX] for k, v in sorted(result.annotations.items())}


def _why(result: CycleResult) -> dict[str, str]:
    return {str(k): v.message for k, v in result.unschedulable.items()}


def test_fractional_pods_share_a_card_up_to_its_memory() -> None:
    """Two cards of 1000: 600 + 300 on card 0, 600 on card 1; then 450 fits no card though the node's
    total (2000, 500 left) has room: refused with deviceshare's reason, placed on a second node when
    there is one."""
    pods = [gpu_pod(n, memory=m) for n, m in (("a", 600), ("b", 600), ("c", 300), ("d", 450))]
    one, _ = _cycle([share_node("n1")], pods)
    assert _placed(one) == {"a": "n1", "b": "n1", "c": "n1"}
    assert _index(one) == {"a": "0", "b": "1", "c": "0"}
    assert _why(one) == {
        "default/podgroup-d": "gang 0/1 placeable: deviceshare: node n1: no GPU card has 450 memory free "
        "(the most free: 400)"
    }
    two, _ = _cycle([share_node("n1"), share_node("n2")], pods)
    assert _placed(two)["d"] == "n2"
    assert _index(two)["d"] == "0"
    # The plugin is what refuses: without it plain fit places d on n1 (2000 in all).
    plain, _ = _cycle([share_node("n1")], pods, conf_with("priority", "gang", "predicates"))
    assert _placed(plain) == {"a": "n1", "b": "n1", "c": "n1", "d": "n1"}
    assert plain.annotations == {}


def test_a_gang_is_planned_together() -> None:
    """A gang of two 600s takes both cards; a gang of three cannot fit and leaves nothing behind."""
    pair = [gpu_pod(f"g-{i}", memory=600, group="g") for i in range(2)]
    got, _ = _cycle([share_node("n1")], pair, groups=[podgroup("g", 2, phase="Inqueue")])
    assert _index(got) == {"g-0": "0", "g-1": "1"}
    three = [gpu_pod(f"g-{i}", memory=600, group="g") for i in range(3)]
    refused, ssn = _cycle([share_node("n1")], three, groups=[podgroup("g", 3, phase="Inqueue")])
    assert refused.placements == {}
    assert refused.annotations == {}
    assert "no GPU card has 600 memory free" in _why(refused)["default/g"]
    # The discarded gang gave its cards back.
    plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
    assert all(u == CardUse() for u in plugin.card_use(ssn)[(0, G.SHARE)])


def test_whole_cards_are_not_shared() -> None:
    """gpu-number 2 takes cards 0 and 1 whole; a 100 memory pod then goes to card 2, and with card 2 full
    too it waits, though cards 0 and 1 have all their memory."""
    whole = gpu_pod("a", number=2)
    small = gpu_pod("b", memory=100)
    got, _ = _cycle([share_node("n1", cards=3)], [whole, small])
    assert _index(got) == {"a": "0,1", "b": "2"}
    full = gpu_pod("b", memory=1000)
    got, _ = _cycle([share_node("n1", cards=3)], [whole, full, gpu_pod("c", memory=100)])
    assert _index(got) == {"a": "0,1", "b": "2"}
    assert "no GPU card has 100 memory free (the most free: 0)" in _why(got)["default/podgroup-c"]


def _bound(name: str, node_name: str, memory: int, index: str | None) -> Raw:
    notes = {G.GPU_INDEX: index} if index is not None else {}
    return gpu_pod(name, memory=memory, node_name=node_name, phase="Running", annotations=notes)


@pytest.mark.parametrize(
    ("policy", "annotation", "want"),
    [
        ("binpack", None, "n2"),
        ("spread", None, "n1"),
        ("binpack", "spread", "n1"),
        ("spread", "binpack", "n2"),
    ],
)
def test_binpack_and_spread_choose_nodes(policy: str, annotation: str | None, want: str) -> None:
    """n2's cards are partly used, n1's idle: binpack puts the pod on n2, spread on n1 (the pod's own
    hami.io/gpu-scheduler-policy wins over the conf's)."""
    nodes = [share_node("n1"), share_node("n2")]
    running = [_bound("r0", "n2", 300, "0"), _bound("r1", "n2", 300, "1")]
    notes = {G.POLICY_ANNOTATION: annotation} if annotation else {}
    conf = ds_conf(GPUSharingEnable=True, SchedulePolicy=policy, ScheduleWeight=10)
    got, _ = _cycle(nodes, [*running, gpu_pod("p", memory=200, annotations=notes)], conf)
    assert _placed(got) == {"p": want}


def test_the_score_is_weighted_per_pod() -> None:
    nodes = [share_node("n1"), share_node("n2")]
    running = [_bound("r0", "n2", 300, "0"), _bound("r1", "n2", 300, "1")]
    p = gpu_pod("p", memory=200)
    _, ssn = _cycle(
        nodes, [*running], ds_conf(GPUSharingEnable=True, SchedulePolicy="binpack", ScheduleWeight=7)
    )
    plugin = next(x for x in ssn.plugins if isinstance(x, DeviceSharePlugin))
    scores = plugin.pod_score(ssn, parse_pod(p), np.ones(2, dtype=np.bool_))
    assert scores is not None
    assert scores.tolist() == [0.0, 7 * 30.0]
    # No weight or no policy: no opinion.
    _, ssn = _cycle(nodes, [*running], ds_conf(GPUSharingEnable=True, SchedulePolicy="binpack"))
    plugin = next(x for x in ssn.plugins if isinstance(x, DeviceSharePlugin))
    assert plugin.pod_score(ssn, parse_pod(p), np.ones(2, dtype=np.bool_)) is None


def test_bound_pods_hold_their_cards() -> None:
    """Two running pods of 700 on cards 0 and 1 (by volcano.sh/gpu-index): a 400 pod fits the node's
    total (600 left) but no card; without the annotations they hold no card (as in Volcano)."""
    nodes = [share_node("n1")]
    running = [_bound("r0", "n1", 700, "0"), _bound("r1", "n1", 700, "1")]
    snap = _snapshot(nodes, [*running, gpu_pod("p", memory=400)])
    assert snap.device_holds == {
        PodUID("r0"): ("n1", GpuHold(family=G.SHARE, cards=(("0", 700, 0),))),
        PodUID("r1"): ("n1", GpuHold(family=G.SHARE, cards=(("1", 700, 0),))),
    }
    got, _ = _cycle(nodes, [*running, gpu_pod("p", memory=400)])
    assert got.placements == {}
    assert "no GPU card has 400 memory free (the most free: 300)" in _why(got)["default/podgroup-p"]
    loose = [_bound("r0", "n1", 700, None), _bound("r1", "n1", 700, None)]
    got, _ = _cycle(nodes, [*loose, gpu_pod("p", memory=400)])
    assert _index(got) == {"p": "0"}
    # A finished pod holds nothing.
    done = [_bound("r0", "n1", 700, "0"), replace_phase(_bound("r1", "n1", 700, "1"), "Succeeded")]
    got, _ = _cycle(nodes, [*done, gpu_pod("p", memory=400)])
    assert _index(got) == {"p": "1"}


def replace_phase(raw: Raw, phase: str) -> Raw:
    raw["status"]["phase"] = phase
    return raw


def test_holds_of_pods_outside_the_snapshot_count() -> None:
    """A cache's snapshot holds only the pods with work; bound pods elsewhere (residents) still hold
    their cards through Snapshot.device_holds."""
    nodes = [parse_node(share_node("n1"))]
    running = [parse_pod(_bound("r0", "n1", 700, "0")), parse_pod(_bound("r1", "n1", 700, "1"))]
    new = parse_pod(gpu_pod("p", memory=400))
    snap = build_snapshot(
        nodes=nodes,
        pods=[new],
        podgroups=[],
        queues=[parse_queue(queue("default"))],
        residents=[*running, new],
    )
    assert set(snap.device_holds) == {"r0", "r1"}
    got = run_cycle(snap, load_conf(SHARE_CONF), NOW)
    assert got.placements == {}
    assert "no GPU card has 400 memory free" in _why(got)["default/podgroup-p"]


def test_a_plain_gang_undone_on_a_gpu_node_keeps_the_cycle_going() -> None:
    """A cpu-only gang placed and discarded on a GPU node, between two GPU pods: the cycle goes on and
    the second GPU pod is placed (the plugin once failed following the discard)."""
    later = "2024-01-01T00:00:01Z"
    gang = [pod(f"g-{i}", group="g", cpu="20", created=later) for i in range(2)]
    last = gpu_pod("z", memory=100)
    last["metadata"]["creationTimestamp"] = "2024-01-01T00:00:02Z"
    got, _ = _cycle(
        [share_node("n1")],
        [gpu_pod("a", memory=100), *gang, last],
        groups=[podgroup("g", 2, phase="Inqueue", created=later)],
    )
    assert _index(got) == {"a": "0", "z": "0"}
    assert "needs cpu 20" in _why(got)["default/g"]


def test_pods_alike_but_for_their_card_filters_are_judged_apart() -> None:
    """Two pods of one job with the same resources: the first may use only T4 cards (the node has none)
    and is refused; the second, unfiltered, is still tried and placed (the GPU ask is part of a pod's
    shape, so one refusal does not pass over the other)."""
    n = vgpu_node("n1", ("GPU-a", 4, 8000, "NVIDIA-A100", True))
    pods = [
        gpu_pod("g-0", [vgpu(memory=100)], group="g", annotations={G.USE_TYPES: "T4"}),
        gpu_pod("g-1", [vgpu(memory=100)], group="g"),
    ]
    got, _ = _cycle([n], pods, VGPU_CONF, groups=[podgroup("g", 1, phase="Inqueue")])
    assert _placed(got) == {"g-1": "n1"}


PREEMPT_CONF = ds_conf(("priority", "gang", "conformance", "predicates"), GPUSharingEnable=True).replace(
    "enqueue, allocate, backfill", "enqueue, allocate, preempt"
)


def test_preemption_frees_a_card() -> None:
    """Two cards with 600 used on each: a 500 pod of higher priority fits the node's total (800 left) but
    no card; preempt evicts one pod and the new one waits for its card."""
    lows = [_bound("low0", "n1", 600, "0"), _bound("low1", "n1", 600, "1")]
    high = gpu_pod("high", memory=500)
    high["spec"]["priority"] = 100
    got, _ = _cycle([share_node("n1")], [*lows, high], PREEMPT_CONF)
    assert _placed(got) == {"high": "n1"}
    assert set(got.evictions) == {"low0"}
    assert got.pipelined == {"high": frozenset({"low0"})}
    assert _index(got) == {"high": "0"}
    # Without deviceshare nothing is evicted: plain fit places it at once.
    plain_conf = conf_with(
        "priority", "gang", "conformance", "predicates", actions="enqueue, allocate, preempt"
    )
    plain, _ = _cycle([share_node("n1")], [*lows, high], plain_conf)
    assert plain.evictions == {}
    assert _placed(plain) == {"high": "n1"}


def test_a_preemption_that_cannot_help_gives_the_cards_back() -> None:
    """1001 fits no card of 1000 whatever is evicted: no eviction stands, every card is used as before."""
    lows = [_bound("low0", "n1", 600, "0"), _bound("low1", "n1", 600, "1")]
    high = gpu_pod("high", memory=1001)
    high["spec"]["priority"] = 100
    got, ssn = _cycle([share_node("n1")], [*lows, high], PREEMPT_CONF)
    assert got.placements == {}
    assert got.evictions == {}
    plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
    assert [(u.memory, u.sharers) for u in plugin.card_use(ssn)[(0, G.SHARE)]] == [(600, 1), (600, 1)]


def test_unhealthy_cards_keep_their_indices() -> None:
    """Card 0 unhealthy: a bound pod on card 1 (700 of 1000) is counted there, new pods get the real
    indices: 500 on card 2, then 300 on card 1; card 0 is never given."""
    nodes = [share_node("n1", cards=3, unhealthy="0")]
    pods = [_bound("r", "n1", 700, "1"), gpu_pod("a", memory=500), gpu_pod("b", memory=300)]
    got, _ = _cycle(nodes, pods)
    assert _index(got) == {"a": "2", "b": "1"}


def test_bound_vgpu_pods_hold_their_slices() -> None:
    """A running pod holding 7000 of GPU-a's 8000 (volcano.sh/vgpu-ids-new): 2000 more does not fit,
    1000 does; with one sharer slot on the card nothing more does."""

    def cycle(slots: int, memory: int) -> CycleResult:
        n = vgpu_node("n1", ("GPU-a", slots, 8000, "NVIDIA-A100", True))
        held = gpu_pod(
            "r",
            [vgpu(memory=7000, cores=20)],
            node_name="n1",
            phase="Running",
            annotations={G.VGPU_IDS: "GPU-a,NVIDIA,7000,20:"},
        )
        return _cycle([n], [held, gpu_pod("p", [vgpu(memory=memory)])], VGPU_CONF)[0]

    assert cycle(4, 2000).placements == {}
    assert _placed(cycle(4, 1000)) == {"p": "n1"}
    assert cycle(1, 1000).placements == {}


def test_gpushare_annotations_are_volcanos() -> None:
    got, _ = _cycle([share_node("n1")], [gpu_pod("p", memory=100)])
    assert got.annotations == {"p": {G.GPU_INDEX: "0", G.PREDICATE_TIME: str(int(NOW) * 1_000_000_000)}}


def test_vgpu_pods_in_a_cycle() -> None:
    """Two containers: the first takes one card with cores, the second two cards; the annotation lists
    each container's cards (uuid,NVIDIA,memory,cores:) joined by ';'."""
    n = vgpu_node("n1", ("GPU-a", 4, 8000, "NVIDIA-A100", True), ("GPU-b", 4, 8000, "NVIDIA-A100", True))
    p = gpu_pod("p", [vgpu(number=1, memory=1000, cores=30), vgpu(number=2, memory=500)])
    got, _ = _cycle([n], [p], VGPU_CONF)
    ids = "GPU-b,NVIDIA,1000,30:;GPU-b,NVIDIA,500,0:GPU-a,NVIDIA,500,0:"
    assert got.annotations == {
        "p": {
            G.VGPU_NODE: "n1",
            G.VGPU_TIME: str(int(NOW)),
            G.VGPU_IDS: ids,
            G.VGPU_TO_ALLOCATE: ids,
            G.BIND_PHASE: "allocating",
            G.BIND_TIME: str(int(NOW)),
        }
    }


def test_vgpu_sharers_and_cores_in_a_cycle() -> None:
    """One card for 2 pods: the third waits; a cores-100 pod takes the card alone."""
    n = vgpu_node("n1", ("GPU-a", 2, 8000, "NVIDIA-A100", True))
    pods = [gpu_pod(f"p{i}", [vgpu(memory=1000)]) for i in range(3)]
    got, _ = _cycle([n], pods, VGPU_CONF)
    assert _placed(got) == {"p0": "n1", "p1": "n1"}
    assert "deviceshare: node n1: 0 of 1 vGPU cards fit" in _why(got)["default/podgroup-p2"]
    alone = [gpu_pod("a", [vgpu(memory=1000, cores=100)]), gpu_pod("b", [vgpu(memory=1000)])]
    got, _ = _cycle([n], alone, VGPU_CONF)
    assert _placed(got) == {"a": "n1"}


def test_vgpu_group_spread_in_a_cycle() -> None:
    """A gang asking volcano.sh/vgpu-podgroup-policy: spread takes one card per pod."""
    notes = {G.VGPU_GROUP_POLICY: "spread"}
    pods = [gpu_pod(f"g-{i}", [vgpu(memory=100)], group="g", annotations=notes) for i in range(2)]
    two = vgpu_node("n1", ("GPU-a", 4, 8000, "NVIDIA", True), ("GPU-b", 4, 8000, "NVIDIA", True))
    got, _ = _cycle([two], pods, VGPU_CONF, groups=[podgroup("g", 2, phase="Inqueue")])
    assert {v[G.VGPU_IDS].split(",")[0] for v in got.annotations.values()} == {"GPU-a", "GPU-b"}
    one = vgpu_node("n1", ("GPU-a", 4, 8000, "NVIDIA", True))
    got, _ = _cycle([one], pods, VGPU_CONF, groups=[podgroup("g", 2, phase="Inqueue")])
    assert got.placements == {}
    # Without the annotation both share the one card.
    plain = [gpu_pod(f"g-{i}", [vgpu(memory=100)], group="g") for i in range(2)]
    got, _ = _cycle([one], plain, VGPU_CONF, groups=[podgroup("g", 2, phase="Inqueue")])
    assert len(got.placements) == 2


def test_a_bad_pod_policy_refuses_the_pod() -> None:
    p = gpu_pod("p", memory=100, annotations={G.POLICY_ANNOTATION: "fullest"})
    got, _ = _cycle([share_node("n1")], [p])
    assert got.placements == {}
    assert (
        "deviceshare: annotation hami.io/gpu-scheduler-policy: 'fullest'" in _why(got)["default/podgroup-p"]
    )


def test_batch_and_one_by_one_agree() -> None:
    nodes = [share_node("n1"), share_node("n2", cards=3), vgpu_node("n3", ("GPU-a", 3, 8000, "NVIDIA", True))]
    pods = [gpu_pod(f"a{i}", memory=m) for i, m in enumerate((600, 300, 300, 700, 500, 900, 200))]
    pods += [gpu_pod(f"b{i}", number=1) for i in range(2)]
    pods += [gpu_pod(f"c{i}", [vgpu(memory=3000)]) for i in range(4)]
    pods += [pod(f"d{i}", cpu="2") for i in range(4)]
    conf = ds_conf(
        GPUSharingEnable=True,
        GPUNumberEnable=True,
        VGPUEnable=True,
        SchedulePolicy="binpack",
        ScheduleWeight=5,
    )
    batched, _ = _cycle(nodes, [dict(p) for p in pods], conf)
    looped, _ = _cycle(nodes, [dict(p) for p in pods], conf, batch=False)
    assert _placed(batched) == _placed(looped)
    assert batched.annotations == looped.annotations
    assert len(batched.annotations) >= 10


def test_a_family_not_enabled_is_plain_resource_fit() -> None:
    """Only gpu-number enabled: gpu-memory pods are placed by the node's total alone, without cards."""
    pods = [gpu_pod(f"p{i}", memory=600) for i in range(3)]
    got, _ = _cycle([share_node("n1")], pods, ds_conf(GPUNumberEnable=True))
    assert len(got.placements) == 3
    assert got.annotations == {}
    got, _ = _cycle([share_node("n1")], pods, ds_conf(GPUSharingEnable=True))
    assert len(got.placements) == 2


def test_registered() -> None:
    assert "deviceshare" in PLUGINS
    assert "deviceshare" not in NOT_YET
    load_conf(
        ds_conf(
            GPUSharingEnable=True,
            NodeLockEnable=True,
            SchedulePolicy="spread",
            ScheduleWeight=10,
            KnownGeometriesCMName="c",
            KnownGeometriesCMNamespace="ns",
        )
    )


def test_bad_arguments_fail_loading() -> None:
    with pytest.raises(
        ConfigError, match=re.escape("deviceshare: unknown argument 'deviceshare.GPUShareEnable'")
    ):
        load_conf(ds_conf(GPUShareEnable=True))
    with pytest.raises(
        ConfigError,
        match=re.escape("deviceshare.SchedulePolicy must be fragmentation, binpack or spread, got 'fullest'"),
    ):
        load_conf(ds_conf(SchedulePolicy="fullest"))
