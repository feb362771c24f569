"""The two failures a CLI command reports without a traceback (see
:func:`controllers.cli.kubeconfig.run_action`).

Plain exceptions in a module of their own, so the pure builders that raise them import nothing else.
"""

from __future__ import annotations


class CliError(Exception):
    """A failure the user can act on; the message is printed after ``pumice:``."""


class UsageError(Exception):
    """Flags that parse but do not make sense together; exits 2 like an argparse error."""
