# syntax=docker/dockerfile:1
# pumice: one image for `pumice serve` (and the CLI). Build: hack/build-image.sh
#
# Stage 1 builds pumice's wheel and its dependencies' wheels; stage 2 installs them from that wheelhouse
# only (no registry access) into a slim Python and runs as a non-root numeric user. Nothing at run time
# writes outside /tmp: generated webhook certificates go to --cert-dir (the Deployment mounts an emptyDir
# at /tmp), pip compiles the bytecode at install time, so the root filesystem can be read-only.
# The base is pinned by version; pin it by digest too (python:3.11.11-slim-bookworm@sha256:...) in a
# release pipeline that can resolve digests.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# Only what the wheel is built from (see .dockerignore): the packages, the CRDs it embeds, the metadata.
COPY pyproject.toml README.md ./
COPY extender ./extender
COPY admission ./admission
COPY controllers ./controllers
COPY manifests/crds ./manifests/crds
RUN pip wheel --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="pumice" \
      org.opencontainers.image.description="Volcano-style batch scheduling for stock Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels /wheels/pumice-*.whl
# 65532: the UID and GID `pumice manifests deploy` runs the pod as (runAsUser, runAsGroup, fsGroup).
USER 65532:65532
WORKDIR /tmp
# extender (plain HTTP or mTLS), admission webhooks (TLS), metrics (plain HTTP).
EXPOSE 8888 8443 9090
ENTRYPOINT ["pumice"]
CMD ["serve"]
