#!/usr/bin/env bash
# Package the Helm chart (manifests/helm/pumice) as an OCI-ready archive: dist/pumice-<version>.tgz, with
# the CRDs and the Grafana dashboards the chart links to resolved into it. Publishing is yours: the command
# is printed at the end.
#
#   hack/helm-package.sh                               # dist/pumice-<Chart.yaml version>.tgz
#   CHART_VERSION=0.3.0 APP_VERSION=0.3.0 OUT=/tmp/charts hack/helm-package.sh
#
# The chart is linted first and its generated files (hack/helm-chart-files.py, hack/helm-readme.py) must be
# current. With a `helm` binary on PATH it does the work; without one, helm-python-sdk (Helm's Go SDK as a
# Python wheel, in pumice's test extra: pip install -e '.[test]') does the same.
set -euo pipefail
cd "$(dirname "$0")/.."
CHART=manifests/helm/pumice
OUT=${OUT:-dist}
PYTHON=${PYTHON:-}
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
version=${CHART_VERSION:-$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART/Chart.yaml" | head -n1)}
app_version=${APP_VERSION:-}
# The newest release pumice is tested against: what the templates are linted for.
lint_kube=1.28

regenerated=$("$PYTHON" hack/helm-chart-files.py)
if [ -n "$regenerated" ]; then
  echo "helm-package: the chart's generated files were stale; regenerated them, review and commit:" >&2
  echo "$regenerated" >&2
  exit 1
fi
"$PYTHON" hack/helm-readme.py --check
mkdir -p "$OUT"

if command -v helm >/dev/null 2>&1; then
  helm lint --strict "$CHART" --set kubernetesVersion="$lint_kube"
  args=(--destination "$OUT" --version "$version")
  [ -n "$app_version" ] && args+=(--app-version "$app_version")
  helm package "$CHART" "${args[@]}"
  archive="$OUT/pumice-$version.tgz"
else
  archive=$(CHART="$CHART" OUT="$OUT" VERSION="$version" APP_VERSION="$app_version" LINT_KUBE="$lint_kube" \
    "$PYTHON" - <<'PY'
import os
import sys

try:
    import helm_python as helm
except ImportError:
    sys.exit("helm-package: no helm binary and no helm-python-sdk: install either (pip install -e '.[test]')")
helm.disable_logging()
chart, out = os.environ["CHART"], os.environ["OUT"]
report = helm.lint(chart, {"kubernetesVersion": os.environ["LINT_KUBE"]}, strict=True)
problems = [m for m in report["messages"] if m["severity"] >= 2]
if report["errors"] or problems:
    sys.exit("helm-package: lint failed:\n" + "\n".join(map(str, report["errors"] + problems)))
print(helm.package(chart, destination=out, version=os.environ["VERSION"],
                   app_version=os.environ["APP_VERSION"] or None))
PY
  )
fi
echo "packaged $archive"
cat <<HINT

Publish it to an OCI registry (log in first: helm registry login REGISTRY):

  helm push $archive oci://REGISTRY/charts

then install with: helm install pumice oci://REGISTRY/charts/pumice --version $version -n volcano-system --create-namespace
(without a helm binary: python -c 'import helm_python as h; print(h.push("$archive", "oci://REGISTRY/charts"))')
HINT
