"""What ``pumice manifests`` prints: pure generators of Kubernetes objects and the CLI that dumps them.

``scheduler_config`` builds the KubeSchedulerConfiguration that points a stock kube-scheduler at our extender;
``manifests`` builds everything ``kubectl apply -f -`` needs to run pumice plus that second kube-scheduler;
``cli`` wires both into argparse. Nothing here talks to a cluster;
only ``cli`` reads a file (``--ca-file``).
"""
