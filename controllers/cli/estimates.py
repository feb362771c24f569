"""The forecast as the CLI shows it: the ``StartEstimate`` condition pumice keeps on a waiting PodGroup,
read back (:mod:`extender.forecast.condition`) and put in cells and lines.

Pure functions of the objects and ``now`` (unit-tested), for ``job list -o wide`` (POSITION, ESTIMATED
START), ``job why`` and ``queue pending``. A PodGroup without the condition (pumice has not forecast it
yet, the forecast is off, or it runs) shows ``<none>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from controllers import tables
from controllers.tables import NONE, field, metadata, text
from extender.core.timestamps import rfc3339
from extender.forecast import condition
from extender.forecast.condition import Shown

_WAITING = ("Pending", "Inqueue", None, "")


def shown(podgroup: Mapping[str, Any] | None) -> Shown | None:
    """What the PodGroup's ``StartEstimate`` condition says, while the group waits."""
    if podgroup is None or field(podgroup, "status", "phase") not in _WAITING:
        return None
    c = condition.find(field(podgroup, "status", "conditions"))
    return None if c is None else condition.read(c)


def by_job(podgroups: Sequence[Mapping[str, Any]]) -> dict[str, Shown]:
    """The estimates of PodGroups, by the UID of the Volcano Job that owns each (and by namespace/name)."""
    out: dict[str, Shown] = {}
    for pg in podgroups:
        s = shown(pg)
        if s is None:
            continue
        meta = metadata(pg)
        out[f"{meta.get('namespace')}/{meta.get('name')}"] = s
        refs = meta.get("ownerReferences")
        for r in refs if isinstance(refs, list) else ():
            if isinstance(r, Mapping) and r.get("kind") == "Job" and r.get("uid"):
                out[str(r["uid"])] = s
    return out


def for_job(estimates: Mapping[str, Shown], job: Mapping[str, Any]) -> Shown | None:
    meta = metadata(job)
    return estimates.get(str(meta.get("uid") or "")) or estimates.get(
        f"{meta.get('namespace')}/{meta.get('name')}"
    )


def position_cell(s: Shown | None) -> str:
    return NONE if s is None or s.in_queue is None else str(s.in_queue)


def cluster_cell(s: Shown | None) -> str:
    return NONE if s is None or s.in_cluster is None else str(s.in_cluster)


def start_cell(s: Shown | None, now: datetime) -> str:
    """``in 12m``, ``now``, ``unknown`` or ``never`` (``<none>``: no estimate)."""
    if s is None:
        return NONE
    if s.reason == condition.NEVER:
        return "never"
    if s.start is None:
        return "unknown"
    wait = s.start - now.timestamp()
    return "now" if wait < 30 else f"in {tables.human_duration(wait)}"


def start_text(s: Shown, now: datetime) -> str:
    """A line for ``job why``: when, its range and how old the estimate is."""
    if s.reason == condition.NEVER:
        return "never under the current cluster"
    if s.start is None:
        return "unknown"
    text_ = f"{rfc3339(s.start)} ({start_cell(s, now)}"
    if s.earliest is not None and s.latest is not None and s.earliest != s.latest:
        text_ += f"; between {rfc3339(s.earliest)} and {rfc3339(s.latest)}"
    return text_ + ")"


def explain_lines(s: Shown, now: datetime) -> list[tuple[str, str]]:
    """``job why``'s pairs for an estimate."""
    pairs: list[tuple[str, str]] = []
    if s.in_queue is not None:
        pairs.append(("Position", f"{s.in_queue} in queue {s.queue} ({s.in_cluster} in the cluster)"))
    pairs.append(("Estimated Start", start_text(s, now)))
    why = s.message.partition("start unknown: ")[2] or s.message.partition("will not start: ")[2]
    if why:
        pairs.append(("Why", why))
    if s.computed_at is not None:
        pairs.append(("Estimated", f"{tables.human_duration(now.timestamp() - s.computed_at)} ago"))
    return pairs


def reason_cell(podgroup: Mapping[str, Any]) -> str:
    """The Unschedulable condition's reason, for ``queue pending -o wide``."""
    conditions = field(podgroup, "status", "conditions")
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and c.get("type") == "Unschedulable" and str(c.get("status")) == "True":
            return text(c.get("reason"))
    return NONE
