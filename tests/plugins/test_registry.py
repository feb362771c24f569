"""Loading Volcano's scheduler conf: what loads, what fails (naming the culprit), and the switches."""

from __future__ import annotations

import importlib
import re

import pytest
import yaml

from extender.core.errors import ConfigError
from extender.framework import actions
from extender.framework.conf import DEFAULT_CONF, PLUGIN_SWITCHES
from extender.plugins.registry import NOT_YET, PLUGINS, load_conf
from tests.core.builders import conf_with, gang, node, pod, podgroup, priority_class, queue, run


def test_volcano_default_conf_loads() -> None:
    conf = load_conf(None)
    assert conf.spec.actions == ("enqueue", "allocate", "backfill")
    assert len(conf.actions) == 3 and conf.actions[0] is actions.enqueue
    names = [[p.name for p in tier] for tier in conf.spec.tiers]
    assert names == [
        ["priority", "gang", "conformance"],
        ["overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    assert load_conf(DEFAULT_CONF).spec == conf.spec
    assert [[type(p).name for p in tier] for tier in conf.tiers()] == names


def _enable_snippet(plugin: str) -> str:
    doc = importlib.import_module(PLUGINS[plugin].__module__).__doc__ or ""
    block = doc.split("Enable with::", 1)[1]
    lines = [line[4:] for line in block.splitlines() if line.strip()]
    return "\n".join("  " + line for line in lines)


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_every_plugin_docstring_yaml_loads(plugin: str) -> None:
    """Each plugin module shows the YAML that enables it: that YAML must load as written."""
    text = f'actions: "enqueue, allocate"\ntiers:\n- plugins:\n{_enable_snippet(plugin)}\n'
    conf = load_conf(text)
    assert [p.name for p in conf.spec.tiers[0]] == [plugin]


BAD: list[tuple[str, str, str]] = [
    ("not-yaml", "actions: [", "not valid YAML"),
    ("not-a-mapping", "- 1\n", "must be a mapping"),
    (
        "unknown-top-level",
        'actions: "allocate"\ntiers: []\nplugins: []\n',
        "unknown top-level keys ['plugins']",
    ),
    ("no-actions", "tiers: []\n", '"actions" must be a string'),
    ("actions-list", "actions: [allocate]\n", '"actions" must be a string'),
    ("unknown-action", 'actions: "enqueue, allocate, shuffle2"\n', "unknown action 'shuffle2'"),
    ("shuffle-not-yet", 'actions: "enqueue, allocate, shuffle"\n', "action 'shuffle' is a Volcano action"),
    (
        "action-argument-unknown",
        'actions: "enqueue, preempt"\nconfigurations:\n- name: preempt\n  arguments: {minRuntme: 5m}\n',
        "action preempt: unknown argument 'minRuntme' (known: enableTopologyAwarePreemption,",
    ),
    (
        "action-argument-bad-duration",
        'actions: "reclaim"\nconfigurations:\n- name: reclaim\n  arguments: {minRuntime: soon}\n',
        "action reclaim: argument minRuntime='soon' must be a duration such as 30s or 5m",
    ),
    (
        "configuration-of-unknown-action",
        'actions: "allocate"\nconfigurations:\n- name: shuffel\n',
        "configurations[0]: unknown action 'shuffel'",
    ),
    ("tiers-not-list", 'actions: "allocate"\ntiers: {a: 1}\n', "'tiers' must be a list"),
    ("tier-without-plugins", 'actions: "allocate"\ntiers:\n- {}\n', "tiers[0] must have a 'plugins' list"),
    (
        "plugin-without-name",
        'actions: "allocate"\ntiers:\n- plugins:\n  - {}\n',
        "tiers[0].plugins[0] needs a 'name'",
    ),
    ("unknown-plugin", conf_with("gang", "binpak"), "unknown plugin 'binpak'"),
    (
        "plugin-not-yet",
        conf_with("gang", "tdm"),
        "plugin 'tdm' is a Volcano plugin pumice does not",
    ),
    ("duplicate-plugin", conf_with("gang", "gang"), "plugin 'gang' is listed twice"),
    (
        "unknown-argument",
        conf_with("drf", arguments={"drf": {"drf.weight": 1}}),
        "plugin drf: unknown argument 'drf.weight'",
    ),
    (
        "arguments-not-mapping",
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    arguments: [1]\n',
        "arguments must be a mapping",
    ),
    (
        "unknown-switch",
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableGang: true\n',
        "(gang): unknown key 'enableGang'",
    ),
    (
        "switch-not-bool",
        'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    enableJobOrder: "no"\n',
        "enableJobOrder must be true or false",
    ),
    (
        "predicate-typo",
        conf_with("predicates", arguments={"predicates": {"predicate.GPUSharing": True}}),
        "unknown argument 'predicate.GPUSharing'",
    ),
    (
        "predicate-not-bool",
        conf_with("predicates", arguments={"predicates": {"predicate.CacheEnable": "yes"}}),
        "predicate.CacheEnable='yes' must be a bool",
    ),
]


@pytest.mark.parametrize(("text", "message"), [r[1:] for r in BAD], ids=[r[0] for r in BAD])
def test_bad_conf_fails_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_conf(text)


@pytest.mark.parametrize("plugin", sorted(NOT_YET))
def test_every_not_yet_plugin_fails_clearly(plugin: str) -> None:
    with pytest.raises(
        ConfigError, match=f"plugin '{plugin}' is a Volcano plugin pumice does not implement yet"
    ):
        load_conf(conf_with(plugin))


def test_predicates_volcano_arguments_load() -> None:
    """Volcano 1.8's GPU switches load too (issue #22: no Volcano conf refused); current Volcano no longer
    reads them, and neither does pumice (the deviceshare plugin has them)."""
    args = {
        "predicate.GPUSharingEnable": True,
        "predicate.VGPUEnable": True,
        "predicate.GPUNumberEnable": True,
        "predicate.CacheEnable": True,
        "predicate.ProportionalEnable": True,
        "predicate.resources": "nvidia.com/gpu",
        "predicate.resources.nvidia.com/gpu.cpu": "4",
        "predicate.NodeAffinityEnable": True,
    }
    load_conf(conf_with("predicates", arguments={"predicates": args}))


@pytest.mark.parametrize("switch", sorted(PLUGIN_SWITCHES))
def test_volcano_switch_spellings_load(switch: str) -> None:
    """Every PluginOption key of Volcano's conf loads (most spelt ``enable…``, a few ``enabled…``)."""
    load_conf(f'actions: "allocate"\ntiers:\n- plugins:\n  - name: gang\n    {switch}: false\n')


@pytest.mark.parametrize(
    "switch",
    [
        "enableJobOrder",
        "enableQueueOrder",
        "enableNodeOrder",
        "enablePredicate",
        "enableJobEnqueued",
        "enableHierarchy",
    ],
)
def test_common_volcano_switches_are_known(switch: str) -> None:
    assert switch in PLUGIN_SWITCHES


def _switched(plugin: str, switch: str, extra: tuple[str, ...] = ()) -> str:
    """One tier: ``plugin`` with ``switch: false``, then the ``extra`` plugins."""
    tier = [{"name": plugin, switch: False}, *({"name": n} for n in extra)]
    return yaml.safe_dump({"actions": "enqueue, allocate, backfill", "tiers": [{"plugins": tier}]})


def test_enable_job_order_false_drops_the_plugin_from_job_order() -> None:
    old, po = gang("old", 3)
    young, py = gang("young", 3)
    young["metadata"]["creationTimestamp"] = "2024-01-02T00:00:00Z"
    young["spec"]["priorityClassName"] = "high"
    pcs = [priority_class("high", 1000)]
    on = run([node("n0", cpu="4")], po + py, [old, young], conf=conf_with("priority"), priority_classes=pcs)
    off = run(
        [node("n0", cpu="4")],
        po + py,
        [old, young],
        conf=_switched("priority", "enableJobOrder"),
        priority_classes=pcs,
    )
    assert {u.split("-")[0] for u in on.placements} == {"young"}
    assert {u.split("-")[0] for u in off.placements} == {"old"}


def test_enable_node_order_false_drops_the_plugin_from_scoring() -> None:
    nodes = [node("busy", cpu="8"), node("idle", cpu="8")]
    busy = pod("sys", cpu="3", node="busy", phase="Running", scheduler="other")
    pg = podgroup("j", 1, phase="Inqueue")
    pods = [busy, pod("j-0", group="j")]
    conf = _switched("binpack", "enableNodeOrder", extra=("nodeorder",))
    assert run(nodes, pods, [pg], conf=conf).placements == {"j-0": "idle"}
    conf = _switched("nodeorder", "enableNodeOrder", extra=("binpack",))
    assert run(nodes, pods, [pg], conf=conf).placements == {"j-0": "busy"}


def test_enable_job_enqueued_false_drops_the_plugin_from_admission() -> None:
    pg = podgroup("g", 1, min_resources={"cpu": "100"})
    assert run([node("n0")], [], [pg], conf=conf_with("overcommit")).admitted == set()
    assert run([node("n0")], [], [pg], conf=_switched("overcommit", "enableJobEnqueued")).admitted == {
        "default/g"
    }


def test_enabled_allocatable_false_drops_the_plugin_from_allocation() -> None:
    pg, pods = gang("j", 3, queue="q")
    queues = [queue("q", capability={"cpu": "2"})]
    assert run([node("n0", cpu="8")], pods, [pg], queues, conf=conf_with("proportion")).placements == {}
    result = run(
        [node("n0", cpu="8")], pods, [pg], queues, conf=_switched("proportion", "enabledAllocatable")
    )
    assert len(result.placements) == 3
