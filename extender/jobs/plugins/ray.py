"""ray: start a Ray cluster from a job's head and worker tasks, and expose the head.

Mirrors Volcano's ``ray`` job plugin:

- in every pod of the head task, the head container (found by name) declares the GCS port (``gcs``), the
  dashboard port (``dashboard``) and the client server port (``client-server``), each unless it already
  exposes that number, and runs ``sh -c "ray start --head --block --dashboard-host=0.0.0.0 --port=<gcs>
  --dashboard-port=<dashboard> --ray-client-server-port=<client>"``;
- in every pod of the worker task, the worker container runs ``sh -c "ray start --block
  --address=<head>:<gcs>"``, where ``<head>`` is the svc DNS name of head replica 0
  (``<job>-<head task>-0.<job>``, or the head template's ``hostname``/``subdomain``);
- a Service ``<job>-head-svc`` selecting the head task's pods (``volcano.sh/job-name``,
  ``volcano.sh/job-namespace``, ``volcano.sh/task-spec``) with the three ports, TCP, so users reach the
  dashboard and the client server through one stable name.

The container's ``command`` is replaced, as in Volcano; its ``args``, if any, then only become ``sh``'s
positional parameters, which the script ignores. A task without the named container is left as it is (a way
to keep one's own ``ray start`` line and still get the head Service). The worker reaches the head by its svc
DNS name, so the job needs the svc plugin, which admission adds to any job that enables this one.

Deliberate differences from Volcano: a job without the head task is refused at admission (Volcano accepts
it, then fails to create every one of its pods); so are ports that coincide (ray cannot listen twice on one
port, and the Service would be invalid). The Service's ``targetPort`` is the port number rather than
Volcano's port name, which resolves to the same port whenever Volcano's does and still works when the head
container already exposed that number under another name. The head address is shell-quoted in the worker's
command; a valid DNS name comes out unchanged.

Arguments (Volcano's, in its camelCase): ``--head`` (task name, default ``head``), ``--worker`` (default
``worker``), ``--headContainer`` (default ``head``), ``--workerContainer`` (default ``worker``), ``--port``
(GCS, default 6379), ``--dashboardPort`` (default 8265), ``--clientPort`` (default 10001; Volcano's user
guide calls it ``--clientServerPort``, which its code does not read, and we refuse).

Enable with::

    spec:
      plugins:
        ray: ["--head=head", "--worker=worker", "--dashboardPort=8265"]
        svc: []
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.api import labels as L
from extender.core.errors import ConfigError
from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import not_empty, option, parse_flags, port_number, task_name
from extender.jobs.plugins.base import Obj, PluginContext, owned_metadata
from extender.jobs.plugins.podedit import containers, domain_name, open_port

GCS_PORT_NAME: Final = "gcs"
DASHBOARD_PORT_NAME: Final = "dashboard"
CLIENT_PORT_NAME: Final = "client-server"


@dataclass(frozen=True, slots=True, kw_only=True)
class RayArgs:
    head: str = option("head", check=task_name)
    worker: str = option("worker", check=task_name)
    head_container: str = option("head", check=not_empty, flag="headContainer")
    worker_container: str = option("worker", check=not_empty, flag="workerContainer")
    port: int = option(6379, check=port_number)
    dashboard_port: int = option(8265, check=port_number, flag="dashboardPort")
    client_port: int = option(10001, check=port_number, flag="clientPort")

    def ports(self) -> list[tuple[str, int]]:
        """The head's ports by name, in the order they are declared."""
        return [
            (GCS_PORT_NAME, self.port),
            (DASHBOARD_PORT_NAME, self.dashboard_port),
            (CLIENT_PORT_NAME, self.client_port),
        ]


def head_service_name(job: Job) -> str:
    return f"{job.name}-head-svc"


def head_address(job: Job, head: TaskSpec, port: int) -> str:
    """Where a worker finds the GCS: head replica 0's svc DNS name and the GCS port."""
    return f"{domain_name(job, head, 0)}:{port}"


@dataclass(frozen=True, slots=True)
class RayPlugin:
    args: RayArgs
    name = "ray"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> RayPlugin:
        args = parse_flags("ray", argv, RayArgs)
        if len({port for _, port in args.ports()}) < 3:
            raise ConfigError(
                f"job plugin ray: --port={args.port}, --dashboardPort={args.dashboard_port} and "
                f"--clientPort={args.client_port} must be three different ports"
            )
        return cls(args)

    def head_command(self) -> list[str]:
        a = self.args
        return [
            "sh",
            "-c",
            f"ray start --head --block --dashboard-host=0.0.0.0 --port={a.port} "
            f"--dashboard-port={a.dashboard_port} --ray-client-server-port={a.client_port}",
        ]

    def worker_command(self, job: Job, head: TaskSpec) -> list[str]:
        address = shlex.quote(head_address(job, head, self.args.port))
        return ["sh", "-c", f"ray start --block --address={address}"]

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        a = self.args
        head = job.task(a.head)
        if head is None:
            return  # refused at admission; a pod of such a job is left alone
        for c in containers(pod, init=False):
            # Not elif: with one task named as both roles Volcano applies both, the worker's command last.
            if task.name == a.head and c.get("name") == a.head_container:
                for port_name, port in a.ports():
                    open_port(c, port_name, port)
                c["command"] = self.head_command()
            if task.name == a.worker and c.get("name") == a.worker_container:
                c["command"] = self.worker_command(job, head)

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        return [
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": owned_metadata(job, head_service_name(job)),
                "spec": {
                    "selector": {
                        L.JOB_NAME_KEY: job.name,
                        L.JOB_NAMESPACE_KEY: job.namespace,
                        L.TASK_SPEC_ANNOTATION: self.args.head,
                    },
                    "ports": [
                        {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
                        for name, port in self.args.ports()
                    ],
                },
            }
        ]
