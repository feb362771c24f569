"""cdp (cooldown protection): a running pod with ``volcano.sh/cooldown-time`` (a Go duration, as a label or
an annotation; the label wins) is no victim until that long after it was scheduled, so an elastic job's
pods that just came back are not taken away again at once (Volcano's issue #2075).

"Scheduled" is when the pod's ``PodScheduled`` condition turned True, as Volcano's cdp reads it; a pod
that is not Running, has no such condition, or whose duration cannot be read is not protected (Volcano
logs the bad value and protects nothing). The clock is the session's ``now``; the session is asked to run
again when a protection it relied on ends, so a preemptor that waits for a cooling pod is not left
waiting for an unrelated event.

Deliberate difference from Volcano: Volcano's cdp answers ``preemptable`` and ``reclaimable``, and its
answer is intersected with those of the other plugins of its tier. Beside a plugin that offers just enough
victims (proportion, in reclaim, offers the first candidates that bring a queue down to its share), that
intersection is often empty: the cooling pods are refused and no other pod is taken either. pumice's cdp
is a ``victim`` veto instead: cooling pods are taken out of the candidates before any plugin chooses, in
whatever tier cdp sits, for preempt and reclaim alike, and kube-scheduler's own preemption of them is
refused as well.

Enable with::

    - name: cdp
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from extender.core.model import Pod, PodPhase
from extender.core.timestamps import rfc3339
from extender.framework.plugin import Plugin
from extender.framework.session import Session


def cooling_until(pod: Pod) -> float | None:
    """When ``pod``'s cooldown ends (epoch seconds), or None when it has none that applies."""
    if pod.cooldown is None or pod.phase != PodPhase.RUNNING or pod.scheduled_at <= 0:
        return None
    return pod.scheduled_at + pod.cooldown


class CdpPlugin(Plugin):
    name = "cdp"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)

    def victim(self, ssn: Session, pod: Pod) -> str | None:
        until = cooling_until(pod)
        if until is None or until <= ssn.now:
            return None
        ssn.retry_at(until)  # the protection ends without any event to say so
        return f"cooling down until {rfc3339(until)} (volcano.sh/cooldown-time)"
