"""conformance: never evict critical system pods (kube-system, system-*-critical priority classes).

Enable with::

    - name: conformance
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from extender.core.model import Pod
from extender.framework.plugin import Plugin
from extender.framework.session import Session

# Kubernetes' built-in critical priority values (system-cluster-critical, system-node-critical).
_CRITICAL_PRIORITY: Final = 2_000_000_000


class ConformancePlugin(Plugin):
    name = "conformance"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.argument_table.parse(self.name, arguments)

    def victim(self, ssn: Session, pod: Pod) -> str | None:
        if pod.namespace == "kube-system":
            return f"{pod.key} is in kube-system"
        if pod.priority >= _CRITICAL_PRIORITY:
            return f"{pod.key} is a critical system pod"
        return None
