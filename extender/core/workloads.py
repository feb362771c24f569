"""PodGroups for ordinary workloads: the pure part of Volcano's PodGroup controller.

A pod of ours (its ``schedulerName`` is one of pumice's) that names no PodGroup
(``scheduling.k8s.io/group-name`` / ``scheduling.volcano.sh/group-name``) and whose *controller* owner is a
workload kind pumice groups -- an ``apps/v1`` ReplicaSet (a Deployment's pods are its ReplicaSet's), an
``apps/v1`` StatefulSet or a ``batch/v1`` Job -- belongs to the PodGroup ``podgroup-<owner uid>``, one per
owner, as Volcano's ``GeneratePodgroupName`` names it. :func:`pod_group_name` is the single answer to "which
group is this pod in": the cache keys the pod by it from the first time it sees it, before the group exists
and before the controller has annotated the pod. So there is no window in which the pod is scheduled alone
in an implicit one-pod group: it waits, as any pod whose PodGroup does not exist yet waits, until the
controller has created the group (then the gang rule holds it until ``minMember`` pods can be placed).

:func:`desired_podgroup` is what the controller creates, following Volcano's ``buildPodGroupFromPod``:

- ``spec.minMember`` from the owner's ``scheduling.volcano.sh/group-min-member`` (default 1; a value that
  is not an integer >= 1 is reported and 1 is used, where Volcano logs and uses 1);
- ``spec.minResources`` from the owner's ``scheduling.volcano.sh/group-min-resources`` (a JSON
  ResourceList, ``{"cpu": "2", "memory": "4Gi"}``, the format Volcano documents for single pods), else the
  pod's requests times ``minMember`` (Volcano's ``CalTaskRequests``);
- ``spec.queue`` from the pod's ``scheduling.volcano.sh/queue-name``; ours: else the owner's (Volcano reads
  the pod only); else unset, so the PodGroup defaulting (``--default-queue``) decides;
- ``spec.priorityClassName`` from the pod;
- annotations: the owner's ``volcano.sh/*`` ones (Volcano's ``--inherit-owner-annotations``, on by
  default), then the pod's ``volcano.sh/preemptable``, ``volcano.sh/cooldown-time``,
  ``volcano.sh/revocable-zone``, ``volcano.sh/network-topology-mode`` and ``-highest-tier`` (which
  :func:`extender.core.parse.parse_podgroup` reads as ``spec.networkTopology``, where Volcano writes that
  field) and one of the ``volcano.sh/jdb-*`` budget keys; labels: the pod's
  ``volcano.sh/preemptable`` and ``volcano.sh/cooldown-time``;
- ``ownerReferences``: the workload (controller), so the garbage collector deletes the group with it.
  Volcano copies the pod's references wholesale; we name the owner alone and leave ``blockOwnerDeletion``
  unset, which would need ``update`` on the owner's ``finalizers``.

Not mirrored: DaemonSet owners (their pods keep implicit one-pod groups, where
Volcano groups them under the DaemonSet). Pods that already name a group -- Spark's driver and executors
(``<appId>-podgroup``, which Spark creates itself from its PodGroup template), vcjob pods, LeaderWorkerSet
-- are left alone, as in Volcano.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson

from extender.api import labels as L
from extender.core.errors import InvalidObject
from extender.core.resource_maps import format_resource_list, parse_resource_list

PODGROUP_PREFIX: Final = "podgroup-"
MIN_MEMBER_ANNOTATION: Final = "scheduling.volcano.sh/group-min-member"
MIN_RESOURCES_ANNOTATION: Final = "scheduling.volcano.sh/group-min-resources"
# (API group, kind) of the controllers whose pods get a PodGroup per owner.
WORKLOAD_KINDS: Final = frozenset({("apps", "ReplicaSet"), ("apps", "StatefulSet"), ("batch", "Job")})
# Pod annotations and labels Volcano copies onto the group it makes.
_POD_ANNOTATIONS: Final = (
    "volcano.sh/preemptable",
    "volcano.sh/cooldown-time",
    "volcano.sh/revocable-zone",
    # Volcano turns these into spec.networkTopology; our PodGroup parse reads them as that.
    "volcano.sh/network-topology-mode",
    "volcano.sh/network-topology-highest-tier",
)
_BUDGET_ANNOTATIONS: Final = ("volcano.sh/jdb-min-available", "volcano.sh/jdb-max-unavailable")
_POD_LABELS: Final = ("volcano.sh/preemptable", "volcano.sh/cooldown-time")
_INHERITED_PREFIX: Final = "volcano.sh/"


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner:
    """A pod's controller owner reference of a workload kind."""

    api_version: str
    kind: str
    name: str
    uid: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def ref(self) -> dict[str, Any]:
        """The PodGroup's owner reference to it."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Desired:
    """The PodGroup a workload's pods should have, and what was wrong with the owner's annotations."""

    name: str
    body: dict[str, Any]
    problems: tuple[str, ...] = ()


def _mapping(obj: object, key: str) -> Mapping[str, Any]:
    # (dict first: the same answer, without the ABC's slower check; read for every pod listed)
    v = obj.get(key) if isinstance(obj, (dict, Mapping)) else None
    return v if isinstance(v, (dict, Mapping)) else {}


def _strings(m: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): v for k, v in m.items() if isinstance(v, str)}


def workload_owner(meta: Mapping[str, Any]) -> Owner | None:
    """The controller owner of a workload kind named in ``meta.ownerReferences``, if any."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return None
    for r in refs:
        if not isinstance(r, (dict, Mapping)) or r.get("controller") is not True:
            continue
        api_version, kind = str(r.get("apiVersion") or ""), str(r.get("kind") or "")
        name, uid = r.get("name"), r.get("uid")
        owner_group = api_version.rpartition("/")[0]
        if (owner_group, kind) in WORKLOAD_KINDS and isinstance(name, str) and isinstance(uid, str) and uid:
            return Owner(api_version=api_version, kind=kind, name=name, uid=uid)
        return None  # one controller only: of another kind, the pod is not a workload's
    return None


def named_group(meta: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod names through either of Volcano's annotations (the Kubernetes one first)."""
    ann = _mapping(meta, "annotations")
    for key in (L.GROUP_NAME_ANNOTATION, L.GROUP_NAME_ANNOTATION_VOLCANO):
        v = ann.get(key)
        if isinstance(v, str) and v:
            return v
    return None


def owner_group_name(owner: Owner) -> str:
    return f"{PODGROUP_PREFIX}{owner.uid}"


def pod_group_name(meta: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod belongs to: the one it names, else its workload's (whether or not that group
    exists yet), else None (a plain pod: an implicit one-pod group)."""
    named = named_group(meta)
    if named is not None:
        return named
    owner = workload_owner(meta)
    return owner_group_name(owner) if owner is not None else None


def min_member(owner_annotations: Mapping[str, Any]) -> tuple[int, str | None]:
    """``minMember`` from the owner's annotation, and a problem if the value could not be used."""
    raw = owner_annotations.get(MIN_MEMBER_ANNOTATION)
    if raw is None:
        return 1, None
    text = raw.strip() if isinstance(raw, str) else ""
    if text.isdigit() and 1 <= int(text) <= 2**31 - 1:
        return int(text), None
    return 1, f"{MIN_MEMBER_ANNOTATION}: {raw!r} is not an integer >= 1; using minMember 1"


def min_resources(
    owner_annotations: Mapping[str, Any], pod_requests: Mapping[str, int], members: int
) -> tuple[dict[str, str], str | None]:
    """``minResources``: the owner's JSON ResourceList, else the pod's requests times ``members``."""
    fallback = format_resource_list({k: v * members for k, v in pod_requests.items()})
    raw = owner_annotations.get(MIN_RESOURCES_ANNOTATION)
    if raw is None:
        return fallback, None
    try:
        value = orjson.loads(raw) if isinstance(raw, str) else None
        if not isinstance(value, dict):
            raise InvalidObject("not a JSON object")
        parse_resource_list(value)  # every quantity must be valid
    except (orjson.JSONDecodeError, InvalidObject, ValueError, TypeError) as e:
        why = f"{MIN_RESOURCES_ANNOTATION}: {str(raw)[:200]!r} is not a JSON ResourceList ({e})"
        return fallback, f"{why}; using the pods' requests"
    return {str(k): str(v) for k, v in sorted(value.items())}, None


def desired_podgroup(
    pod: Mapping[str, Any], owner: Owner, owner_obj: Mapping[str, Any], pod_requests: Mapping[str, int]
) -> Desired:
    """The PodGroup for ``owner``'s pods, built from one of them (``pod``, parsed requests given) and the
    owner object as the API server has it."""
    pod_meta = _mapping(pod, "metadata")
    pod_ann = _strings(_mapping(pod_meta, "annotations"))
    pod_labels = _strings(_mapping(pod_meta, "labels"))
    owner_ann = _strings(_mapping(_mapping(owner_obj, "metadata"), "annotations"))
    members, p1 = min_member(owner_ann)
    resources, p2 = min_resources(owner_ann, pod_requests, members)
    annotations = {k: v for k, v in owner_ann.items() if k.startswith(_INHERITED_PREFIX)}
    annotations.update({k: pod_ann[k] for k in _POD_ANNOTATIONS if k in pod_ann})
    budget = next((k for k in _BUDGET_ANNOTATIONS if k in pod_ann), None)
    if budget is not None:
        annotations[budget] = pod_ann[budget]
    spec: dict[str, Any] = {"minMember": members, "minResources": resources}
    queue = pod_ann.get(L.QUEUE_NAME_ANNOTATION) or owner_ann.get(L.QUEUE_NAME_ANNOTATION)
    if queue:
        spec["queue"] = queue
    priority_class = _mapping(pod, "spec").get("priorityClassName")
    if isinstance(priority_class, str) and priority_class:
        spec["priorityClassName"] = priority_class
    name = owner_group_name(owner)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": str(pod_meta.get("namespace") or "default"),
        "ownerReferences": [owner.ref()],
    }
    if annotations:
        metadata["annotations"] = annotations
    labels = {k: pod_labels[k] for k in _POD_LABELS if k in pod_labels}
    if labels:
        metadata["labels"] = labels
    body = {
        "apiVersion": f"{L.SCHEDULING_GROUP}/{L.SCHEDULING_VERSION}",
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": spec,
    }
    return Desired(name=name, body=body, problems=tuple(p for p in (p1, p2) if p))


def spec_patch(existing: Mapping[str, Any], desired: Desired) -> dict[str, Any] | None:
    """A merge patch bringing an existing group's ``minMember`` and ``minResources`` to the desired ones
    (the owner's annotations changed), or None when they agree. Queue and priority class are left as they
    are: moving a group that may be running to another queue is not this controller's call."""
    have, want = _mapping(existing, "spec"), desired.body["spec"]
    patch: dict[str, Any] = {}
    if have.get("minMember") != want["minMember"]:
        patch["minMember"] = want["minMember"]
    have_res = _mapping(have, "minResources")
    try:
        same = parse_resource_list(have_res) == parse_resource_list(want["minResources"])
    except (InvalidObject, ValueError, TypeError):
        same = False
    if not same:
        # Keys gone from the desired list are removed (merge patch null), not left behind.
        res: dict[str, Any] = {k: None for k in have_res if k not in want["minResources"]}
        res.update(want["minResources"])
        patch["minResources"] = res
    return {"spec": patch} if patch else None


def annotation_patch(name: str) -> dict[str, Any]:
    """The merge patch that puts a pod in group ``name`` (what Volcano's controller writes)."""
    return {"metadata": {"annotations": {L.GROUP_NAME_ANNOTATION: name}}}
