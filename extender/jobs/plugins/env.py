"""env: tell each container which replica of its task it is.

Mirrors Volcano's ``env`` job plugin: every container and init container gets ``VC_TASK_INDEX`` and its older
spelling ``VK_TASK_INDEX``, both the replica index. It takes no arguments and creates no objects.

Enable with::

    spec:
      plugins:
        env: []
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import parse_flags
from extender.jobs.plugins.base import Obj, PluginContext
from extender.jobs.plugins.podedit import containers, set_env_value

TASK_INDEX_ENV: Final = "VC_TASK_INDEX"
LEGACY_TASK_INDEX_ENV: Final = "VK_TASK_INDEX"


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvArgs:
    pass


@dataclass(frozen=True, slots=True)
class EnvPlugin:
    args: EnvArgs
    name = "env"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> EnvPlugin:
        return cls(parse_flags("env", argv, EnvArgs))

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        for c in containers(pod):
            set_env_value(c, LEGACY_TASK_INDEX_ENV, str(index))
            set_env_value(c, TASK_INDEX_ENV, str(index))

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return []
