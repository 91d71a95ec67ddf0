"""A tiny SVG builder over ElementTree: elements and attributes, escaped by the serializer, never by hand."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from markupsafe import Markup

SVG_NS = "http://www.w3.org/2000/svg"


def num(v: float) -> str:
    """A coordinate with at most one decimal (keeps large charts small)."""
    text = f"{v:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _attr(value: Any) -> str:
    return num(value) if isinstance(value, float) else str(value)


class Svg:
    """One ``<svg>`` element; ``add`` appends children, ``markup`` serializes it for a template."""

    def __init__(self, width: float, height: float, label: str, cls: str = "chart") -> None:
        self.width = width
        self.height = height
        self.root = ET.Element("svg", {
            "xmlns": SVG_NS, "viewBox": f"0 0 {num(width)} {num(height)}", "width": num(width),
            "height": num(height), "role": "img", "aria-label": label, "class": cls,
        })

    def add(self, tag: str, parent: ET.Element | None = None, *, text: str | None = None,
            title: str | None = None, **attrs: Any) -> ET.Element:
        """A child element; ``class_``/``text_anchor`` style keys become ``class``/``text-anchor``;
        ``title`` adds a ``<title>`` child (the browser's hover tooltip)."""
        el = ET.SubElement(self.root if parent is None else parent, tag,
                           {k.rstrip("_").replace("_", "-"): _attr(v) for k, v in attrs.items() if v is not None})
        if text is not None:
            el.text = text
        if title:
            ET.SubElement(el, "title").text = title
        return el

    def group(self, parent: ET.Element | None = None, **attrs: Any) -> ET.Element:
        return self.add("g", parent, **attrs)

    def rect(self, x: float, y: float, w: float, h: float, parent: ET.Element | None = None, **attrs: Any) -> ET.Element:
        return self.add("rect", parent, x=float(x), y=float(y), width=float(max(w, 0)), height=float(max(h, 0)), **attrs)

    def text(self, x: float, y: float, text: str, parent: ET.Element | None = None, **attrs: Any) -> ET.Element:
        return self.add("text", parent, x=float(x), y=float(y), text=text, **attrs)

    def line(self, x1: float, y1: float, x2: float, y2: float, parent: ET.Element | None = None, **attrs: Any) -> ET.Element:
        return self.add("line", parent, x1=float(x1), y1=float(y1), x2=float(x2), y2=float(y2), **attrs)

    def markup(self) -> Markup:
        return Markup(ET.tostring(self.root, encoding="unicode"))
