"""The literal plugin registry, and the loader that turns a Volcano conf into plugin tiers and actions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from extender.core.errors import ConfigError
from extender.framework.action_table import ACTION_ARGUMENTS, UNREAD_CONFIGURATIONS, Action, resolve_actions
from extender.framework.arguments import ArgumentTable
from extender.framework.conf import DEFAULT_CONF, PLUGIN_SWITCHES, TOP_LEVEL_KEYS, ConfSpec, parse_conf
from extender.framework.hooks import HookLayout, Hooks, hook_layout, hooks_from
from extender.framework.plugin import Plugin
from extender.plugins.binpack import BinpackPlugin
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.cdp import CdpPlugin
from extender.plugins.conformance import ConformancePlugin
from extender.plugins.deviceshare import DeviceSharePlugin
from extender.plugins.drf import DrfPlugin
from extender.plugins.gang import GangPlugin
from extender.plugins.network_topology_aware import NetworkTopologyAwarePlugin
from extender.plugins.nodegroup import NodegroupPlugin
from extender.plugins.nodeorder import NodeorderPlugin
from extender.plugins.numaaware import NumaAwarePlugin
from extender.plugins.overcommit import OvercommitPlugin
from extender.plugins.pdb import PdbPlugin
from extender.plugins.predicates import PredicatesPlugin
from extender.plugins.priority import PriorityPlugin
from extender.plugins.proportion import ProportionPlugin
from extender.plugins.resource_strategy_fit import ResourceStrategyFitPlugin
from extender.plugins.resourcequota import ResourcequotaPlugin
from extender.plugins.sla import SlaPlugin
from extender.plugins.task_topology import TaskTopologyPlugin


class PluginClass(Protocol):
    """A plugin class: built from its conf arguments, with the table of the arguments it accepts."""

    argument_table: ArgumentTable

    def __call__(self, arguments: Mapping[str, Any], /) -> Plugin: ...


PLUGINS: Final[Mapping[str, PluginClass]] = {
    "priority": PriorityPlugin,
    "gang": GangPlugin,
    "conformance": ConformancePlugin,
    "overcommit": OvercommitPlugin,
    "drf": DrfPlugin,
    "predicates": PredicatesPlugin,
    "proportion": ProportionPlugin,
    "nodeorder": NodeorderPlugin,
    "binpack": BinpackPlugin,
    "sla": SlaPlugin,
    "capacity": CapacityPlugin,
    "resource-strategy-fit": ResourceStrategyFitPlugin,
    "nodegroup": NodegroupPlugin,
    "resourcequota": ResourcequotaPlugin,
    "cdp": CdpPlugin,
    "pdb": PdbPlugin,
    "task-topology": TaskTopologyPlugin,
    "numa-aware": NumaAwarePlugin,
    "deviceshare": DeviceSharePlugin,
    "network-topology-aware": NetworkTopologyAwarePlugin,
}
# Volcano plugins pumice does not implement yet: a config naming one fails with this message.
NOT_YET: Final = frozenset(
    {
        "extender",
        "rescheduling",
        "tdm",
        "usage",
        "capacity-card",
    }
)


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    """A loaded configuration: a factory of fresh plugin tiers (plugins keep per-cycle state)."""

    spec: ConfSpec
    actions: tuple[Action, ...]
    # Which plugin takes part in which hook: the same for every cycle's fresh plugins (see hooks()).
    layout: HookLayout

    @property
    def action_names(self) -> tuple[str, ...]:
        """The actions' names, in the order of ``actions`` (what their latency metrics are labelled)."""
        return self.spec.actions

    def tiers(self) -> list[list[Plugin]]:
        return _tiers(self.spec)

    def hooks(self) -> Hooks:
        """Fresh plugins (they keep per-cycle state) in their hook tables, laid out once per conf."""
        return hooks_from(self.layout, self.tiers())


def _tiers(spec: ConfSpec) -> list[list[Plugin]]:
    out: list[list[Plugin]] = []
    for tier in spec.tiers:
        plugins = []
        for p in tier:
            plugin = PLUGINS[p.name](p.arguments)
            plugin.switches = p.switches
            plugins.append(plugin)
        out.append(plugins)
    return out


def load_conf(text: str | None = None) -> SchedulerConf:
    """Parse and check a Volcano scheduler conf; every problem raises ConfigError naming it."""
    spec = parse_conf(DEFAULT_CONF if text is None else text)
    seen: set[str] = set()
    for tier in spec.tiers:
        for p in tier:
            if p.name in NOT_YET:
                raise ConfigError(f"plugin {p.name!r} is a Volcano plugin pumice does not implement yet")
            if p.name not in PLUGINS:
                raise ConfigError(f"unknown plugin {p.name!r}; known plugins: {', '.join(sorted(PLUGINS))}")
            if p.name in seen:
                raise ConfigError(f"plugin {p.name!r} is listed twice")
            seen.add(p.name)
            try:
                PLUGINS[p.name](p.arguments)
            except ValueError as e:
                raise ConfigError(str(e)) from None
    return SchedulerConf(
        spec=spec,
        actions=resolve_actions(spec.actions, spec.configurations),
        layout=hook_layout(_tiers(spec)),
    )


def conf_keys() -> dict[str, tuple[str, ...]]:
    """Every key the loader accepts, by where it goes: ``top level``, ``every plugin`` (the switches beside
    a plugin's ``arguments``), a plugin's name (its arguments), ``action <name>`` (an action's
    ``configurations`` arguments) and ``configurations`` (entries accepted unread). Key families are
    listed as ``<prefix><name>``. The README's table of conf keys lists exactly these (a test checks)."""
    out: dict[str, tuple[str, ...]] = {
        "top level": tuple(TOP_LEVEL_KEYS),
        "every plugin": tuple(sorted(PLUGIN_SWITCHES)),
    }
    for name in sorted(PLUGINS):
        out[name] = PLUGINS[name].argument_table.names()
    for name, table in ACTION_ARGUMENTS.items():
        out[f"action {name}"] = table.names()
    out["configurations"] = tuple(sorted(UNREAD_CONFIGURATIONS))
    return out
