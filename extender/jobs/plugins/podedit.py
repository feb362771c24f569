"""Idempotent edits of a raw Pod dict, and the DNS names the svc plugin gives a job's pods.

Volcano's plugins append to env, volumes, mounts and ports; applying one twice would duplicate entries, which
the API server rejects for volumes and ports. So every edit here is an upsert keyed the way Kubernetes keys
the list (env and volumes by name, mounts by volume name, ports by number): the result of a plugin is the
same whether it ran once or twice, and a plugin's env var still overrides one of the same name from the
template, as it does in Volcano, where the later duplicate wins.

Host names follow Volcano's svc plugin: replica ``i`` of task ``t`` is ``<job>-<t>-<i>.<job>``, where a
``hostname`` or ``subdomain`` in the task's pod template replaces the respective part.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from extender.jobs.model import Job, TaskSpec, pod_name

Obj = dict[str, Any]


# Containers a plugin adds itself (pytorch's wait for the master). The other plugins leave them alone: they
# need nothing from them, and editing them would make the result depend on the order the plugins ran in.
WAIT_FOR_MASTER: Final = "wait-for-master"
PLUGIN_CONTAINERS: Final = frozenset({WAIT_FOR_MASTER})


def containers(pod: Obj, *, init: bool = True) -> Iterator[Obj]:
    """The pod's containers, then (unless ``init`` is false) its init containers, except plugin-made ones."""
    spec = pod.get("spec") or {}
    yield from spec.get("containers") or []
    if init:
        yield from (c for c in spec.get("initContainers") or [] if c.get("name") not in PLUGIN_CONTAINERS)


def _upsert(items: list[Obj], key: str, entry: Obj) -> None:
    for i, item in enumerate(items):
        if item.get(key) == entry[key]:
            items[i] = entry
            return
    items.append(entry)


def set_env(container: Obj, entry: Obj) -> None:
    """Add env var ``entry`` (a full EnvVar), replacing any of the same name."""
    _upsert(container.setdefault("env", []), "name", entry)


def set_env_value(container: Obj, name: str, value: str) -> None:
    set_env(container, {"name": name, "value": value})


def set_volume(pod: Obj, volume: Obj) -> None:
    _upsert(pod.setdefault("spec", {}).setdefault("volumes", []), "name", volume)


def set_mount(container: Obj, mount: Obj) -> None:
    _upsert(container.setdefault("volumeMounts", []), "name", mount)


def open_port(container: Obj, name: str, port: int) -> None:
    """Declare ``port`` unless the container already exposes it (under whatever name), as Volcano does."""
    ports: list[Obj] = container.setdefault("ports", [])
    if not any(p.get("containerPort") == port for p in ports):
        ports.append({"name": name, "containerPort": port})


def env_key(task: str) -> str:
    """A task name as Volcano spells it inside env var names: ``-`` becomes ``_``, then upper case."""
    return task.replace("-", "_").upper()


def _template_spec(task: TaskSpec) -> Mapping[str, Any]:
    spec = task.template.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def host_and_subdomain(job: Job, task: TaskSpec, index: int) -> tuple[str, str]:
    """Hostname and subdomain of replica ``index`` of ``task``, as svc (or the pod template) sets them."""
    spec = _template_spec(task)
    return (
        str(spec.get("hostname") or pod_name(job.name, task.name, index)),
        str(spec.get("subdomain") or job.name),
    )


def domain_name(job: Job, task: TaskSpec, index: int) -> str:
    """The DNS name (relative to the namespace) of replica ``index`` of ``task``."""
    return ".".join(host_and_subdomain(job, task, index))


def task_host_pairs(job: Job, task: TaskSpec) -> list[tuple[str, str]]:
    """Every distinct (hostname, subdomain) of ``task``: one per replica, or a single one when the template
    fixes the hostname (every replica then answers to the same name)."""
    if task.replicas <= 0:
        return []
    count = 1 if _template_spec(task).get("hostname") else task.replicas
    return [host_and_subdomain(job, task, i) for i in range(count)]


def task_hosts(job: Job, task: TaskSpec) -> list[str]:
    """The DNS names of :func:`task_host_pairs`."""
    return [f"{host}.{sub}" for host, sub in task_host_pairs(job, task)]
