"""hcclrank: tell Ascend's HCCL (collective communication on NPUs) each pod's rank, as an annotation.

Mirrors Volcano's ``hcclrank`` job plugin. Each pod gets the annotation ``hccl/rankIndex``, which Ascend's
device plugin reads to order the ranks of a job:

- a pod that already carries a non-empty ``hccl/rankIndex`` (from its template) keeps it;
- else, when a container (not an init container) sets ``RANK``, that value: the first ``RANK`` of the
  containers in order decides, and one without a literal ``value`` (a ``valueFrom``) counts as unset;
- else replica ``i`` of the master task is rank ``i`` and replica ``i`` of the worker task is rank
  ``<master replicas> + i`` (just ``i`` without a master task); pods of any other task get nothing.

Volcano runs a job's plugins in no fixed order, so whether it sees the ``RANK`` the pytorch plugin sets
depends on chance; we run this plugin after the framework plugins (see :mod:`.registry`), so it always does.
With one master replica both give the same ranks. The plugin creates no objects.

Arguments (Volcano's): ``--master`` (task name, default ``master``), ``--worker`` (default ``worker``).

Enable with::

    spec:
      plugins:
        hcclrank: ["--master=master", "--worker=worker"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import option, parse_flags, task_name
from extender.jobs.plugins.base import Obj, PluginContext
from extender.jobs.plugins.podedit import containers

RANK_ANNOTATION: Final = "hccl/rankIndex"
RANK_ENV: Final = "RANK"


@dataclass(frozen=True, slots=True, kw_only=True)
class HcclrankArgs:
    master: str = option("master", check=task_name)
    worker: str = option("worker", check=task_name)


def env_rank(pod: Obj) -> str:
    """The literal value of the first ``RANK`` of the pod's containers; empty when there is none."""
    for c in containers(pod, init=False):
        for e in c.get("env") or []:
            if e.get("name") == RANK_ENV:
                return str(e.get("value") or "")
    return ""


@dataclass(frozen=True, slots=True)
class HcclrankPlugin:
    args: HcclrankArgs
    name = "hcclrank"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> HcclrankPlugin:
        return cls(parse_flags("hcclrank", argv, HcclrankArgs))

    def rank(self, job: Job, task: TaskSpec, index: int) -> int | None:
        """The rank of replica ``index`` of ``task`` by position, or None for a task of neither role."""
        a = self.args
        if task.name == a.master:
            return index
        if task.name == a.worker:
            master = job.task(a.master)
            return (master.replicas if master is not None else 0) + index
        return None

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        metadata = pod.setdefault("metadata", {})
        annotations = metadata.get("annotations") or {}
        if annotations.get(RANK_ANNOTATION):
            return
        rank = env_rank(pod)
        if not rank:
            by_position = self.rank(job, task, index)
            if by_position is None:
                return
            rank = str(by_position)
        metadata["annotations"] = {**annotations, RANK_ANNOTATION: rank}

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return []
