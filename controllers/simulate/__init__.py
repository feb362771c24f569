"""``pumice simulate``: the real scheduler around a simulated API server, kube-scheduler and kubelets.

A program of its own: it imports neither the CLI, the servers nor the reconcilers (import-linter
contracts); what it prints like the CLI comes from :mod:`controllers.tables` and
:mod:`controllers.shares_view`. ``args`` holds its flags (imported by ``pumice``'s parser), ``cli`` runs it.
"""
