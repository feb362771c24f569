"""Preempt and reclaim for pods whose cards decide where they fit (deviceshare follows evictions): the
victims are looked for on nodes whose cards refuse the pod as they are, and taken only when the pod's
card fits once they are gone."""

from __future__ import annotations

from typing import Any

from extender.core.model import PodUID
from extender.framework.result import CycleResult
from tests.core.builders import Raw, conf_with, node, placed, pod, podgroup, priority_class, queue, run

GPUS = {"volcano.sh/gpu-memory": "32000", "volcano.sh/gpu-number": "2"}  # two cards of 16000
SHARE = {"deviceshare": {"deviceshare.GPUSharingEnable": True}}


def gpu_pod(name: str, memory: int, card: int | None = None, **kw: Any) -> Raw:
    """A pod asking ``memory`` of one card; with ``card``, running on n1 holding that card."""
    ask = {"volcano.sh/gpu-memory": str(memory)}
    if card is not None:
        kw.update(node="n1", phase="Running")
    raw = pod(name, group=name, cpu="100m", memory="10Mi", extra=ask, **kw)
    raw["spec"]["containers"][0]["resources"]["limits"] = dict(ask)
    if card is not None:
        raw["metadata"]["annotations"]["volcano.sh/gpu-index"] = str(card)
    return raw


def _preempt(pods: list[Raw], preemptor: Raw) -> CycleResult:
    groups = [podgroup(str(p["metadata"]["name"]), 1, phase="Running", priority_class="low") for p in pods]
    groups.append(podgroup(str(preemptor["metadata"]["name"]), 1, phase="Inqueue", priority_class="high"))
    conf = conf_with(
        "priority",
        "gang",
        "conformance",
        "predicates",
        "deviceshare",
        actions="enqueue, allocate, preempt",
        arguments=SHARE,
    )
    return run(
        [node("n1", extra=GPUS)],
        [*pods, preemptor],
        groups,
        [queue("default")],
        conf,
        priority_classes=[priority_class("high", 100), priority_class("low", 1)],
    )


def test_preempts_the_pod_on_the_card_it_needs() -> None:
    """Each card has 4000 free, 8000 free on the node: only the cards refuse the pod, so it preempts one
    pod and takes that card. Before deviceshare followed evictions, preempt saw node-level room, found no
    victim to take, and the pod waited."""
    result = _preempt([gpu_pod("low0", 12000, card=0), gpu_pod("low1", 12000, card=1)], gpu_pod("hi", 8000))
    assert placed(result) == {"hi": "n1"}
    victims = sorted(str(u) for u in result.evictions)
    assert len(victims) == 1
    card = {"low0": "0", "low1": "1"}[victims[0]]
    assert result.annotations[PodUID("hi")]["volcano.sh/gpu-index"] == card


def test_takes_the_victim_that_frees_a_card() -> None:
    """low0 is the first victim by order (youngest-first ties broken by name), but it frees card 0 only
    to 10000 of the 14000 asked; low1 alone frees card 1 whole."""
    pods = [
        gpu_pod("low0", 6000, card=0),
        gpu_pod("low1", 16000, card=1),
        gpu_pod("low2", 6000, card=0),
    ]
    result = _preempt(pods, gpu_pod("hi", 14000))
    assert placed(result) == {"hi": "n1"}
    assert result.annotations[PodUID("hi")]["volcano.sh/gpu-index"] in {"0", "1"}
    freed = {"0": {"low0", "low2"}, "1": {"low1"}}[result.annotations[PodUID("hi")]["volcano.sh/gpu-index"]]
    assert {str(u) for u in result.evictions} == freed


def test_no_victims_when_no_card_could_hold_it() -> None:
    """20000 asked of cards of 16000: evicting everything would not help, so nothing is evicted."""
    result = _preempt([gpu_pod("low0", 12000, card=0), gpu_pod("low1", 12000, card=1)], gpu_pod("hi", 20000))
    assert placed(result) == {}
    assert result.evictions == {}
    assert "volcano.sh/gpu-memory 20000" in next(iter(result.unschedulable.values())).message


def test_reclaim_takes_a_card_back_for_another_queue() -> None:
    """Queue a holds both cards past its half; queue b's pod reclaims one pod of a and takes its card."""
    a = [gpu_pod(f"a{i}", 16000, card=i, queue="a") for i in range(2)]
    groups = [podgroup(f"a{i}", 1, queue="a", phase="Running") for i in range(2)]
    groups.append(podgroup("b0", 1, queue="b", phase="Inqueue"))
    conf = conf_with(
        "priority",
        "gang",
        "conformance",
        "predicates",
        "proportion",
        "deviceshare",
        actions="enqueue, allocate, reclaim",
        arguments=SHARE,
    )
    result = run(
        [node("n1", extra=GPUS)],
        [*a, gpu_pod("b0", 16000, queue="b")],
        groups,
        [queue("default"), queue("a"), queue("b")],
        conf,
    )
    assert placed(result) == {"b0": "n1"}
    assert len(result.evictions) == 1
    victim = str(next(iter(result.evictions)))
    assert result.annotations[PodUID("b0")]["volcano.sh/gpu-index"] == victim.removeprefix("a")
