"""The leader-election Lease (``coordination.k8s.io/v1``) as pumice reads and writes it: pure data.

The fields and their meanings are client-go's ``LeaderElectionRecord`` on a Lease, so ``kubectl get lease``
reads the same as for kube-scheduler: ``holderIdentity`` (empty: released), ``leaseDurationSeconds`` (how
long the others wait, from when they last saw the record change, before they may take it),
``acquireTime``, ``renewTime`` and ``leaseTransitions``. The times are written for people and never read
back to decide anything: replicas' wall clocks need not agree, each measures expiry on its own monotonic
clock (see :mod:`~controllers.leader.decide`). One annotation of pumice's own,
``pumice.dev/extender-url``, tells standbys where the holder's extender listens.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from extender.api import labels as L

Obj = dict[str, Any]
API_VERSION = "coordination.k8s.io/v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseRecord:
    holder: str  # "" when nobody holds it (released)
    lease_duration: int  # seconds
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0
    leader_url: str = ""  # the holder's extender, e.g. https://10.0.0.7:8888


def micro_time(epoch: float) -> str:
    """A MicroTime as the API server stores it."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def read_lease(obj: Mapping[str, Any]) -> LeaseRecord:
    """The record a Lease object holds; fields it lacks read as a released lease (what an empty
    ``spec`` means to client-go too)."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    annotations = annotations if isinstance(annotations, Mapping) else {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        lease_duration=max(1, _int(spec.get("leaseDurationSeconds"), 1)),
        acquire_time=str(spec.get("acquireTime") or ""),
        renew_time=str(spec.get("renewTime") or ""),
        transitions=max(0, _int(spec.get("leaseTransitions"), 0)),
        leader_url=str(annotations.get(L.LEADER_URL_ANNOTATION) or ""),
    )


def lease_object(
    name: str, namespace: str, record: LeaseRecord, *, resource_version: str = "", base: Obj | None = None
) -> Obj:
    """The whole Lease to create (no ``resource_version``) or to update with (``base``: the object read,
    whose other metadata is kept; the update succeeds only onto ``resource_version``)."""
    meta: Obj = dict((base or {}).get("metadata") or {})
    meta.update(name=name, namespace=namespace)
    annotations = {
        k: v for k, v in dict(meta.get("annotations") or {}).items() if k != L.LEADER_URL_ANNOTATION
    }
    if record.leader_url:
        annotations[L.LEADER_URL_ANNOTATION] = record.leader_url
    meta["annotations"] = annotations
    meta.pop("managedFields", None)
    if resource_version:
        meta["resourceVersion"] = resource_version
    else:
        meta.pop("resourceVersion", None)
    spec: Obj = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.lease_duration,
        "leaseTransitions": record.transitions,
    }
    if record.acquire_time:
        spec["acquireTime"] = record.acquire_time
    if record.renew_time:
        spec["renewTime"] = record.renew_time
    return {"apiVersion": API_VERSION, "kind": "Lease", "metadata": meta, "spec": spec}
