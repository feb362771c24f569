"""deviceshare's fast paths decide exactly as its plain ones: hypothesis, over random clusters of shared
cards (some nodes short of cpu, so that placements cross the point from which cpu no longer matters to
the fragmentation figures), cards held in part or whole, pending share, whole-card and CPU-only pods
alone and in gangs, under each policy, over three cycles on one card memo (cold, warm, and after some
pods bound and others arrived). Both runs must place the same pods on the same nodes and cards, refuse
the others with the same reasons, and give every pod the same fit and score arrays, bit for bit.

The fast paths (``DeviceSharePlugin.fast_paths``, ``CardMemo.fast_paths``; see
:mod:`extender.core.gpu_verdicts`, :meth:`extender.core.gpu_frag_cache.FragCache.plenty` and
:func:`extender.core.gpu_cards.share_hold`): a share's fit read off the fragmentation figures, the card
of a pod placed looked up for its row alone, a pod's verdict kept from its fit to its score, cpu and
memory changes that no figure depends on not counted as changes, a placed pod's hold built without its
annotations.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.core import gpus as G
from extender.core.gpu_cards import device_annotations, share_hold
from extender.core.gpu_memo import CardMemo
from extender.core.gpus import Card, GpuRequest, NodeGpus, pod_hold
from extender.core.model import PodUID
from extender.core.parse import parse_node, parse_pod, parse_podgroup, parse_queue
from extender.core.snapshot import build_snapshot
from extender.framework.cycle import run_cycle
from extender.framework.hooks import build_hooks
from extender.framework.session import Session
from extender.plugins.deviceshare import DeviceSharePlugin
from extender.plugins.registry import load_conf
from tests.core.builders import NOW, Raw, podgroup, queue
from tests.plugins.test_deviceshare import ds_conf, gpu_pod, share_node

_POLICIES = ["fragmentation", "fragmentation", "fragmentation", "binpack", "spread"]


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[Raw], list[Raw], list[Raw], list[Raw], str]:
    """(nodes, pods bound and pending, podgroups, pods arriving before the third cycle, policy)."""
    nodes: list[Raw] = []
    cards: list[tuple[int, int]] = []
    for i in range(draw(st.integers(2, 6))):
        n, per = draw(st.integers(1, 4)), draw(st.sampled_from([1000, 2000]))
        nodes.append(
            share_node(f"n{i}", cards=n, per_card=per, cpu=draw(st.sampled_from(["3", "4", "6", "32"])))
        )
        cards.append((n, per))
    pods: list[Raw] = []
    for j in range(draw(st.integers(0, 8))):
        i = draw(st.integers(0, len(nodes) - 1))
        card = draw(st.integers(0, cards[i][0] - 1))
        whole = draw(st.integers(0, 4)) == 0
        memory = 0 if whole else draw(st.sampled_from([100, 250, 500, 700]))
        p = gpu_pod(
            f"b{j}",
            memory=memory,
            number=1 if whole else 0,
            node_name=f"n{i}",
            phase="Running",
            annotations={G.GPU_INDEX: str(card)},
        )
        pods.append(p)
    groups: list[Raw] = []

    def pending(name: str, group: str | None = None) -> Raw:
        kind = draw(st.sampled_from(["share", "share", "share", "number", "cpu"]))
        if kind == "share":
            p = gpu_pod(name, memory=draw(st.sampled_from([100, 250, 500, 700, 1000, 1500])), group=group)
        elif kind == "number":
            p = gpu_pod(name, number=draw(st.integers(1, 2)), group=group)
        else:
            p = gpu_pod(name, group=group)
            p["spec"]["containers"][0]["resources"] = {"requests": {}}
        p["spec"]["containers"][0]["resources"].setdefault("requests", {})["cpu"] = draw(
            st.sampled_from(["500m", "1", "2"])
        )
        return p

    for j in range(draw(st.integers(1, 10))):
        pods.append(pending(f"p{j}"))
    for g in range(draw(st.integers(0, 3))):  # (a gang that cannot all fit is undone: cpu comes back)
        size = draw(st.integers(2, 6))
        groups.append(podgroup(f"gang{g}", size, phase="Inqueue"))
        pods.extend(pending(f"g{g}-{k}", group=f"gang{g}") for k in range(size))
    later = [pending(f"q{j}") for j in range(draw(st.integers(0, 4)))]
    return nodes, pods, groups, later, draw(st.sampled_from(_POLICIES))


@contextmanager
def _paths(fast: bool) -> Iterator[list[tuple[str, str, bytes]]]:
    """Run with the fast paths on or off, recording every pod's fit and score arrays."""
    seen: list[tuple[str, str, bytes]] = []
    fit, score = DeviceSharePlugin.pod_fit, DeviceSharePlugin.pod_score

    def pod_fit(self: DeviceSharePlugin, ssn: Any, pod: Any, candidates: Any) -> Any:
        out = fit(self, ssn, pod, candidates)
        seen.append(("fit", str(pod.uid), b"" if out is None else out.tobytes()))
        return out

    def pod_score(self: DeviceSharePlugin, ssn: Any, pod: Any, candidates: Any) -> Any:
        out = score(self, ssn, pod, candidates)
        seen.append(("score", str(pod.uid), b"" if out is None else out.tobytes()))
        return out

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DeviceSharePlugin, "fast_paths", fast)
        mp.setattr(CardMemo, "fast_paths", fast)
        mp.setattr(DeviceSharePlugin, "pod_fit", pod_fit)
        mp.setattr(DeviceSharePlugin, "pod_score", pod_score)
        yield seen


def _bind(pods: list[Raw], placements: dict[Any, str], annotations: dict[Any, dict[str, str]]) -> list[Raw]:
    """The pods with those placed bound where they were placed, with their cards' annotations."""
    out = []
    for p in pods:
        uid = p["metadata"]["uid"]
        node = next((n for u, n in placements.items() if str(u) == uid), None)
        if node is not None:
            p = {**p, "spec": {**p["spec"], "nodeName": node}, "status": {"phase": "Running"}}
            values = next((v for u, v in annotations.items() if str(u) == uid), {})
            meta = p["metadata"]
            p["metadata"] = {**meta, "annotations": {**meta.get("annotations", {}), **values}}
        out.append(p)
    return out


def _run(case: tuple[list[Raw], list[Raw], list[Raw], list[Raw], str], fast: bool) -> list[object]:
    nodes, pods, groups, later, policy = case
    conf = load_conf(
        ds_conf(GPUSharingEnable=True, GPUNumberEnable=True, SchedulePolicy=policy, ScheduleWeight=10)
    )
    memo = CardMemo()
    out: list[object] = []
    with _paths(fast) as seen:
        for cycle in range(3):
            snap = build_snapshot(
                nodes=[parse_node(n) for n in nodes],
                pods=[parse_pod(p) for p in pods],
                podgroups=[parse_podgroup(g) for g in groups],
                queues=[parse_queue(queue("default"))],
                card_memo=memo,
            )
            result = run_cycle(snap, conf, NOW)
            out.append(sorted((str(u), n) for u, n in result.placements.items()))
            out.append(sorted((str(u), sorted(v.items())) for u, v in result.annotations.items()))
            out.append(sorted((str(k), v.message) for k, v in result.unschedulable.items()))
            if cycle == 1:  # the placed pods bind, more arrive
                pods = _bind(pods, result.placements, result.annotations) + later
        out.append(list(seen))
    return out


@given(_case())
@settings(max_examples=150, deadline=None)
def test_the_fast_paths_decide_as_the_plain_ones(
    case: tuple[list[Raw], list[Raw], list[Raw], list[Raw], str],
) -> None:
    assert _run(case, True) == _run(case, False)


@given(
    st.lists(st.integers(-2, 12), min_size=1, max_size=4),
    st.lists(st.integers(0, 3), min_size=0, max_size=3),
    st.sampled_from([G.MEMORY, G.NUMBER]),
    st.integers(1, 900),
)
def test_a_share_hold_is_what_its_annotations_say(
    indices: list[int], taken: list[int], kind: str, amount: int
) -> None:
    """share_hold equals pod_hold of the annotations written for the same cards, a card index that is not
    a plain number (negative) included."""
    gpus = NodeGpus(share=tuple(Card(key=f"k{i}", index=i, memory=1000) for i in indices))
    positions = tuple((t % len(indices), amount if kind == G.MEMORY else 0, 0) for t in taken)
    request = GpuRequest(kind=kind, amount=amount)
    written = pod_hold(device_annotations(gpus, request, positions, "n1", NOW), request)
    assert share_hold(gpus, request, positions) == written


def _session_scores(fast: bool) -> list[bytes]:
    """Pods b and a judged, then b placed on n1 (taking most of its card), then a scored and judged again."""
    nodes = [share_node("n1", cards=1), share_node("n2", cards=1)]
    pods = [gpu_pod("a", memory=500), gpu_pod("b", memory=600)]
    snap = build_snapshot(
        nodes=[parse_node(n) for n in nodes],
        pods=[parse_pod(p) for p in pods],
        podgroups=[],
        queues=[parse_queue(queue("default"))],
        card_memo=CardMemo(),
    )
    conf = ds_conf(GPUSharingEnable=True, SchedulePolicy="fragmentation", ScheduleWeight=10)
    ssn = Session(snap, build_hooks(load_conf(conf).tiers()), now=NOW)
    plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
    everywhere = np.ones(2, dtype=np.bool_)
    a, b = (ssn.snapshot.pods[PodUID(u)] for u in ("a", "b"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DeviceSharePlugin, "fast_paths", fast)
        plugin.pod_fit(ssn, b, everywhere)
        out = [_bytes(plugin.pod_fit(ssn, a, everywhere)), _bytes(plugin.pod_score(ssn, a, everywhere))]
        ssn.statement().place(b.uid, 0, "default")
        plugin.placed(ssn, "default", ssn.vector(b.uid), 0, 1)
        out += [_bytes(plugin.pod_score(ssn, a, everywhere)), _bytes(plugin.pod_fit(ssn, a, everywhere))]
    return out


def _bytes(a: object) -> bytes:
    assert isinstance(a, np.ndarray)
    return a.tobytes()


def test_a_pods_verdict_is_judged_again_once_the_session_changed() -> None:
    """The verdict kept from a pod's fit to its score is not reused after a placement in between: a
    then fits only n2 (b took 600 of n1's 1000), as the plain path says."""
    fast, plain = _session_scores(True), _session_scores(False)
    assert fast == plain
    assert np.frombuffer(fast[3], dtype=np.bool_).tolist() == [False, True]
