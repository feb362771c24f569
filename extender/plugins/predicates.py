"""predicates: the node filters (resources, node selector and affinity, taints, cordoned nodes, required
inter-pod affinity and anti-affinity, ``DoNotSchedule`` topology spread).

pumice always evaluates these filters: a plan kube-scheduler would reject is useless, so they are part of
the framework (see :mod:`extender.core.fit`, :mod:`extender.core.interpod`, :mod:`extender.core.spread`).
The plugin is accepted so Volcano configurations load; its Volcano arguments are recognised (typos fail),
but switching a filter off (``predicate.PodAffinityEnable: false`` included) has no effect, since
kube-scheduler would apply it anyway; the GPU-sharing features pumice lacks fail startup.

Enable with::

    - name: predicates
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin

_KNOWN = {
    "predicate.GPUSharingEnable": (bool, False),
    "predicate.GPUNumberEnable": (bool, False),
    "predicate.CacheEnable": (bool, False),
    "predicate.ProportionalEnable": (bool, False),
    "predicate.resources": (str, ""),
    "predicate.VGPUEnable": (bool, False),
    "predicate.NodeAffinityEnable": (bool, True),
    "predicate.NodePortsEnable": (bool, True),
    "predicate.TaintTolerationEnable": (bool, True),
    "predicate.PodAffinityEnable": (bool, True),
    "predicate.NodeVolumeLimitsEnable": (bool, True),
    "predicate.VolumeZoneEnable": (bool, True),
    "predicate.PodTopologySpreadEnable": (bool, True),
}


class PredicatesPlugin(Plugin):
    name = "predicates"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = parse_arguments(self.name, arguments, _KNOWN, prefixes={"predicate.resources.": str})
        for feature in ("predicate.GPUSharingEnable", "predicate.VGPUEnable"):
            if args[feature]:
                raise ValueError(f"plugin predicates: {feature} is not supported by pumice yet")
