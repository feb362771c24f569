"""predicates: the node filters (resources, node selector and affinity, taints, cordoned nodes, required
inter-pod affinity and anti-affinity, ``DoNotSchedule`` topology spread).

pumice always evaluates these filters: a plan kube-scheduler would reject is useless, so they are part of
the framework (see :mod:`extender.core.fit`, :mod:`extender.core.interpod`, :mod:`extender.core.spread`).
The plugin is accepted so Volcano configurations load; its Volcano arguments are recognised (typos fail),
but switching a filter off (``predicate.PodAffinityEnable: false`` included) has no effect, since
kube-scheduler would apply it anyway; the volume binding and DRA arguments are kube-scheduler's business
(it runs those filters on the planned node). Volcano 1.8's ``predicate.GPUSharingEnable``,
``predicate.GPUNumberEnable`` and ``predicate.VGPUEnable`` load and do nothing, as in current Volcano,
whose ``deviceshare`` plugin has them.

``predicate.ProportionalEnable: true`` with ``predicate.resources: nvidia.com/gpu`` and
``predicate.resources.nvidia.com/gpu.cpu`` / ``.memory`` (Volcano's older home of the feature) keeps cpu
and memory for idle GPUs exactly as resource-strategy-fit's ``proportional`` does (same predicate, same
units: see :mod:`extender.plugins.resource_strategy_fit`).

Enable with::

    - name: predicates
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from extender.core.errors import ConfigError
from extender.framework.arguments import ArgumentTable
from extender.framework.session import Session
from extender.plugins.resource_strategy_fit import Proportional, ProportionalFit, Ratio, proportional_ratio

ARGUMENTS: Final = ArgumentTable(
    {
        # Volcano's filter switches (always on here, see above) and its predicate cache.
        "predicate.NodeAffinityEnable": (bool, True),
        "predicate.NodePortsEnable": (bool, True),
        "predicate.TaintTolerationEnable": (bool, True),
        "predicate.PodAffinityEnable": (bool, True),
        "predicate.NodeVolumeLimitsEnable": (bool, True),
        "predicate.VolumeZoneEnable": (bool, True),
        "predicate.PodTopologySpreadEnable": (bool, True),
        "predicate.VolumeBindingEnable": (bool, True),
        "predicate.DynamicResourceAllocationEnable": (bool, False),
        "predicate.CacheEnable": (bool, False),
        # kube-scheduler's volume binding and DRA filters, which kube-scheduler runs itself.
        "volumebinding.weight": (int, 1),
        "volumebinding.bindTimeoutSeconds": (int, 600),
        "volumebinding.shape": (list, []),
        "dynamicresources.filterTimeoutSeconds": (int, 10),
        # Volcano 1.8's GPU switches, which current Volcano no longer reads (deviceshare has them).
        "predicate.GPUSharingEnable": (bool, False),
        "predicate.GPUNumberEnable": (bool, False),
        "predicate.VGPUEnable": (bool, False),
        # The older home of resource-strategy-fit's proportional rule.
        "predicate.ProportionalEnable": (bool, False),
        "predicate.resources": (str, ""),
    },
    prefixes={"predicate.resources.": str},
)


class PredicatesPlugin(ProportionalFit):
    name = "predicates"
    argument_table = ARGUMENTS

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        primary = [n.strip() for n in args["predicate.resources"].split(",") if n.strip()]
        ratios: list[Ratio] = []
        for key in args:
            if key.startswith("predicate.resources.") and not any(
                key in (f"predicate.resources.{r}.cpu", f"predicate.resources.{r}.memory") for r in primary
            ):
                raise ConfigError(
                    f"plugin predicates: {key} names no resource of predicate.resources "
                    "(keys are predicate.resources.<resource>.cpu and .memory)"
                )
        for r in primary:
            amounts = []
            for part in ("cpu", "memory"):
                raw = args.get(f"predicate.resources.{r}.{part}", "1")
                try:
                    amount = float(raw)
                except ValueError:
                    amount = -1.0
                if not 0 <= amount < float("inf"):
                    key = f"predicate.resources.{r}.{part}"
                    raise ConfigError(f"plugin predicates: {key}={raw!r} must be a non-negative number")
                amounts.append(amount)
            ratios.append(proportional_ratio(r, amounts[0], amounts[1]))
        if args["predicate.ProportionalEnable"] and not ratios:
            raise ConfigError("plugin predicates: predicate.ProportionalEnable needs predicate.resources")
        self.proportional = Proportional(ratios, self.name) if args["predicate.ProportionalEnable"] else None

    def open(self, ssn: Session) -> None:
        if self.proportional is not None:
            self.proportional.open(ssn)
