"""Errors of the pure core. Each names the bad input, so a handler can answer 400 or deny with it."""


class PumiceError(Exception):
    """Base of every error the core raises on bad input."""


class InvalidQuantity(PumiceError, ValueError):
    def __init__(self, value: str) -> None:
        super().__init__(f"invalid resource quantity {value}")


class InvalidObject(PumiceError, ValueError):
    """A Kubernetes object that cannot be read: the message names the field."""


class ConfigError(PumiceError, ValueError):
    """A scheduler configuration that cannot be loaded: the message names the plugin, action or argument."""
