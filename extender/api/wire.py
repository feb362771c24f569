"""Wire shapes of the scheduler-extender protocol (k8s.io/kube-scheduler/extender/v1).

The Go types carry no json tags, so keys are the Go field names. Embedded Pod/Node objects stay camelCase
and are handled as plain mappings until they are parsed into the model.
"""

from typing import Any, NotRequired, TypedDict

KubeObject = dict[str, Any]


class ExtenderArgs(TypedDict):
    Pod: KubeObject
    Nodes: NotRequired[dict[str, Any] | None]
    NodeNames: NotRequired[list[str] | None]


class ExtenderFilterResult(TypedDict):
    NodeNames: list[str] | None
    FailedNodes: dict[str, str]
    FailedAndUnresolvableNodes: dict[str, str]
    Error: str


class HostPriority(TypedDict):
    Host: str
    Score: int


class ExtenderBindingArgs(TypedDict):
    PodName: str
    PodNamespace: str
    PodUID: str
    Node: str


class ExtenderBindingResult(TypedDict):
    Error: str


class MetaPod(TypedDict):
    UID: str


class MetaVictims(TypedDict):
    Pods: list[MetaPod]
    NumPDBViolations: int


class ExtenderPreemptionArgs(TypedDict):
    Pod: KubeObject
    NodeNameToVictims: NotRequired[dict[str, Any] | None]
    NodeNameToMetaVictims: NotRequired[dict[str, MetaVictims] | None]


class ExtenderPreemptionResult(TypedDict):
    NodeNameToMetaVictims: dict[str, MetaVictims]


# kube-scheduler's MaxExtenderPriority: extender scores are integers 0..10, scaled by the extender weight.
MAX_EXTENDER_PRIORITY = 10
