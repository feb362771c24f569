"""priority: higher-priority jobs first (PodGroup priorityClassName, else its pods' highest priority);
in ``preempt``, a job evicts only pods of jobs of lower priority.

It answers no ``reclaim`` question: queues take back their share whatever their jobs' priorities
(Volcano's newer priority plugin answers reclaim too, and relies on its tier rule passing an empty
answer on to the next tier for equal priorities; pumice's tier rule takes an empty answer as final).

Enable with::

    - name: priority
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from extender.core.model import Pod, PodGroup
from extender.core.snapshot import pod_group_key
from extender.framework.plugin import Plugin
from extender.framework.session import Session


class PriorityPlugin(Plugin):
    name = "priority"
    # The group's priority class, else its pods' priorities: fixed for the cycle.
    static_job_order = True
    # preemptable reads only the preemptor's and the candidates' priorities.
    static_victims = True

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)

    def job_order(self, ssn: Session, group: PodGroup) -> tuple[int]:
        return (-ssn.snapshot.group_priority(group),)

    def preemptable(self, ssn: Session, preemptor: Pod, candidates: Sequence[Pod]) -> list[Pod]:
        g = ssn.snapshot.groups.get(pod_group_key(preemptor))
        mine = preemptor.priority if g is None else ssn.snapshot.group_priority(g)
        of = ssn.running.group_priority_of
        return [c for c in candidates if of(c.uid) < mine]
