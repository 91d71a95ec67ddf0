"""The report's charts as inline SVG: bars, stacked usage bars, paired bars, a score heatmap and a flow diagram.

Each function takes plain rows (already aggregated and cut to a readable number by the data preparation)
and returns the ``<svg>`` as Markup. Every mark carries a ``<title>``: the browser shows it on hover.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup

from .svg import Svg
from .units import fixed, pct_text

PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#86bcb6")
OTHER_COLOR = "#b8b8b8"
FAIL_COLOR = "#d62728"
SERIES_COLORS = ("#4e79a7", "#f28e2b")
ROW = 20
CHAR_W = 6.4  # average glyph width of the 11-12px sans-serif the stylesheet sets


def category_colors(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per category, in the order given; "other" is grey."""
    return {n: OTHER_COLOR if n == "other" else PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def label_width(labels: Sequence[str], lo: float = 60, hi: float = 300) -> float:
    """Room for the longest label (within ``lo``..``hi`` pixels) plus a 16-pixel margin."""
    longest = max((len(s) for s in labels), default=0)
    return min(hi, max(lo, longest * CHAR_W + 16))


def clip(text: str, width: float) -> str:
    """``text`` cut to fit ``width`` pixels, with an ellipsis."""
    n = max(4, int(width / CHAR_W))
    return text if len(text) <= n else text[: n - 1] + "…"


# -- horizontal bars ---------------------------------------------------------------------------------
@dataclass
class Bar:
    label: str
    value: float
    tooltip: str
    color: str = PALETTE[0]
    note: str = ""  # printed after the value


def bar_chart(bars: Sequence[Bar], label: str, value_fmt: Callable[[float], str] = lambda v: f"{v:g}",
              bar_width: float = 420) -> Markup:
    """One horizontal bar per item, longest value = ``bar_width`` pixels, the value printed after it."""
    lw = label_width([b.label for b in bars])
    top = max((b.value for b in bars), default=0) or 1
    note_w = max((len(b.note) for b in bars), default=0) * CHAR_W
    svg = Svg(lw + bar_width + 60 + note_w, max(1, len(bars)) * ROW + 6, label)
    for i, b in enumerate(bars):
        y = 3 + i * ROW
        row = svg.group(class_="bar-row")
        svg.text(lw - 8, y + 13, clip(b.label, lw - 10), row, text_anchor="end", class_="label", title=b.label)
        w = bar_width * b.value / top
        svg.rect(lw, y + 2, max(w, 1.5), ROW - 6, row, fill=b.color, class_="bar", title=b.tooltip)
        svg.text(lw + w + 5, y + 13, f"{value_fmt(b.value)}{('  ' + b.note) if b.note else ''}", row, class_="value")
    return svg.markup()


# -- stacked usage bars (simulate) ---------------------------------------------------------------------
@dataclass
class UsagePanel:
    title: str
    fmt: Callable[[float], str]


@dataclass
class UsageRow:
    """One node: per panel its capacity and, per category, what was requested before and after."""

    node: str
    note: str
    capacity: Sequence[float]
    before: dict[str, Sequence[float]]
    after: dict[str, Sequence[float]]


def usage_chart(rows: Sequence[UsageRow], panels: Sequence[UsagePanel], colors: dict[str, str], label: str,
                chart_id: str = "usage") -> Markup:
    """A row per node, a panel per resource; each bar 0-100 % of allocatable, stacked by category: solid
    what was requested before, hatched what the simulation added; ``before% → after%`` printed after it."""
    lw = label_width([r.node for r in rows])
    panel_w, value_w, gap, top = 250.0, 84.0, 14.0, 36
    width = lw + len(panels) * (panel_w + value_w + gap)
    svg = Svg(width, top + len(rows) * ROW + 6, label)
    defs = svg.add("defs")
    pattern = svg.add("pattern", defs, id=f"{chart_id}-hatch", width=6, height=6, patternUnits="userSpaceOnUse",
                      patternTransform="rotate(45)")
    svg.rect(0, 0, 2.5, 6, pattern, fill="#ffffff", fill_opacity="0.6")
    for r, row in enumerate(rows):
        svg.text(lw - 8, top + r * ROW + 14, clip(row.node, lw - 10), text_anchor="end", class_="label",
                 title=f"{row.node}{' (' + row.note + ')' if row.note else ''}")
    for p, panel in enumerate(panels):
        x0 = lw + p * (panel_w + value_w + gap)
        svg.text(x0, 13, panel.title, class_="panel-title")
        for frac in (0, 0.5, 1):
            x = x0 + frac * panel_w
            svg.line(x, 20, x, top + len(rows) * ROW, class_="grid")
            svg.text(x, 31, f"{int(frac * 100)}%", text_anchor="middle", class_="tick")
        for r, row in enumerate(rows):
            _usage_bar(svg, row, p, panel, x0, top + r * ROW, panel_w, colors, chart_id)
    return svg.markup()


def _usage_bar(svg: Svg, row: UsageRow, p: int, panel: UsagePanel, x0: float, y: float, panel_w: float,
               colors: dict[str, str], chart_id: str) -> None:
    cap = row.capacity[p]
    g = svg.group(class_="usage-bar")
    svg.rect(x0, y + 3, panel_w, ROW - 6, g, class_="track", title=f"{row.node}: {panel.fmt(cap)} allocatable")
    if not cap:
        svg.text(x0 + panel_w + 6, y + 14, "n/a", g, class_="value")
        return
    scale = panel_w / cap
    x = x0
    kept_total = added_total = before_total = 0.0
    for ns in colors:
        before = row.before.get(ns, (0, 0, 0))[p]
        after = row.after.get(ns, (0, 0, 0))[p]
        before_total += before
        kept = min(before, after)
        if kept > 0:
            w = min(kept * scale, x0 + panel_w - x)
            svg.rect(x, y + 3, w, ROW - 6, g, fill=colors[ns],
                     title=f"{row.node} · {ns}: {panel.fmt(kept)} of {panel.fmt(cap)} requested before")
            x += w
        kept_total += kept
    for ns in colors:
        before = row.before.get(ns, (0, 0, 0))[p]
        added = row.after.get(ns, (0, 0, 0))[p] - before
        if added > 0:
            w = min(added * scale, x0 + panel_w - x)
            tip = f"{row.node} · {ns}: +{panel.fmt(added)} placed by the simulation"
            svg.rect(x, y + 3, w, ROW - 6, g, fill=colors[ns], title=tip)
            svg.rect(x, y + 3, w, ROW - 6, g, fill=f"url(#{chart_id}-hatch)", title=tip)
            x += w
            added_total += added
    after_total = kept_total + added_total
    pb, pa = fixed(100 * before_total / cap, 1), fixed(100 * after_total / cap, 1)
    text = f"{pb}%" if pb == pa and not added_total else f"{pb}→{pa}%"
    svg.text(x0 + panel_w + 6, y + 14, text, g, class_="value",
             title=f"{row.node}: {panel.fmt(before_total)} → {panel.fmt(after_total)} of {panel.fmt(cap)}")


# -- paired bars (zones before/after, compare A/B, sweep algorithms) -------------------------------------------
@dataclass
class PairRow:
    label: str
    values: Sequence[Sequence[float | None]]  # per panel: one percentage per series
    tooltips: Sequence[str]
    title: str = ""
    marks: Sequence[Sequence[Sequence[tuple[str, float]]]] = ()  # per panel, per series: (name, %) ticks on the bar


def paired_chart(rows: Sequence[PairRow], panels: Sequence[str], series: Sequence[str], label: str,
                 colors: Sequence[str] = SERIES_COLORS) -> Markup:
    """A thin bar per series in each row and panel (0-100 %), the percentages printed after them; a mark
    (a short upright line, named in its tooltip) at each of the row's ``marks``."""
    lw = label_width([r.label for r in rows])
    row_h = max(26, 6 + 10 * len(series))
    panel_w, value_w, gap, top = 230.0, max(96.0, 46.0 * len(series)), 14.0, 36
    svg = Svg(lw + len(panels) * (panel_w + value_w + gap), top + len(rows) * row_h + 6, label)
    for r, row in enumerate(rows):
        svg.text(lw - 8, top + r * row_h + row_h / 2 + 4, clip(row.label, lw - 10), text_anchor="end", class_="label",
                 title=row.title or row.label)
    for p, title in enumerate(panels):
        x0 = lw + p * (panel_w + value_w + gap)
        svg.text(x0, 13, title, class_="panel-title")
        for frac in (0, 0.5, 1):
            x = x0 + frac * panel_w
            svg.line(x, 20, x, top + len(rows) * row_h, class_="grid")
            svg.text(x, 31, f"{int(frac * 100)}%", text_anchor="middle", class_="tick")
        for r, row in enumerate(rows):
            y = top + r * row_h
            g = svg.group(class_="pair")
            texts = []
            for s, value in enumerate(row.values[p]):
                name = series[s]
                if value is None:
                    texts.append("-")
                    continue
                w = panel_w * min(value, 100) / 100
                svg.rect(x0, y + 4 + s * 10, max(w, 1), 9, g, fill=colors[s % len(colors)],
                         title=f"{row.label} · {name}: {pct_text(value)}")
                for mark, at in row.marks[p][s] if row.marks else ():
                    x = x0 + panel_w * min(at, 100) / 100
                    svg.line(x, y + 3 + s * 10, x, y + 14 + s * 10, g, class_="mark",
                             title=f"{row.label} · {name}: {mark} {pct_text(at)}")
                texts.append(pct_text(value))
            svg.text(x0 + panel_w + 6, y + row_h / 2 + 4, " / ".join(texts), g, class_="value", title=row.tooltips[p])
    return svg.markup()


# -- histograms (node utilisation) ------------------------------------------------------------------------
@dataclass
class Bucket:
    label: str
    counts: tuple[int, int]  # first series, second series


def histogram_chart(panels: Sequence[tuple[str, Sequence[Bucket]]], series: tuple[str, str], label: str,
                    colors: tuple[str, str] = SERIES_COLORS) -> Markup:
    """Side-by-side column histograms (one per panel), two series per bucket, each panel on its own scale."""
    col_w, plot_h, top, gap = 28.0, 120.0, 22.0, 40.0
    panel_w = max((len(b) for _, b in panels), default=0) * col_w
    svg = Svg(30 + len(panels) * (panel_w + gap), top + plot_h + 34, label)
    for p, (title, buckets) in enumerate(panels):
        x0 = 30 + p * (panel_w + gap)
        peak = max((c for b in buckets for c in b.counts), default=0) or 1
        svg.text(x0, 13, title, class_="panel-title")
        svg.line(x0, top + plot_h, x0 + panel_w, top + plot_h, class_="grid")
        svg.text(x0 - 4, top + 8, f"{peak:,}", text_anchor="end", class_="tick")
        svg.text(x0 - 4, top + plot_h, "0", text_anchor="end", class_="tick")
        for i, b in enumerate(buckets):
            x = x0 + i * col_w
            g = svg.group(class_="bucket")
            for s, count in enumerate(b.counts):
                h = plot_h * count / peak
                svg.rect(x + 2 + s * 12, top + plot_h - h, 11, max(h, 0.5 if count else 0), g, fill=colors[s],
                         title=f"{title}, {b.label}: {count:,} node{'' if count == 1 else 's'} {series[s]}")
            svg.text(x + col_w / 2, top + plot_h + 13, b.label, g, text_anchor="middle", class_="tick")
        svg.text(x0 + panel_w / 2, top + plot_h + 28, "% of allocatable requested", text_anchor="middle", class_="tick")
    return svg.markup()


# -- score heatmap (explain) ----------------------------------------------------------------------------
@dataclass
class HeatColumn:
    label: str
    weight: int | None


@dataclass
class HeatRow:
    node: str
    scores: Sequence[int | None]
    total: int | None
    host: bool = False
    tie: bool = False


def heat_color(score: float, top: float = 10) -> str:
    """White (0) to dark blue (``top``)."""
    t = max(0.0, min(1.0, score / top if top else 0))
    lo, hi = (247, 251, 255), (8, 81, 156)
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(rows: Sequence[HeatRow], columns: Sequence[HeatColumn], label: str) -> Markup:
    """Nodes × priorities: each cell the 0-10 score (weight in the header), then the weighted total and its
    distance from the best; the host starred, the round-robin tie set outlined."""
    lw = label_width([f"★ {r.node}" for r in rows])
    cell_w, cell_h, head = 44.0, 22.0, 165.0
    total_w = 150.0
    width = lw + len(columns) * cell_w + total_w + 20
    svg = Svg(width, head + len(rows) * cell_h + 8, label, cls="chart heatmap")
    for c, col in enumerate(columns):
        x = lw + c * cell_w + cell_w / 2
        weight = f" ×{col.weight}" if col.weight is not None else ""
        svg.text(x, head - 8, clip(col.label, 200) + weight, class_="col-label",
                 transform=f"rotate(-40 {x:.1f} {head - 8})", title=f"{col.label} (weight {col.weight})")
    tx = lw + len(columns) * cell_w + 10
    svg.text(tx, head - 8, "total (Δ from best)", class_="col-label")
    totals = [r.total for r in rows if r.total is not None]
    best = max(totals, default=0)
    for r, row in enumerate(rows):
        y = head + r * cell_h
        g = svg.group(class_="heat-row" + (" host" if row.host else "") + (" tie" if row.tie else ""))
        name = f"★ {row.node}" if row.host else row.node
        role = "chosen host" if row.host else "in the tie set" if row.tie else ""
        svg.text(lw - 8, y + 15, clip(name, lw - 10), g, text_anchor="end",
                 class_="label host" if row.host else "label", title=f"{row.node}{': ' + role if role else ''}")
        for c, (col, score) in enumerate(zip(columns, row.scores)):
            x = lw + c * cell_w
            if score is None:
                svg.rect(x + 1, y + 1, cell_w - 2, cell_h - 2, g, class_="cell-empty", title=f"{row.node} · {col.label}: not scored")
                continue
            weighted = f" × weight {col.weight} = {score * col.weight}" if col.weight is not None else ""
            tip = f"{row.node} · {col.label}: score {score}{weighted}"
            svg.rect(x + 1, y + 1, cell_w - 2, cell_h - 2, g, fill=heat_color(score), title=tip)
            svg.text(x + cell_w / 2, y + 15, str(score), g, text_anchor="middle",
                     class_="cell-text dark" if score >= 6 else "cell-text")
        if row.total is not None:
            delta = row.total - best
            svg.text(tx, y + 15, f"{row.total}" + (" (best)" if delta == 0 else f" ({delta})"), g,
                     class_="value total" if row.host else "value", title=f"{row.node}: weighted total {row.total}")
        if row.tie:
            svg.rect(lw - 2, y, len(columns) * cell_w + total_w + 4, cell_h, g, class_="tie-outline")
    return svg.markup()


# -- node-to-node flows (compare) ---------------------------------------------------------------------------
@dataclass
class Flow:
    source: str
    target: str
    count: int
    tooltip: str


def flow_chart(flows: Sequence[Flow], left: Sequence[tuple[str, int]], right: Sequence[tuple[str, int]],
               titles: tuple[str, str], label: str, highlight: str = "unschedulable") -> Markup:
    """Pods that land differently: each source node (under A) on the left, each target (under B) on the
    right, a band per (source, target) as wide as the pods that make that move."""
    lw = label_width([n for n, _ in left] + [n for n, _ in right], lo=90, hi=240)
    total = max(sum(c for _, c in left), sum(c for _, c in right), 1)
    gap, top, bar_w = 6.0, 26.0, 12.0
    unit = min(16.0, 520.0 / total)
    middle = max(360.0, 780.0 - 2 * lw - 2 * bar_w)

    def place(side: Sequence[tuple[str, int]]) -> tuple[dict[str, list[float]], float]:
        """Each entry's [top, next free offset, height], at least a label's height apart; the bottom."""
        y, out = top, {}
        for name, count in side:
            h = max(3.0, count * unit)
            out[name] = [y, y, h]
            y += max(h, 14.0) + gap
        return out, y

    (lpos, l_end), (rpos, r_end) = place(left), place(right)
    width = 2 * lw + 2 * bar_w + middle
    svg = Svg(width, max(l_end, r_end) + 6, label, cls="chart flow")
    xl, xr = lw, lw + bar_w + middle
    svg.text(2, 14, clip(titles[0], width / 2 - 12), class_="panel-title", title=titles[0])
    svg.text(width - 2, 14, clip(titles[1], width / 2 - 12), text_anchor="end", class_="panel-title", title=titles[1])
    colors = {name: FAIL_COLOR if name == highlight else OTHER_COLOR if name.endswith(" other nodes")
              else PALETTE[i % len(PALETTE)] for i, (name, _) in enumerate(left)}
    left_count, right_count = dict(left), dict(right)
    for name, count in left:
        y, _, h = lpos[name]
        svg.rect(xl, y, bar_w, h, fill=colors[name], title=f"{name} under {titles[0]}: {count} pod(s) move away")
        svg.text(xl - 6, y + min(h, 14) / 2 + 5, clip(name, lw - 10), text_anchor="end", class_="label", title=name)
    for name, count in right:
        y, _, h = rpos[name]
        fill = FAIL_COLOR if name == highlight else "#6b6b6b"
        svg.rect(xr, y, bar_w, h, fill=fill, title=f"{name} under {titles[1]}: {count} pod(s) arrive")
        svg.text(xr + bar_w + 6, y + min(h, 14) / 2 + 5, clip(name, lw - 10), class_="label", title=name)
    for f in flows:
        src, dst = lpos[f.source], rpos[f.target]
        h_src = src[2] * f.count / max(1, left_count[f.source])
        h_dst = dst[2] * f.count / max(1, right_count[f.target])
        y0, y1 = src[1], dst[1]
        src[1] += h_src
        dst[1] += h_dst
        x0, x1 = xl + bar_w, xr
        xm = (x0 + x1) / 2
        d = (f"M{x0:.1f},{y0:.1f} C{xm:.1f},{y0:.1f} {xm:.1f},{y1:.1f} {x1:.1f},{y1:.1f} "
             f"L{x1:.1f},{y1 + h_dst:.1f} C{xm:.1f},{y1 + h_dst:.1f} {xm:.1f},{y0 + h_src:.1f} {x0:.1f},{y0 + h_src:.1f} Z")
        svg.add("path", d=d, fill=colors[f.source], class_="band", title=f.tooltip)
    return svg.markup()
