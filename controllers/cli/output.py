"""How the CLI prints besides tables: ``-o yaml|json`` documents, ``-o name`` and ``-o jsonpath=TEMPLATE``
(see :mod:`controllers.cli.jsonpath` for the supported template subset), and the ``-o`` flag's check.

Pure functions of their arguments, so every format is unit-tested. The kubectl-style tables, ages and
cells are :mod:`controllers.tables` (the simulator prints with them too).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import yaml

from controllers.cli import jsonpath
from controllers.tables import metadata

Obj = dict[str, Any]
Format = Literal["table", "wide", "yaml", "json"]

TABLE: Final = "table"
NAME: Final = "name"
JSONPATH: Final = "jsonpath="
DOCUMENTS: Final = ("yaml", "json")


def _without_managed_fields(obj: Mapping[str, Any]) -> Obj:
    # kubectl hides managedFields by default: they are bookkeeping, not what the user wrote.
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


def as_list(items: Sequence[Mapping[str, Any]]) -> Obj:
    """Several objects as one document, the ``kind: List`` kubectl prints for ``get -o yaml``."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items), "metadata": {"resourceVersion": ""}}


def dump(obj: Mapping[str, Any], fmt: Literal["yaml", "json"]) -> str:
    """One document as YAML or JSON, managedFields left out (also from the items of a List)."""
    doc = _without_managed_fields(obj)
    if isinstance(doc.get("items"), list):
        doc["items"] = [_without_managed_fields(i) if isinstance(i, Mapping) else i for i in doc["items"]]
    if fmt == "json":
        return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"
    return yaml.safe_dump(doc, sort_keys=True, default_flow_style=False, allow_unicode=True)


def output_format(choices: Sequence[str]) -> Callable[[str], str]:
    """The argparse ``type`` of ``-o``: one of ``choices``, ``name``, or ``jsonpath=TEMPLATE``.

    The template is parsed here, so a bad one is a usage error (exit 2) before any request."""

    def parse(value: str) -> str:
        if value in choices or value in (
            NAME,
            TABLE,
        ):  # argparse passes the default ("table") through here too
            return value
        if value.startswith(JSONPATH):
            try:
                jsonpath.parse(value[len(JSONPATH) :])
            except jsonpath.JsonPathError as e:
                raise argparse.ArgumentTypeError(f"bad jsonpath template: {e}") from None
            return value
        if value == "jsonpath":
            raise argparse.ArgumentTypeError("jsonpath needs a template: -o jsonpath='{.metadata.name}'")
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an output format ({', '.join((*choices, NAME, JSONPATH + 'TEMPLATE'))})"
        )

    parse.__name__ = "output format"  # argparse names the type in its error message
    return parse


def render_as(fmt: str, doc: Mapping[str, Any], resource: str) -> str | None:
    """``doc`` (one object or a ``kind: List``) as ``-o name`` or ``-o jsonpath=...`` prints it, else None.

    ``name`` prints ``<resource>/<name>`` per object, as kubectl (``job.batch.volcano.sh/demo``).
    """
    if fmt == NAME:
        items = doc.get("items") if doc.get("kind") == "List" else [doc]
        names = [metadata(i).get("name") for i in items or () if isinstance(i, Mapping)]
        return "".join(f"{resource}/{n}\n" for n in names if n)
    if fmt.startswith(JSONPATH):
        shown = _without_managed_fields(doc)
        if isinstance(shown.get("items"), list):
            shown["items"] = [
                _without_managed_fields(i) if isinstance(i, Mapping) else i for i in shown["items"]
            ]
        return jsonpath.parse(fmt[len(JSONPATH) :]).render(shown)
    return None


def always_printed(fmt: str) -> bool:
    """Formats printed for an empty list too (a List document, a template's fixed text), as kubectl."""
    return fmt in DOCUMENTS or fmt.startswith(JSONPATH)
