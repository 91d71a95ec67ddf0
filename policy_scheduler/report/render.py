"""Rendering: the Jinja environment, the embedded assets and data, and writing the file."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from .. import __version__
from ..errors import UserError
from . import capacity, compare, explain, migrate, simulate, sweep
from .load import COMMANDS, detect_kind

CONTEXTS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "simulate": simulate.context, "explain": explain.context, "capacity": capacity.context, "compare": compare.context,
    "migrate": migrate.context, "sweep": sweep.context,
}


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__package__, "templates"), autoescape=True, undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True,
    )
    # the embedded data: compact, in the order the preparation built it (tojson escapes <, >, & and ')
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "separators": (",", ":"), "ensure_ascii": False}
    return env


@cache
def asset(name: str) -> Markup:
    """A stylesheet or script from ``static/``, inlined into the page (the report loads nothing)."""
    return Markup(resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8"))


def render_report(data: Mapping[str, Any], source: str = "result") -> str:
    """The HTML report of a ``simulate|explain|capacity|compare|migrate|sweep -o json`` result."""
    command = COMMANDS[detect_kind(data, source)]
    ctx = CONTEXTS[command](data)
    page = ctx["page"]
    payload = {"kind": page.kind, "tables": {tid: t.to_json() for tid, t in page.tables.items()}}
    template = environment().get_template(f"{command}.html.j2")
    return template.render(**ctx, payload=payload, css=asset("report.css"), js=asset("report.js"), version=__version__)


def write_report(data: Mapping[str, Any], path: str | Path) -> None:
    """Render ``data`` and write it to ``path`` (UTF-8)."""
    html = render_report(data)
    try:
        Path(path).write_text(html, encoding="utf-8")
    except OSError as e:
        raise UserError(f"{path}: cannot write the report: {e.strerror or e}") from None
