"""The GPU cards pods hold, as the cache hands them to deviceshare: :class:`GpuHolds`.

Bound pods' holds are kept in a :class:`~extender.core.gpu_memo.HoldLog` as the pods are stored (their
annotations' cards, else those decided with their plan), so a snapshot costs the planned pods, not every
bound one; deviceshare's :class:`~extender.core.gpu_memo.CardMemo` lives here too and follows the log
from one cycle to the next (see :mod:`extender.core.gpu_memo`).
"""

from __future__ import annotations

from collections.abc import Mapping

from controllers.state.ledger import Ledger
from extender.core.gpu_memo import CardMemo, Held, HoldLog, HoldsAt
from extender.core.gpus import pod_hold
from extender.core.model import Pod, PodUID


class GpuHolds:
    """The hold log of the bound GPU pods and deviceshare's memo, for one cache."""

    def __init__(self) -> None:
        self.log = HoldLog()
        self.memo = CardMemo()

    def note(self, uid: PodUID, pod: Pod | None, ledger: Ledger) -> None:
        """Pod ``uid`` was stored (``pod``: as it is now, None when gone, ``device_pods``' entry only)."""
        self.log.set(uid, _bound_hold(pod, ledger))

    def snapshot(
        self, device_pods: Mapping[PodUID, Pod], ledger: Ledger
    ) -> tuple[dict[PodUID, Held], HoldsAt]:
        """The GPU cards each pod holds, by where it is: bound (or bound by us) with the cards the log
        keeps, else planned with the cards decided with its plan (written on it or not yet); and where
        they stand in the log (which are planned)."""
        out = dict(self.log.holds)
        planned: list[PodUID] = []
        for uid, node in ledger.plans().items():
            pod = device_pods.get(uid)
            if pod is None or pod.terminal or pod.node_name:
                continue  # (an annotation left from an earlier plan holds nothing: only the live plan's does)
            hold = pod_hold(ledger.decided(uid), pod.gpu)
            if hold is not None:
                out[uid] = (node, hold)
                planned.append(uid)
        return out, HoldsAt(log=self.log, position=self.log.position, planned=frozenset(planned))


def _bound_hold(pod: Pod | None, ledger: Ledger) -> Held | None:
    """The cards a bound GPU pod holds (its annotations', else those decided with its plan); None for a
    pod not bound, finished or holding none."""
    if pod is None or not pod.node_name or pod.terminal:
        return None
    hold = pod.gpu_hold or pod_hold(ledger.decided(pod.uid), pod.gpu)
    return None if hold is None else (pod.node_name, hold)
