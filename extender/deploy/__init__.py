"""What ``pumice manifests`` prints: pure generators of Kubernetes objects and the CLI that dumps them.

``scheduler_config`` builds the KubeSchedulerConfiguration that points a stock kube-scheduler at our extender
(plain HTTP, or HTTPS with a ``tlsConfig`` of file paths); ``rbac`` is the table of API calls pumice makes,
from which its ClusterRole and namespace Role are built, ``tenant_rbac`` what its users get in the built-in
view/edit/admin roles; ``manifests`` builds everything ``kubectl apply -f -`` needs to run
pumice plus that second kube-scheduler, with the two Deployments from ``workloads``, the webhook
configurations from ``webhooks`` and the fixed names and ports of ``names``; ``chart_files`` the Helm
chart's generated data files; ``args`` holds the command's
flags (cheap to import: ``pumice``'s parser is built from it) and ``cli`` runs it. All of it is generated
for one Kubernetes release (:mod:`extender.api.versions`). Only ``cli`` reads a file (``--ca-file``) or has
a cluster asked for its release (``--kubeconfig``), and it does the asking through a function the
composition root passes in, as it does the webhook builder: nothing here imports controllers, admission or
an HTTP client. Nothing here makes a key or a certificate (the certificate contract: pumice makes them at
start-up, or cert-manager does), so the same arguments always print the same output.
"""
