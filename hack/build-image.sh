#!/usr/bin/env bash
# Build pumice's container image from the Dockerfile at the repository root, with docker (BuildKit) or
# podman, whichever is installed (CONTAINER_TOOL=docker|podman to choose).
#
#   hack/build-image.sh                 # tags pumice:<version from pyproject.toml>
#   IMAGE=registry.example/pumice:dev hack/build-image.sh [extra build args...]
#
# Then: pumice manifests deploy --image "$IMAGE" | kubectl apply -f -   (or the Helm chart in
# manifests/helm/pumice with --set image.repository=...,image.tag=...).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' pyproject.toml | head -n1)
IMAGE=${IMAGE:-pumice:${version:-dev}}
tool=${CONTAINER_TOOL:-}
if [ -z "$tool" ]; then
  for candidate in docker podman; do
    if command -v "$candidate" >/dev/null 2>&1; then
      tool=$candidate
      break
    fi
  done
fi
if [ -z "$tool" ]; then
  echo "build-image: neither docker nor podman is installed; install one (or set CONTAINER_TOOL) to build $IMAGE" >&2
  exit 1
fi
if ! command -v "$tool" >/dev/null 2>&1; then
  echo "build-image: CONTAINER_TOOL=$tool is not installed" >&2
  exit 1
fi
echo "build-image: building $IMAGE with $tool" >&2
# The Dockerfile mounts the build stage's wheels (RUN --mount): docker needs BuildKit for that.
DOCKER_BUILDKIT=1 "$tool" build --file Dockerfile --tag "$IMAGE" "$@" .
echo "$IMAGE"
