"""Text for a terminal: the commands' tables and lines, fitted to its width as ``kubectl get`` fits them.

Every table of ``simulate``, ``explain``, ``capacity``, ``compare`` and ``sweep`` goes through
:func:`text_table`, every line through :func:`fit_lines`. The width is ``COLUMNS``, else the terminal's when
standard output is one; with neither (a pipe, a file, a test) nothing is fitted and the output is the full one.
Within a width a table wraps its message columns (``wrap``) at word boundaries; when even those at
:data:`MIN_WRAP` characters leave it too wide, it drops its low-value columns (the ``drop`` list, first named
first dropped) until it fits, and as a last resort cuts the widest cells with an ellipsis. ``-o wide`` (:attr:`Layout.width` ``None``) shows every column in full whatever the width.
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

GAP = "  "  # between two columns
ELLIPSIS = "…"
MIN_WRAP = 20  # a wrapped column is never made narrower than this (or its header, or its longest cell)


@dataclass(frozen=True)
class Layout:
    """How wide the output may be: ``width`` characters, or ``None`` for no limit (``-o wide``, a pipe)."""

    width: int | None = None

    @classmethod
    def for_output(cls, output: str) -> Layout:
        """The layout of ``-o table`` (the terminal's width) or ``-o wide`` (no limit)."""
        return cls(None if output == "wide" else terminal_width())


FULL = Layout()


def terminal_width() -> int | None:
    """``COLUMNS`` when it is a positive number, else the terminal's columns when standard output is one."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        if sys.stdout is not None and sys.stdout.isatty():
            return os.get_terminal_size(sys.stdout.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        pass
    return None


def text_table(rows: Sequence[Sequence[str]], layout: Layout = FULL, *, drop: Iterable[str] = (),
               wrap: Iterable[str] = ()) -> str:
    """``rows[0]`` is the header. Columns named in ``drop`` may be left out (the first named first), those in
    ``wrap`` wrap their cells onto more lines; with no width the table is every column in full."""
    header = list(rows[0])
    natural = [max(len(r[i]) for r in rows) for i in range(len(header))]
    keep = list(range(len(header)))
    if layout.width is not None:
        wrapped = set(wrap)
        wrapping = {i for i, h in enumerate(header) if h in wrapped}
        keep, widths = _fit(header, natural, layout.width, [header.index(h) for h in drop if h in header], wrapping)
        if widths != [natural[i] for i in keep]:
            return "\n".join(_fitted_lines(rows, keep, widths, wrapping))
    return "\n".join(GAP.join(r[i].ljust(natural[i]) for i in keep).rstrip() for r in rows)


def _fit(header: list[str], natural: list[int], width: int, droppable: list[int],
         wrapping: set[int]) -> tuple[list[int], list[int]]:
    """The columns kept and their widths, within ``width``."""
    keep = list(range(len(header)))

    def least(i: int) -> int:
        return min(natural[i], max(MIN_WRAP, len(header[i]))) if i in wrapping else natural[i]

    def total(widths: Iterable[int]) -> int:
        return sum(widths) + len(GAP) * (len(keep) - 1)

    if total(natural[i] for i in keep) <= width:
        return keep, [natural[i] for i in keep]
    for i in droppable:  # the low-value columns go first, while even the narrowest layout is too wide
        if total(least(k) for k in keep) <= width or len(keep) == 1:
            break
        keep.remove(i)
    if total(natural[i] for i in keep) <= width:
        return keep, [natural[i] for i in keep]
    widths = {i: least(i) for i in keep}
    spare = width - total(widths.values())
    while spare > 0:  # wrapped columns widen towards their natural width, the most lacking first
        lacking = [i for i in keep if i in wrapping and widths[i] < natural[i]]
        if not lacking:
            break
        widest_gap = max(lacking, key=lambda i: natural[i] - widths[i])
        widths[widest_gap] += 1
        spare -= 1
    while total(widths.values()) > width and max(widths.values()) > 1:  # last resort: the widest cells shrink
        widths[max(keep, key=lambda i: widths[i])] -= 1
    return keep, [widths[i] for i in keep]


def _fitted_lines(rows: Sequence[Sequence[str]], keep: list[int], widths: list[int], wrapping: set[int]) -> list[str]:
    out = []
    for row in rows:
        cells = [_wrapped(row[i], w) if i in wrapping else (_cut(row[i], w),) for i, w in zip(keep, widths)]
        for n in range(max(len(c) for c in cells)):
            parts = [(c[n] if n < len(c) else "").ljust(w) for c, w in zip(cells, widths)]
            out.append(GAP.join(parts).rstrip())
    return out


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + ELLIPSIS


@lru_cache(maxsize=4096)  # a queue's FitErrors repeat: wrapped once each
def _wrapped(text: str, width: int) -> tuple[str, ...]:
    if len(text) <= width:
        return (text,)
    return tuple(textwrap.wrap(text, width, break_on_hyphens=False)) or ("",)


def fit_lines(text: str, layout: Layout = FULL) -> str:
    """Every line longer than the width wrapped at word boundaries, its continuation indented two spaces more
    than the line (tables fitted by :func:`text_table` are already within it)."""
    if layout.width is None:
        return text
    width = layout.width
    out = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        more = indent + "  "
        if len(more) >= width // 2:
            indent = more = ""
        out += textwrap.wrap(body, width, initial_indent=indent, subsequent_indent=more, break_on_hyphens=False)
    return "\n".join(out)
