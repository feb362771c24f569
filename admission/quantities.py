"""Resource lists in admitted objects: well-formed, non-negative, whole where Kubernetes wants whole, and
within :attr:`Limits.max_quantity <extender.api.limits.Limits.max_quantity>`.

The rules live in the pure job core (:mod:`extender.jobs.rules`), which needs them for pod templates; every
kind admitted here (Queue, PodGroup, pod) uses the same ones, so a quantity means the same everywhere.
"""

from extender.jobs.rules import Quantities, check_resource_list, is_integer_resource

__all__ = ["Quantities", "check_resource_list", "is_integer_resource"]
