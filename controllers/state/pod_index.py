"""The cluster cache's pods by UID, and the indexes that read them: the members of each of pumice's groups,
the queue of each group that has no PodGroup (plain pods), the pods that ask GPU cards.

:class:`PodIndex` is written only by :class:`~controllers.state.cache_ingest.CacheIngest` (which tells the
ledger and the pending set of each change) and read by :class:`~controllers.state.cache.ClusterCache`.
Invariants: a pod is a member of at most one group, the one :func:`~extender.core.snapshot.pod_group_key`
gives, and only when one of ``scheduler_names`` schedules it; a group with no member left has no entry (and
no implicit queue); ``device_pods`` holds exactly the stored pods whose ``gpu`` is set, as stored. While a
group has members, :meth:`PodIndex.ours` gives the one key string its members entry holds (equal to
``pod_group_key``'s): the ledger and the pending set keep a group key per pod, a string of ~100 bytes each
when made anew for every pod (9 MiB at 100 000 pods).
"""

from __future__ import annotations

import dataclasses

from controllers.state.pod_log import PodLog
from extender.core.model import GroupKey, Pod, PodUID
from extender.core.residents import PodChunks
from extender.core.snapshot import pod_group_key


class _Members(dict[PodUID, None]):
    """A group's members (in the order they were stored), and the group's key as the index hands it on."""

    __slots__ = ("key",)

    def __init__(self, key: GroupKey) -> None:
        super().__init__()
        self.key = key


class PodIndex:
    def __init__(self, *, scheduler_names: frozenset[str], default_queue: str) -> None:
        self.scheduler_names = scheduler_names
        self.default_queue = default_queue
        self.pods: dict[PodUID, Pod] = {}
        self._log = PodLog()  # the same pods in the same order, as chunks a snapshot takes (chunks())
        # Members of pumice's groups (in the order they were stored; a dict of a gang's 8 UIDs is 272 bytes,
        # a set 728), and the queue of groups without a PodGroup (plain pods).
        self.members: dict[GroupKey, _Members] = {}
        self.implicit_queue: dict[GroupKey, str] = {}
        # Pods that ask GPU cards (deviceshare): the snapshot's card holdings come from these alone.
        self.device_pods: dict[PodUID, Pod] = {}

    def ours(self, pod: Pod) -> GroupKey | None:
        """The group of ``pod`` when pumice schedules it (the key its members entry holds, if it has one)."""
        if pod.scheduler_name not in self.scheduler_names:
            return None
        key = pod_group_key(pod)
        members = self.members.get(key)
        return key if members is None else members.key

    def put(self, uid: PodUID, pod: Pod | None) -> GroupKey | None:
        """Store ``pod`` under ``uid`` (None: remove it) with its indexes; the group it is now a member of."""
        old = self.pods.pop(uid, None)
        if old is not None:
            self._log.remove(uid)
            key = self.ours(old)
            if key is not None:
                members = self.members[key]
                members.pop(uid, None)
                if not members:
                    del self.members[key]
                    self.implicit_queue.pop(key, None)
        key = self.ours(pod) if pod is not None else None
        self.device_pods.pop(uid, None)
        if pod is not None:
            self.pods[uid] = pod
            self._log.append(uid, pod)
            if pod.gpu is not None:
                self.device_pods[uid] = pod
            if key is not None:
                joined = self.members.get(key)
                if joined is None:
                    joined = self.members[key] = _Members(key)
                joined[uid] = None
                if not pod.group_name:
                    self.implicit_queue[key] = pod.queue_name or self.default_queue
        return key

    def bind(self, uid: PodUID, node: str) -> Pod:
        """The stored pod ``uid`` (KeyError if there is none) laid on ``node``; its group stays. A pod the
        watch already shows on ``node`` stays the object it is (the simulator's bind is seen first)."""
        stored = self.pods[uid]
        if stored.node_name == node:
            return stored
        bound = dataclasses.replace(stored, node_name=node)
        self.pods[uid] = bound
        self._log.replace(uid, bound)
        if uid in self.device_pods:
            self.device_pods[uid] = bound
        return bound

    def chunks(self) -> PodChunks:
        """Every stored pod, in the order of :attr:`pods`, as chunks (controllers.state.pod_log)."""
        return self._log.chunks()
