"""Share rules that proportion and capacity both apply."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from extender.core.model import Pod
from extender.core.resources import Vector
from extender.framework.session import Session


def above_deserved(
    ssn: Session,
    candidates: Sequence[Pod],
    deserved_of: Callable[[str], Vector | None],
    shared: npt.NDArray[np.bool_],
) -> list[Pod]:
    """The candidates (running pods of other queues, in the order they would go) whose queue stays at or
    above its deserved share without them, on every ``shared`` resource where it is above it and the pod
    frees some: reclaim takes a queue down to what it deserves, never below (and so never gives back
    what it took: a queue at its deserved share is not a victim of the queue it reclaimed from)."""
    running = ssn.running
    cols = np.flatnonzero(shared).tolist()
    left: dict[str, list[int]] = {}
    limits: dict[str, list[int] | None] = {}
    out: list[Pod] = []
    # Plain ints over the shared columns: a few of them per candidate, where numpy's per-call cost would
    # dominate (reclaim asks about thousands of candidates a cycle).
    for c in candidates:
        r = running.by_uid.get(c.uid)
        if r is None:
            continue
        q = r.queue
        if q not in limits:
            d = deserved_of(q)
            limits[q] = None if d is None else [int(d[i]) for i in cols]
        deserved = limits[q]
        if deserved is None:
            continue
        used = left.get(q)
        if used is None:
            u = ssn.queue_used.get(q)
            used = left[q] = [0] * len(cols) if u is None else [int(u[i]) for i in cols]
        req = running.vector(c)
        frees = False
        ok = True
        for k, i in enumerate(cols):
            amount = int(req[i])
            if amount and used[k] > deserved[k]:
                frees = True
                if used[k] - amount < deserved[k]:
                    ok = False
                    break
        if frees and ok:
            out.append(c)
            for k, i in enumerate(cols):
                used[k] -= int(req[i])
    return out
