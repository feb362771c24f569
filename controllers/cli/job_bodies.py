"""The objects ``pumice job`` creates: the one-task Job of ``job run`` (vcctl's), a Job read from a file,
and the ``bus.volcano.sh`` Command of ``job suspend|resume``.

Pure builders (unit-tested) and the command's constants; vcctl's defaults, so ``pumice job run --name x``
creates the Job ``vcctl job run -N x`` would. Cheap to import: ``pumice``'s parser reads its defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import yaml

from controllers.cli.errors import CliError, UsageError
from controllers.kube import paths
from controllers.tables import Obj, metadata
from extender.api import labels as L

JOB_API_VERSION: Final = paths.JOBS.api_version
COMMAND_API_VERSION: Final = paths.COMMANDS.api_version
JOB_RESOURCE: Final = f"job.{L.BATCH_GROUP}"
COMMAND_RESOURCE: Final = f"command.{L.BUS_GROUP}"

ABORT_JOB: Final = "AbortJob"
RESUME_JOB: Final = "ResumeJob"

# vcctl's defaults, so `pumice job run --name x` creates the job `vcctl job run -N x` would.
DEFAULT_IMAGE: Final = "busybox"
DEFAULT_RESOURCES: Final = "cpu=1000m,memory=100Mi"
# Volcano's mutating webhook names unnamed tasks "default<index>"; we name ours up front so the Job
# is the same with or without that webhook.
DEFAULT_TASK_NAME: Final = "default0"
# vcctl labels the pod template with the job name under this key.
TEMPLATE_JOB_LABEL: Final = "job.volcano.sh"


def build_job(
    *,
    name: str,
    namespace: str,
    image: str = DEFAULT_IMAGE,
    replicas: int = 1,
    min_available: int = 1,
    requests: Mapping[str, str] | None = None,
    limits: Mapping[str, str] | None = None,
    scheduler: str = L.DEFAULT_SCHEDULER_NAME,
    queue: str | None = None,
) -> Obj:
    """The one-task Job ``job run`` creates from flags."""
    resources: Obj = {}
    if limits:
        resources["limits"] = dict(limits)
    if requests:
        resources["requests"] = dict(requests)
    container: Obj = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent"}
    if resources:
        container["resources"] = resources
    spec: Obj = {"minAvailable": min_available, "schedulerName": scheduler}
    if queue:
        spec["queue"] = queue
    spec["tasks"] = [
        {
            "name": DEFAULT_TASK_NAME,
            "replicas": replicas,
            "template": {
                "metadata": {"name": name, "labels": {TEMPLATE_JOB_LABEL: name}},
                "spec": {"restartPolicy": "Never", "containers": [container]},
            },
        }
    ]
    return {
        "apiVersion": JOB_API_VERSION,
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def job_from_document(doc: object, *, namespace: str, explicit_namespace: bool) -> Obj:
    """A Job read from ``-f``: checked to be a Volcano Job, its namespace settled as kubectl does.

    The file's namespace wins over the context's; naming a different one with ``-n`` is an error.
    """
    if not isinstance(doc, Mapping):
        raise CliError("the file does not hold a Job object (expected a YAML mapping)")
    job = dict(doc)
    api_version, kind = job.setdefault("apiVersion", JOB_API_VERSION), job.setdefault("kind", "Job")
    if api_version != JOB_API_VERSION or kind != "Job":
        raise CliError(f"the file holds a {api_version} {kind}; expected a {JOB_API_VERSION} Job")
    meta = dict(metadata(job))
    if not meta.get("name") and not meta.get("generateName"):
        raise CliError("the Job in the file has no metadata.name")
    own = meta.get("namespace")
    if own and explicit_namespace and own != namespace:
        raise UsageError(f"the namespace from the file ({own}) does not match --namespace {namespace}")
    meta["namespace"] = own or namespace
    job["metadata"] = meta
    return job


def load_job_file(content: str, *, namespace: str, explicit_namespace: bool) -> Obj:
    try:
        docs = [d for d in yaml.safe_load_all(content) if d is not None]
    except yaml.YAMLError as e:
        raise CliError(f"the file is not valid YAML: {e}") from None
    if len(docs) != 1:
        raise CliError(f"the file must hold exactly one Job, found {len(docs)} documents")
    return job_from_document(docs[0], namespace=namespace, explicit_namespace=explicit_namespace)


def owner_reference(obj: Mapping[str, Any], *, api_version: str, kind: str) -> Obj:
    """A controller reference to ``obj``, as vcctl puts in a Command's ``target`` and owner list."""
    meta = metadata(obj)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def build_command(job: Mapping[str, Any], action: str) -> Obj:
    """The Command asking the job controller to run ``action`` on ``job``."""
    meta = metadata(job)
    ref = owner_reference(job, api_version=JOB_API_VERSION, kind="Job")
    return {
        "apiVersion": COMMAND_API_VERSION,
        "kind": "Command",
        "metadata": {
            "generateName": f"{meta.get('name', '')}-{action.lower()}-",
            "namespace": meta.get("namespace", ""),
            "ownerReferences": [ref],
        },
        "action": action,
        "target": dict(ref),
    }
