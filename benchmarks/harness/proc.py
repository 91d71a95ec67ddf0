"""What ``/proc`` says of a benchmark's processes (Linux): their CPU so far."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a process (every thread of it), from ``/proc/PID/stat``; None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # (state is fields[0]: field 3)
