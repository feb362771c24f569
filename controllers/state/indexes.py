"""The watched kinds the reconcilers read, and the indexes they look objects up by: one table.

:func:`watched_objects` builds the process's :class:`~controllers.state.store.ObjectStore` with them. Each
index answers one question a reconciler asks, with the semantics it had when each reconciler kept its own
copy:

- ``VCJOB`` (pods, PodGroups): the vcjob (``namespace/name``) an object belongs to, from its first owner
  reference to a ``batch.volcano.sh`` Job (controller or not, as Volcano's job controller reads it);
- ``TARGET_JOB`` (Commands): the vcjob a Command targets;
- ``JOBFLOW`` / ``CRONJOB`` (vcjobs): the JobFlow or CronJob controlling a job (its controller reference);
- ``JOB_LABEL`` (pods): the job named by a pod's ``volcano.sh/job-name`` label (a flow's probes reach the
  pods of its target jobs);
- ``WORKLOAD`` (pods): the workload owner (``namespace/kind/name/uid``) of a pod of one of pumice's
  scheduler names that names no other group (the workload-group controller's pods);
- ``NAMESPACE`` (JobFlows, JobTemplates): the namespace.

Pods are kept only when one of these places them, and as little of them as the reconcilers read
(:func:`pod_record`: the metadata the indexes and the reconcilers use and the
:class:`~controllers.state.pod_facts.PodFacts`; the whole pod only when ``WORKLOAD`` places it); Nodes as
their metadata alone (:func:`node_record`); vcjobs and PodGroups whole but packed, as their JSON bytes
(:mod:`controllers.state.packed`: ``obj`` decodes them at each read); every other kind is kept whole.
Every function here is total: an object of any shape gets a value or None, never an exception.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any, Final

from controllers.state.meta import (
    ObjectMeta,
    OwnerFields,
    OwnerRef,
    owner_fields,
    raw_metadata,
    read_meta,
    string_field,
)
from controllers.state.packed import Packer
from controllers.state.pod_facts import pod_facts
from controllers.state.shared import Shared
from controllers.state.store import Index, Kind, ObjectStore, Stored
from extender.api import labels as L
from extender.core.maker import maker
from extender.core.workloads import Owner, named_group, owner_group_name, workload_owner
from extender.flows.cron import CRONJOB_KIND
from extender.flows.model import JOBFLOW_KIND

VCJOB: Final = "vcjob"
TARGET_JOB: Final = "target-job"
JOBFLOW: Final = "jobflow"
CRONJOB: Final = "cronjob"
JOB_LABEL: Final = "job-label"
WORKLOAD: Final = "workload"
NAMESPACE: Final = "namespace"


def owner_key(namespace: str, owner: Owner) -> str:
    """The workload-group controller's work key: one per owner object (a recreated namesake is another)."""
    return f"{namespace}/{owner.kind}/{owner.name}/{owner.uid}"


def _ns(s: Stored) -> str:
    return s.meta.namespace or "default"


def vcjob_of(s: Stored) -> str | None:
    ref = s.meta.owner(L.JOB_KIND, L.BATCH_GROUP)
    return f"{_ns(s)}/{ref.name}" if ref is not None else None


def target_job(s: Stored) -> str | None:
    target = s.obj.get("target")
    if not isinstance(target, Mapping) or target.get("kind") != L.JOB_KIND:
        return None
    name = target.get("name")
    return f"{_ns(s)}/{name}" if isinstance(name, str) else None


def jobflow_of(s: Stored) -> str | None:
    ref = s.meta.owner(JOBFLOW_KIND, L.FLOW_GROUP, controller=True)
    return f"{_ns(s)}/{ref.name}" if ref is not None and ref.name else None


def cronjob_of(s: Stored) -> str | None:
    ref = s.meta.owner(CRONJOB_KIND, L.BATCH_GROUP, controller=True)
    return f"{_ns(s)}/{ref.name}" if ref is not None and ref.name else None


def job_label(s: Stored) -> str | None:
    job = s.meta.labels.get(L.JOB_NAME_KEY)
    return f"{_ns(s)}/{job}" if job is not None else None


def namespace_of(s: Stored) -> str:
    return _ns(s)


def workload_of(s: Stored, scheduler_names: frozenset[str]) -> tuple[str, Owner] | None:
    """The owner key and owner of a pod of ``scheduler_names`` owned by a workload, unless it joined a
    group someone else made (Spark, LeaderWorkerSet: a group name that is not the owner's)."""
    return _workload(s.obj, s.meta.raw, s.meta.namespace, scheduler_names)


def _workload(
    obj: Mapping[str, Any], meta: Mapping[str, Any], namespace: str, scheduler_names: frozenset[str]
) -> tuple[str, Owner] | None:
    """:func:`workload_of` from the raw object and its raw metadata (``namespace``: as read_meta reads it)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping) or spec.get("schedulerName") not in scheduler_names:
        return None
    owner = workload_owner(meta)
    if owner is None:
        return None
    named = named_group(meta)
    if named is not None and named != owner_group_name(owner):
        return None
    return owner_key(namespace or "default", owner), owner


def workload_index(scheduler_names: frozenset[str]) -> Index:
    def key(s: Stored) -> str | None:
        if s.body is _NO_BODY:
            return None  # a pod held lean: pod_record found it no workload's (and it has no spec to read)
        found = workload_of(s, scheduler_names)
        return found[0] if found is not None else None

    return Index(name=WORKLOAD, key=key)


_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


class _Label(Mapping[str, str]):
    """A pod's one label the reconcilers read (``JOB_LABEL``'s), as a mapping: a 1-entry dict and its
    read-only proxy cost ~250 bytes a pod, this a sixth of it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def __getitem__(self, key: str) -> str:
        if key != L.JOB_NAME_KEY:
            raise KeyError(key)
        return self._value

    def __iter__(self) -> Iterator[str]:
        return iter((L.JOB_NAME_KEY,))

    def __len__(self) -> int:
        return 1


class _NoBody(dict[str, Any]):
    """The ``obj`` of a pod or Node held without its body: empty, and nobody may fill it (one for all)."""

    def _refuse(self, *_: object, **__: object) -> None:
        raise TypeError("an object held without its body has none to change")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]


_NO_BODY: Final = _NoBody()


def _interned(refs: tuple[OwnerFields, ...]) -> tuple[OwnerRef, ...]:
    _i = sys.intern
    return tuple(
        OwnerRef(api_version=_i(a), kind=_i(k), name=_i(n), uid=_i(u), controller=c) for a, k, n, u, c in refs
    )


def _string(m: object, key: str) -> str | None:
    """``m[key]`` when ``m`` is a mapping and that is a string (what read_meta keeps of labels and
    annotations), else None."""
    v = m.get(key) if isinstance(m, (dict, Mapping)) else None
    return v if isinstance(v, str) else None


_make_meta: Final = maker(ObjectMeta)  # (ObjectMeta(**fields), sooner: made for every pod listed)
_UNSET: Final = ObjectMeta()  # (its defaults: what a lean pod's view leaves unset, as before)


def _lean(meta: Mapping[str, Any], shared: Shared[Any]) -> ObjectMeta:
    """What is read of a pod's metadata (``meta``: the raw mapping) once its body is not kept: identity,
    versions, timestamps, owners (``VCJOB``, the job controller) and the job-name label (``JOB_LABEL``),
    read straight from the raw mapping as :func:`read_meta` reads them (its copies of every label and
    annotation would be dropped at once). Repeated strings are interned; the owner references and the
    label, shared with the pods before it that have equal ones (a gang's)."""
    job = _string(meta.get("labels"), L.JOB_NAME_KEY)
    label = _EMPTY if job is None else shared.share(("label", job), lambda: _Label(sys.intern(job)))
    refs = owner_fields(meta)
    get = meta.get  # (string_field's reads, inline: this runs for every pod of a LIST)
    ns, name, uid, version, deleted, created = (
        get("namespace"), get("name"), get("uid"), get("resourceVersion"), get("deletionTimestamp"),
        get("creationTimestamp"),
    )  # fmt: skip
    return _make_meta(
        {
            "namespace": sys.intern(ns if isinstance(ns, str) else ""),
            "name": name if isinstance(name, str) else "",
            "uid": uid if isinstance(uid, str) else "",
            "resource_version": version if isinstance(version, str) else "",
            "generation": 0,
            "labels": label,
            "annotations": _UNSET.annotations,
            # (keyed by their fields: equal fields make equal references)
            "owner_references": shared.share(("refs", refs), lambda: _interned(refs)) if refs else (),
            "deletion_timestamp": deleted if isinstance(deleted, str) else "",
            "creation_timestamp": sys.intern(created if isinstance(created, str) else ""),
            "raw": _UNSET.raw,
        }
    )


def pod_record(scheduler_names: frozenset[str]) -> Callable[[Any], Stored]:
    """How the store holds a pod: whole when the workload-group controller looks after it (it reads the
    spec and the metadata), else its lean metadata and facts (see controllers.state.pod_facts). Whether
    it is a workload's is read from the raw metadata first, so a lean pod's is read once, leanly."""

    shared: Shared[Any] = Shared()

    def record(obj: Any) -> Stored:
        raw = raw_metadata(obj)
        if _workload(obj, raw, string_field(raw, "namespace"), scheduler_names) is not None:
            meta = read_meta(obj)
            return Stored(obj, meta, pod_facts(obj, meta.annotations))
        task = _string(raw.get("annotations"), L.TASK_SPEC_ANNOTATION)
        return Stored(
            _NO_BODY,
            _lean(raw, shared),
            pod_facts(obj, _EMPTY if task is None else {L.TASK_SPEC_ANNOTATION: task}),
        )

    return record


def node_record(obj: Any) -> Stored:
    """How the store holds a Node: its identity, versions and labels, what the hypernode-problems
    reconciler reads (the cluster cache holds Nodes parsed; a raw Node is ~4 KB decoded, 5 000 of them
    20 MiB)."""
    meta = read_meta(obj)
    lean = ObjectMeta(
        name=meta.name,
        uid=meta.uid,
        resource_version=meta.resource_version,
        generation=meta.generation,
        labels=meta.labels,
        deletion_timestamp=meta.deletion_timestamp,
        creation_timestamp=meta.creation_timestamp,
    )
    return Stored(_NO_BODY, lean)


def watched_kinds(scheduler_names: frozenset[str], packer: Packer | None = None) -> tuple[Kind, ...]:
    """``packer``: the one the cluster cache packs PodGroups with (both hold them; see
    controllers.state.packed)."""
    pack = Packer() if packer is None else packer

    def packed_group(obj: Any) -> Stored:
        return Stored.packed(obj, pack)

    return (
        Kind(
            name="jobs",
            indexes=(Index(name=JOBFLOW, key=jobflow_of), Index(name=CRONJOB, key=cronjob_of)),
            record=Stored.packed,  # (no other holder: nothing to share)
        ),
        Kind(name="commands", indexes=(Index(name=TARGET_JOB, key=target_job),)),
        Kind(
            name="pods",
            indexes=(
                Index(name=VCJOB, key=vcjob_of),
                Index(name=JOB_LABEL, key=job_label),
                workload_index(scheduler_names),
            ),
            indexed_only=True,
            record=pod_record(scheduler_names),
        ),
        Kind(name="podgroups", indexes=(Index(name=VCJOB, key=vcjob_of),), record=packed_group),
        Kind(name="jobflows", indexes=(Index(name=NAMESPACE, key=namespace_of),)),
        Kind(name="jobtemplates", indexes=(Index(name=NAMESPACE, key=namespace_of),)),
        Kind(name="cronjobs"),
        Kind(name="nodes", namespaced=False, record=node_record),
        Kind(name="hypernodes", namespaced=False),
    )


def watched_objects(scheduler_names: frozenset[str], packer: Packer | None = None) -> ObjectStore:
    """The process's store of watched objects (see :mod:`controllers.state.store`; ``packer``: see
    :func:`watched_kinds`)."""
    return ObjectStore(watched_kinds(scheduler_names, packer))
