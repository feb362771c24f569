"""vcctl-style commands on the ``pumice`` command: ``pumice job|queue|jobflow|jobtemplate|cronjob|hypernode``.

A client of the API server like kubectl, not part of the serving process: each command resolves the
kubeconfig, makes a few raw-JSON calls through :mod:`controllers.kube.client`, prints, and exits. A
program of its own: it imports neither the simulator, the servers, the reconcilers nor the scheduling loop
(import-linter contracts), and what it shares with the simulator lives beside both (:mod:`controllers.tables`,
:mod:`controllers.shares_view`).

``parser.add_cli_parsers`` adds the flags; each command's entry point is in ``commands``, which imports its
implementation when it runs (``jobs``, ``explain``, ``queues``, ``flows``, ``hypernodes``), so a command
loads only what it uses. Beside them: the bodies they create (``job_bodies``, ``queue_bodies``), the job
tables (``job_views``), ``-o`` formats (``output``, ``jsonpath``), watching (``watch``), and ``kubeconfig``
(the cluster lookup and error reporting, with ``errors``).
"""
