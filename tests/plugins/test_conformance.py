"""conformance: critical system pods are never victims."""

from __future__ import annotations

import pytest

from extender.core.errors import ConfigError
from extender.core.model import PodUID
from extender.plugins.conformance import ConformancePlugin
from tests.core.builders import node, pod
from tests.plugins.helpers import session


@pytest.mark.parametrize(
    ("namespace", "priority", "protected"),
    [
        ("default", 0, None),
        ("team-a", 1_999_999_999, None),
        ("kube-system", 0, "default/x is in kube-system"),
        ("team-a", 2_000_000_000, "team-a/x is a critical system pod"),  # system-cluster-critical
        ("team-a", 2_000_001_000, "team-a/x is a critical system pod"),  # system-node-critical
    ],
    ids=["ordinary", "high-but-not-critical", "kube-system", "cluster-critical", "node-critical"],
)
def test_victim(namespace: str, priority: int, protected: str | None) -> None:
    raw = pod("x", namespace=namespace, priority=priority, node="n0", phase="Running")
    plugin = ConformancePlugin({})
    ssn = session([plugin], [node("n0")], [raw])
    reason = plugin.victim(ssn, ssn.snapshot.pods[PodUID("x")])
    if protected is None:
        assert reason is None
    else:
        assert reason == protected.replace("default/x", f"{namespace}/x")


def test_no_arguments() -> None:
    with pytest.raises(ConfigError, match="plugin conformance: unknown argument 'x' \\(known: none\\)"):
        ConformancePlugin({"x": 1})
