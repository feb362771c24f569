"""deviceshare's ``fragmentation`` policy in cycles, worked out by hand: a share pod fills a card already
in use rather than breaking an idle one (spread breaks it), a CPU-only pod goes where its cpu strands
no idle GPU (binpack and spread have no opinion on it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from extender.core import gpus as G
from extender.core.model import PodUID
from extender.plugins.deviceshare import DeviceSharePlugin
from tests.core.builders import Raw, pod
from tests.plugins.test_deviceshare import _cycle, _index, _placed, ds_conf, gpu_pod, share_node


def _conf(policy: str, **more: Any) -> str:
    return ds_conf(
        GPUSharingEnable=True, GPUNumberEnable=True, SchedulePolicy=policy, ScheduleWeight=10, **more
    )


def _bound(name: str, node: str, index: str, *, memory: int = 0, number: int = 0) -> Raw:
    return gpu_pod(
        name, memory=memory, number=number, node_name=node, phase="Running", annotations={G.GPU_INDEX: index}
    )


def test_a_share_pod_fills_a_used_card_rather_than_breaking_an_idle_one() -> None:
    """n1's card 0 holds 500; the cards of n2 and n1's card 1 are idle. A second 500 completes n1's card 0
    under fragmentation (every idle card stays whole for whole-card asks); spread breaks an idle card."""
    nodes = [share_node("n1"), share_node("n2")]
    pods = [_bound("a", "n1", "0", memory=500), gpu_pod("w", number=1), gpu_pod("b", memory=500)]
    frag, _ = _cycle(nodes, pods, _conf("fragmentation"))
    assert _placed(frag)["b"] == "n1" and _index(frag)["b"] == "0"
    spread, _ = _cycle(nodes, pods, _conf("spread"))
    assert (_placed(spread)["b"], _index(spread)["b"]) != ("n1", "0")


def _cpu_pod(name: str, cpu: str) -> Raw:
    return pod(name, cpu=cpu, memory="1Gi")


def test_a_cpu_only_pod_scores_highest_where_it_strands_no_idle_gpu() -> None:
    """n1's two cards are held whole (and 24 of its 32 cpu); n2's are idle. A GPU pod asking a card and
    16 cpu arrives (placed on n2: 16 cpu left there). A pod without GPUs asking 8 cpu would leave n2 8 cpu,
    stranding its idle card for the 16-cpu shape; on n1 it strands nothing (n1 has no idle GPU): it
    scores higher there. Binpack has no opinion on it (no score)."""
    nodes = [share_node("n1", cpu="32"), share_node("n2", cpu="32")]
    held = _bound("held", "n1", "0,1", number=2)
    held["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "24"
    gpu = gpu_pod("g", number=1)
    gpu["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "16"
    pods = [held, gpu, _cpu_pod("c", "8")]
    everywhere = np.ones(2, dtype=np.bool_)
    frag, ssn = _cycle(nodes, pods, _conf("fragmentation"))
    assert _placed(frag)["g"] == "n2"
    plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
    scores = plugin.pod_score(ssn, ssn.snapshot.pods[PodUID("c")], everywhere)
    assert scores is not None and scores[0] > scores[1]
    _, ssn = _cycle(nodes, pods, _conf("binpack"))
    plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
    assert plugin.pod_score(ssn, ssn.snapshot.pods[PodUID("c")], everywhere) is None


def test_share_best_fit_reaches_the_figures_the_cycle_scores_by() -> None:
    """``deviceshare.ShareBestFit`` (off by default) is how the figures a cycle built break ties
    (tests/core/test_gpu_frag_cache.py has what it changes)."""
    nodes, pods = [share_node("n1")], [gpu_pod("b", memory=300)]
    for flag in (None, False, True):
        more = {} if flag is None else {"ShareBestFit": flag}
        frag, ssn = _cycle(nodes, pods, _conf("fragmentation", **more))
        assert _placed(frag)["b"] == "n1"
        plugin = next(p for p in ssn.plugins if isinstance(p, DeviceSharePlugin))
        assert plugin.args.best_fit is bool(flag)
        built = plugin._memo._frag if plugin._memo is not None else None  # (the figures the cycle used)
        assert built is not None and built.best_fit is bool(flag)
