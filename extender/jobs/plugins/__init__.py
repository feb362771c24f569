"""Volcano's vcjob job plugins (``spec.plugins``: env, svc, ssh, mpi, pytorch, tensorflow, ray,
hcclrank), pure.

Each module holds one plugin with its frozen ``Args``; :mod:`.registry` names them and builds a job's list.
"""
