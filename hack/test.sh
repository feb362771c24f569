#!/usr/bin/env bash
# The one test command (README, CI): builds its own virtualenv, installs pumice with its test and dev
# extras from the registries, runs the checks of hack/verify.sh, then pytest: the tests that need no
# cluster once (beside the e2e tests), and the e2e tests (marker e2e) once per control plane.
#
# PUMICE_E2E_ASSETS is a space-separated list of directories, each with kube-apiserver and kube-scheduler
# (and etcd, else etcd from PATH); default "${KUBEBUILDER_ASSETS:-/usr/local/kubebuilder/bin}
# /usr/local/kubebuilder-1.28/bin". Each e2e run gets KUBEBUILDER_ASSETS=<dir>; a directory without the
# binaries is reported and its tests skip, saying why. Arguments go to every pytest run (-x, -k gang, -v,
# a path); the split by marker is added after them, so a -m among them is overridden.
# PUMICE_E2E_TIMEOUT (seconds, default 900; 0 for none) ends one control plane's e2e run that hangs, so
# CI stays within its 20 minutes: a whole e2e run takes about 8 minutes on 2 cores. The tests that need no
# cluster run in the background beside the first e2e run; their output is shown after the e2e runs.
#
# Exit status: non-zero when verify or any pytest run fails. pytest's exit 5 (no tests collected, e.g. a
# path argument that holds no e2e test) and all-skipped runs are not failures. The last line is pytest's
# closing line summed over every run.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${PUMICE_VENV:-.venv}
[[ $VENV == /* ]] || VENV=$PWD/$VENV
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e '.[test,dev]'
export PATH="$VENV/bin:$PATH"
hack/verify.sh

E2E_ASSETS=${PUMICE_E2E_ASSETS-"${KUBEBUILDER_ASSETS:-/usr/local/kubebuilder/bin} /usr/local/kubebuilder-1.28/bin"}
E2E_TIMEOUT=${PUMICE_E2E_TIMEOUT:-900}
LOGS=$(mktemp -d "${TMPDIR:-/tmp}/pumice-test.XXXXXX")
trap 'rm -rf "$LOGS"' EXIT
KINDS=(failed passed skipped xfailed xpassed warnings errors)
declare -A TOTAL=() E2E=()
SUMMARY=()
FAILURES=()
FAILED=0
STARTED=$SECONDS

# Which control plane a directory holds, in words: "v1.28.7", or "missing kube-apiserver, kube-scheduler".
describe_assets() {
  local dir=$1 missing=() name
  for name in kube-apiserver kube-scheduler; do
    [ -x "$dir/$name" ] || missing+=("$name")
  done
  if [ ! -x "$dir/etcd" ] && ! command -v etcd >/dev/null 2>&1; then
    missing+=(etcd)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    local IFS=,
    missing=("${missing[*]}")
    echo "missing ${missing[0]//,/, }"
  else
    "$dir/kube-apiserver" --version 2>/dev/null | grep -oE 'v[0-9]+\.[0-9]+\.[0-9]+[^ ]*' | head -n 1 \
      || echo "kube-apiserver of unknown version"
  fi
}

# run LABEL SECONDS [VAR=value...] -- PYTEST-ARGS...: one pytest run (ended after SECONDS unless 0), its
# output shown and its counts kept. The control plane's processes die with pytest (PR_SET_PDEATHSIG).
run_pytest() {
  local label=$1 limit=$2 log="$LOGS/run-${#SUMMARY[@]}.log" rc
  shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  set +e
  # --foreground: pytest stays in the terminal's process group, so Ctrl-C still reaches it.
  env "${envs[@]}" timeout --foreground --kill-after=30 "$limit" pytest -q -p no:cacheprovider "$@" 2>&1 \
    | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  echo
  account "$label" "$limit" "$log" "$rc"
}

# start_pytest LABEL -- PYTEST-ARGS...: the same run in the background, its output kept in a log until
# finish_pytest shows it and keeps its counts.
start_pytest() {
  BG_LABEL=$1 BG_LOG="$LOGS/background.log"
  shift 2
  (
    set +e
    pytest -q -p no:cacheprovider "$@" >"$BG_LOG" 2>&1 </dev/null
    echo $? >"$BG_LOG.rc"
  ) &
  BG_PID=$!
}

finish_pytest() {
  wait "$BG_PID" || true
  echo "==> $BG_LABEL (ran beside the e2e tests)"
  cat "$BG_LOG"
  echo
  account "$BG_LABEL" 0 "$BG_LOG" "$(cat "$BG_LOG.rc" 2>/dev/null || echo 1)"
}

# account LABEL SECONDS LOG RC: keep the counts of one pytest run from its log and exit status.
account() {
  local label=$1 limit=$2 log=$3 rc=$4 last kind count
  # pytest's closing line ("2 failed, 40 passed in 61.2s"); none when pytest was killed.
  last=$(grep -E '^(=+ )?(no tests ran|[0-9]+ [a-z]+.* in [0-9.]+s)' "$log" | tail -n 1 | sed -E 's/^=+ //; s/ =+$//' \
    || true)
  local -A run=()
  for kind in "${KINDS[@]}"; do
    count=$(grep -oE "[0-9]+ ${kind%s}s?\b" <<<"$last" | grep -oE '^[0-9]+' || true)
    run[$kind]=${count:-0}
  done
  case $rc in
    0) ;;
    5) last="${last:-no tests ran} (none selected here)" ;;
    124 | 137) FAILED=1; last="${last:+$last, }timed out after ${limit}s [exit $rc]" ;;
    *) FAILED=1; last="${last:-pytest exited $rc} [exit $rc]" ;;
  esac
  # A run that failed without a failed test (a timeout, a usage error) counts as one error, so the
  # combined closing line never reads as a success.
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ $(( run[failed] + run[errors] )) -eq 0 ]; then
    run[errors]=1
  fi
  for kind in "${KINDS[@]}"; do
    TOTAL[$kind]=$(( ${TOTAL[$kind]:-0} + run[$kind] ))
    if [[ $label == e2e* ]]; then
      E2E[$kind]=$(( ${E2E[$kind]:-0} + run[$kind] ))
    fi
  done
  SUMMARY+=("$(printf '%-56s %s' "$label:" "${last:-?}")")
  # The failed tests by name, repeated in the summary: a reader of the output's tail sees which ones.
  while IFS= read -r line; do
    FAILURES+=("$label: $line")
  done < <(grep -E '^(FAILED|ERROR) ' "$log" || true)
}

# Join the non-zero counts of table $1 as pytest does ("2 failed, 40 passed, 3 skipped"), or only those of
# the kinds given after it.
counts() {
  local -n table=$1
  shift
  local parts=() kind kinds=("${@:-${KINDS[@]}}")
  for kind in "${kinds[@]}"; do
    if [ "${table[$kind]:-0}" -eq 1 ]; then
      parts+=("1 ${kind%s}")
    elif [ "${table[$kind]:-0}" -gt 1 ]; then
      parts+=("${table[$kind]} $kind")
    fi
  done
  local IFS=,
  local joined="${parts[*]:-no tests ran}"
  echo "${joined//,/, }"
}

# The tests without a cluster are bound by one core and the e2e tests mostly wait on their control plane:
# they run side by side, which keeps CI within its 20 minutes.
echo "==> tests without a cluster: started, beside the e2e tests (their output follows those)"
start_pytest "tests (not e2e)" -- "$@" -m "not e2e"

declare -A SEEN=()
PLANES=0
for dir in $E2E_ASSETS; do
  key=$(realpath -m "$dir" 2>/dev/null || echo "$dir")
  [ -z "${SEEN[$key]:-}" ] || continue
  SEEN[$key]=1
  PLANES=$(( PLANES + 1 ))
  what=$(describe_assets "$dir")
  echo "==> e2e tests against the control plane in $dir: $what"
  [[ $what != missing* ]] || echo "    (its e2e tests skip, saying why; that is not a failure)"
  run_pytest "e2e $dir ($what)" "$E2E_TIMEOUT" "KUBEBUILDER_ASSETS=$dir" -- --durations=12 "$@" -m e2e
done

finish_pytest

echo "==> summary"
printf '  %s\n' "${SUMMARY[@]}"
[ ${#FAILURES[@]} -eq 0 ] || printf '  %s\n' "${FAILURES[@]}"
e2e="${E2E[passed]:-0} passed, ${E2E[failed]:-0} failed"
[ "${E2E[errors]:-0}" -eq 0 ] || e2e+=", $(counts E2E errors)"
[ "${E2E[skipped]:-0}" -eq 0 ] || e2e+=", ${E2E[skipped]} skipped"
echo "e2e: $e2e on $PLANES control plane(s)"
echo "$(counts TOTAL) in $(( SECONDS - STARTED ))s"
exit "$FAILED"
