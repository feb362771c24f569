#!/usr/bin/env bash
# Static checks: ruff (lint + format), mypy --strict, import-linter layer contracts, hadolint (Dockerfile).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
mypy
lint-imports
hadolint Dockerfile
