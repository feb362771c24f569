"""Kubernetes' rules for names, as admission and the job rules check them.

A label (RFC 1123: task and container names, which become hostnames), a subdomain (RFC 1123: object names
such as a PersistentVolumeClaim's), a qualified name (Volcano checks job names with ``IsQualifiedName``), a
Service name (RFC 1035: starts with a letter) and a label value (node group names). Each predicate takes
any decoded JSON value and answers False for a non-string, so a rule can test a raw field directly.
"""

from __future__ import annotations

import re
from typing import Final

# Labels, qualified names and Service names: at most 63 characters; subdomains at most 253.
MAX_NAME: Final = 63
MAX_SUBDOMAIN: Final = 253
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# A label value: at most 63 characters, alphanumerics at both ends, '-', '_' and '.' inside.
_LABEL_VALUE: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")

LABEL_RULE: Final = (
    "must be a lowercase RFC 1123 label: at most 63 characters of a-z, 0-9 and '-', "
    "starting and ending with a letter or digit"
)
SUBDOMAIN_RULE: Final = (
    "must be a lowercase RFC 1123 subdomain: at most 253 characters of a-z, 0-9, '-' and '.', "
    "starting and ending with a letter or digit"
)


def is_label(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_NAME and _LABEL.match(value) is not None


def is_subdomain(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_SUBDOMAIN and _SUBDOMAIN.match(value) is not None


def is_qualified_name(value: str) -> bool:
    """The characters of a qualified name (its length is the caller's to check and word)."""
    return _QUALIFIED.match(value) is not None


def is_service_name(value: str) -> bool:
    """A name Kubernetes accepts for a Service (an RFC 1035 label)."""
    return len(value) <= MAX_NAME and _SERVICE_NAME.match(value) is not None


def is_label_value(value: object) -> bool:
    return isinstance(value, str) and _LABEL_VALUE.match(value) is not None
