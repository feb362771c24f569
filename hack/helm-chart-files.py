#!/usr/bin/env python3
"""Regenerate the Helm chart's data files (manifests/helm/pumice/files/) from pumice's code.

Run after changing the RBAC tables (extender/deploy/rbac.py, extender/deploy/tenant_rbac.py) or the
admission webhooks; the chart test (tests/ops/test_helm_chart.py) fails while the files differ. See
extender/deploy/chart_files.py. (The chart's README is hack/helm-readme.py's.)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from admission.webhooks import webhook_configurations  # noqa: E402 (after the path is set)
from extender.deploy.chart_files import chart_files  # noqa: E402

CHART = ROOT / "manifests" / "helm" / "pumice"


def main() -> int:
    for path, text in chart_files(webhook_configurations).items():
        target = CHART / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
            print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
