"""SIGTERM and SIGINT for ``policy-scheduler run``: one event, :data:`STOP`, set by a thread, never by a handler.

A Python signal handler runs in the main thread between two of its bytecodes, wherever that thread is. A handler
that takes a lock therefore hangs the process for good when the main thread holds that lock at that moment:
``Event.set()`` takes the event's condition lock, which the main thread holds for a moment in every
``Event.wait``, and ``logging`` takes its handler's lock. That is how a daemon logged ``received SIGTERM: shutting
down`` and never shut down: its main thread stuck in the handler, its scheduling loop deciding the same pod until
the SIGKILL 30 s later (issue 47). Python's own documentation warns against synchronisation in handlers.

So the Python-level handler does nothing at all. The interpreter's C-level handler writes the signal's number to a
pipe (:func:`signal.set_wakeup_fd`); the ``signals`` thread, blocked on that pipe, sets :data:`STOP` and logs it,
whatever the main thread is doing (importing, reading a Policy, waiting for a reply, holding a lock).

:func:`install_if_run` runs first thing when the program is ``policy-scheduler run`` (the top of ``cli.py``, before
its imports): from then on neither signal takes its default action. The daemon uses :data:`STOP` as its stop
event. Before it runs (:func:`daemon_running`), nothing is held that needs undoing: ``run`` exits 0 at its next
step, and if the main thread is still busy :data:`START_GRACE` seconds after the signal (imports take seconds on a
loaded node; a Policy ConfigMap read may wait for its timeout), this thread exits the process with 0. Once the
daemon runs, its shutdown has its own bounds, and the promise (an exit within :data:`EXIT_WITHIN` seconds of the
signal) holds whatever the process is stuck in: still alive :data:`HARD_EXIT` seconds after the signal (a request
that does not return), it is ended with status 0. Nothing that must be undone outlives that: the binds on the
wire have had their grace, binds not yet sent are not sent, a lock not released expires after its lease, and the
kubeconfig's credentials are in memory, not in files (:mod:`..client.credentials`; where there is no ``memfd``, the
files are removed on every exit but a SIGKILL). A second signal ends the process at once with status 1, as
upstream's ``SetupSignalHandler`` does.

What no Python code can cover: the interpreter's own start, before the first line of ``cli.py`` runs (a signal
then takes its default action).
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Sequence

from ..client import credentials

log = logging.getLogger(__name__)

#: Seconds from the signal to the process's exit, at most.
EXIT_WITHIN = 2.0
#: When the ``signals`` thread ends a process that has not ended by itself: before the daemon runs, and after.
START_GRACE = 0.5
HARD_EXIT = 1.8
SIGNALS = (signal.SIGTERM, signal.SIGINT)
PROGRAM = "policy-scheduler"

#: Set once SIGTERM or SIGINT has been received: the daemon's stop event.
STOP = threading.Event()

_installed = False
_running = False  # the daemon runs: its shutdown has HARD_EXIT seconds, not START_GRACE
_received: tuple[str, float] | None = None  # the first signal's name, and when (monotonic)


def install_if_run(module: str) -> bool:
    """:func:`install` when this process is ``policy-scheduler run``: the module calling (``cli.py``) is the program
    (``__main__``, or imported by the ``policy-scheduler`` script) rather than imported by a test runner, and the
    command line's command is ``run``. Whether it did."""
    program = module == "__main__" or os.path.basename(sys.argv[0]) == PROGRAM
    if not program or not invoked_as_run(sys.argv):
        return False
    return install()


def invoked_as_run(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (``sys.argv``) runs the ``run`` command: its first word that is neither an option of the
    command group nor the value of ``--v``."""
    words = iter(argv[1:])
    for word in words:
        if word == "--v":
            next(words, None)
        elif not word.startswith("-"):
            return word == "run"
    return False


def install() -> bool:
    """Catch SIGTERM and SIGINT from now on (see the module's docstring); once per process, from the main thread.
    Whether the handlers are now this module's."""
    global _installed
    if _installed:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the C handler must never block
    os.set_blocking(read_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in SIGNALS:
        signal.signal(signum, _ignore)
    threading.Thread(target=_watch, args=(read_end,), name="signals", daemon=True).start()
    _installed = True
    return True


def daemon_running() -> None:
    """The daemon starts running (its threads, its binds, its lock): a signal from now on gives its shutdown up to
    :data:`HARD_EXIT` seconds rather than :data:`START_GRACE`."""
    global _running
    _running = True


def received() -> str | None:
    """The name of the first signal received (``SIGTERM``), or None."""
    return _received[0] if _received is not None else None


def deadline(after: float) -> float:
    """The monotonic time ``after`` seconds after the signal (after now when none was received)."""
    start = _received[1] if _received is not None else time.monotonic()
    return start + after


def exit_process(code: int) -> None:
    """End ``policy-scheduler run`` with ``code``. When this module's handlers are installed (the process is the
    program), at once (``os._exit``, after the log is flushed): the interpreter's own exit would first join the bind
    pool's threads, and one waiting on a reply that does not come would hold the exit up for its read timeout.
    Otherwise (``run`` called in-process, e.g. by a test) by ``SystemExit``."""
    if not _installed:
        raise SystemExit(code)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _end(code)


def _ignore(signum: int, frame: object) -> None:
    """The Python-level handler: nothing (the ``signals`` thread acts); it only replaces the default action."""


def _watch(fd: int) -> None:
    global _received
    while True:
        select.select([fd], [], [])
        try:
            data = os.read(fd, 64)
        except BlockingIOError:
            continue
        for signum in data:
            if signum not in SIGNALS:
                continue
            name = signal.Signals(signum).name
            if _received is None:
                _received = (name, time.monotonic())
                # The stop and the bound first (the bound in a thread of its own): a log line may wait on the log's
                # lock, and a pod popped meanwhile would be decided. Once the line is out, no pod is decided.
                STOP.set()
                threading.Thread(target=_exit_bound, args=(_received[1], name), name="exit-bound",
                                 daemon=True).start()
                log.info("received %s: shutting down", name)
            else:
                _write_stderr(f"received {name} again: exiting at once")
                _end(1)


def _exit_bound(since: float, name: str) -> None:
    """End the process :data:`START_GRACE` (before the daemon runs) or :data:`HARD_EXIT` seconds after ``since``
    (monotonic) unless it has ended by then."""
    while (left := since + (HARD_EXIT if _running else START_GRACE) - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))
    _write_stderr(f"still running {time.monotonic() - since:.1f}s after {name}: exiting now")
    _end(0)


def _end(code: int) -> None:
    """``os._exit(code)``, which runs no ``atexit`` function: credential files still on disk (only where there is no
    ``memfd``) are removed first."""
    credentials.remove()
    os._exit(code)


def _write_stderr(message: str) -> None:
    """One line in the log's format, written without ``logging`` (whose lock a stuck thread may hold)."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now)) + f",{int(now % 1 * 1000):03d}"
    try:
        os.write(2, f"W {stamp} {__name__}] {message}\n".encode())
    except OSError:
        pass
