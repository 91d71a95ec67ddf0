"""Anonymous in-memory files (Linux ``memfd``) for TLS material: ``ssl`` reads certificates and keys only from
files, and a file in memory is neither on disk nor left behind, however the process ends.

Standard library only (:mod:`.credentials` is imported before anything else).
"""

from __future__ import annotations

import os


def memory_file(name: str, data: bytes) -> int | None:
    """A new in-memory file holding ``data`` (its descriptor; open it by ``/proc/self/fd/<fd>``, close it when done),
    or None where there is no ``memfd`` (not Linux)."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is None:
        return None
    fd = memfd_create(name, getattr(os, "MFD_CLOEXEC", 0))
    try:
        write_all(fd, data)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
