"""Admission webhooks for Volcano's resources (Queue, PodGroup, Pod; Job reserved), kept stateless.

Pure rules per kind (:mod:`admission.queues`, :mod:`admission.podgroups`, :mod:`admission.pods`) read the
cluster only through :class:`admission.lookup.Lookup`; one table (:mod:`admission.webhooks`) routes requests
to them and generates the webhook configurations; :mod:`admission.server` is the aiohttp edge and
:mod:`admission.certs` makes the TLS material. Importing this package imports nothing else.
"""
