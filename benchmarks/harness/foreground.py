"""``python -m benchmarks.harness.foreground ARGS...``: ``python ARGS...`` as a shell starts a foreground job, SIGINT
at its default disposition and unblocked, whatever this process inherited. A background job of a non-interactive
shell (``cmd &``) starts with SIGINT ignored, and every process it starts inherits that: Python then installs no
``KeyboardInterrupt`` handler and Ctrl-C is lost. Used by ``.ci/repeat`` (pytest) and the sweep's Ctrl-C test."""

from __future__ import annotations

import os
import signal
import sys

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
