"""The ssh plugin's key pair for a vcjob: the one in the job's Secret (so a restart keeps it), else a new
one."""

from __future__ import annotations

import base64

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from controllers.kube import paths
from controllers.kube.client import ApiError, KubeClient
from extender.core.errors import InvalidObject
from extender.jobs.model import Job
from extender.jobs.plugins.base import PluginContext
from extender.jobs.plugins.ssh import secret_name as ssh_secret_name


def generate_ssh_key() -> PluginContext:
    """A fresh key pair for the ssh plugin (ed25519: instant to make, accepted by every current OpenSSH)."""
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return PluginContext(ssh_private_key=private, ssh_public_key=public.decode())


async def ssh_key(client: KubeClient, job: Job) -> PluginContext:
    """The key pair already in the job's ssh Secret, else a new one. A Secret that holds something else
    raises InvalidObject: a new key would not match the one running pods mount, so nothing is guessed."""
    path = paths.SECRETS.item(ssh_secret_name(job), namespace=job.namespace)
    try:
        secret = await client.get(path)
    except ApiError as e:
        if e.status != 404:
            raise
        return generate_ssh_key()
    data = secret.get("data") or {}

    def read(k: str) -> str:
        return base64.b64decode(data.get(k) or "").decode()

    try:
        ctx = PluginContext(ssh_private_key=read("id_rsa"), ssh_public_key=read("id_rsa.pub"))
    except (ValueError, TypeError, AttributeError):  # not base64, not UTF-8, not strings
        raise InvalidObject(
            f"Secret {job.namespace}/{ssh_secret_name(job)} does not hold an ssh key pair pumice can "
            "read (data.id_rsa, data.id_rsa.pub: base64 of UTF-8 text); delete it to have a new one made"
        ) from None
    return ctx if ctx.ssh_private_key and ctx.ssh_public_key else generate_ssh_key()
