"""Job plugin arguments: Volcano's flag syntax, read into one frozen dataclass per plugin.

Volcano hands each job plugin its ``spec.plugins[name]`` list and parses it with Go's ``flag`` package, so a
user writes ``--port=23456``, ``-port=23456``, ``--port 23456``, ``--disable-network-policy`` (a bare boolean
means true) or ``--disable-network-policy=false``. We accept exactly that syntax. Volcano only logs a parse
error and carries on with whatever it read so far; we refuse instead, so a typo is reported at admission
rather than silently ignored: an unknown flag, a malformed value, a value failing its field's check, or a
stray positional argument raise :class:`ConfigError` naming the plugin and the argument.

A plugin declares its flags as a dataclass whose fields (``snake_case``, spelt ``--kebab-case`` on the command
line) are typed ``bool``, ``int`` or ``str``; :func:`option` attaches a value check, and can spell a flag
otherwise where Volcano does (the ray plugin's ``--headContainer``, ``--dashboardPort``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, get_type_hints

from extender.core.errors import ConfigError

T = TypeVar("T")
V = TypeVar("V", bool, int, str)

Check = Callable[[Any], str | None]

_CHECK: Final = "pumice.check"
_FLAG: Final = "pumice.flag"
# strconv.ParseBool's spellings: Go's flag package accepts these and nothing else.
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def option(default: V, *, check: Callable[[V], str | None] | None = None, flag: str | None = None) -> V:
    """A flag field with a default and an optional check returning an error text (or None when fine);
    ``flag`` names it on the command line when that is not the field's name in kebab case."""
    metadata: dict[str, Any] = {}
    if check is not None:
        metadata[_CHECK] = check
    if flag is not None:
        metadata[_FLAG] = flag
    return dataclasses.field(default=default, metadata=metadata)


def port_number(value: int) -> str | None:
    return None if 0 < value < 65536 else "must be a port number between 1 and 65535"


def task_name(value: str) -> str | None:
    return None if value else "must name a task"


def non_negative(value: int) -> str | None:
    return None if value >= 0 else "must not be negative"


def not_empty(value: str) -> str | None:
    return None if value else "must not be empty"


@dataclass(frozen=True, slots=True)
class _Flag:
    field: str
    type: type
    check: Check | None


def _flags(cls: type[Any]) -> dict[str, _Flag]:
    hints = get_type_hints(cls)
    out: dict[str, _Flag] = {}
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if kind not in (bool, int, str):  # pragma: no cover - a programming error in a plugin's Args
            raise TypeError(f"{cls.__name__}.{f.name}: flag fields must be bool, int or str")
        name = f.metadata.get(_FLAG) or f.name.replace("_", "-")
        out[name] = _Flag(field=f.name, type=kind, check=f.metadata.get(_CHECK))
    return out


def _convert(plugin: str, flag: str, kind: type, raw: str) -> bool | int | str:
    if kind is bool:
        if raw in _TRUE:
            return True
        if raw in _FALSE:
            return False
        raise ConfigError(f"job plugin {plugin}: --{flag}={raw}: want true or false")
    if kind is int:
        # Go reads ints with base prefixes (0x, 0o, 0b) and underscores, never with surrounding blanks.
        try:
            if raw != raw.strip():
                raise ValueError(raw)
            return int(raw, 0)
        except ValueError:
            raise ConfigError(f"job plugin {plugin}: --{flag}={raw}: want an integer") from None
    return raw


def parse_flags(plugin: str, argv: Sequence[str], cls: type[T]) -> T:
    """Read ``argv`` (Go flag syntax) into ``cls``; later repeats of a flag win, as in Go."""
    flags = _flags(cls)
    values: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            if i < len(argv):
                raise ConfigError(f"job plugin {plugin}: unexpected argument {argv[i]!r} after --")
            break
        if len(arg) < 2 or not arg.startswith("-"):
            raise ConfigError(f"job plugin {plugin}: unexpected argument {arg!r} (want --name=value)")
        body = arg[2:] if arg.startswith("--") else arg[1:]
        if not body or body[0] in "-=":
            raise ConfigError(f"job plugin {plugin}: bad flag syntax {arg!r}")
        name, eq, raw = body.partition("=")
        flag = flags.get(name)
        if flag is None:
            known = ", ".join(f"--{n}" for n in sorted(flags)) or "none"
            raise ConfigError(f"job plugin {plugin}: unknown argument --{name} (known: {known})")
        if not eq:
            if flag.type is bool:
                raw = "true"
            elif i < len(argv):
                raw = argv[i]
                i += 1
            else:
                raise ConfigError(f"job plugin {plugin}: --{name} needs a value")
        value = _convert(plugin, name, flag.type, raw)
        problem = flag.check(value) if flag.check is not None else None
        if problem:
            raise ConfigError(f"job plugin {plugin}: --{name}={raw}: {problem}")
        values[flag.field] = value
    return cls(**values)
