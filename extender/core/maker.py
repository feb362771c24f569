"""A faster way to make the frozen records made once per pod of a LIST (Pods, the store's records): the same
object the dataclass's ``__init__`` makes, from a dict of its fields.

Why: a dataclass called with many keywords spends most of its time matching them to parameters (~2.5 µs
for the 29 of a Pod) and then in ``object.__setattr__`` once per field, which looks each slot up by name; a
cold restart makes ~100 000 Pods, PodViews and metadata views. :func:`maker` writes, as the dataclasses
module itself does, one function per class that takes the fields as a dict literal (one cheap step for
the caller) and sets each slot through its descriptor.

Exact: :func:`maker` takes only classes whose ``__init__`` does nothing else (a dataclass with slots,
every field in ``__init__``, no ``__post_init__``), sets every field (a missing one takes its default or
its factory's value, as ``__init__`` would) and refuses a dict with a key that names no field, so a
misspelt field fails at once, as a wrong keyword would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def maker(cls: type[T]) -> Callable[[Mapping[str, Any]], T]:
    """``make(fields)``: ``cls(**fields)``, sooner (see the module)."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: a dataclass with slots is needed")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: its __post_init__ would not run")
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        raise TypeError(f"{cls.__name__}: a field outside __init__ is not set by it")
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_names": {f.name: None for f in fields}}
    given, absent = (
        ["    if d.keys() == _names.keys():"],
        ["    if not d.keys() <= _names.keys():", "        _refuse(d)"],
    )
    for i, f in enumerate(fields):
        scope[f"_set{i}"] = cls.__dict__[f.name].__set__  # the slot's descriptor: no lookup by name
        given.append(f"        _set{i}(o, d[{f.name!r}])")
        if f.default is not dataclasses.MISSING:
            scope[f"_default{i}"] = f.default
            value = f"d.get({f.name!r}, _default{i})"
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory{i}"] = f.default_factory
            value = f"d[{f.name!r}] if {f.name!r} in d else _factory{i}()"
        else:
            value = f"d[{f.name!r}]"
        absent.append(f"    _set{i}(o, {value})")
    # Every field given (the callers' way): each read as it is; else the defaults, as __init__ takes them.
    lines = ["def make(d):", "    o = _new(_cls)", *given, "        return o", *absent, "    return o"]

    def refuse(d: Mapping[str, Any]) -> None:
        raise TypeError(f"{cls.__name__}: no field {sorted(set(d) - set(scope['_names']))}")

    scope["_refuse"] = refuse
    exec("\n".join(lines), scope)  # (our own text, made of the class's field names)
    make: Callable[[Mapping[str, Any]], T] = scope["make"]
    make.__qualname__ = f"maker({cls.__name__})"
    return make
