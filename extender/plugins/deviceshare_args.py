"""deviceshare's arguments (:class:`Args`, read from a conf's ``arguments`` through :data:`ARGUMENTS`);
what each means is in :mod:`extender.plugins.deviceshare`'s docstring."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from extender.core.errors import ConfigError
from extender.core.gpus import BINPACK, MEMORY, NUMBER, SPREAD, VGPU
from extender.framework.arguments import ArgumentTable

NAME: Final = "deviceshare"
FRAGMENTATION: Final = "fragmentation"
POLICIES: Final = ("", BINPACK, SPREAD, FRAGMENTATION)


ARGUMENTS: Final = ArgumentTable(
    {
        "deviceshare.GPUSharingEnable": (bool, False),
        "deviceshare.GPUNumberEnable": (bool, False),
        "deviceshare.VGPUEnable": (bool, False),
        "deviceshare.NodeLockEnable": (bool, False),
        "deviceshare.SchedulePolicy": (str, FRAGMENTATION),
        "deviceshare.ScheduleWeight": (int, 0),
        "deviceshare.KnownGeometriesCMName": (str, ""),
        "deviceshare.KnownGeometriesCMNamespace": (str, ""),
        "deviceshare.GPUModelLabel": (str, "nvidia.com/gpu.product"),
        "deviceshare.ShapeHalfLife": (int, 5000),
        "deviceshare.ShapeCoverage": (float, 1.0),
        "deviceshare.ShareBestFit": (bool, False),
        # Volcano's Ascend NPU families and exclusive-GPU rules: accepted, not implemented (see above).
        "deviceshare.AscendMindClusterVNPUEnable": (bool, False),
        "deviceshare.AscendHAMiVNPUEnable": (bool, False),
        "deviceshare.GPUExclusiveRules": (list, []),
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Args:
    kinds: frozenset[str]
    policy: str
    weight: int
    model_label: str
    half_life: int
    coverage: float
    best_fit: bool = False

    @classmethod
    def parse(cls, arguments: Mapping[str, Any]) -> Args:
        a = ARGUMENTS.parse(NAME, arguments)
        policy = a["deviceshare.SchedulePolicy"]
        if policy not in POLICIES:
            raise ConfigError(
                f"plugin {NAME}: deviceshare.SchedulePolicy must be fragmentation, binpack or spread, "
                f"got {policy!r}"
            )
        if a["deviceshare.ShapeHalfLife"] < 1:
            raise ConfigError(f"plugin {NAME}: deviceshare.ShapeHalfLife must be at least 1 pod")
        if not 0 < a["deviceshare.ShapeCoverage"] <= 1:
            raise ConfigError(f"plugin {NAME}: deviceshare.ShapeCoverage must be in (0, 1]")
        return cls(
            kinds=frozenset(
                kind
                for kind, key in (
                    (MEMORY, "deviceshare.GPUSharingEnable"),
                    (NUMBER, "deviceshare.GPUNumberEnable"),
                    (VGPU, "deviceshare.VGPUEnable"),
                )
                if a[key]
            ),
            policy=policy,
            weight=a["deviceshare.ScheduleWeight"],
            model_label=a["deviceshare.GPUModelLabel"],
            half_life=a["deviceshare.ShapeHalfLife"],
            coverage=a["deviceshare.ShapeCoverage"],
            best_fit=a["deviceshare.ShareBestFit"],
        )
