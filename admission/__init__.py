"""Admission webhooks for Volcano's resources (Queue, PodGroup, Job, Command, JobFlow, JobTemplate, CronJob,
Pod), kept stateless.

Pure rules per kind (:mod:`admission.queues`, :mod:`admission.podgroups`, :mod:`admission.jobs`,
:mod:`admission.commands`, :mod:`admission.flows`, :mod:`admission.cronjobs`, :mod:`admission.pods`) read the
cluster only through :class:`admission.lookup.Lookup` and hold only their kind's rules; a Job's own rules
live in the pure job core (:mod:`extender.jobs.rules`), so the job controller reports a job written around
the webhook in the same words, and the validation kit both use (field errors, raw readers, names,
quantities) in :mod:`extender.core.validation` and its neighbours. One table (:mod:`admission.webhooks`)
lists the webhooks and generates their configurations; one dispatch (:mod:`admission.dispatch`) does what
every kind shares (scope, the object's bounds against the server's :class:`~extender.api.limits.Limits`,
the stored object of an UPDATE, the denial) before calling a row's function; :mod:`admission.server` is the
aiohttp edge, served with TLS material the composition root makes (:mod:`extender.process.tls`).

Invariants: importing this package imports nothing else; admission imports neither the scheduler
(:mod:`extender.framework`, :mod:`extender.plugins`) nor numpy (an import-linter contract).
"""
