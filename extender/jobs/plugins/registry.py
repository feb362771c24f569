"""The job plugins by name, and building a job's plugins from its ``spec.plugins``.

A literal table, so importing this module registers nothing anywhere. Volcano runs a job's plugins in Go map
order, that is in no fixed order; we run them in the table's order so a pod comes out the same every time:
the generic plugins first, then the frameworks, then ``hcclrank``, which reads the ``RANK`` a framework
plugin may have set. (The init container pytorch adds is skipped by the others whatever the order, see
:mod:`.podedit`.)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from extender.core.errors import ConfigError
from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.base import JobPlugin, PluginContext
from extender.jobs.plugins.env import EnvPlugin
from extender.jobs.plugins.hcclrank import HcclrankPlugin
from extender.jobs.plugins.mpi import MpiPlugin
from extender.jobs.plugins.pytorch import PytorchPlugin
from extender.jobs.plugins.ray import RayPlugin
from extender.jobs.plugins.ssh import SshPlugin
from extender.jobs.plugins.svc import SvcPlugin
from extender.jobs.plugins.tensorflow import TensorflowPlugin

Builder = Callable[[Sequence[str]], JobPlugin]

_BUILDERS: Final[Mapping[str, Builder]] = {
    "env": EnvPlugin.from_args,
    "svc": SvcPlugin.from_args,
    "ssh": SshPlugin.from_args,
    "mpi": MpiPlugin.from_args,
    "pytorch": PytorchPlugin.from_args,
    "tensorflow": TensorflowPlugin.from_args,
    "ray": RayPlugin.from_args,
    "hcclrank": HcclrankPlugin.from_args,
}

PLUGIN_NAMES: Final = frozenset(_BUILDERS)


def _unknown(name: str) -> str:
    return f"unknown job plugin {name!r} (known: {', '.join(sorted(PLUGIN_NAMES))})"


def build_plugin(name: str, args: Sequence[str]) -> JobPlugin:
    builder = _BUILDERS.get(name)
    if builder is None:
        raise ConfigError(_unknown(name))
    return builder(args)


def check_plugin(name: str, args: Sequence[str]) -> str | None:
    """Why ``spec.plugins[name] = args`` cannot run, or None when it can (for admission)."""
    try:
        build_plugin(name, args)
    except ConfigError as e:
        return str(e)
    return None


def build_plugins(job: Job) -> list[JobPlugin]:
    """The job's plugins in application order; ConfigError on the first unknown name or bad argument."""
    unknown = sorted(set(job.plugins) - PLUGIN_NAMES)
    if unknown:
        raise ConfigError(f"job {job.key}: {_unknown(unknown[0])}")
    return [build_plugin(name, job.plugins[name]) for name in _BUILDERS if name in job.plugins]


def apply_pod_plugins(
    plugins: Sequence[JobPlugin], pod: dict[str, Any], job: Job, task: TaskSpec, index: int
) -> None:
    """Run every plugin's pod hook on ``pod`` (replica ``index`` of ``task``), in order."""
    for plugin in plugins:
        plugin.on_pod(pod, job, task, index)


def plugin_objects(plugins: Sequence[JobPlugin], job: Job, ctx: PluginContext) -> list[dict[str, Any]]:
    """Every object the plugins want for ``job``, in plugin order."""
    return [obj for plugin in plugins for obj in plugin.objects(job, ctx)]
