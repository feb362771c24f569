#!/usr/bin/env bash
# Static checks: ruff (lint + format), mypy --strict, import-linter layer contracts.
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
mypy
lint-imports
