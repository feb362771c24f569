"""examples/jobflow: every document is admitted by pumice's webhooks and the flows parse as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from admission import cronjobs, flows
from admission.lookup import StaticLookup
from extender.flows.dag import order
from extender.flows.model import parse_jobflow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "jobflow"


def _docs() -> list[dict[str, Any]]:
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for d in yaml.safe_load_all(path.read_text()):
            if d:
                d.setdefault("metadata", {}).setdefault("namespace", "default")
                out.append(d)
    return out


def test_every_example_is_admitted() -> None:
    docs = _docs()
    names = frozenset(("default", d["metadata"]["name"]) for d in docs if d["kind"] == "JobTemplate")
    lookup = StaticLookup(job_templates=names)
    check = {
        "JobTemplate": flows.validate_jobtemplate,
        "JobFlow": flows.validate_jobflow,
        "CronJob": cronjobs.validate,
    }
    kinds = []
    for d in docs:
        kinds.append(d["kind"])
        assert check[d["kind"]](d, None, lookup) == [], d["metadata"]["name"]
    assert sorted(set(kinds)) == ["CronJob", "JobFlow", "JobTemplate"]


def test_volcano_dag_order() -> None:
    (dag,) = [d for d in _docs() if d["kind"] == "JobFlow" and d["metadata"]["name"] == "test"]
    assert order(parse_jobflow(dag).flows) == ["a", "b", "c", "d", "e"]
