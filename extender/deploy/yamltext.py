"""YAML text for generated manifests: one JSON-shaped value type and a dumper that keeps output readable.

Invariants: key order is kept as built (``sort_keys=False``), so a manifest reads apiVersion, kind, metadata,
spec; multi-line strings (a ConfigMap holding a whole config file) are written as literal blocks; only the
safe representers are used, so the text loads with any YAML 1.1 safe loader.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import TypeAlias

import yaml

# A JSON-shaped value as a manifest builder produces it. Covariant containers so a list of objects is a Json.
Json: TypeAlias = Mapping[str, "Json"] | Sequence["Json"] | str | int | float | bool | None
Manifest: TypeAlias = dict[str, Json]


class _Dumper(yaml.SafeDumper):
    """SafeDumper that writes multi-line strings as ``|`` blocks and never emits anchors or aliases.

    Builders share one labels dict between metadata and selectors; ``&id001``/``*id001`` would be valid YAML
    but unreadable, and some tools that consume manifests reject aliases.
    """

    def ignore_aliases(self, data: object) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


def dump(doc: Mapping[str, Json]) -> str:
    """One YAML document, no ``---`` marker."""
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False)


def dump_all(docs: Iterable[Mapping[str, Json]]) -> str:
    """A multi-document stream, each document opened by ``---`` (what ``kubectl apply -f -`` reads)."""
    return yaml.dump_all(
        list(docs), Dumper=_Dumper, sort_keys=False, default_flow_style=False, explicit_start=True
    )
