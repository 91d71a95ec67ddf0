"""Tables the report's script renders a page at a time (filter, sort, paginate), as compact JSON.

Rows are arrays, one value per column. Repeated long strings (failure reasons, FitError messages) go
into the table's ``strings`` pool once and cells refer to them by index, which keeps a 10,000-pod queue
small. Column types the script knows:

- ``text``: a string (``pooled``: an index into ``strings``), wrapped to the column's width (``wide``: a long
  message, which keeps a readable width when the table is squeezed to fit the page); ``num``: a number shown with ``fmt``
  (``int``, ``cores`` for millicores, ``bytes``, ``pct``, ``seconds``: ``units.py``'s rules); ``bar``: a percentage with a bar behind it;
- ``verdict``: ``0`` pass, ``k > 0`` fail with ``strings[k - 1]`` as its reason (tooltip), ``null`` not run;
- ``heat``: a 0-10 score coloured like the heatmap, the column's ``weight`` in its tooltip;
- ``badge``: a short word (a status) drawn as a badge, styled by the CSS class of the same name;
- ``class``: hidden, the row's CSS class (``host``, ``tie``, ``fail``...), also what the presets filter on;
- ``tip``: hidden, the tooltip (pooled) of the column that names it in ``tipFor``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class StringPool:
    """Each distinct string once; ``ref`` returns its index."""

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, s: str) -> int:
        i = self._index.get(s)
        if i is None:
            i = self._index[s] = len(self.strings)
            self.strings.append(s)
        return i


@dataclass
class Column:
    label: str
    type: str = "text"
    fmt: str | None = None
    pooled: bool = False
    tip_for: int | None = None  # for a ``tip`` column: the column whose cells it explains
    weight: int | None = None  # for a ``heat`` column
    vertical: bool = False  # header printed vertically (wide grids)
    title: str | None = None  # header tooltip
    wide: bool = False  # a long text (a message): kept at a readable width when the table is squeezed

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "type": self.type}
        for key, value in (("fmt", self.fmt), ("pooled", self.pooled or None), ("tipFor", self.tip_for),
                           ("weight", self.weight), ("vertical", self.vertical or None), ("title", self.title),
                           ("wide", self.wide or None)):
            if value is not None:
                out[key] = value
        return out


@dataclass
class Table:
    id: str
    columns: list[Column]
    rows: list[list[Any]] = field(default_factory=list)
    pool: StringPool = field(default_factory=StringPool)
    page_size: int = 25
    presets: list[tuple[str, str]] = field(default_factory=list)  # (label, row class) quick filters
    empty: str = "Nothing to show."

    def index(self, label: str) -> int:
        return next(i for i, c in enumerate(self.columns) if c.label == label)

    def to_json(self) -> dict[str, Any]:
        return {
            "columns": [c.to_json() for c in self.columns],
            "rows": self.rows,
            "strings": self.pool.strings,
            "pageSize": self.page_size,
            "presets": [{"label": label, "cls": cls} for label, cls in self.presets],
            "empty": self.empty,
        }
