"""svc: give every pod of a job a stable DNS name and tell it the names of all the others.

Mirrors Volcano's ``svc`` job plugin:

- a headless Service named after the job, selecting its pods by ``volcano.sh/job-name`` and
  ``volcano.sh/job-namespace`` (no ports: a headless Service needs none for per-pod DNS records);
- each pod's ``hostname`` (its own name) and ``subdomain`` (the job name), unless its template set them, so
  replica ``i`` of task ``t`` resolves as ``<job>-<t>-<i>.<job>``;
- a ConfigMap ``<job>-svc`` mounted at ``/etc/volcano`` with, per task, ``<t>.host`` (the hosts, one a line),
  ``VC_<T>_HOSTS`` (comma separated) and ``VC_<T>_NUM`` (how many), where ``<t>``/``<T>`` spell the task name
  with ``-`` as ``_`` (and upper case for ``<T>``); the last two also become env vars of every container,
  as ``configMapKeyRef`` references (resolved when a container starts, so a restarted container sees the
  lists of the job as it is then, not as it was when the pod was made);
- a NetworkPolicy named after the job that admits ingress only from the job's own pods.

Arguments (Volcano's): ``--publish-not-ready-addresses`` (default false: only ready pods get DNS records),
``--disable-network-policy`` (default false), ``--inject-hosts-env`` (default true; turn it off when a large
job's host lists would overflow the environment).

Enable with::

    spec:
      plugins:
        svc: ["--publish-not-ready-addresses=true", "--disable-network-policy=true"]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.api import labels as L
from extender.jobs.model import Job, TaskSpec, pod_name
from extender.jobs.plugins.args import option, parse_flags
from extender.jobs.plugins.base import Obj, PluginContext, owned_metadata
from extender.jobs.plugins.podedit import containers, env_key, set_env, set_mount, set_volume, task_hosts

MOUNT_PATH: Final = "/etc/volcano"


@dataclass(frozen=True, slots=True, kw_only=True)
class SvcArgs:
    publish_not_ready_addresses: bool = option(False)
    disable_network_policy: bool = option(False)
    inject_hosts_env: bool = option(True)


def config_map_name(job: Job) -> str:
    return f"{job.name}-svc"


def hosts_env(task: str) -> str:
    return f"VC_{env_key(task)}_HOSTS"


def num_env(task: str) -> str:
    return f"VC_{env_key(task)}_NUM"


def hosts_data(job: Job) -> dict[str, str]:
    """The ConfigMap's data: per task its host file, host list and host count."""
    data: dict[str, str] = {}
    for task in job.tasks:
        hosts = task_hosts(job, task)
        data[f"{task.name.replace('-', '_')}.host"] = "\n".join(hosts)
        data[hosts_env(task.name)] = ",".join(hosts)
        data[num_env(task.name)] = str(len(hosts))
    return data


def _job_selector(job: Job) -> dict[str, str]:
    return {L.JOB_NAME_KEY: job.name, L.JOB_NAMESPACE_KEY: job.namespace}


@dataclass(frozen=True, slots=True)
class SvcPlugin:
    args: SvcArgs
    name = "svc"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> SvcPlugin:
        return cls(parse_flags("svc", argv, SvcArgs))

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        spec = pod.setdefault("spec", {})
        if not spec.get("hostname"):
            spec["hostname"] = (pod.get("metadata") or {}).get("name") or pod_name(job.name, task.name, index)
        if not spec.get("subdomain"):
            spec["subdomain"] = job.name
        cm = config_map_name(job)
        set_volume(pod, {"name": cm, "configMap": {"name": cm}})
        for c in containers(pod):
            if self.args.inject_hosts_env:
                for t in job.tasks:
                    for env in (hosts_env(t.name), num_env(t.name)):
                        set_env(c, {"name": env, "valueFrom": {"configMapKeyRef": {"name": cm, "key": env}}})
            set_mount(c, {"name": cm, "mountPath": MOUNT_PATH})

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        out: list[Obj] = [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": owned_metadata(job, config_map_name(job)),
                "data": hosts_data(job),
            },
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": owned_metadata(job, job.name),
                "spec": {
                    "clusterIP": "None",
                    "selector": _job_selector(job),
                    "publishNotReadyAddresses": self.args.publish_not_ready_addresses,
                },
            },
        ]
        if not self.args.disable_network_policy:
            out.append(
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": owned_metadata(job, job.name),
                    "spec": {
                        "podSelector": {"matchLabels": _job_selector(job)},
                        "ingress": [{"from": [{"podSelector": {"matchLabels": _job_selector(job)}}]}],
                        "policyTypes": ["Ingress"],
                    },
                }
            )
        return out
