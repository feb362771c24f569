"""``spec.plugins`` of a vcjob: every plugin is one pumice knows, with arguments it accepts
(:mod:`extender.jobs.plugins.registry`); mpi's master task exists (Volcano's ``admit_job.go``); ray's head
task exists and its head Service gets a valid name (ours: Volcano accepts such a job, then fails to create
its pods or the Service). Never raises; reports every plugin's problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from extender.core.names import MAX_NAME, is_service_name
from extender.core.validation import FieldError, Obj, shown
from extender.jobs.plugins.mpi import MpiPlugin
from extender.jobs.plugins.ray import RayPlugin
from extender.jobs.plugins.registry import PLUGIN_NAMES, check_plugin
from extender.jobs.task_rules import Tasks, job_name_errors, other_names, task_names

MPI_PLUGIN: Final = "mpi"
RAY_PLUGIN: Final = "ray"


def plugin_errors(spec: Obj, tasks: Tasks, *, job_name: str = "") -> list[FieldError]:
    """Every plugin is one pumice knows, with arguments it accepts; mpi's master task exists (Volcano);
    ray's head task exists and its head Service gets a valid name (ours: Volcano would fail later)."""
    raw = spec.get("plugins")
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [
            FieldError(field="spec.plugins", message="must be a map of plugin name to a list of arguments")
        ]
    errors: list[FieldError] = []
    for name, args in sorted(raw.items(), key=lambda kv: str(kv[0])):
        at = f"spec.plugins[{name}]"
        if name not in PLUGIN_NAMES:
            errors.append(
                FieldError(
                    field=at,
                    message=f"unknown job plugin {shown(name)}; "
                    f"known plugins are {', '.join(sorted(PLUGIN_NAMES))}",
                )
            )
            continue
        if args is None:
            args = []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            errors.append(FieldError(field=at, message="must be a list of string arguments"))
            continue
        problem = check_plugin(name, args)
        if problem:
            errors.append(FieldError(field=at, message=problem))
        elif name == MPI_PLUGIN:
            master = MpiPlugin.from_args(args).args.master
            names = task_names(tasks)
            if master not in names:
                errors.append(
                    FieldError(
                        field=at,
                        message=f"the mpi master task {shown(master)} is not a task of this job "
                        f"({other_names(names, None)}); name a task {shown(master)} or pass --master=<task>",
                    )
                )
        elif name == RAY_PLUGIN:
            errors += _ray_errors(RayPlugin.from_args(args), at, tasks, job_name)
    return errors


def _ray_errors(ray: RayPlugin, at: str, tasks: Tasks, job_name: str) -> list[FieldError]:
    """Volcano's ray plugin fails to create every pod of a job without its head task, and its head Service
    cannot be created under a name Kubernetes refuses: both are refused here instead."""
    errors: list[FieldError] = []
    head = ray.args.head
    names = task_names(tasks)
    if head not in names:
        errors.append(
            FieldError(
                field=at,
                message=f"the ray head task {shown(head)} is not a task of this job "
                f"({other_names(names, None)}); name a task {shown(head)} or pass --head=<task>",
            )
        )
    service = f"{job_name}-head-svc"
    if job_name and not job_name_errors(job_name) and not is_service_name(service):
        errors.append(
            FieldError(
                field="metadata.name",
                message=f"the ray plugin's head Service would be named {service!r}, which is not a valid "
                f"Service name (at most {MAX_NAME} characters of a-z, 0-9 and '-', starting with a letter); "
                "shorten or rename the job",
            )
        )
    return errors
