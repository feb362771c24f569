"""How many pods of one request the free room of a cluster's nodes holds, node by node: the count the
forecast's prefilter (:mod:`controllers.simulate.forecast_cluster`) and its cut behind the heads of the lines
(:mod:`controllers.simulate.forecast_prefix`) hold each waiting group's gang to."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class Room:
    """One free room (``free``: each node's, by resource), asked many times how many pods of a request it
    holds (a cycle's prefilter asks it per shape and per kind): the nodes with nothing free of a resource
    a pod asks hold none of it, so each set of asked resources reads only the rows with some of each (on
    a full cluster, the few nodes an end freed)."""

    def __init__(self, free: npt.NDArray[np.int64]) -> None:
        self.free = free
        self._rows: dict[bytes, npt.NDArray[np.int64]] = {}

    def copies(self, smallest: npt.NDArray[np.int64]) -> int:
        """How many pods of request ``smallest`` the room holds in all, node by node (none when it asks for
        a resource no node has: marked -1)."""
        if (smallest < 0).any():
            return 0
        asked = smallest > 0
        if not asked.any():
            return len(self.free) * 1_000_000
        mark = asked.tobytes()
        rows = self._rows.get(mark)
        if rows is None:
            columns = self.free[:, asked]
            rows = self._rows[mark] = columns[(columns > 0).all(axis=1)]
        return int((rows // smallest[asked]).min(axis=1).sum()) if len(rows) else 0
