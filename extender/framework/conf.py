"""Volcano's scheduler configuration (``volcano-scheduler.conf``), parsed into a frozen structure.

The format is Volcano's: ``actions: "enqueue, allocate, backfill"`` and ``tiers[].plugins[]`` with
``name``, ``arguments`` and the ``enable*`` switches. This module checks shape only; the plugin registry
checks names and arguments, so a user's file either loads whole or fails startup with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import yaml

from extender.core.errors import ConfigError

# Volcano's default configuration.
DEFAULT_CONF: Final = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""

# Volcano's SchedulerConfiguration: ``metrics`` configures the metrics source of Volcano's usage-based
# plugins, which pumice does not have; it is accepted and not read.
TOP_LEVEL_KEYS: Final = ("actions", "tiers", "configurations", "metrics")

# Per-plugin switches Volcano accepts beside ``arguments`` (all booleans), spelt as Volcano's PluginOption
# YAML tags spell them (most ``enable…``, a few ``enabled…``). The framework honours those that gate a hook
# pumice has (see :data:`extender.framework.plugin.HOOK_SWITCHES`); the others are accepted and inert.
PLUGIN_SWITCHES: Final = frozenset(
    {
        "enableJobOrder",
        "enableNamespaceOrder",
        "enableHierarchy",
        "enableJobReady",
        "enableJobPipelined",
        "enableTaskOrder",
        "enablePreemptable",
        "enableReclaimable",
        "enablePreemptive",
        "enableQueueOrder",
        "enabledClusterOrder",
        "enablePredicate",
        "enableBestNode",
        "enableNodeOrder",
        "enableTargetJob",
        "enableReservedNodes",
        "enableJobEnqueued",
        "enabledVictim",
        "enableJobStarving",
        "enabledOverused",
        "enabledAllocatable",
        "enabledHyperNodeOrder",
        "enabledSubJobReady",
        "enabledSubJobPipelined",
        "enabledSubJobOrder",
        "enabledHyperNodeGradient",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PluginConf:
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    switches: Mapping[str, bool] = field(default_factory=dict)

    def enabled(self, switch: str) -> bool:
        """Volcano treats an absent switch as enabled."""
        return self.switches.get(switch, True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfSpec:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginConf, ...], ...]
    configurations: tuple[Mapping[str, Any], ...] = ()


def parse_conf(text: str) -> ConfSpec:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"scheduler conf is not valid YAML: {e}") from None
    if not isinstance(raw, Mapping):
        raise ConfigError("scheduler conf must be a mapping with 'actions' and 'tiers'")
    unknown = set(raw) - set(TOP_LEVEL_KEYS)
    if unknown:
        raise ConfigError(f"scheduler conf: unknown top-level keys {sorted(unknown)}")
    actions_raw = raw.get("actions")
    if not isinstance(actions_raw, str) or not actions_raw.strip():
        raise ConfigError('scheduler conf: "actions" must be a string like "enqueue, allocate"')
    actions = tuple(a.strip() for a in actions_raw.split(",") if a.strip())
    tiers_raw = raw.get("tiers") or []
    if not isinstance(tiers_raw, list):
        raise ConfigError("scheduler conf: 'tiers' must be a list")
    tiers: list[tuple[PluginConf, ...]] = []
    for ti, tier in enumerate(tiers_raw):
        if not isinstance(tier, Mapping) or not isinstance(tier.get("plugins"), list):
            raise ConfigError(f"scheduler conf: tiers[{ti}] must have a 'plugins' list")
        plugins: list[PluginConf] = []
        for pi, p in enumerate(tier["plugins"]):
            where = f"tiers[{ti}].plugins[{pi}]"
            if not isinstance(p, Mapping) or not isinstance(p.get("name"), str):
                raise ConfigError(f"scheduler conf: {where} needs a 'name'")
            args = p.get("arguments") or {}
            if not isinstance(args, Mapping):
                raise ConfigError(f"scheduler conf: {where}.arguments must be a mapping")
            switches: dict[str, bool] = {}
            for k, v in p.items():
                if k in ("name", "arguments"):
                    continue
                if k not in PLUGIN_SWITCHES:
                    raise ConfigError(f"scheduler conf: {where} ({p['name']}): unknown key {k!r}")
                if not isinstance(v, bool):
                    raise ConfigError(f"scheduler conf: {where} ({p['name']}): {k} must be true or false")
                switches[k] = v
            plugins.append(PluginConf(name=p["name"], arguments=dict(args), switches=switches))
        tiers.append(tuple(plugins))
    conf_list = raw.get("configurations") or []
    if not isinstance(conf_list, list):
        raise ConfigError("scheduler conf: 'configurations' must be a list")
    return ConfSpec(actions=actions, tiers=tuple(tiers), configurations=tuple(conf_list))
