"""``spec.volumes`` of a vcjob, as Volcano's ``util.go`` validateIO checks them: a unique ``mountPath``
each, and exactly one of an existing PVC (``volumeClaimName``, a valid PersistentVolumeClaim name) or a PVC
to create (``volumeClaim``); once the job exists both may be set, as the job controller names the PVC it
created. Never raises; reports every volume's problem.
"""

from __future__ import annotations

from collections.abc import Mapping

from extender.core.names import SUBDOMAIN_RULE, is_subdomain
from extender.core.validation import FieldError, shown


def volume_errors(raw: object, *, creating: bool = False) -> list[FieldError]:
    """Volcano's validateIO: a unique mountPath each, and exactly one of an existing PVC (volumeClaimName,
    a valid PersistentVolumeClaim name) or a PVC to create (volumeClaim). Once the job exists, both may be
    set: the job controller names the PVC it created from a volumeClaim in volumeClaimName."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [FieldError(field="spec.volumes", message="must be a list of volumes")]
    errors: list[FieldError] = []
    mounts: dict[str, str] = {}
    for j, v in enumerate(raw):
        at = f"spec.volumes[{j}]"
        if not isinstance(v, Mapping):
            errors.append(FieldError(field=at, message="must be an object"))
            continue
        path = v.get("mountPath")
        if not isinstance(path, str) or not path:
            errors.append(
                FieldError(field=f"{at}.mountPath", message="required; the path to mount the volume at")
            )
        elif mounts.setdefault(path, at) != at:
            errors.append(
                FieldError(
                    field=f"{at}.mountPath",
                    message=f"{shown(path)} is already used by {mounts[path]}; mount paths must be unique",
                )
            )
        claim_name, claim = v.get("volumeClaimName"), v.get("volumeClaim")
        if claim_name is not None and not isinstance(claim_name, str):
            errors.append(FieldError(field=f"{at}.volumeClaimName", message="must be a PVC name"))
            continue
        if claim is not None and not isinstance(claim, Mapping):
            errors.append(
                FieldError(field=f"{at}.volumeClaim", message="must be a PersistentVolumeClaim spec")
            )
            continue
        if not claim_name and claim is None:
            errors.append(
                FieldError(
                    field=at, message="set volumeClaimName (an existing PVC) or volumeClaim (a PVC to create)"
                )
            )
        elif claim_name and claim is not None and creating:
            errors.append(
                FieldError(
                    field=at,
                    message="set only one of volumeClaimName (an existing PVC) and volumeClaim "
                    "(a PVC to create)",
                )
            )
        elif claim_name and not is_subdomain(claim_name):
            errors.append(
                FieldError(
                    field=f"{at}.volumeClaimName", message=f"{SUBDOMAIN_RULE}, got {shown(claim_name)}"
                )
            )
    return errors
