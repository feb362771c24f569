"""vcctl-style commands on the ``pumice`` command: ``pumice job ...`` and ``pumice queue ...``.

A client of the API server like kubectl, not part of the serving process: each command resolves the
kubeconfig, makes a few raw-JSON calls through :mod:`controllers.kube.client`, prints, and exits.
``parser.add_cli_parsers`` is the entry point; ``jobs`` and ``queues`` hold the commands, ``output`` the
kubectl-style formatting, ``kubeconfig`` the cluster lookup and error reporting.
"""
