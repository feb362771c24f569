"""The answer to one admission request: the preamble every kind shares, once, then the row's pure function.

:func:`admit` takes a decoded request (:func:`admission.review.decode_review` checked its envelope and that
``object`` and ``oldObject`` are JSON objects) and the row of :data:`admission.webhooks.WEBHOOKS` it came
to, and builds the AdmissionReview to send back. :func:`judge` is the validating part, pure and in this
order, so no kind repeats it:

1. DELETE: the row's ``validate_delete`` on the stored object (a row without one allows every delete);
2. the row's ``scope``: an object outside it is allowed before anything else of it is read (pods of other
   schedulers: every pod creation in the cluster comes here, and must stay cheap);
3. the object's nesting depth and encoded size (:mod:`admission.bounds`): beyond them, that is the only
   answer, and the kind's rules never walk the object;
4. the kind's rules (``validate``), given an object that passed 1-3 and the stored one on UPDATE;
5. with ``forgive_stored``, an UPDATE is refused only for problems the stored object did not already have
   (judged by the same steps 3-4 as if it were created now).

Denials list every field error in one message (:func:`admission.review.deny`) with status code 400, or
403 for a refused DELETE. Requests outside the row's rule are answered leniently (allowed, untouched)
except for a different resource, which means the webhook configuration is wrong and is denied so someone
notices. Pure: the server (:mod:`admission.server`) only decodes, calls :func:`admit` and encodes.
"""

from __future__ import annotations

from admission.base import Validator
from admission.bounds import object_errors
from admission.lookup import Lookup
from admission.review import AdmissionRequest, AdmissionReview, allow, deny, patch
from admission.webhooks import Webhook
from extender.api.limits import DEFAULT_LIMITS, Limits
from extender.core.validation import FieldError, Obj


def admit(
    w: Webhook, req: AdmissionRequest, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> AdmissionReview:
    """The answer of webhook ``w`` to ``req``."""
    if (req.group, req.resource) != (w.group, w.resource):
        wanted = f"{w.group}/{w.resource}" if w.group else w.resource
        got = f"{req.group}/{req.resource}" if req.group else req.resource
        return deny(
            req.uid,
            [FieldError(field="request.resource", message=f"{w.path} admits {wanted}, not {got}")],
            code=400,
        )
    if req.sub_resource or req.operation not in w.operations:
        return allow(req.uid)
    if w.mutating:
        if w.mutate is None or req.object is None:
            return allow(req.uid)
        return patch(req.uid, w.mutate(req.object, lookup))
    if req.operation == "DELETE":
        # kube-apiserver sends the deleted object as oldObject; fall back to the name for old servers.
        old = req.old_object or {"metadata": {"name": req.name, "namespace": req.namespace}}
        errors = judge(w, None, old, lookup, limits)
    else:
        errors = judge(w, req.object, req.old_object, lookup, limits)
    if not errors:
        return allow(req.uid)
    return deny(req.uid, errors, code=403 if req.operation == "DELETE" else 400)


def judge(
    w: Webhook, new: Obj | None, old: Obj | None, lookup: Lookup, limits: Limits = DEFAULT_LIMITS
) -> list[FieldError]:
    """Why validating row ``w`` refuses a CREATE (``new``), an UPDATE (``new`` and the stored ``old``) or a
    DELETE (``old`` only); empty when it allows it."""
    if new is None:
        if old is None or w.validate_delete is None:
            return []
        return w.validate_delete(old, lookup)
    if w.validate is None or (w.scope is not None and not w.scope(new, lookup)):
        return []
    errors = _errors(w.validate, new, old, lookup, limits)
    if errors and old is not None and w.forgive_stored:
        before = set(_errors(w.validate, old, None, lookup, limits))
        errors = [e for e in errors if e not in before]
    return errors


def _errors(
    validate: Validator, new: Obj, old: Obj | None, lookup: Lookup, limits: Limits
) -> list[FieldError]:
    """Steps 3 and 4: the bounds, then (only within them) the kind's rules."""
    return object_errors(new, limits) or validate(new, old, lookup, limits)
