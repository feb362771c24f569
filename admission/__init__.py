"""Admission webhooks for Volcano's resources (Queue, PodGroup, Job, Command, Pod), kept stateless.

Pure rules per kind (:mod:`admission.queues`, :mod:`admission.podgroups`, :mod:`admission.jobs`,
:mod:`admission.commands`, :mod:`admission.pods`) read the cluster only through
:class:`admission.lookup.Lookup` and check every object against the server's
:class:`~extender.api.limits.Limits` first (:mod:`admission.bounds`); a Job's own rules live in the pure job
core (:mod:`extender.jobs.rules`), so the job controller reports a job written around the webhook in the
same words. One table (:mod:`admission.webhooks`) routes requests to them and generates the webhook
configurations; :mod:`admission.server` is the aiohttp edge, served with TLS material the composition root
makes (:mod:`extender.process.tls`). Importing this package imports nothing else.
"""
