"""What ``pumice manifests`` prints: pure generators of Kubernetes objects and the CLI that dumps them.

``scheduler_config`` builds the KubeSchedulerConfiguration that points a stock kube-scheduler at our extender
(plain HTTP, or HTTPS with a ``tlsConfig`` of file paths); ``rbac`` is the table of API calls pumice makes,
from which its ClusterRole is built; ``manifests`` builds everything ``kubectl apply -f -`` needs to run
pumice plus that second kube-scheduler, with the two Deployments from ``workloads``, the webhook
configurations from ``webhooks`` and the fixed names and ports of ``names``; ``args`` holds the command's
flags (cheap to import: ``pumice``'s parser is built from it) and ``cli`` runs it. All of it is generated
for one Kubernetes release (:mod:`extender.api.versions`). Only ``cli`` reads a file (``--ca-file``) or has
a cluster asked for its release (``--kubeconfig``), and it does the asking through a function the
composition root passes in, as it does the webhook builder: nothing here imports controllers, admission or
an HTTP client. Only ``manifests.generate_extender_tls`` draws fresh keys (with :mod:`extender.process.tls`).
"""
