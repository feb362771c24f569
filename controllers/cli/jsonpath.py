"""``-o jsonpath=TEMPLATE``: the subset of kubectl's JSONPath templates that scripts use, pure.

A template is text with ``{...}`` expressions, evaluated against the printed document (for ``list``
commands the ``kind: List``, as ``kubectl get -o jsonpath`` does). Supported, with kubectl's meaning:

- paths from the current object: ``{.metadata.name}``, ``{$.kind}``, ``{@}``; steps ``.key``, ``['key']``
  / ``["key"]`` (keys with dots: ``{.metadata.labels['app.kubernetes.io/name']}``, or ``\\.`` escapes),
  ``[n]`` and negative ``[-1]``, slices ``[a:b]``, wildcards ``[*]`` and ``.*``, recursive descent
  ``..key``, and filters ``[?(@.path)]``, ``[?(@.path == "x")]``, ``!=``, ``<``, ``<=``, ``>``, ``>=``;
- ``{range PATH}...{end}``: the body once per element (``@`` is the element), nestable;
- string literals ``{"\\n"}``, ``{"\\t"}``, ``{","}``; text outside braces as it is.

Output as kubectl prints it: several results of one expression separated by a space; strings bare;
numbers, booleans, maps and lists as JSON. A missing key prints nothing (kubectl's default
``--allow-missing-template-keys=true``). Left out: unions ``[a,b]``, ``&&``/``||`` in filters, and
``jsonpath-as-json``. A bad template is a :class:`JsonPathError` at argument parsing, before any request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

Value = Any


class JsonPathError(ValueError):
    """The template cannot be parsed; the message says where."""


# -- steps of a path -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Key:
    name: str


@dataclass(frozen=True, slots=True)
class Index:
    at: int


@dataclass(frozen=True, slots=True)
class Slice:
    start: int | None
    stop: int | None


@dataclass(frozen=True, slots=True)
class Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class Descend:
    """``..key``: ``key`` at any depth below."""

    name: str


@dataclass(frozen=True, slots=True)
class Filter:
    path: tuple[Step, ...]
    op: str  # "" for "exists"
    literal: Value


Step = Key | Index | Slice | Wildcard | Descend | Filter


@dataclass(frozen=True, slots=True)
class Path:
    steps: tuple[Step, ...]
    root: bool  # $: from the document, not the current element


# -- template nodes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Expr:
    path: Path


@dataclass(frozen=True, slots=True)
class Range:
    path: Path
    body: tuple[Node, ...]


Node = Text | Expr | Range


@dataclass(frozen=True, slots=True)
class Template:
    source: str
    nodes: tuple[Node, ...]

    def render(self, doc: Value) -> str:
        return "".join(_render(self.nodes, doc, doc))


# -- parsing ---------------------------------------------------------------------------------------

_NAME: Final = re.compile(r"(?:\\.|[^.\[\]\\\s])+")
_INT: Final = re.compile(r"-?\d+")
_OPS: Final = ("==", "!=", "<=", ">=", "<", ">")
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def parse(source: str) -> Template:
    """Parse ``source`` (what follows ``jsonpath=``); :class:`JsonPathError` when it is malformed."""
    nodes, rest = _parse_nodes(_tokens(source), source, top=True)
    assert not rest
    return Template(source=source, nodes=tuple(nodes))


def _tokens(source: str) -> list[tuple[str, str]]:
    """("text", ...) and ("expr", inside of the braces) in order; braces inside quotes do not count."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(source):
        start = source.find("{", i)
        if start < 0:
            out.append(("text", source[i:]))
            break
        if start > i:
            out.append(("text", source[i:start]))
        j, quote = start + 1, ""
        while j < len(source):
            c = source[j]
            if quote:
                if c == "\\":
                    j += 1
                elif c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c == "}":
                break
            j += 1
        else:
            raise JsonPathError(f"unclosed {{ at position {start} in {source!r}")
        out.append(("expr", source[start + 1 : j].strip()))
        i = j + 1
    if "}" in "".join(t for kind, t in out if kind == "text"):
        raise JsonPathError(f"unmatched }} in {source!r}")
    return out


def _parse_nodes(
    tokens: list[tuple[str, str]], source: str, *, top: bool
) -> tuple[list[Node], list[tuple[str, str]]]:
    nodes: list[Node] = []
    while tokens:
        kind, body = tokens[0]
        tokens = tokens[1:]
        if kind == "text":
            nodes.append(Text(body))
        elif body == "end":
            if top:
                raise JsonPathError(f"{{end}} without {{range}} in {source!r}")
            return nodes, [("end", ""), *tokens]
        elif body.startswith("range ") or body == "range":
            inner, tokens = _parse_nodes(tokens, source, top=False)
            if not tokens or tokens[0][0] != "end":
                raise JsonPathError(f"{{{body}}} without {{end}} in {source!r}")
            tokens = tokens[1:]
            nodes.append(Range(_parse_path(body[len("range") :].strip(), source), tuple(inner)))
        elif body and body[0] in "'\"":
            nodes.append(Text(_literal(body, source)))
        else:
            nodes.append(Expr(_parse_path(body, source)))
    if not top:
        return nodes, tokens
    return nodes, []


def _literal(body: str, source: str) -> str:
    quote = body[0]
    if len(body) < 2 or body[-1] != quote:
        raise JsonPathError(f"unterminated string {body!r} in {source!r}")
    out, i, inner = [], 0, body[1:-1]
    while i < len(inner):
        c = inner[i]
        if c == "\\" and i + 1 < len(inner):
            out.append(_ESCAPES.get(inner[i + 1], inner[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _parse_path(text: str, source: str) -> Path:
    if not text:
        raise JsonPathError(f"empty expression in {source!r}")
    root = text.startswith("$")
    if text[0] in "$@":
        text = text[1:]
    steps: list[Step] = []
    i = 0
    while i < len(text):
        if text.startswith("..", i):
            m = _NAME.match(text, i + 2)
            if m is None:
                raise JsonPathError(f"a name must follow '..' in {source!r}")
            steps.append(Descend(_unescape(m.group())))
            i = m.end()
        elif text[i] == ".":
            if text.startswith("*", i + 1):
                steps.append(Wildcard())
                i += 2
                continue
            m = _NAME.match(text, i + 1)
            if m is None:
                if i + 1 == len(text) and not steps:
                    i += 1  # "{.}": the current object
                    continue
                raise JsonPathError(f"a name must follow '.' at {text[i:]!r} in {source!r}")
            steps.append(Key(_unescape(m.group())))
            i = m.end()
        elif text[i] == "[":
            step, i = _bracket(text, i, source)
            steps.append(step)
        else:
            m = _NAME.match(text, i)
            if m is None or steps:
                raise JsonPathError(f"unexpected {text[i:]!r} in {source!r}")
            steps.append(Key(_unescape(m.group())))  # kubectl takes "{metadata.name}" too
            i = m.end()
    return Path(tuple(steps), root)


def _unescape(name: str) -> str:
    return re.sub(r"\\(.)", r"\1", name)


def _bracket(text: str, i: int, source: str) -> tuple[Step, int]:
    end = _closing(text, i, source)
    inner = text[i + 1 : end].strip()
    nxt = end + 1
    if inner == "*":
        return Wildcard(), nxt
    if inner and inner[0] in "'\"":
        return Key(_literal(inner, source)), nxt
    if inner.startswith("?"):
        return _filter(inner[1:].strip(), source), nxt
    if ":" in inner:
        parts = [p.strip() for p in inner.split(":")]
        if (
            len(parts) > 3
            or any(p and not _INT.fullmatch(p) for p in parts)
            or (len(parts) == 3 and parts[2])
        ):
            raise JsonPathError(f"unsupported slice [{inner}] in {source!r}")
        return Slice(int(parts[0]) if parts[0] else None, int(parts[1]) if parts[1] else None), nxt
    if _INT.fullmatch(inner):
        return Index(int(inner)), nxt
    raise JsonPathError(f"unsupported [{inner}] in {source!r} (unions and expressions are not supported)")


def _closing(text: str, i: int, source: str) -> int:
    depth, quote, j = 0, "", i
    while j < len(text):
        c = text[j]
        if quote:
            if c == "\\":
                j += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise JsonPathError(f"unclosed [ in {source!r}")


def _filter(expr: str, source: str) -> Filter:
    if not (expr.startswith("(") and expr.endswith(")")):
        raise JsonPathError(f"a filter is [?(...)], not [?{expr}] in {source!r}")
    expr = expr[1:-1].strip()
    for op in _OPS:
        left, found, right = expr.partition(f" {op} ") if f" {op} " in expr else expr.partition(op)
        if found:
            return Filter(_filter_path(left.strip(), source), op, _filter_literal(right.strip(), source))
    return Filter(_filter_path(expr, source), "", None)


def _filter_path(text: str, source: str) -> tuple[Step, ...]:
    if not text.startswith("@"):
        raise JsonPathError(f"a filter compares @.path, not {text!r}, in {source!r}")
    return _parse_path(text, source).steps


def _filter_literal(text: str, source: str) -> Value:
    if text and text[0] in "'\"":
        return _literal(text, source)
    try:
        return json.loads(text)  # numbers, true, false, null
    except ValueError:
        raise JsonPathError(f"cannot compare with {text!r} in {source!r}") from None


# -- evaluation ------------------------------------------------------------------------------------


def _render(nodes: Sequence[Node], root: Value, current: Value) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, Text):
            yield node.text
        elif isinstance(node, Expr):
            yield " ".join(_show(v) for v in evaluate(node.path, root, current))
        else:
            for value in evaluate(node.path, root, current):
                for item in value if isinstance(value, list) else [value]:
                    yield from _render(node.body, root, item)


def evaluate(path: Path, root: Value, current: Value) -> list[Value]:
    """Every value ``path`` reaches (none when a key is missing)."""
    values = [root if path.root else current]
    for step in path.steps:
        values = [out for v in values for out in _step(step, v)]
    return values


def _step(step: Step, value: Value) -> Iterator[Value]:
    if isinstance(step, Key):
        if isinstance(value, Mapping) and step.name in value:
            yield value[step.name]
    elif isinstance(step, Index):
        if isinstance(value, list) and -len(value) <= step.at < len(value):
            yield value[step.at]
    elif isinstance(step, Slice):
        if isinstance(value, list):
            yield from value[step.start : step.stop]
    elif isinstance(step, Wildcard):
        if isinstance(value, Mapping):
            yield from (value[k] for k in sorted(value))
        elif isinstance(value, list):
            yield from value
    elif isinstance(step, Descend):
        yield from _descend(step.name, value)
    else:
        for item in value if isinstance(value, list) else ():
            if _matches(step, item):
                yield item


def _descend(name: str, value: Value) -> Iterator[Value]:
    if isinstance(value, Mapping):
        if name in value:
            yield value[name]
        for k in sorted(value):
            yield from _descend(name, value[k])
    elif isinstance(value, list):
        for item in value:
            yield from _descend(name, item)


def _matches(f: Filter, item: Value) -> bool:
    found = evaluate(Path(f.path, root=False), item, item)
    if not f.op:
        return bool(found)
    if not found:
        return False
    left, right = found[0], f.literal
    if f.op == "==":
        return bool(left == right)
    if f.op == "!=":
        return bool(left != right)
    numbers = isinstance(left, int | float) and isinstance(right, int | float)
    if not numbers and not (isinstance(left, str) and isinstance(right, str)):
        return False  # kubectl's filters do not order values of different types
    cmp = int(left > right) - int(left < right)
    return {"<": cmp < 0, "<=": cmp <= 0, ">": cmp > 0, ">=": cmp >= 0}[f.op]


def _show(value: Value) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
