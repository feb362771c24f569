"""ssh: password-less ssh between the pods of a job (what ``mpirun`` needs to start its ranks).

Mirrors Volcano's ``ssh`` job plugin: a Secret ``<job>-ssh`` holds ``id_rsa`` (the private key),
``id_rsa.pub`` and ``authorized_keys`` (both the public key) and ``config`` (``StrictHostKeyChecking no``,
``UserKnownHostsFile /dev/null``, then a ``Host`` block per replica mapping its short name to its svc DNS
name and the ssh port). Every container and init container mounts the Secret's ``.ssh`` directory at
``/root/.ssh``, with mode 0600, since ssh refuses keys others can read; at any other path (a non-root user's
home) the mode is 0644, as in Volcano, because the files are then owned by root but read by that user.

The key pair is not made here: arguments may supply it (``--ssh-private-key``/``--ssh-public-key``), otherwise
the controller passes it in :class:`PluginContext` (read back from the existing Secret, or freshly generated),
so this module stays deterministic. Expected format: the private key as an OpenSSH or PEM block
(``-----BEGIN OPENSSH PRIVATE KEY-----``/``-----BEGIN RSA PRIVATE KEY-----`` ...), the public key as one
``authorized_keys`` line (``ssh-rsa AAAA... [comment]`` or ``ssh-ed25519 AAAA... [comment]``). Both are stored
ending in exactly one newline, since OpenSSH rejects a private key file without it. The file names stay
``id_rsa*`` whatever the key type, as Volcano names them and images' scripts expect.

Arguments (Volcano's): ``--ssh-key-file-path`` (default ``/root/.ssh``), ``--ssh-private-key`` and
``--ssh-public-key`` (given together), ``--ssh-port`` (default 22, written into ``config``). Volcano's old
``--no-root`` flag is gone from Volcano and refused here.

Enable with::

    spec:
      plugins:
        ssh: []
        svc: []
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from extender.core.errors import ConfigError
from extender.jobs.model import Job, TaskSpec
from extender.jobs.plugins.args import option, parse_flags, port_number
from extender.jobs.plugins.base import Obj, PluginContext, owned_metadata
from extender.jobs.plugins.podedit import containers, set_mount, set_volume, task_host_pairs

DEFAULT_KEY_PATH: Final = "/root/.ssh"
PRIVATE_KEY: Final = "id_rsa"
PUBLIC_KEY: Final = "id_rsa.pub"
AUTHORIZED_KEYS: Final = "authorized_keys"
CONFIG: Final = "config"
# The Secret's files are projected into this directory of the volume, and it is that directory which is
# mounted (by subPath), so the mount shows exactly these files.
_SUBDIR: Final = ".ssh"
_ROOT_MODE: Final = 0o600
_USER_MODE: Final = 0o644


def _absolute(value: str) -> str | None:
    return None if value.startswith("/") else "must be an absolute path"


def _private_key(value: str) -> str | None:
    return (
        None if not value or value.lstrip().startswith("-----BEGIN ") else "must be a PEM/OpenSSH key block"
    )


def _public_key(value: str) -> str | None:
    return None if not value or len(value.split()) >= 2 else "must be an authorized_keys line (type key)"


@dataclass(frozen=True, slots=True, kw_only=True)
class SshArgs:
    ssh_key_file_path: str = option(DEFAULT_KEY_PATH, check=_absolute)
    ssh_private_key: str = option("", check=_private_key)
    ssh_public_key: str = option("", check=_public_key)
    ssh_port: int = option(22, check=port_number)


def secret_name(job: Job) -> str:
    return f"{job.name}-ssh"


def ssh_config(job: Job, port: int) -> str:
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in job.tasks:
        for host, sub in task_host_pairs(job, task):
            lines += [f"Host {host}", f"  HostName {host}.{sub}", f"  Port {port}"]
    return "\n".join(lines) + "\n"


def _line(text: str) -> str:
    return text.rstrip("\n") + "\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode("ascii")


@dataclass(frozen=True, slots=True)
class SshPlugin:
    args: SshArgs
    name = "ssh"

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> SshPlugin:
        args = parse_flags("ssh", argv, SshArgs)
        if bool(args.ssh_private_key) != bool(args.ssh_public_key):
            raise ConfigError("job plugin ssh: --ssh-private-key and --ssh-public-key must be given together")
        return cls(args)

    @property
    def needs_key_pair(self) -> bool:
        """Whether :meth:`objects` needs the key pair from the context (no keys in the arguments)."""
        return not self.args.ssh_private_key

    def on_pod(self, pod: Obj, job: Job, task: TaskSpec, index: int) -> None:
        name = secret_name(job)
        mode = _ROOT_MODE if self.args.ssh_key_file_path == DEFAULT_KEY_PATH else _USER_MODE
        items = [
            {"key": k, "path": f"{_SUBDIR}/{k}"} for k in (PRIVATE_KEY, PUBLIC_KEY, AUTHORIZED_KEYS, CONFIG)
        ]
        set_volume(pod, {"name": name, "secret": {"secretName": name, "items": items, "defaultMode": mode}})
        for c in containers(pod):
            set_mount(c, {"name": name, "mountPath": self.args.ssh_key_file_path, "subPath": _SUBDIR})

    def objects(self, job: Job, ctx: PluginContext) -> list[Obj]:
        """The Secret. Raises ValueError when the key pair is neither in the arguments nor in ``ctx``."""
        if self.needs_key_pair:
            private, public = ctx.ssh_private_key, ctx.ssh_public_key
        else:
            private, public = self.args.ssh_private_key, self.args.ssh_public_key
        if not private.strip() or not public.strip():
            raise ValueError(f"job plugin ssh: job {job.key} has no ssh key pair to store")
        data = {
            PRIVATE_KEY: _line(private),
            PUBLIC_KEY: _line(public),
            AUTHORIZED_KEYS: _line(public),
            CONFIG: ssh_config(job, self.args.ssh_port),
        }
        return [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": owned_metadata(job, secret_name(job)),
                "type": "Opaque",
                "data": {k: _b64(v) for k, v in data.items()},
            }
        ]
