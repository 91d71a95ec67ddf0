"""Where the client puts a kubeconfig's inline credentials: in memory, not on disk.

The ``kubernetes`` client cannot hand certificate or key *data* to ``ssl``: it writes ``certificate-authority-data``,
``client-certificate-data`` and ``client-key-data`` to temporary files, opened again for every new connection, and
removes them at the interpreter's exit (``atexit``). A kubeadm ``scheduler.conf`` has the client key inline, so each
process would keep a copy of the scheduler's private key in ``/tmp``, and leave it there when it exits without
``atexit``: ``policy-scheduler run`` ends by ``os._exit`` (:func:`..daemon.signals.exit_process`), and nothing runs
after a SIGKILL.

So every load writes to one directory of this process's own (mode 0700), and :func:`keep_in_memory` moves what the
load wrote to anonymous in-memory files (Linux ``memfd``, named ``/proc/self/fd/<n>`` in the configuration, open
until the process ends) and deletes the directory: the files exist on disk only while a load runs, and the kernel
frees the memory however the process ends. Where there is no ``memfd``, the files stay in the directory and
:func:`remove` deletes it, at exit and before each ``os._exit``.

Standard library only: :mod:`..daemon.signals` imports it before anything else is imported.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from typing import Any

from .memfiles import memory_file

#: The configuration's attributes that may name a file the client wrote from a kubeconfig's inline data.
FILE_ATTRIBUTES = ("ssl_ca_cert", "cert_file", "key_file")

_lock = threading.Lock()
_directory: str | None = None
_in_memory: dict[bytes, str] = {}  # a file's content -> its in-memory file's path (the fd stays open)


def directory() -> str:
    """This process's directory for the client's credential files (made when missing, removed at exit)."""
    global _directory
    with _lock:
        if _directory is None:
            atexit.register(remove)
        if _directory is None or not os.path.isdir(_directory):
            _directory = tempfile.mkdtemp(prefix="policy-scheduler-credentials-")
        return _directory


def keep_in_memory(configuration: Any) -> None:
    """After a load into ``configuration``: each credential file the client wrote to :func:`directory` becomes an
    in-memory file (one per content, shared by later loads), the configuration names that instead, and the
    directory is deleted. Without ``memfd`` (not Linux) the files stay until :func:`remove`.

    The client's token refresh (``refresh_api_key_hook``, run on every request of a kubeconfig with a token) would
    set the loaded files' names again, and install itself again: it runs on a scratch configuration instead, and
    only the token reaches ``configuration`` (a refresh renews tokens; the certificates stay those loaded)."""
    _move_to_memory(configuration)
    hook = getattr(configuration, "refresh_api_key_hook", None)
    if hook is not None:
        configuration.refresh_api_key_hook = _refreshing_aside(hook)


def _refreshing_aside(hook: Any) -> Any:
    def refresh(configuration: Any) -> None:
        scratch = type(configuration)()
        hook(scratch)
        configuration.api_key.update(scratch.api_key)

    return refresh


def _move_to_memory(configuration: Any) -> None:
    with _lock:
        if _directory is None:
            return
        for attribute in FILE_ATTRIBUTES:
            path = getattr(configuration, attribute, None)
            if not path or os.path.dirname(os.path.abspath(path)) != _directory or not os.path.isfile(path):
                continue
            with open(path, "rb") as handle:
                content = handle.read()
            if content not in _in_memory:
                fd = memory_file(f"kubeconfig-{attribute}", content)
                if fd is None:
                    return
                _in_memory[content] = f"/proc/self/fd/{fd}"
            setattr(configuration, attribute, _in_memory[content])
        # The client remembers each file by its content, and writes it again when a later load finds it gone.
        shutil.rmtree(_directory, ignore_errors=True)


def remove() -> None:
    """Delete the credential files still on disk (none with ``memfd``), at the end of the process."""
    if _directory is not None:
        shutil.rmtree(_directory, ignore_errors=True)
