"""drf: Dominant Resource Fairness between jobs: the job with the smallest dominant share goes first.

A job's dominant share is the largest, over resources, of what it holds divided by the cluster total.

Enable with::

    - name: drf
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from extender.core.model import GroupKey, PodGroup
from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class DrfPlugin(Plugin):
    name = "drf"
    # Shares of what groups held when the cycle opened.
    static_job_order = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        parse_arguments(self.name, arguments, {})
        self._shares: dict[GroupKey, float] = {}

    def open(self, ssn: Session) -> None:
        snap = ssn.snapshot
        total = snap.alloc.sum(axis=0).astype(np.float64)
        total[total == 0] = 1.0
        # Dominant share over cpu, memory and extended resources, not the pods slot (as Volcano's).
        shared = np.array([n != "pods" for n in snap.index.names], dtype=np.bool_)
        self._shares = {}
        for key, uids in snap.members.items():
            holding = [u for u in uids if snap.pods[u].holds_resources]
            if not holding:
                self._shares[key] = 0.0  # what nothing held comes to, without the arithmetic
                continue
            held = snap.request_sum(holding)
            self._shares[key] = float((held / total)[shared].max(initial=0.0))

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[float]:
        return (self._shares.get(group.key, 0.0),)
