"""ResourceQuotas as the scheduler reads them: what a namespace may still request, per quota.

A quota's ``spec.hard`` names quota keys, not resources: ``cpu`` and ``requests.cpu`` both limit the sum
of the cpu requests of the namespace's pods, ``requests.nvidia.com/gpu`` the GPUs they request,
``limits.cpu`` their limits. The scheduler knows requests only, so a quota is kept as the entries that
limit a request (:func:`request_resource`), each with the resource it limits, in the scheduler's units
(milli-cpu, bytes, counts: parsed once, when the object enters the cache). Entries on limits, object
counts (``count/...``, ``services``) and storage classes are left to the API server, which enforces them
when objects are created.

Also read here: Volcano's namespace weight (``volcano.sh/namespace.weight`` in ``spec.hard``), the weight
of the namespace in drf's namespace fair share (the largest any quota of the namespace gives; 1 without).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from extender.core.quantity import human

# Volcano's key (its NamespaceWeightKey, up to v1.7) in ResourceQuota.spec.hard.
NAMESPACE_WEIGHT_KEY: Final = "volcano.sh/namespace.weight"
DEFAULT_NAMESPACE_WEIGHT: Final = 1

# Bare names Kubernetes reads as requests (``cpu`` is ``requests.cpu``), and the prefix of the others.
_BARE_REQUESTS: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
_REQUESTS: Final = "requests."
# ``requests.storage`` (and ``<class>.storageclass.storage.k8s.io/requests.storage``) limit claims, not pods.
_NOT_POD_REQUESTS: Final = frozenset({"storage"})


def request_resource(key: str) -> str | None:
    """The pod request a quota key limits (``requests.cpu`` -> ``cpu``), or None for keys on something
    else (limits, object counts, claims, the namespace weight)."""
    if key in _BARE_REQUESTS:
        return key
    if key.startswith(_REQUESTS):
        name = key[len(_REQUESTS) :]
        return name if name and name not in _NOT_POD_REQUESTS else None
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuotaEntry:
    """One entry of ``spec.hard`` that limits a request: its key as written, the resource it limits, the
    hard limit and what ``status.used`` says the namespace uses (0 when the quota controller has not
    reported yet)."""

    key: str
    resource: str
    hard: int
    used: int

    @property
    def left(self) -> int:
        return max(0, self.hard - self.used)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceQuota:
    namespace: str
    name: str
    entries: tuple[QuotaEntry, ...] = ()
    # ``volcano.sh/namespace.weight`` in spec.hard (at least 1), or None when absent.
    weight: int | None = None

    def excess(self, request: dict[str, int], pending: dict[str, int]) -> str | None:
        """Why ``request`` does not fit in what this quota leaves after ``used`` and ``pending`` (what
        groups admitted earlier in the cycle ask), or None. Only resources the request names count
        (Volcano masks the request by the quota's keys and the usage by the request's)."""
        for e in self.entries:
            want = request.get(e.resource, 0)
            if want <= 0:
                continue
            left = e.hard - e.used - pending.get(e.resource, 0)
            if want > left:
                return (
                    f"resourcequota {self.name}: {e.key} {human(e.resource, want)} > "
                    f"{human(e.resource, max(0, left))} left of {human(e.resource, e.hard)}"
                )
        return None


def namespace_weight(quotas: tuple[ResourceQuota, ...]) -> int:
    """A namespace's weight: the largest any of its quotas gives (Volcano keeps the heaviest), else 1."""
    return max((q.weight for q in quotas if q.weight is not None), default=DEFAULT_NAMESPACE_WEIGHT)
