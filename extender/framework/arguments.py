"""Plugin and action arguments: Volcano's keys, checked against a declared table so typos fail startup.

Every plugin and action declares what it accepts as an :class:`ArgumentTable` (Volcano's keys and
pumice's own), parsed with it; the tables are also what the conf's key listing is made of
(:func:`extender.plugins.registry.conf_keys`, checked against the README's table by a test), so what
loads and what is documented cannot drift apart. Values are read as Volcano's ``Arguments.Get*`` read
them where that is stricter than nothing (a bool may be a string ``strconv.ParseBool`` reads); a value
Volcano would ignore with a warning is refused here, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.core.durations import parse_duration
from extender.core.errors import ConfigError

# Go's strconv.ParseBool, which Volcano's Arguments.GetBool applies to a string value.
_BOOL_WORDS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _BOOL_WORDS:
        return _BOOL_WORDS[value]
    raise ValueError


class Duration:
    """The type of an argument given as a Go duration (``30s``, ``1h30m``) or a number of seconds."""


def parse_arguments(
    plugin: str,
    raw: Mapping[str, Any],
    spec: Mapping[str, tuple[type, Any]],
    prefixes: Mapping[str, type] | None = None,
    *,
    kind: str = "plugin",
) -> dict[str, Any]:
    """``spec`` maps each accepted key to (type, default); ``prefixes`` accepts families such as
    ``binpack.resources.<name>``. Unknown keys and wrongly typed values raise ConfigError. A bool may be
    given as a string Go's ``strconv.ParseBool`` reads (``"true"``, ``"0"``...), as Volcano accepts it."""
    out: dict[str, Any] = {k: default for k, (_, default) in spec.items()}
    for key, value in raw.items():
        typ: type | None = spec[key][0] if key in spec else None
        if typ is None:
            typ = next((t for p, t in (prefixes or {}).items() if key.startswith(p)), None)
        if typ is None:
            known = ", ".join(sorted(spec)) or "none"
            raise ConfigError(f"{kind} {plugin}: unknown argument {key!r} (known: {known})")
        try:
            if typ is bool:
                out[key] = _bool(value)
            elif typ is Duration:
                seconds = (
                    float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
                )
                out[key] = parse_duration(str(value)) if seconds is None else seconds
                if not 0 <= out[key] < float("inf"):
                    raise ValueError
            elif typ is list:  # a YAML sequence (deviceshare.GPUExclusiveRules, volumebinding.shape)
                if not isinstance(value, list):
                    raise ValueError
                out[key] = value
            elif typ is dict:  # a YAML mapping (resource-strategy-fit's sections)
                if not isinstance(value, Mapping):
                    raise ValueError
                out[key] = value
            elif typ is float:
                out[key] = float(value)
            elif typ is int:
                if isinstance(value, bool) or float(value) != int(float(value)):
                    raise ValueError
                out[key] = int(float(value))
            else:
                out[key] = str(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
            what = {Duration: "a duration such as 30s or 5m", dict: "a mapping"}.get(typ, f"a {typ.__name__}")
            raise ConfigError(f"{kind} {plugin}: argument {key}={value!r} must be {what}") from None
    return out


@dataclass(frozen=True, slots=True)
class ArgumentTable:
    """What a plugin or an action accepts: each key with its (type, default), and key families by prefix
    (``binpack.resources.`` for ``binpack.resources.<resource>``) with the type of their values."""

    keys: Mapping[str, tuple[type, Any]] = field(default_factory=dict)
    prefixes: Mapping[str, type] = field(default_factory=dict)

    def parse(self, owner: str, raw: Mapping[str, Any], *, kind: str = "plugin") -> dict[str, Any]:
        return parse_arguments(owner, raw, self.keys, self.prefixes, kind=kind)

    def names(self) -> tuple[str, ...]:
        """The keys, and each family as ``<prefix><name>``, as the README lists them."""
        return (*self.keys, *(f"{p}<name>" for p in self.prefixes))


NO_ARGUMENTS = ArgumentTable()
