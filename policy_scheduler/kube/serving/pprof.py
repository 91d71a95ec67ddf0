"""``/debug/pprof/``: the Python counterparts of Go's pprof pages. ``goroutine`` dumps every thread's stack,
``profile`` is a wall-clock sampling profiler over all threads answering folded stacks (for ``flamegraph.pl``
or speedscope), ``heap`` reports tracemalloc's top allocation sites (or, without tracing, live object counts
by type).
"""

from __future__ import annotations

import gc
import html
import sys
import threading
import time
import traceback
import tracemalloc
from collections import Counter
from types import CodeType, FrameType

PROFILE_SECONDS = 30  # Go's default for /debug/pprof/profile
PROFILE_INTERVAL = 0.01  # seconds between stack samples

_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
_HEAP_TOP = 50
_PPROF_PAGES = {
    "goroutine": "stack traces of all current threads",
    "heap": "tracemalloc's top allocation sites (start with PYTHONTRACEMALLOC=1), else object counts by type",
    "profile": "wall-clock sampling profile of all threads as folded stacks; ?seconds=N (default 30)",
}


def page(name: str, query: dict[str, list[str]], stop: threading.Event) -> tuple[str, str] | None:
    """The page ``/debug/pprof/<name>`` as (content type, text); None when there is no such page. ``profile``
    samples for ``?seconds`` (Go's default when missing, unparsable or not positive), or until ``stop``."""
    if name == "":
        return _HTML, pprof_index()
    if name == "goroutine":
        return _TEXT, thread_stacks()
    if name == "profile":
        return _TEXT, sample_profile(_profile_seconds(query), stop=stop)
    if name == "heap":
        return _TEXT, heap_report()
    return None


def _profile_seconds(query: dict[str, list[str]]) -> float:
    try:
        seconds = float(query.get("seconds", [""])[0])
    except ValueError:
        seconds = 0.0
    if not seconds > 0:  # as Go: missing, unparsable or non-positive -> the default
        seconds = PROFILE_SECONDS
    return seconds


def pprof_index() -> str:
    """The index page, listing the pages."""
    rows = "\n".join(
        f'<tr><td><a href="{name}">{name}</a></td><td>{html.escape(text)}</td></tr>'
        for name, text in _PPROF_PAGES.items()
    )
    return (
        "<html><head><title>/debug/pprof/</title></head><body>\n"
        "<h1>/debug/pprof/</h1>\n<table>\n" + rows + "\n</table>\n</body></html>\n"
    )


def thread_stacks() -> str:
    """Every Python thread's current stack (the ``goroutine?debug=2`` counterpart)."""
    threads = {t.ident: t for t in threading.enumerate()}
    out: list[str] = []
    for ident, frame in sys._current_frames().items():
        thread = threads.get(ident)
        name = thread.name if thread is not None else "<unknown>"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        out.append(f'Thread {ident} "{name}"{daemon}:\n')
        out.extend(traceback.format_stack(frame))
        out.append("\n")
    return "".join(out)


def sample_profile(
    seconds: float, *, interval: float = PROFILE_INTERVAL, stop: threading.Event | None = None
) -> str:
    """Sample all threads' stacks every ``interval`` for ``seconds``; answer folded stacks.

    One line per distinct stack, ``root;...;leaf count``, most frequent first; frames are
    ``module.qualname``. Wall-clock: blocked threads are sampled too. The sampling thread itself is
    left out. ``stop`` ends sampling early (the partial profile is returned).
    """
    me = threading.get_ident()
    labels: dict[CodeType, str] = {}
    counts: Counter[tuple[str, ...]] = Counter()
    deadline = time.monotonic() + seconds
    stop = stop or threading.Event()
    while True:
        for ident, frame in sys._current_frames().items():
            if ident != me:
                counts[_folded(frame, labels)] += 1
        remaining = deadline - time.monotonic()
        if remaining <= 0 or stop.wait(min(interval, remaining)):
            break
    return "".join(f"{';'.join(stack)} {n}\n" for stack, n in counts.most_common())


def _folded(frame: FrameType | None, labels: dict[CodeType, str]) -> tuple[str, ...]:
    stack: list[str] = []
    while frame is not None:
        code = frame.f_code
        label = labels.get(code)
        if label is None:
            module = frame.f_globals.get("__name__", "?")
            name = getattr(code, "co_qualname", code.co_name)
            label = labels[code] = f"{module}.{name}".replace(";", ":").replace(" ", "_")
        stack.append(label)
        frame = frame.f_back
    stack.reverse()
    return tuple(stack)


def heap_report() -> str:
    """tracemalloc's top allocation sites when tracing, else how to enable it plus gc object counts."""
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot().filter_traces(
            (
                tracemalloc.Filter(False, tracemalloc.__file__),
                tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
            )
        )
        stats = snapshot.statistics("lineno")
        current, peak = tracemalloc.get_traced_memory()
        out = [f"tracemalloc: {current} bytes traced now, peak {peak}; top {_HEAP_TOP} allocation sites:\n"]
        out.extend(f"{stat}\n" for stat in stats[:_HEAP_TOP])
        return "".join(out)
    counts = Counter(type(o).__qualname__ for o in gc.get_objects())
    out = [
        "tracemalloc is not tracing: start the process with PYTHONTRACEMALLOC=1 (or -X tracemalloc) for "
        "allocation sites.\n",
        f"gc-tracked objects by type (top {_HEAP_TOP} of {len(counts)} types, {sum(counts.values())} objects):\n",
    ]
    out.extend(f"{n:>10} {name}\n" for name, n in counts.most_common(_HEAP_TOP))
    return "".join(out)
