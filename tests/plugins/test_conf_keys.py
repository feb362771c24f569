"""No Volcano conf refused (issue #22): every key Volcano reads for the plugins and actions pumice has
loads, and the docs' table of conf keys (docs/src/reference/volcano-conf-keys.md) lists exactly what the
loader accepts.

The conf below uses every key of Volcano's volcano-scheduler.conf documentation for pumice's plugins
(docs/user-guide: how_to_use_capacity_plugin.md, how_to_use_dra_quota.md, how_to_enable_dra.md,
how_to_use_gpu_sharing.md, how_to_use_gpu_number.md, how_to_use_volcano_vgpu.md, how_to_use_vnpu.md,
how_to_use_network_topology_aware_scheduling.md, how_to_use_nodegroup_plugin.md,
how_to_use_numa_aware.md, how_to_use_resource_strategy_fit_plugin.md, how_to_use_task_topology_plugin.md,
how_to_use_cdp_plugin.md; docs/design/sla-plugin.md, proportional.md) and every key its code reads for
them (pkg/scheduler/plugins/*: the argument constants; pkg/scheduler/actions/*: parseArguments;
pkg/scheduler/conf/scheduler_conf.go: PluginOption), with the values the docs show.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from extender.core.errors import ConfigError
from extender.framework import evict
from extender.plugins.capacity import CapacityPlugin
from extender.plugins.registry import conf_keys, load_conf

CONF_KEYS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "src" / "reference" / "volcano-conf-keys.md"

EVERY_DOCUMENTED_KEY = """\
actions: "enqueue, allocate, backfill, preempt, reclaim"
tiers:
- plugins:
  - name: priority
    enableJobOrder: true
    enableTaskOrder: true
    enablePreemptable: true
  - name: gang
    enablePreemptable: false
    enableJobReady: true
    enableJobPipelined: true
    enableJobStarving: true
    enabledSubJobReady: true
    enabledSubJobPipelined: true
    enabledSubJobOrder: true
  - name: conformance
    enabledVictim: true
  - name: cdp
  - name: sla
    arguments:
      sla-waiting-time: 1h2m3s
- plugins:
  - name: overcommit
    enableJobEnqueued: true
    arguments:
      overcommit-factor: 1.2
  - name: drf
    enablePreemptable: false
    enableHierarchy: false
    enableNamespaceOrder: true
  - name: predicates
    enablePredicate: true
    arguments:
      predicate.NodeAffinityEnable: true
      predicate.NodePortsEnable: true
      predicate.TaintTolerationEnable: true
      predicate.PodAffinityEnable: true
      predicate.NodeVolumeLimitsEnable: true
      predicate.VolumeZoneEnable: true
      predicate.PodTopologySpreadEnable: true
      predicate.VolumeBindingEnable: true
      predicate.DynamicResourceAllocationEnable: true
      predicate.CacheEnable: true
      predicate.GPUSharingEnable: true
      predicate.GPUNumberEnable: true
      predicate.VGPUEnable: false
      volumebinding.weight: 1
      volumebinding.bindTimeoutSeconds: 600
      volumebinding.shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]
      dynamicresources.filterTimeoutSeconds: 10
      predicate.ProportionalEnable: true
      predicate.resources: nvidia.com/gpu
      predicate.resources.nvidia.com/gpu.cpu: 4
      predicate.resources.nvidia.com/gpu.memory: 8
  - name: capacity
    enableHierarchy: true
    enableQueueOrder: true
    enableReclaimable: true
    enablePreemptive: true
    enabledAllocatable: true
    enabledOverused: true
    arguments:
      ancestorReclaimLevel: 1
      capacity.DynamicResourceAllocationEnable: true
      capacity.DRAConsumableCapacityEnable: true
  - name: nodeorder
    enableNodeOrder: true
    arguments:
      leastrequested.weight: 1
      mostrequested.weight: 0
      balancedresource.weight: 1
      nodeaffinity.weight: 2
      podaffinity.weight: 2
      tainttoleration.weight: 3
      imagelocality.weight: 1
      podtopologyspread.weight: 2
      volumebinding.weight: 1
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1
      binpack.memory: 1
      binpack.resources: nvidia.com/gpu, example.com/foo
      binpack.resources.nvidia.com/gpu: 2
      binpack.resources.example.com/foo: 3
  - name: deviceshare
    arguments:
      deviceshare.GPUSharingEnable: true
      deviceshare.GPUNumberEnable: true
      deviceshare.VGPUEnable: true
      deviceshare.NodeLockEnable: false
      deviceshare.SchedulePolicy: binpack
      deviceshare.ScheduleWeight: 10
      deviceshare.KnownGeometriesCMNamespace: kube-system
      deviceshare.KnownGeometriesCMName: hami-scheduler-device
      deviceshare.AscendHAMiVNPUEnable: true
      deviceshare.AscendMindClusterVNPUEnable: true
      deviceshare.GPUExclusiveRules:
        - workloadType: training
        - workloadType: batch
          priority: high
  - name: network-topology-aware
    enabledHyperNodeOrder: true
    enabledHyperNodeGradient: true
    arguments:
      weight: 10
      hypernode.binpack.cpu: 5
      hypernode.binpack.memory: 1
      hypernode.binpack.resources: nvidia.com/gpu, example.com/foo
      hypernode.binpack.resources.nvidia.com/gpu: 2
      hypernode.binpack.resources.example.com/foo: 3
      hypernode.binpack.normal-pod.enable: true
      hypernode.binpack.normal-pod.fading: 0.8
      hypernode.gradient.evict.max-hypernodes: 8
  - name: nodegroup
    enableHierarchy: true
    arguments:
      strict: false
      enablePreferredOrder: true
  - name: numa-aware
    arguments:
      weight: 10
  - name: task-topology
    arguments:
      task-topology.weight: 10
  - name: resource-strategy-fit
    arguments:
      resourceStrategyFitWeight: 10
      resources:
        cpu: {type: LeastAllocated, weight: 1}
        memory: {type: LeastAllocated, weight: 1}
        nvidia.com/gpu: {type: MostAllocated, weight: 2}
        nvidia.com/gpu/*: {type: MostAllocated, weight: 3}
      sra:
        enable: true
        resources: nvidia.com/t4, nvidia.com/a10
        weight: 2
        resourceWeight: {nvidia.com/t4: 1, nvidia.com/a10: 1}
      proportional:
        enable: true
        resources: nvidia.com/gpu,nvidia.com/v100-sxm2-16gb
        resourceProportion:
          nvidia.com/gpu.cpu: 8
          nvidia.com/gpu.memory: 8
          nvidia.com/v100-sxm2-16gb.cpu: 16
          nvidia.com/v100-sxm2-16gb.memory: 16
  - name: pdb
    enableBestNode: true
    enableTargetJob: true
    enableReservedNodes: true
    enabledClusterOrder: true
  - name: resourcequota
configurations:
- name: enqueue
- name: allocate
  arguments: {predicateErrorCacheEnable: true}
- name: backfill
  arguments: {predicateErrorCacheEnable: "true"}
- name: preempt
  arguments:
    predicateErrorCacheEnable: true
    enableTopologyAwarePreemption: true
    topologyAwarePreemptWorkerNum: 16
    minCandidateNodesPercentage: 10
    minCandidateNodesAbsolute: 1
    maxCandidateNodesAbsolute: 100
- name: reclaim
  arguments: {predicateErrorCacheEnable: false}
- name: gangpreempt
  arguments: {maxDomains: 4, allowWholeBundle: true}
- name: init-params
  arguments: {"grace-over-time": "900", "presetVirtualDevice": "false"}
metrics:
  type: prometheus
  address: http://192.168.0.10:9090
  interval: 30s
"""


def test_a_conf_with_every_documented_volcano_key_loads() -> None:
    conf = load_conf(EVERY_DOCUMENTED_KEY)
    plugins = {type(p).name: p for tier in conf.tiers() for p in tier}
    capacity = plugins["capacity"]
    assert isinstance(capacity, CapacityPlugin) and capacity.ancestor_levels == 1 and capacity.hierarchy
    preempt = conf.actions[3]
    assert preempt.func is evict.preempt  # type: ignore[attr-defined]  # a functools.partial
    assert preempt.keywords["args"].topology_aware is True  # type: ignore[attr-defined]


def test_topology_aware_preemption_is_off_by_default() -> None:
    """Volcano's preempt.go: enableTopologyAwarePreemption defaults to false."""
    conf = load_conf('actions: "enqueue, allocate, preempt"\ntiers: []\n')
    assert conf.actions[2].keywords["args"] == evict.EvictArgs()  # type: ignore[attr-defined]


BAD: list[tuple[str, str, str]] = [
    ("level-not-int", "capacity", "{ancestorReclaimLevel: one}"),
    ("level-negative", "capacity", "{ancestorReclaimLevel: -1}"),
    ("rules-not-a-list", "deviceshare", "{deviceshare.GPUExclusiveRules: {a: b}}"),
    ("fading-not-a-number", "network-topology-aware", "{hypernode.binpack.normal-pod.fading: much}"),
    ("bool-word-go-does-not-read", "predicates", "{predicate.CacheEnable: yes please}"),
]


@pytest.mark.parametrize(("plugin", "arguments"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_only_malformed_values_are_refused(plugin: str, arguments: str) -> None:
    text = f'actions: "allocate"\ntiers:\n- plugins:\n  - name: {plugin}\n    arguments: {arguments}\n'
    with pytest.raises(ConfigError, match=f"plugin {plugin}"):
        load_conf(text)


def _docs_table() -> set[tuple[str, str]]:
    section = CONF_KEYS_PAGE.read_text()
    rows: set[tuple[str, str]] = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3 or cells[0] in ("Where", "---"):
            continue
        for key in re.findall(r"`([^`]+)`", cells[1]):
            rows.add((cells[0], key))
    return rows


def test_the_docs_list_every_key_the_loader_accepts_and_no_other() -> None:
    accepted = {(where, key) for where, keys in conf_keys().items() for key in keys}
    listed = _docs_table()
    assert accepted - listed == set(), "accepted by the loader, missing from the docs' table"
    assert listed - accepted == set(), "in the docs' table, not accepted by the loader"


def test_every_accepted_key_loads_on_its_own() -> None:
    """Each key of the loader's tables, given alone with a value of its type, loads (the table and the
    parsing are one)."""
    from extender.framework.action_table import ACTION_ARGUMENTS
    from extender.plugins.registry import PLUGINS

    samples = {bool: False, int: 1, float: 1.0, str: "cpu", list: [], dict: {}}
    for name, cls in PLUGINS.items():
        for key, (typ, _) in cls.argument_table.keys.items():
            value = samples.get(typ, "1s")
            if name == "resource-strategy-fit" and key in ("sra", "proportional"):
                value = {"enable": False}
            if name == "deviceshare" and key == "deviceshare.SchedulePolicy":
                value = "spread"
            if name == "predicates" and key == "predicate.resources":
                value = ""
            if name == "sla":
                value = "1h"
            cls({key: value})
    for name, table in ACTION_ARGUMENTS.items():
        for key, (typ, _) in table.keys.items():
            table.parse(name, {key: samples.get(typ, "1s")}, kind="action")
