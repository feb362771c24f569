"""The pure core of the Volcano Job (vcjob): model, state machine, policies, pods and job plugins.

No I/O: the job controller (``controllers.reconcilers.jobs``) feeds it objects and performs what it decides;
the
admission webhooks reuse its vocabulary.
"""
