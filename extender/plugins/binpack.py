"""binpack: fill nodes before using empty ones, so large gangs still find whole nodes.

Score per node = weight × Σ_r w_r·(used_r + request_r)/allocatable_r / Σ_r w_r × 100, over the resources
the pod requests; a resource whose weight is not given counts with weight 0 unless it is cpu or memory.

Enable with::

    - name: binpack
      arguments:
        binpack.weight: 10
        binpack.cpu: 1
        binpack.memory: 1
        binpack.resources: nvidia.com/gpu
        binpack.resources.nvidia.com/gpu: 2
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from extender.core.errors import ConfigError
from extender.core.resources import Vector
from extender.framework.arguments import parse_arguments
from extender.framework.plugin import Plugin, Scores
from extender.framework.session import Session


class BinpackPlugin(Plugin):
    name = "binpack"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        args = parse_arguments(
            self.name,
            arguments,
            {
                "binpack.weight": (int, 1),
                "binpack.cpu": (int, 1),
                "binpack.memory": (int, 1),
                "binpack.resources": (str, ""),
            },
            prefixes={"binpack.resources.": int},
        )
        self.weight: int = args["binpack.weight"]
        self.weights: dict[str, int] = {"cpu": args["binpack.cpu"], "memory": args["binpack.memory"]}
        for name in (n.strip() for n in args["binpack.resources"].split(",")):
            if name:
                self.weights[name] = int(args.get(f"binpack.resources.{name}", 1))
        for key, w in args.items():
            if key.startswith("binpack.resources.") and key[len("binpack.resources.") :] not in self.weights:
                raise ConfigError(f"plugin binpack: {key} names a resource not listed in binpack.resources")
            if isinstance(w, int) and w < 0:
                raise ConfigError(f"plugin binpack: {key} must not be negative")

    def node_score(self, ssn: Session, request: Vector, free: npt.NDArray[np.int64]) -> Scores | None:
        if not self.weight:
            return None
        names = ssn.snapshot.index.names
        cols = [i for i, n in enumerate(names) if self.weights.get(n, 0) and request[i] > 0]
        if not cols:
            return None
        w = np.array([self.weights[names[i]] for i in cols], dtype=np.float64)
        alloc = ssn.snapshot.alloc[:, cols].astype(np.float64)
        after = alloc - free[:, cols] + request[cols]
        frac = np.clip(after / np.where(alloc > 0, alloc, 1.0), 0.0, 1.0)
        return np.asarray(self.weight * (frac @ w) / w.sum() * 100, dtype=np.float64)
