"""overcommit: admit a group only while the cluster is not over-committed.

Idle capacity is ``allocatable × overcommit-factor − used − promised``, where promised is the
minResources still owed to admitted groups; a group is admitted when its minResources fit what is idle.
A refusal spells those factors out per short resource, so the figure a user sees can be checked.
What running jobs hold beyond their ``minResources`` (Volcano's elastic resources) is not counted as idle
here, as in Volcano's overcommit (its elastic-scheduler design meant it to be; the code never did): this
plugin judges the nodes' room, while capacity and proportion count the elastic part against queue
capabilities, where reclaim can take it back.

Enable with::

    - name: overcommit
      arguments:
        overcommit-factor: 1.2
"""

from __future__ import annotations

from collections.abc import Mapping
from math import isfinite
from typing import Any, Final

import numpy as np

from extender.core.model import PodGroup
from extender.core.quantity import human
from extender.core.resources import describe
from extender.framework.arguments import ArgumentTable
from extender.framework.plugin import Plugin
from extender.framework.session import Session

ARGUMENTS: Final = ArgumentTable({"overcommit-factor": (float, 1.2)})


class OvercommitPlugin(Plugin):
    name = "overcommit"
    argument_table = ARGUMENTS

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = self.argument_table.parse(self.name, arguments)
        self.factor: float = args["overcommit-factor"]
        if not (isfinite(self.factor) and self.factor >= 1.0):
            raise ValueError(f"plugin overcommit: overcommit-factor {self.factor} must be >= 1.0")

    def open(self, ssn: Session) -> None:
        # What the snapshot fixes for the cycle, summed once rather than over every node for every group.
        snap = ssn.snapshot
        self._alloc = ssn.total
        self._room = (self._alloc * self.factor).astype(np.int64)
        self._used = snap.used.sum(axis=0) + snap.reserved.sum(axis=0)

    def enqueue(self, ssn: Session, group: PodGroup) -> str | None:
        snap = ssn.snapshot
        want = snap.index.vector(group.min_resources)
        if not want.any():
            return None
        idle = self._room - self._used - ssn.inqueue
        short = want > idle
        if not short.any():
            return None
        lacking = {snap.index.names[i]: int(want[i]) for i in np.flatnonzero(short)}
        have = {snap.index.names[i]: max(int(idle[i]), 0) for i in np.flatnonzero(short)}
        # The factors behind each idle figure: a bare "idle 7.6" hides that the factor is in it.
        factors = "; ".join(
            f"{name}: allocatable {human(name, int(self._alloc[i]))} × overcommit {self.factor:g}"
            f" − used {human(name, int(self._used[i]))} − promised {human(name, int(ssn.inqueue[i]))}"
            for i, name in ((i, snap.index.names[i]) for i in np.flatnonzero(short))
        )
        return (
            f"cluster over-committed: minResources {describe(lacking)} > idle {describe(have) or '0'}"
            f" ({factors})"
        )
