"""Where the client puts a kubeconfig's inline credentials, and their removal.

The ``kubernetes`` client cannot hand certificate or key *data* to ``ssl``: it writes ``certificate-authority-data``,
``client-certificate-data`` and ``client-key-data`` to temporary files and removes them at the interpreter's exit
(``atexit``). ``policy-scheduler run`` ends by ``os._exit`` (:func:`..daemon.signals.exit_process`), which runs no
``atexit`` function: a kubeadm ``scheduler.conf`` (its client key inline) would leave a copy of the scheduler's
private key in ``/tmp`` at every stop. So every load names one directory of this process's own (mode 0700, made at
the first load) and :func:`remove` deletes it, at exit and before each ``os._exit``.

Standard library only: :mod:`..daemon.signals` imports it before anything else is imported.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading

_lock = threading.Lock()
_directory: str | None = None


def directory() -> str:
    """This process's directory for the client's credential files (made on first use, removed at exit)."""
    global _directory
    with _lock:
        if _directory is None:
            _directory = tempfile.mkdtemp(prefix="policy-scheduler-credentials-")
            atexit.register(remove)
        return _directory


def remove() -> None:
    """Delete the credential files, at the end of the process only: the client caches their names by content, so
    a kubeconfig loaded after this would name files that no longer exist."""
    if _directory is not None:
        shutil.rmtree(_directory, ignore_errors=True)
