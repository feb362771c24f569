#!/usr/bin/env bash
# The one test command (README, CI): builds its own virtualenv, installs pumice with its test and dev
# extras from the registries, then runs the checks of hack/verify.sh and the whole pytest suite.
# The e2e tests run when etcd, kube-apiserver and kube-scheduler are in $KUBEBUILDER_ASSETS
# (default /usr/local/kubebuilder/bin) and skip with the reason otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${PUMICE_VENV:-.venv}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e '.[test,dev]'
export PATH="$PWD/$VENV/bin:$PATH"
hack/verify.sh
pytest -q -p no:cacheprovider "$@"
