"""A conf's hook layout, computed once, deals every cycle's fresh plugins into the tables a fresh
:func:`build_hooks` makes of them: the same plugins in every hook, in the same order, and the same flags.

Over every registered plugin, alone and together, with its hook switches on and off: what
:meth:`Plugin.takes_part` says depends on the conf entry only, so the layout stands for every cycle.
"""

from __future__ import annotations

from dataclasses import fields

import pytest
import yaml

from extender.framework.hooks import Hooks, build_hooks, hooks_from
from extender.framework.plugin import HOOK_SWITCHES
from extender.plugins.registry import PLUGINS, load_conf

_SWITCHES = sorted(set(HOOK_SWITCHES.values()))


def _conf(names: list[str], off: str | None, args: dict[str, dict[str, object]] | None = None) -> str:
    tier = []
    for n in names:
        entry: dict[str, object] = {"name": n}
        if off is not None:
            entry[off] = False
        if args and n in args:
            entry["arguments"] = args[n]
        tier.append(entry)
    half = len(tier) // 2
    return yaml.safe_dump(
        {
            "actions": "enqueue, allocate, backfill",
            "tiers": [{"plugins": tier[:half]}, {"plugins": tier[half:]}],
        }
    )


def _names(v: object) -> object:
    """Plugins as (class, name), nested as the tables nest them: fresh instances compare by what they are."""
    if isinstance(v, tuple):
        return tuple(_names(i) for i in v)
    return (type(v).__name__, getattr(v, "name", None))


def _same(a: Hooks, b: Hooks) -> None:
    for f in fields(Hooks):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, tuple):
            assert _names(x) == _names(y), f.name
        else:
            assert x == y, f.name


@pytest.mark.parametrize("off", [None, *_SWITCHES])
def test_layout_deals_fresh_plugins_as_build_hooks_would(off: str | None) -> None:
    names = sorted(PLUGINS)
    conf = load_conf(_conf(names, off))
    for _ in range(2):
        hooks = conf.hooks()
        assert all(p is not q for p, q in zip(hooks.plugins, conf.hooks().plugins, strict=True))
        _same(hooks, build_hooks(conf.tiers()))


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_each_plugin_alone(name: str) -> None:
    conf = load_conf(_conf([name], None))
    _same(hooks_from(conf.layout, conf.tiers()), build_hooks(conf.tiers()))


def test_arguments_that_change_what_takes_part() -> None:
    """drf's hierarchy gives it a queue order; resource-strategy-fit's proportional predicate a node_fit."""
    for text in (
        "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: true\n",
        "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n    enableHierarchy: false\n",
    ):
        conf = load_conf(text)
        _same(conf.hooks(), build_hooks(conf.tiers()))
