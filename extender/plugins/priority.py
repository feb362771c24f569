"""priority: higher-priority jobs first (PodGroup priorityClassName, else its pods' highest priority).

Enable with::

    - name: priority
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.model import PodGroup
from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class PriorityPlugin(Plugin):
    name = "priority"
    # The group's priority class, else its pods' priorities: fixed for the cycle.
    static_job_order = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        parse_arguments(self.name, arguments, {})

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[int]:
        return (-ssn.snapshot.group_priority(group),)
