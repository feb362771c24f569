"""Plugin arguments: Volcano's dotted keys, checked against a declared table so typos fail startup."""

from __future__ import annotations

from collections.abc import Mapping
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
            elif typ is float:
                out[key] = float(value)
            elif typ is int:
                if isinstance(value, bool) or float(value) != int(float(value)):
                    raise ValueError
                out[key] = int(float(value))
            else:
                out[key] = str(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
            what = "a duration such as 30s or 5m" if typ is Duration else f"a {typ.__name__}"
            raise ConfigError(f"{kind} {plugin}: argument {key}={value!r} must be {what}") from None
    return out
