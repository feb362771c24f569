"""kubectl-style formatting: tables, ages, YAML/JSON documents."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
import yaml

from controllers import tables
from controllers.cli import output

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def test_table_aligns_columns_with_two_spaces_and_no_trailing_blanks() -> None:
    table = tables.render_table(["name", "Phase", "age"], [["a-long-name", "Running", "5s"], ["b", "", "3m"]])
    assert table == (
        "NAME         PHASE    AGE\n"
        "a-long-name  Running  5s\n"
        "b                     3m\n"
    )  # fmt: skip


def test_table_with_no_rows_is_the_header() -> None:
    assert tables.render_table(["a", "bb"], []) == "A  BB\n"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (599, "9m59s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (5 * 3600 + 30 * 60 + 10, "5h30m"),
        (8 * 3600 + 59 * 60, "8h"),
        (47 * 3600, "47h"),
        (48 * 3600, "2d"),
        (4 * 86400 + 3600, "4d1h"),
        (8 * 86400 + 3600, "8d"),
        (729 * 86400, "729d"),
        (800 * 86400, "2y70d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_human_duration_rounds_like_kubectl(seconds: int, shown: str) -> None:
    assert tables.human_duration(seconds) == shown


def test_age_from_creation_timestamp() -> None:
    created = (NOW - timedelta(days=4, hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert tables.age({"metadata": {"creationTimestamp": created}}, NOW) == "4d2h"
    assert tables.age({"metadata": {}}, NOW) == "<unknown>"
    assert tables.age({"metadata": {"creationTimestamp": "yesterday"}}, NOW) == "<unknown>"


def test_cells_for_missing_values() -> None:
    values: tuple[object, ...] = (None, "", {}, "x", 3)
    assert [tables.text(v) for v in values] == ["<none>", "<none>", "<none>", "x", "3"]
    assert [tables.count(v) for v in (None, 2, True, "7")] == ["0", "2", "0", "0"]
    assert tables.resource_text({"memory": "8Gi", "cpu": "4"}) == "cpu=4,memory=8Gi"
    assert tables.resource_text(None) == "<none>"


def test_field_walks_mappings_only() -> None:
    obj = {"spec": {"tasks": [1]}, "status": None}
    assert tables.field(obj, "spec", "tasks") == [1]
    assert tables.field(obj, "status", "state", "phase") is None
    assert tables.field(obj, "spec", "tasks", "x") is None


OBJ = {
    "apiVersion": "v1",
    "kind": "Thing",
    "metadata": {"name": "a", "managedFields": [{"manager": "kubectl"}]},
    "spec": {"z": 1, "a": "ü"},
}


def test_yaml_drops_managed_fields_and_sorts_keys_like_kubectl() -> None:
    text = output.dump(OBJ, "yaml")
    assert "managedFields" not in text
    assert yaml.safe_load(text) == {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "a"},
                                    "spec": {"z": 1, "a": "ü"}}  # fmt: skip
    assert text.index("  a: ü") < text.index("  z: 1")
    assert "managedFields" in OBJ["metadata"]  # the caller's object is left alone


def test_json_list_document() -> None:
    text = output.dump(output.as_list([OBJ]), "json")
    doc = json.loads(text)
    assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
    assert doc["items"][0]["metadata"] == {"name": "a"}
    assert text.startswith('{\n    "apiVersion"') and text.endswith("}\n")
