"""pytorch: the environment ``torch.distributed`` reads to form its process group.

Mirrors Volcano's ``pytorch`` job plugin. When the job has the master task, every container of every pod
gets ``MASTER_ADDR`` (the svc DNS name of master replica 0), ``MASTER_PORT``, ``WORLD_SIZE`` (master plus
worker replicas) and declares the port (``pytorchjob-port``); a master pod also gets ``RANK=0`` and worker
``i`` gets ``RANK=i+1``, which assumes one master, as PyTorch's launcher does. Without the master task the
plugin does nothing (Volcano only logs it). Init containers are left alone. Name resolution needs the svc
plugin, which admission adds to any job that enables this one.

With ``--wait-master-enabled`` each worker pod also gets an init container ``wait-for-master`` that polls
the master's port until it answers or ``--wait-master-timeout`` seconds pass (then the pod fails, and the job
policies decide), so workers do not crash-loop while the master is still being scheduled.

Arguments (Volcano's): ``--master`` (task name, default ``master``), ``--worker`` (default ``worker``),
``--port`` (default 23456), ``--wait-master-enabled`` (default false), ``--wait-master-timeout`` (seconds,
default 300), ``--wait-master-image`` (default ``busybox:1.36.1``; it needs ``sh`` and ``nc``).

Enable with::

    spec:
      plugins:
        pytorch: ["--master=master", "--worker=worker", "--port=23456"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import non_negative, not_empty, option, parse_flags, port_number, task_name
from extender.jobs.plugins.base import Obj, PluginContext
from extender.jobs.plugins.podedit import WAIT_FOR_MASTER, containers, domain_name, open_port, set_env_value

MASTER_ADDR: Final = "MASTER_ADDR"
MASTER_PORT: Final = "MASTER_PORT"
WORLD_SIZE: Final = "WORLD_SIZE"
RANK: Final = "RANK"
PORT_NAME: Final = "pytorchjob-port"
WAIT_CONTAINER: Final = WAIT_FOR_MASTER
_WAIT_TIMEOUT_ENV: Final = "WAIT_TIMEOUT"

# Reads its target from the init container's env rather than from text pasted into the script, so no
# argument value is ever interpreted by the shell.
_WAIT_SCRIPT: Final = """\
deadline=$(( $(date +%s) + WAIT_TIMEOUT ))
until nc -z -w 2 "$MASTER_ADDR" "$MASTER_PORT" 2>/dev/null; do
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "master $MASTER_ADDR:$MASTER_PORT still unreachable after ${WAIT_TIMEOUT}s" >&2
    exit 1
  fi
  sleep 2
done
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class PytorchArgs:
    master: str = option("master", check=task_name)
    worker: str = option("worker", check=task_name)
    port: int = option(23456, check=port_number)
    wait_master_enabled: bool = option(False)
    wait_master_timeout: int = option(300, check=non_negative)
    wait_master_image: str = option("busybox:1.36.1", check=not_empty)


@dataclass(frozen=True, slots=True)
class PytorchPlugin:
    args: PytorchArgs
    name = "pytorch"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> PytorchPlugin:
        return cls(parse_flags("pytorch", argv, PytorchArgs))

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        a = self.args
        master = job.task(a.master)
        if master is None:
            return
        addr = domain_name(job, master, 0)
        world = sum(t.replicas for t in job.tasks if t.name in (a.master, a.worker))
        rank = index + 1 if task.name == a.worker else 0 if task.name == a.master else None
        for c in containers(pod, init=False):
            open_port(c, PORT_NAME, a.port)
            set_env_value(c, MASTER_ADDR, addr)
            set_env_value(c, MASTER_PORT, str(a.port))
            set_env_value(c, WORLD_SIZE, str(world))
            if rank is not None:
                set_env_value(c, RANK, str(rank))
        if task.name == a.worker and a.wait_master_enabled:
            self._add_wait_container(pod, addr)

    def _add_wait_container(self, pod: Obj, addr: str) -> None:
        inits: list[Obj] = pod.setdefault("spec", {}).setdefault("initContainers", [])
        if any(c.get("name") == WAIT_CONTAINER for c in inits):
            return
        inits.append(
            {
                "name": WAIT_CONTAINER,
                "image": self.args.wait_master_image,
                "command": ["sh", "-c", _WAIT_SCRIPT],
                "env": [
                    {"name": MASTER_ADDR, "value": addr},
                    {"name": MASTER_PORT, "value": str(self.args.port)},
                    {"name": _WAIT_TIMEOUT_ENV, "value": str(self.args.wait_master_timeout)},
                ],
            }
        )

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return []
