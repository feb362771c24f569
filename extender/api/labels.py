"""Annotation, label and name constants shared by every layer.

Volcano's keys are facts we match so a Volcano user's manifests and integrations keep working; keys under
``pumice.dev/`` are ours.
"""

from typing import Final

# Group membership: kube-batch/Volcano write the first; Volcano also reads the second.
GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
GROUP_NAME_ANNOTATION_VOLCANO: Final = "scheduling.volcano.sh/group-name"
QUEUE_NAME_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"
VOLCANO_QUEUE_LABEL: Final = "volcano.sh/queue-name"
TASK_SPEC_ANNOTATION: Final = "volcano.sh/task-spec"
PREEMPTABLE_ANNOTATION: Final = "volcano.sh/preemptable"
# Node groups (Volcano's nodegroup plugin): the node label naming a node's group, and a Queue's per-group
# resource caps (JSON: group name -> ResourceList).
NODEGROUP_LABEL: Final = "volcano.sh/nodegroup-name"
NODEGROUP_LIMITS_ANNOTATION: Final = "volcano.sh/nodegroup-resource-limits"
# A pod's own resource-strategy-fit scoring: LeastAllocated / MostAllocated, and JSON weights per resource.
RESOURCE_STRATEGY_TYPE_ANNOTATION: Final = "volcano.sh/resource-strategy-scoring-type"
RESOURCE_STRATEGY_WEIGHT_ANNOTATION: Final = "volcano.sh/resource-strategy-weight"
# A pod's cooldown (a Go duration, label or annotation): no victim that long after it was scheduled (cdp).
COOLDOWN_TIME_KEY: Final = "volcano.sh/cooldown-time"

# Ours: the node a pod is planned on (also the "touch" that wakes kube-scheduler's unschedulable queue).
PLANNED_NODE_ANNOTATION: Final = "pumice.dev/planned-node"
# When it was last touched: makes every touch an update kube-scheduler sees, also one that names the node the
# annotation already names (a restarted pumice touching a pod its predecessor had planned there).
TOUCHED_AT_ANNOTATION: Final = "pumice.dev/touched-at"
# How long a pod is expected to run (a Go duration): the starvation guard's estimate of when nodes free up.
EXPECTED_RUNTIME_ANNOTATION: Final = "pumice.dev/expected-runtime"
# Scheduling gate (Kubernetes >= 1.27) that holds a gang's pods until the whole gang is planned.
GANG_SCHEDULING_GATE: Final = "pumice.dev/gang"

# On pumice's leader-election Lease: where the holder's extender listens (scheme://address:port), so a standby
# replica can forward the extender verbs kube-scheduler sends it (controllers.leader).
LEADER_URL_ANNOTATION: Final = "pumice.dev/extender-url"
# On a TLS Secret pumice created (the certificate contract): which pumice made it, for the operator.
ISSUED_BY_ANNOTATION: Final = "pumice.dev/issued-by"

DEFAULT_SCHEDULER_NAME: Final = "volcano"
DEFAULT_QUEUE: Final = "default"
ROOT_QUEUE: Final = "root"

SCHEDULING_GROUP: Final = "scheduling.volcano.sh"
SCHEDULING_VERSION: Final = "v1beta1"
BATCH_GROUP: Final = "batch.volcano.sh"
BUS_GROUP: Final = "bus.volcano.sh"
FLOW_GROUP: Final = "flow.volcano.sh"
TOPOLOGY_GROUP: Final = "topology.volcano.sh"
NODEINFO_GROUP: Final = "nodeinfo.volcano.sh"

# vcjob (batch.volcano.sh/v1alpha1 Job): the keys Volcano's job controller writes on pods, which
# integrations (and Volcano's own plugins) read back.
JOB_NAME_KEY: Final = "volcano.sh/job-name"
JOB_NAMESPACE_KEY: Final = "volcano.sh/job-namespace"
TASK_INDEX_KEY: Final = "volcano.sh/task-index"
JOB_VERSION_KEY: Final = "volcano.sh/job-version"
JOB_RETRY_COUNT_KEY: Final = "volcano.sh/job-retry-count"
POD_TEMPLATE_KEY: Final = "volcano.sh/template-uid"
# The partition a pod of a task with ``partitionPolicy`` is in (its index // partitionSize), a label the
# PodGroup's subGroupPolicy groups the task's pods by.
TASK_PARTITION_ID: Final = "volcano.sh/partition-id"
JOB_KIND: Final = "Job"
BATCH_VERSION: Final = "v1alpha1"
BUS_VERSION: Final = "v1alpha1"

# task-topology: a vcjob's annotations (the job controller copies them onto its PodGroup, where the
# plugin reads them): roles to pack together and to spread ("ps,worker;chief"), and the order roles are
# placed in ("ps,worker").
TASK_TOPOLOGY_AFFINITY: Final = "volcano.sh/task-topology-affinity"
TASK_TOPOLOGY_ANTI_AFFINITY: Final = "volcano.sh/task-topology-anti-affinity"
TASK_TOPOLOGY_TASK_ORDER: Final = "volcano.sh/task-topology-task-order"
TASK_TOPOLOGY_ANNOTATIONS: Final = frozenset(
    {TASK_TOPOLOGY_AFFINITY, TASK_TOPOLOGY_ANTI_AFFINITY, TASK_TOPOLOGY_TASK_ORDER}
)
