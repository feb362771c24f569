"""mpi: what ``mpirun`` on the master needs to reach its workers over ssh.

Mirrors Volcano's ``mpi`` job plugin. Every container and init container of every pod declares the ssh port
(``mpijob-port``); on the master pod they also get ``MPI_HOST``, the worker task's svc DNS names joined by
commas (empty for zero workers). A master pod of a job without the worker task is left untouched, as in
Volcano. The host file for ``mpirun --hostfile`` is not written here: it is the svc plugin's
``/etc/volcano/<worker>.host``. Admission adds the svc and ssh plugins to any job that enables this one, and
refuses a job without the master task.

Arguments (Volcano's): ``--master`` (task name, default ``master``), ``--worker`` (default ``worker``),
``--port`` (the sshd port, default 22).

Enable with::

    spec:
      plugins:
        mpi: ["--master=mpimaster", "--worker=mpiworker", "--port=22"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import option, parse_flags, port_number, task_name
from extender.jobs.plugins.base import Obj, PluginContext
from extender.jobs.plugins.podedit import containers, open_port, set_env_value, task_hosts

MPI_HOST: Final = "MPI_HOST"
PORT_NAME: Final = "mpijob-port"


@dataclass(frozen=True, slots=True, kw_only=True)
class MpiArgs:
    master: str = option("master", check=task_name)
    worker: str = option("worker", check=task_name)
    port: int = option(22, check=port_number)


@dataclass(frozen=True, slots=True)
class MpiPlugin:
    args: MpiArgs
    name = "mpi"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> MpiPlugin:
        return cls(parse_flags("mpi", argv, MpiArgs))

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        hosts: str | None = None
        if task.name == self.args.master:
            worker = job.task(self.args.worker)
            if worker is None:
                return
            hosts = ",".join(task_hosts(job, worker))
        for c in containers(pod):
            open_port(c, PORT_NAME, self.args.port)
            if hosts is not None:
                set_env_value(c, MPI_HOST, hosts)

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return []
