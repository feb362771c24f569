"""tensorflow: the ``TF_CONFIG`` that ``tf.distribute`` reads to find its cluster and its own place in it.

Mirrors Volcano's ``tensorflow`` job plugin. Every container (not init container) of every pod gets
``TF_CONFIG``, compact JSON ``{"cluster": {...}, "task": {"type": ..., "index": i}}``: the cluster lists, for
each role whose task exists and has replicas, in the order ps, worker, chief, evaluator, the
``<svc dns name>:<port>`` of every replica; the task type is the pod's role, or its task name when the task
plays no role. A job of one task with one replica is stand-alone and gets nothing. Name resolution needs
the svc plugin, which admission adds to any job that enables this one. No port is declared, as in Volcano.

Arguments (Volcano's): ``--ps``, ``--worker``, ``--chief``, ``--evaluator`` (task names, defaulting to the
role names) and ``--port`` (default 2222).

Enable with::

    spec:
      plugins:
        tensorflow: ["--ps=ps", "--worker=worker", "--port=2222"]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import option, parse_flags, port_number, task_name
from extender.jobs.plugins.base import Obj, PluginContext
from extender.jobs.plugins.podedit import containers, domain_name, set_env_value

TF_CONFIG: Final = "TF_CONFIG"
_ROLES: Final = ("ps", "worker", "chief", "evaluator")
_TYPE_ORDER: Final = ("chief", "worker", "ps", "evaluator")


@dataclass(frozen=True, slots=True, kw_only=True)
class TensorflowArgs:
    ps: str = option("ps", check=task_name)
    worker: str = option("worker", check=task_name)
    chief: str = option("chief", check=task_name)
    evaluator: str = option("evaluator", check=task_name)
    port: int = option(2222, check=port_number)


@dataclass(frozen=True, slots=True)
class TensorflowPlugin:
    args: TensorflowArgs
    name = "tensorflow"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> TensorflowPlugin:
        return cls(parse_flags("tensorflow", argv, TensorflowArgs))

    def _role_of(self, task: str, order: Sequence[str]) -> str | None:
        a = self.args
        names = {"ps": a.ps, "worker": a.worker, "chief": a.chief, "evaluator": a.evaluator}
        return next((role for role in order if names[role] == task), None)

    def tf_config(self, job: Job, task: TaskSpec, index: int) -> str:
        # Volcano tries the roles in one order to file a task in the cluster and in another to name a pod's
        # type; the orders only matter when one task name is given to several roles, but then they decide.
        cluster: dict[str, list[str]] = {}
        for t in job.tasks:
            role = self._role_of(t.name, _ROLES)
            if role is not None and t.replicas > 0:
                cluster[role] = [f"{domain_name(job, t, i)}:{self.args.port}" for i in range(t.replicas)]
        spec = {
            "cluster": {role: cluster[role] for role in _ROLES if role in cluster},
            "task": {"type": self._role_of(task.name, _TYPE_ORDER) or task.name, "index": index},
        }
        return json.dumps(spec, separators=(",", ":"))

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        if len(job.tasks) == 1 and job.tasks[0].replicas == 1:
            return
        value = self.tf_config(job, task, index)
        for c in containers(pod, init=False):
            set_env_value(c, TF_CONFIG, value)

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return []
