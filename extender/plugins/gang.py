"""gang: all-or-nothing placement of ``minMember`` pods (and each task's ``minTaskMember``).

The all-or-nothing rule itself lives in the allocate action (a plan is committed only when the whole
gang fits), so it holds whatever else is configured. This plugin adds Volcano's job order: groups whose
gang is not yet whole go before groups that only want extra replicas.

Enable with::

    - name: gang
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.model import GroupPhase, PodGroup
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class GangPlugin(Plugin):
    name = "gang"
    # Whether the group runs: its phase as the snapshot has it.
    static_job_order = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[bool]:
        return (group.phase in (GroupPhase.RUNNING, GroupPhase.COMPLETED),)
