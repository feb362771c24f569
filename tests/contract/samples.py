"""Where the golden wire samples live (``wire_samples/``, inside the repository; its README says where each
came from), and how a test reads one: the exact bytes kube-scheduler and kube-apiserver sent, decoded."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

SAMPLES: Final = Path(__file__).resolve().parent / "wire_samples"


def sample(name: str) -> dict[str, Any]:
    """The JSON body ``wire_samples/<name>``: decoded afresh on each call, so a test may change its copy."""
    data: dict[str, Any] = orjson.loads((SAMPLES / name).read_bytes())
    return data
