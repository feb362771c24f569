"""resourcequota: a PodGroup is admitted (Pending -> Inqueue) only if its ``minResources`` fits in what
every ResourceQuota of its namespace leaves, so a gang the quota cannot hold waits as one, with the quota
named, instead of its pods being created and refused one by one by the API server.

What a quota leaves is ``spec.hard`` less ``status.used`` less what the groups of the same namespace
admitted earlier in this cycle asked (Volcano's pending usage: the quota controller has not counted them
yet). Only the quota entries that limit requests count (``cpu``/``requests.cpu``, ``memory``,
``requests.<extended resource>``, ``pods``; see :mod:`extender.core.quota`), each against the resource of
``minResources`` it limits, as Volcano masks the request by the quota's keys. The refusal reads
``namespace ns1: resourcequota q1: requests.cpu 9 > 4 left of 8``.

Deliberate differences from Volcano:

- The limit is ``spec.hard`` (what the user set), where Volcano reads ``status.hard``, the quota
  controller's copy of it, which lags an edit and is empty until the controller has seen the quota.
- What the group's own pods already request is taken off its ``minResources`` first: those pods were
  created, so the API server already counts them in ``status.used``. Volcano counts them twice, which
  refuses a group whose pods the quota has just admitted (PodGroups made for existing pods, plain pods).
- The plugin only ever refuses: a quota with room says nothing about the queue, so it casts no permit
  vote (Volcano's permit lets a group skip the checks of later tiers, proportion's and capacity's).
- ``cpu`` in ``minResources`` is checked against ``requests.cpu`` as well as ``cpu`` (the API server
  reads both as requests); Volcano matches key names, so it sees ``requests.cpu`` only in a
  ``minResources`` that spells it so (as its job controller writes it).

Enable with::

    - name: resourcequota
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.model import PodGroup
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class ResourcequotaPlugin(Plugin):
    name = "resourcequota"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)
        # Per namespace, what groups admitted earlier in this cycle asked; groups this plugin let through
        # whose admission is not known yet (another plugin of the tier may still refuse them).
        self._pending: dict[str, dict[str, int]] = {}
        self._let_through: list[PodGroup] = []

    def open(self, ssn: Session) -> None:
        self._pending = {}
        self._let_through = []

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        self._count_admitted(ssn)
        quotas = ssn.snapshot.quotas.get(group.namespace)
        if not quotas or not group.min_resources:
            return None  # no quota, or a group that names no minimum (Volcano permits both)
        request = self._request(ssn, group)
        pending = self._pending.get(group.namespace, {})
        for q in quotas:
            why = q.excess(request, pending)
            if why is not None:
                return f"namespace {group.namespace}: {why}"
        self._let_through.append(group)
        return None

    def _count_admitted(self, ssn: Session) -> None:
        """Add what the groups let through before and since admitted ask to their namespace's pending
        usage (Volcano's JobEnqueued: only a group every plugin admitted counts)."""
        for g in self._let_through:
            if g.key in ssn.result.admitted:
                pending = self._pending.setdefault(g.namespace, {})
                for k, v in self._request(ssn, g).items():
                    pending[k] = pending.get(k, 0) + v
        self._let_through = []

    @staticmethod
    def _request(ssn: Session, group: PodGroup) -> dict[str, int]:
        """``minResources`` less what the group's unfinished pods request (the quota counts those)."""
        snap = ssn.snapshot
        out = dict(group.min_resources)
        for uid in snap.members.get(group.key, ()):
            pod = snap.pods[uid]
            if pod.terminal:
                continue
            for k, v in pod.requests.items():
                if k in out:
                    out[k] -= v
        return {k: v for k, v in out.items() if v > 0}
