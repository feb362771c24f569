"""The limits every admitted object obeys, whatever its kind: nesting depth and encoded size.

The dispatch (:func:`admission.dispatch.judge`) checks these before any kind's rules and stops there when
one is exceeded: the rules then never walk an object that is too deep for a recursive comparison or too big
to be worth reading. Depth comes first because measuring the size encodes the object, which only works
below orjson's own depth limit.
"""

from __future__ import annotations

from typing import Final

import orjson

from extender.api.limits import Limits
from extender.core.validation import FieldError, Obj, depth_errors

_MIB: Final = 1024 * 1024


def _size(n: int) -> str:
    return f"{n / _MIB:.2f} MiB" if n >= _MIB else f"{n} bytes"


def encoded_size(obj: object) -> int | None:
    """Bytes of ``obj`` as compact JSON (as kube-apiserver sends it to etcd, near enough); None if it cannot
    be encoded at all."""
    try:
        return len(orjson.dumps(obj))
    except orjson.JSONEncodeError:
        return None


def object_errors(obj: Obj, limits: Limits) -> list[FieldError]:
    """Why ``obj`` is beyond ``limits`` whatever its kind: too deeply nested, or too large."""
    errors = depth_errors(obj, limits)
    if errors:
        return errors
    size = encoded_size(obj)
    if size is None:
        return [FieldError(field="object", message="cannot be encoded as JSON")]
    if size <= limits.max_object_bytes:
        return []
    # Name the biggest part, so the user knows where to cut.
    parts = [(encoded_size(v) or 0, str(k)) for k, v in obj.items()]
    biggest = max(parts, default=(0, ""))
    where = f"; the largest part is {biggest[1]} ({_size(biggest[0])})" if biggest[1] else ""
    return [
        FieldError(
            field="object",
            message=f"{_size(size)} as JSON, more than the {_size(limits.max_object_bytes)} pumice accepts "
            f"(etcd's default request limit){where}",
        )
    ]
