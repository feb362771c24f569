"""The one in-process Kubernetes API server of the tests (see :mod:`tests.fakeapi.server`)."""

from tests.fakeapi.server import CREATED_AT, FakeApiServer, Recorded, serving

__all__ = ["CREATED_AT", "FakeApiServer", "Recorded", "serving"]
