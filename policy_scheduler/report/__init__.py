"""Self-contained HTML reports of the offline commands' and the sweep's results (``--report FILE.html``,
``policy-scheduler report``).

A report is rendered from exactly the data ``-o json`` prints: ``load`` identifies and validates a saved
result, one module per command prepares its charts and tables (``simulate``, ``explain``, ``capacity``,
``compare``, ``migrate``, ``sweep``), ``charts`` draws inline SVG, ``tables`` packs the rows the embedded script
pages through, and ``render`` fills the Jinja templates. The page fetches nothing: styles, script and data are inline.
"""

from __future__ import annotations

from .load import ReportInputError, detect_kind, load_result, validate
from .render import render_report, write_report

__all__ = ["ReportInputError", "detect_kind", "load_result", "render_report", "validate", "write_report"]
