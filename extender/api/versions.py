"""Kubernetes releases and what each one offers pumice: one table, read by ``serve`` and ``manifests`` alike.

Responsibility: turn a version as people and API servers spell it (``1.24``, ``v1.28.7``, ``v1.30.0-gke.1``,
or a ``/version`` body) into a :class:`KubernetesVersion`, and a version into the :class:`Features` that
change what pumice generates or does: scheduling gates, webhook ``matchConditions``, CEL rules in CRDs, the
KubeSchedulerConfiguration ``apiVersion`` kube-scheduler reads, and the kube-scheduler image to run.

Invariants: features depend on (major, minor) only; a feature counts from the release where it is on by
default (beta or GA), never from an alpha behind a gate a cluster admin would have to set; any major above 1
has everything. Pure: no I/O, so ``pumice serve`` (which reads the server's ``/version``) and
``pumice manifests`` (which is told the version, or is handed a reader of ``/version`` by the composition
root) apply the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

SCHEDULER_CONFIG_V1: Final = "kubescheduler.config.k8s.io/v1"
SCHEDULER_CONFIG_V1BETA3: Final = "kubescheduler.config.k8s.io/v1beta3"
SCHEDULER_CONFIG_V1BETA2: Final = "kubescheduler.config.k8s.io/v1beta2"

SCHEDULER_IMAGE_REPOSITORY: Final = "registry.k8s.io/kube-scheduler"

# A leading "v", major.minor, an optional patch, then an optional pre-release or build suffix that is not
# part of the upstream release ("-gke.1", "+k3s1", "-rc.0", "-dirty").
_VERSION = re.compile(
    r"v?(?P<major>0|[1-9]\d*)\.(?P<minor>0|[1-9]\d*)(?:\.(?P<patch>0|[1-9]\d*))?(?:[-+]\S*)?"
)
_LEADING_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class KubernetesVersion:
    """A Kubernetes release: ``patch`` is None when only ``major.minor`` is known."""

    major: int
    minor: int
    patch: int | None = None

    def at_least(self, major: int, minor: int) -> bool:
        return (self.major, self.minor) >= (major, minor)

    def __str__(self) -> str:
        base = f"v{self.major}.{self.minor}"
        return base if self.patch is None else f"{base}.{self.patch}"


# The oldest release pumice generates manifests for: KubeSchedulerConfiguration v1beta2 arrived in 1.22.
OLDEST_SUPPORTED: Final = KubernetesVersion(1, 22)
# What `pumice manifests` generates for when it is not told: the newest release the e2e suite runs.
DEFAULT_VERSION: Final = KubernetesVersion(1, 28, 7)


def parse_version(text: str) -> KubernetesVersion:
    """``1.24``, ``v1.28.7``, ``v1.30.0-gke.1`` -> KubernetesVersion; ValueError for anything else."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes version (write it as 1.28 or v1.28.7)")
    patch = match.group("patch")
    return KubernetesVersion(
        int(match.group("major")), int(match.group("minor")), None if patch is None else int(patch)
    )


def version_from_info(info: Mapping[str, object]) -> KubernetesVersion:
    """The version an API server reports at ``/version``: ``gitVersion`` when it parses, else the ``major``
    and ``minor`` fields (providers write ``"28+"`` there). ValueError when neither says anything usable."""
    git_version = info.get("gitVersion")
    if isinstance(git_version, str):
        try:
            return parse_version(git_version)
        except ValueError:
            pass
    major = _LEADING_DIGITS.match(str(info.get("major", "")))
    minor = _LEADING_DIGITS.match(str(info.get("minor", "")))
    if major is None or minor is None:
        raise ValueError(f"no Kubernetes version in /version: {dict(info)!r:.200}")
    return KubernetesVersion(int(major.group()), int(minor.group()))


class ClusterUnreachable(Exception):
    """A cluster could not be asked its ``/version`` at all (no usable kubeconfig, no connection, an error
    status, no answer in time); the message says why. Whoever does that I/O raises it (``controllers.kube``),
    and ``pumice manifests`` reports it: defined here, where both may import it, so neither imports the
    other. An answer that names no version is a ValueError of :func:`version_from_info` instead."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Features:
    """What a release offers that changes how pumice integrates with it."""

    scheduling_gates: bool
    """Pod ``spec.schedulingGates`` (PodSchedulingReadiness: beta and on by default from 1.27)."""
    match_conditions: bool
    """Admission webhook ``matchConditions`` (AdmissionWebhookMatchConditions: beta, on, from 1.28)."""
    cel_validation: bool
    """CRD ``x-kubernetes-validations`` rules are enforced (CustomResourceValidationExpressions: beta, on,
    from 1.25; 1.23 and 1.24 accept the field but enforce nothing unless the alpha gate is set)."""
    scheduler_config_api_version: str | None
    """The KubeSchedulerConfiguration ``apiVersion`` to write: v1 from 1.25 on, v1beta3 in 1.23 and 1.24,
    v1beta2 in 1.22; None before 1.22, which pumice does not generate a scheduler config for."""


def scheduler_config_api_versions(version: KubernetesVersion) -> tuple[str, ...]:
    """Every KubeSchedulerConfiguration ``apiVersion`` kube-scheduler ``version`` loads, newest first.

    v1beta2: 1.22 to 1.27; v1beta3: 1.23 to 1.28; v1: from 1.25 on.
    """
    accepted: list[str] = []
    if version.at_least(1, 25):
        accepted.append(SCHEDULER_CONFIG_V1)
    if version.at_least(1, 23) and not version.at_least(1, 29):
        accepted.append(SCHEDULER_CONFIG_V1BETA3)
    if version.at_least(1, 22) and not version.at_least(1, 28):
        accepted.append(SCHEDULER_CONFIG_V1BETA2)
    return tuple(accepted)


def features(version: KubernetesVersion) -> Features:
    """The features of ``version`` (see :class:`Features` for the release each one starts in)."""
    accepted = scheduler_config_api_versions(version)
    return Features(
        scheduling_gates=version.at_least(1, 27),
        match_conditions=version.at_least(1, 28),
        cel_validation=version.at_least(1, 25),
        # The newest version a release loads: the one its successors keep longest.
        scheduler_config_api_version=accepted[0] if accepted else None,
    )


def check_supported(version: KubernetesVersion) -> KubernetesVersion:
    """``version`` itself, or ValueError when it is older than pumice generates manifests for."""
    if not version.at_least(OLDEST_SUPPORTED.major, OLDEST_SUPPORTED.minor):
        raise ValueError(
            f"Kubernetes {version} is older than pumice supports ({OLDEST_SUPPORTED} or later: the first "
            "release whose kube-scheduler reads a configuration pumice writes)"
        )
    return version


def scheduler_image(version: KubernetesVersion) -> str:
    """The upstream kube-scheduler image of ``version``: its exact release when the patch is known,
    else the minor's first release (``.0``), which kube-scheduler's version skew policy allows."""
    return f"{SCHEDULER_IMAGE_REPOSITORY}:v{version.major}.{version.minor}.{version.patch or 0}"
