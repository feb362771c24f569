"""The kubectl JSONPath subset of ``-o jsonpath=...``: each supported form, and the errors."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.cli.jsonpath import JsonPathError, parse

DOC: dict[str, Any] = {
    "kind": "List",
    "items": [
        {
            "metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web", "tier": "x"}},
            "spec": {"replicas": 2, "suspend": False},
            "status": {"state": {"phase": "Pending"}},
        },
        {
            "metadata": {"name": "b", "labels": {}},
            "spec": {"replicas": 3},
            "status": {"state": {"phase": "Running"}},
        },
    ],
}

CASES = [
    ("{.kind}", "List"),
    ("{$.kind}", "List"),
    ("kind={.kind}!", "kind=List!"),
    ("{.items[*].metadata.name}", "a b"),
    ("{.items[0].metadata.name}", "a"),
    ("{.items[-1].metadata.name}", "b"),
    ("{.items[0:1].metadata.name}", "a"),
    ("{.items[5].metadata.name}", ""),  # out of range: nothing, as a missing key
    ("{.items[0].metadata.labels['app.kubernetes.io/name']}", "web"),
    ('{.items[0].metadata.labels["app.kubernetes.io/name"]}', "web"),
    ("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}", "web"),
    ("{.items[0].metadata.labels.*}", "web x"),
    ("{..phase}", "Pending Running"),
    ('{.items[?(@.status.state.phase=="Running")].metadata.name}', "b"),
    ("{.items[?(@.status.state.phase != 'Running')].metadata.name}", "a"),
    ("{.items[?(@.spec.replicas > 2)].metadata.name}", "b"),
    ("{.items[?(@.spec.replicas <= 2)].metadata.name}", "a"),
    ("{.items[?(@.spec.suspend)].metadata.name}", "a"),  # exists
    ("{.items[0].spec.replicas}", "2"),
    ("{.items[0].spec.suspend}", "false"),
    ("{.items[0].spec}", '{"replicas":2,"suspend":false}'),
    ("{.items[1].metadata.labels}", "{}"),
    ("{.nope.deeper}", ""),
    ('{range .items[*]}{.metadata.name}{"\\t"}{.status.state.phase}{"\\n"}{end}', "a\tPending\nb\tRunning\n"),
    ("{range .items[*]}[{@.metadata.name}]{end}", "[a][b]"),
    ("{range .items}<{.metadata.name}>{end}", "<a><b>"),  # a list result is iterated too
    (
        "{range .items[*]}{.metadata.name}:{range .metadata.labels.*}{@},{end};{end}",
        "a:web,x,;b:;",
    ),
    ('{"a}b"}', "a}b"),
    ("{.items[*]['metadata']['name']}", "a b"),
]


@pytest.mark.parametrize(("template", "expected"), CASES, ids=[c[0] for c in CASES])
def test_render(template: str, expected: str) -> None:
    assert parse(template).render(DOC) == expected


@pytest.mark.parametrize(
    ("template", "fragment"),
    [
        ("{.items[", "unclosed"),
        ("{.items", "unclosed {"),
        ("}", "unmatched }"),
        ("{range .items[*]}x", "without {end}"),
        ("{end}", "without {range}"),
        ("{.items[0,1]}", "unions"),
        ("{.items[?(x)]}", "@.path"),
        ("{.items[?@.x]}", "[?(...)]"),
        ('{"x}', "unclosed"),
        ("{}", "empty expression"),
        ("{.a[::2]}", "slice"),
        ("{.items[?(@.a == nope)]}", "cannot compare"),
    ],
)
def test_errors(template: str, fragment: str) -> None:
    with pytest.raises(JsonPathError) as e:
        parse(template)
    assert fragment in str(e.value)
