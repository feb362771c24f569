#!/usr/bin/env bash
# Static checks: ruff (lint + format), mypy --strict, import-linter layer contracts, hadolint (Dockerfile),
# the generated docs pages up to date, and the docs site built with link checking (mkdocs --strict).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
mypy
lint-imports
hadolint Dockerfile
python hack/gen-docs.py --check
# The site goes to a scratch directory; NO_MKDOCS_2_WARNING quiets mkdocs-material's notice about MkDocs 2.
site=$(mktemp -d)
trap 'rm -rf "$site"' EXIT
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet -f docs/mkdocs.yml -d "$site"
